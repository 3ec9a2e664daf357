"""Sync: a local folder and a memory kept the same, both ways (``docs/sync.md``)."""
