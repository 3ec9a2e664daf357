"""Per-user quotas (the content guard's tests are in ``test_guard.py``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from s3memory.errors import CommandError
from s3memory.memory import Quota, S3Memory
from tests.support.bucket import snapshot

pytestmark = [pytest.mark.takes_format]


def test_file_count_quota(make_memory: Callable[..., S3Memory], s3: Any) -> None:
    memory = make_memory(quota=Quota(max_files=2))
    memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "a"})
    memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "b"})
    before = snapshot(s3)
    with pytest.raises(CommandError) as caught:
        memory.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})
    assert caught.value.message == (
        "Error: Cannot write /memories/c.txt: the memory quota allows 2 files and 2 exist. "
        "Delete or merge files first; nothing was changed."
    )
    assert snapshot(s3) == before
    memory.run({"command": "delete", "path": "/memories/a.txt"})
    memory.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})


def test_byte_quota_counts_creates_and_edits(make_memory: Callable[..., S3Memory], s3: Any) -> None:
    memory = make_memory(quota=Quota(max_bytes=10))
    memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "12345"})
    memory.run({"command": "insert", "path": "/memories/a.txt", "insert_line": 1, "insert_text": "678"})
    before = snapshot(s3)
    with pytest.raises(
        CommandError, match=r"allows 10 bytes, 10 are used and this write adds 3\. Nothing was changed\.$"
    ):
        memory.run(
            {"command": "str_replace", "path": "/memories/a.txt", "old_str": "678", "new_str": "678901"}
        )
    with pytest.raises(CommandError, match="quota allows 10 bytes"):
        memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "x"})
    assert snapshot(s3) == before
    memory.run({"command": "str_replace", "path": "/memories/a.txt", "old_str": "12345", "new_str": "1"})
    memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "xyz"})


def test_quota_sees_other_writers_after_refresh(make_memory: Callable[..., S3Memory]) -> None:
    watcher = make_memory(quota=Quota(max_files=2, refresh_seconds=0))
    other = make_memory()
    other.run({"command": "create", "path": "/memories/a.txt", "file_text": "a"})
    other.run({"command": "create", "path": "/memories/b.txt", "file_text": "b"})
    with pytest.raises(CommandError, match="allows 2 files and 2 exist"):
        watcher.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})


@pytest.mark.parametrize("bad", [{"max_bytes": -1}, {"max_files": "3"}, {"max_files": True}])
def test_bad_quotas_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Quota"):
        Quota(**bad)
