"""What a synced folder keeps (``sync/state.py``): the marker names the store and the owner by
fingerprints only and refuses another memory's folder; the baseline survives as snapshot plus
journal, a torn last line ignored, damage refused with its fix."""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from s3memory.sync.folder import FolderRefused
from s3memory.sync.local_entries import LocalStat
from s3memory.sync.plan import BaselineEntry
from s3memory.sync.state import JOURNAL, MARKER, SNAPSHOT, Marker, SyncState, owner_fingerprint

STORE = "0123456789abcdef0123456789abcdef"
ENTRY = BaselineEntry("a" * 64, '"etag-1"', LocalStat(5, 1_000, 7, 2_000))
OTHER = BaselineEntry("b" * 64, '"etag-2"', LocalStat(6, 1_001, 8, 2_001))


@pytest.fixture
def here(tmp_path: Path) -> Path:
    """The folder's ``.s3memory-sync``."""
    state = tmp_path / ".s3memory-sync"
    state.mkdir(mode=0o700)
    return state


@pytest.fixture
def directory(here: Path) -> Iterator[int]:
    """A handle of ``here``."""
    descriptor = os.open(here, os.O_RDONLY | os.O_DIRECTORY)
    yield descriptor
    os.close(descriptor)


def test_the_marker_names_the_owner_by_a_fingerprint_never_in_clear(directory: int, here: Path) -> None:
    marker = Marker(STORE, owner_fingerprint(STORE, "alice@example.com"), 2)
    with SyncState(directory) as state:
        assert state.marker() is None
        assert state.check_marker(marker) is False
        state.write_marker(marker)
        assert state.marker() == marker and state.check_marker(marker) is True
    written = (here / MARKER).read_text()
    assert "alice" not in written and json.loads(written)["owner"] == marker.owner
    assert owner_fingerprint(STORE, "alice@example.com") != owner_fingerprint(STORE, "bob@example.com")
    assert owner_fingerprint(STORE, "alice@example.com") != owner_fingerprint("f" * 32, "alice@example.com")
    assert len(marker.owner) == 64


def test_a_folder_of_another_store_is_refused_naming_the_cause_and_the_fix(directory: int) -> None:
    with SyncState(directory) as state:
        state.write_marker(Marker(STORE, owner_fingerprint(STORE, "alice"), 2))
        with pytest.raises(FolderRefused) as refused:
            state.check_marker(Marker("f" * 32, owner_fingerprint("f" * 32, "alice"), 2))
    assert refused.value.reason == (
        "this folder is synced with another store (its .s3memory-sync/marker.json names it): sync it with "
        "the bucket and prefix it belongs to, or give another folder; nothing was changed"
    )


def test_a_folder_of_another_user_is_refused_naming_the_cause_and_the_fix(directory: int, here: Path) -> None:
    with SyncState(directory) as state:
        state.write_marker(Marker(STORE, owner_fingerprint(STORE, "alice"), 2))
        before = (here / MARKER).read_bytes()
        with pytest.raises(FolderRefused) as refused:
            state.check_marker(Marker(STORE, owner_fingerprint(STORE, "bob"), 2))
    assert refused.value.reason == (
        "this folder is synced with another memory of this store (its .s3memory-sync/marker.json names "
        "another user or shared memory): sync it with the --user it belongs to, or give another folder "
        "(one memory's folder is never merged into another's); nothing was changed"
    )
    assert (here / MARKER).read_bytes() == before


def test_a_store_moved_to_another_format_keeps_its_folder(directory: int) -> None:
    owner = owner_fingerprint(STORE, "alice")
    with SyncState(directory) as state:
        state.write_marker(Marker(STORE, owner, 1))
        assert state.check_marker(Marker(STORE, owner, 2)) is True
        assert state.marker() == Marker(STORE, owner, 2)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        (b"not json", "cannot be read: it is damaged or was replaced"),
        (b'{"s3memory_sync": 1, "store": 3}', "cannot be read: it is damaged or was replaced"),
        (b'{"s3memory_sync": 2}', "was written by a newer s3memory: sync it with that version"),
        (b"{" + b" " * 5000 + b"}", "cannot be read: it is damaged or was replaced"),
    ],
)
def test_a_marker_that_cannot_be_read_is_refused(
    directory: int, here: Path, content: bytes, message: str
) -> None:
    (here / MARKER).write_bytes(content)
    with SyncState(directory) as state, pytest.raises(FolderRefused, match=message):
        state.check_marker(Marker(STORE, "x", 2))


def test_a_marker_that_is_a_link_is_never_followed(directory: int, here: Path, tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.json"
    target.write_text(json.dumps({"s3memory_sync": 1, "store": STORE, "owner": "x", "format": 2}))
    (here / MARKER).symlink_to(target)
    with SyncState(directory) as state, pytest.raises(FolderRefused, match="cannot be read"):
        state.marker()


def test_the_baseline_survives_as_snapshot_and_journal(directory: int, here: Path) -> None:
    with SyncState(directory) as state:
        assert state.load() == {}
        state.record("/memories/a", ENTRY)
        state.record("/memories/b", ENTRY)
        state.compact()
        state.record("/memories/b", OTHER)
        state.record("/memories/a", None)
        state.record("/memories/c\u00e9\n", ENTRY)
    assert len((here / JOURNAL).read_bytes().splitlines()) == 3
    with SyncState(directory) as state:
        assert state.load() == {"/memories/b": OTHER, "/memories/c\u00e9\n": ENTRY}


def test_a_reset_forgets_the_baseline_on_disk_too(directory: int) -> None:
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", ENTRY)
        state.reset()
        assert state.baseline == {}
    with SyncState(directory) as state:
        assert state.load() == {}


def test_a_reset_needs_no_readable_state(directory: int, here: Path) -> None:
    (here / SNAPSHOT).write_bytes(b"damaged")
    (here / JOURNAL).write_bytes(b"garbage\ngarbage\n")
    with SyncState(directory) as state:
        state.reset()
        state.record("/memories/a", ENTRY)
    with SyncState(directory) as state:
        assert state.load() == {"/memories/a": ENTRY}


def test_a_state_with_no_change_is_not_written_again(directory: int, here: Path) -> None:
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", ENTRY)
        state.compact()
    written = (here / SNAPSHOT).stat()
    with SyncState(directory) as state:
        state.load()
        state.compact()
    assert (here / SNAPSHOT).stat().st_ino == written.st_ino
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", None)
        state.compact()
    assert (here / SNAPSHOT).stat().st_ino != written.st_ino


def test_each_record_is_one_line_in_the_journal_before_record_returns(directory: int, here: Path) -> None:
    with SyncState(directory) as state:
        state.load()
        for number in range(3):
            state.record(f"/memories/{number}", ENTRY)
            assert len((here / JOURNAL).read_bytes().splitlines()) == number + 1


def test_compact_empties_the_journal_and_a_rerun_of_a_journal_over_its_snapshot_changes_nothing(
    directory: int, here: Path
) -> None:
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", ENTRY)
        journal = (here / JOURNAL).read_bytes()
        state.compact()
    assert (here / JOURNAL).read_bytes() == b""
    (here / JOURNAL).write_bytes(journal)  # a kill between the snapshot and the truncation
    with SyncState(directory) as state:
        assert state.load() == {"/memories/a": ENTRY}


@pytest.mark.parametrize(
    "torn", [b'{"path": "/memories/b", "ent', b"garbage\n", b'{"path": "/memories/b"}\n']
)
def test_a_torn_last_journal_line_is_ignored_and_cut_away(directory: int, here: Path, torn: bytes) -> None:
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", ENTRY)
    with open((here / JOURNAL), "ab") as journal:
        journal.write(torn)
    with SyncState(directory) as state:
        assert state.load() == {"/memories/a": ENTRY}
        state.record("/memories/c", OTHER)  # appended on a line of its own
    with SyncState(directory) as state:
        assert state.load() == {"/memories/a": ENTRY, "/memories/c": OTHER}


def test_a_damaged_journal_line_before_the_last_is_refused_with_the_fix(directory: int, here: Path) -> None:
    with SyncState(directory) as state:
        state.load()
        state.record("/memories/a", ENTRY)
    path = here / JOURNAL
    path.write_bytes(b"garbage\n" + path.read_bytes())
    with SyncState(directory) as state, pytest.raises(FolderRefused) as refused:
        state.load()
    assert refused.value.reason == (
        "the state sync keeps of this folder (.s3memory-sync/journal.jsonl) cannot be read: it is damaged "
        "or was replaced. To go on, remove baseline.json and journal.jsonl from the folder's .s3memory-sync "
        "directory (the next round then compares every file again and loses nothing), then sync again; "
        "nothing was changed"
    )


@pytest.mark.parametrize(
    "snapshot",
    [
        b"{",
        b'{"s3memory_sync": 1, "files": []}',
        b'{"s3memory_sync": 1, "files": {"/memories/a": ["x", "y", 1, 2, 3]}}',
        b'{"s3memory_sync": 1, "files": {"/memories/a": ["x", "y", 1, 2, 3, true]}}',
        b'{"files": {}}',
    ],
)
def test_a_damaged_snapshot_is_refused(directory: int, here: Path, snapshot: bytes) -> None:
    (here / SNAPSHOT).write_bytes(snapshot)
    with (
        SyncState(directory) as state,
        pytest.raises(FolderRefused, match=r"\(.s3memory-sync/baseline.json\)"),
    ):
        state.load()
