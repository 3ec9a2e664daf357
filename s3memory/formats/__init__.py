"""The storage formats: one strategy per format (``strategy``), which format a store is served in
(``choice``), format 2's private names and store key, and the upgrade from format 1 to format 2. No
module outside this package compares a format number (``tests/formats/test_format_seam.py``)."""
