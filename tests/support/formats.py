"""Both storage formats, for a test whose scenario and expectations are the same on each: it takes
``storage_format`` and builds its memories and operations in it, deriving what differs (object keys)
from the memory's layout."""

from __future__ import annotations

import pytest

from s3memory.crypto import FORMAT_2

both_formats = pytest.mark.parametrize(
    "storage_format",
    [pytest.param(1, marks=[pytest.mark.slow, pytest.mark.format_1]), 2],
    ids=["format-1", "format-2"],
)
"""Run the test once per storage format, as its ``storage_format`` argument: format 1 is slow (``make test``
runs the library's default format, 2; ``make test-all`` both)."""

on_format_1 = pytest.mark.parametrize("storage_format", [1], ids=["format-1"])
"""Run the test on format 1 in every pass, as its ``storage_format`` argument: a test of what only
format 1 keeps (a rename's origin fingerprint), or whose crash points count format 1's requests."""

REFUSED_TOKEN = "a" * 52
"""The shape of a format-2 token (52 base32 characters) that opens under no key."""

DEFAULT_FORMAT = FORMAT_2
"""The format the library's default storage format setting (``auto``) gives a new store on a server
that enforces the conditions format 2 needs (``store_format.py``): the tests' default."""
