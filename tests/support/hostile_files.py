"""A hostile folder's files made deterministic for the tests of export, import and sync's folder."""

from __future__ import annotations

import os

import pytest


def grows_after_its_size_is_checked(monkeypatch: pytest.MonkeyPatch, size: int) -> None:
    """``os.fstat`` patched: its first answer for a file of ``size`` bytes says 10 bytes, as if the
    file grew to ``size`` right after its size was checked; every later answer is true."""
    real_fstat = os.fstat
    lied = {"once": True}

    def growing(descriptor: int) -> os.stat_result:
        found = real_fstat(descriptor)
        if found.st_size == size and lied.pop("once", False):
            return os.stat_result((*found[:6], 10, *found[7:10]))
        return found

    monkeypatch.setattr(os, "fstat", growing)
