"""Renames on storage format 2 copy on the server (``moves.ServerCopyMover``): no content passes
through the client, the copy is placed at its new path by new metadata, and a bucket writer cannot
make a rename move anything it should not. Format 1's re-sealing mover is covered by the contract,
job and crash-safety suites, which run on both formats."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.core.files import VerifiedHeaders
from s3memory.core.job_records import place_digest
from s3memory.core.job_runner import MARK_MAX_AGE_SECONDS
from s3memory.core.moves import MARK_PREFIX, WITHDRAW_WINDOW_SECONDS, ServerCopyMover
from s3memory.core.paths import memory_path
from s3memory.crypto import HEADER_BYTES, HEADER_METADATA, PLACE_METADATA, LocalKeyProvider, sealed_version
from s3memory.errors import CommandError, IntegrityError, PreconditionFailed, SourceChanged
from s3memory.memory import S3Memory
from tests.support.access import AccessRecordWrites
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, stored_keys

BACKENDS = ("moto", SEAWEEDFS_SLOW)
FILES = 40
NEW_MASTER_KEY = bytes(range(100, 132))


@pytest.fixture
def memory(make_memory: Callable[..., S3Memory]) -> S3Memory:
    return make_memory(storage_format=2)


def key(memory: S3Memory, path: str) -> str:
    return memory.placed.layout.file_key(memory_path(path))


def overwrite(s3: Any, memory: S3Memory, target: str, source: str) -> None:
    """The bucket writer's copy of the object at ``source`` (bytes and metadata) over ``target``."""
    s3.copy_object(
        Bucket=BUCKET, Key=key(memory, target), CopySource={"Bucket": BUCKET, "Key": key(memory, source)}
    )


def text_at(memory: S3Memory, path: str) -> str | None:
    found = memory.placed.files.read(memory_path(path))
    return None if found is None else found.text


def marks(memory: S3Memory, s3: Any) -> list[str]:
    """The keys of the user's relied-on marks."""
    return stored_keys(s3, memory.placed.layout.key_of_internal(MARK_PREFIX))


@contextmanager
def sent(memory: S3Memory) -> Iterator[list[tuple[str, str]]]:
    """The requests ``memory``'s client sends inside the block: (operation, key)."""
    requests: list[tuple[str, str]] = []

    def note(model: Any, params: dict[str, Any], **_: Any) -> None:
        requests.append((model.name, params.get("Key", "")))

    events = memory.store.bucket.client.meta.events
    events.register("provide-client-params.s3", note)
    try:
        yield requests
    finally:
        events.unregister("provide-client-params.s3", note)


@contextmanager
def requests_of(memory: S3Memory) -> Iterator[Any]:
    """The requests sent inside the block, by operation; the access record a command writes before
    its answer (at most one PUT) is not counted."""
    counter = RequestCounter(memory.store.bucket.client)
    records = AccessRecordWrites(memory.store.bucket.client)
    with counter.window() as seen:
        yield seen
    seen.subtract({"PutObject": records.count})


def test_a_directory_rename_copies_every_file_on_the_server_and_reads_or_writes_no_content(
    memory: S3Memory,
) -> None:
    paths = [f"/memories/notes/{'deep/' * (index % 3)}file{index:02d}.md" for index in range(FILES)]
    for path in paths:
        memory.create(memory_path(path), f"text of {path}\n")
    with requests_of(memory) as seen:
        answer = memory.run(
            {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/kept"}
        )
    assert answer == "Successfully renamed /memories/notes to /memories/kept"
    # no file's content was read or written (one PutObject: the job's record); this process wrote
    # every source, so none is looked at: the HEADs ask whether a file is at /memories/kept and
    # whether the job's record is still there
    assert +seen == {
        "ListObjectsV2": 3,
        "HeadObject": 2,
        "PutObject": 1,
        "CopyObject": FILES,
        "DeleteObjects": 1,
        "DeleteObject": 1,
    }
    for path in paths:
        assert text_at(memory, path) is None
        assert text_at(memory, path.replace("/notes/", "/kept/")) == f"text of {path}\n"
    # the copies are known too: renamed on, they are not looked at either
    with requests_of(memory) as seen:
        memory.run({"command": "rename", "old_path": "/memories/kept", "new_path": "/memories/notes"})
    assert seen["HeadObject"] == 2 and seen["CopyObject"] == FILES and seen["GetObject"] == 0


def test_a_directory_rename_in_a_process_that_did_not_make_the_files_looks_at_each_source(
    memory: S3Memory, make_memory: Callable[..., S3Memory]
) -> None:
    """The cold path: a process that knows nothing of the sources (it did not read, write or copy
    them) looks at each one (a HEAD) before it copies it."""
    paths = [f"/memories/notes/file{index:02d}.md" for index in range(FILES)]
    for path in paths:
        memory.create(memory_path(path), f"text of {path}\n")
    other = make_memory(storage_format=2)
    with requests_of(other) as seen:
        other.run({"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/kept"})
    assert +seen == {
        "ListObjectsV2": 3,
        "HeadObject": FILES + 3,  # each source, a file at /memories/notes? at /memories/kept? the record
        "PutObject": 1,
        "CopyObject": FILES,
        "DeleteObjects": 1,
        "DeleteObject": 1,
    }
    for path in paths:
        assert text_at(other, path.replace("/notes/", "/kept/")) == f"text of {path}\n"


def test_a_file_rename_copies_on_the_server_and_names_who_moved_it(memory: S3Memory) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover = memory.acting_as("bob")
    with requests_of(mover) as seen:
        answer = mover.run({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})
    assert answer == "Successfully renamed /memories/a.md to /memories/b.md"
    assert +seen == {"HeadObject": 1, "CopyObject": 1, "DeleteObject": 1, "ListObjectsV2": 2}
    moved = memory.placed.files.read(memory_path("/memories/b.md"))
    assert moved is not None and (moved.text, moved.author) == ("alpha\n", "bob")
    assert text_at(memory, "/memories/a.md") is None


def test_a_copy_keeps_the_sources_bytes_and_places_them_anew(memory: S3Memory, s3: Any) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    before = s3.get_object(Bucket=BUCKET, Key=key(memory, "/memories/a.md"))
    body = before["Body"].read()
    memory.rename(memory_path("/memories/a.md"), memory_path("/memories/b.md"))
    after = s3.get_object(Bucket=BUCKET, Key=key(memory, "/memories/b.md"))
    assert after["Body"].read() == body
    assert after["Metadata"][HEADER_METADATA] == before["Metadata"][HEADER_METADATA]
    assert after["Metadata"][PLACE_METADATA] != before["Metadata"][PLACE_METADATA]


def test_a_source_the_bucket_writer_swapped_for_another_file_is_not_moved(memory: S3Memory, s3: Any) -> None:
    """Another of the user's files copied (with its metadata) over a source key: its place record
    names another path, so the rename leaves it where it is and copies nothing from it."""
    memory.create(memory_path("/memories/d/a.md"), "alpha\n")
    memory.create(memory_path("/memories/d/b.md"), "beta\n")
    memory.create(memory_path("/memories/secret.md"), "secret\n")
    overwrite(s3, memory, "/memories/d/a.md", "/memories/secret.md")
    with pytest.raises(CommandError) as refused:
        memory.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    assert refused.value.message == (
        "Error: Renamed /memories/d to /memories/e, except 1 file(s) that changed during the rename and "
        "were left at their old paths: /memories/d/a.md"
    )
    assert text_at(memory, "/memories/e/b.md") == "beta\n"
    assert memory.store.bucket.head(key(memory, "/memories/e/a.md")) is None
    assert text_at(memory, "/memories/secret.md") == "secret\n"
    with pytest.raises(IntegrityError):
        memory.placed.files.read(memory_path("/memories/d/a.md"))


def test_a_bucket_writers_copy_of_a_known_object_to_a_source_key_is_looked_at_and_not_moved(
    memory: S3Memory, s3: Any
) -> None:
    """The attack on what this process knows: another of the user's objects that it verified (so
    its bytes and ETag are known) copied over a source key. What it knows is by key *and* ETag, so
    that ETag at this key is unknown: the source is looked at (one HEAD), its place record names
    another path, and it stays. Known by ETag alone, the secret would be moved to /memories/e/a.md."""
    memory.create(memory_path("/memories/d/a.md"), "alpha\n")
    memory.create(memory_path("/memories/d/b.md"), "beta\n")
    memory.create(memory_path("/memories/secret.md"), "secret\n")
    assert text_at(memory, "/memories/secret.md") == "secret\n"  # read: verified at its own key
    overwrite(s3, memory, "/memories/d/a.md", "/memories/secret.md")
    with requests_of(memory) as seen, pytest.raises(CommandError) as refused:
        memory.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    assert refused.value.message == (
        "Error: Renamed /memories/d to /memories/e, except 1 file(s) that changed during the rename and "
        "were left at their old paths: /memories/d/a.md"
    )
    # b.md, known, is copied without a look; a.md is looked at (and refused): one HEAD, no copy
    assert +seen == {
        "ListObjectsV2": 3,
        "HeadObject": 3,  # a.md, a file at /memories/e?, the record
        "PutObject": 1,
        "CopyObject": 1,
        "DeleteObjects": 1,
        "DeleteObject": 1,
    }
    assert text_at(memory, "/memories/e/b.md") == "beta\n"
    assert memory.store.bucket.head(key(memory, "/memories/e/a.md")) is None
    assert text_at(memory, "/memories/secret.md") == "secret\n"


def test_bytes_known_at_a_path_that_come_back_there_are_moved_as_a_restored_version_is(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """What skipping the look gives up, and why it is no loss: a bucket writer puts back at a
    source key the very bytes this process verified there, under another path's metadata (here,
    copied from where a move placed them). A process that knows those bytes at that key
    copies them with a place record of its own, as the look would for the same bytes restored
    with their own metadata (an earlier version, which a bucket writer can always restore): the
    text the file had at that path, nothing else. A process that does not know them looks, finds
    the other path's place record and leaves them. (The bytes are put back over the source, not
    after its delete: SeaweedFS may answer 404 to a HEAD of a key written again just after.)"""
    memory.create(memory_path("/memories/d/a.md"), "alpha\n")
    origin = ServerCopyMover(memory.placed.files).locate(memory_path("/memories/d/a.md"))
    assert origin is not None
    assert ServerCopyMover(memory.placed.files).place(origin, memory_path("/memories/e/a.md")) is not None
    overwrite(s3, memory, "/memories/d/a.md", "/memories/e/a.md")  # same bytes, /e's place record
    cold = make_memory(storage_format=2)
    with pytest.raises(CommandError, match=r"left at their old paths: /memories/d/a\.md$"):
        cold.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/f"})
    assert cold.store.bucket.head(key(cold, "/memories/f/a.md")) is None
    mover = memory.acting_as("bob")
    mover.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/g"})
    moved = memory.placed.files.read(memory_path("/memories/g/a.md"))
    assert moved is not None and (moved.text, moved.author) == ("alpha\n", "bob")
    assert memory.store.bucket.head(key(memory, "/memories/d/a.md")) is None


def test_a_rename_that_copies_nothing_reports_what_it_kept_however_slow_its_record(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """The job's record is looked for (still there?) only once it is stored, also when no source
    was copied (none waited for the record): a record still on its way is not taken for one that
    another finisher removed, which would report a swapped source kept as renamed."""
    memory.create(memory_path("/memories/d/a.md"), "alpha\n")
    memory.create(memory_path("/memories/secret.md"), "secret\n")
    overwrite(s3, memory, "/memories/d/a.md", "/memories/secret.md")
    cold = make_memory(storage_format=2)

    def slow_record(**_: Any) -> None:
        time.sleep(0.5)  # the HEAD of the swapped source and its refusal come first

    cold.store.bucket.client.meta.events.register("before-send.s3.PutObject", slow_record)
    try:
        with pytest.raises(CommandError, match=r"left at their old paths: /memories/d/a\.md$"):
            cold.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    finally:
        cold.store.bucket.client.meta.events.unregister("before-send.s3.PutObject", slow_record)
    assert cold.store.bucket.head(key(cold, "/memories/e/a.md")) is None


def test_a_known_source_edited_since_its_plan_is_looked_at_before_a_copy_is_relied_on(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """A refused copy of a source not looked at may mean the source changed or that a copy is at
    the destination: the source is looked at before that copy is relied on (marked), so the other
    finisher that made it can still withdraw it once it finds the source edited."""
    memory.create(memory_path("/memories/d/x.md"), "x\n")
    old = memory_path("/memories/d")
    job = memory.placed.jobs.plan(
        "rename", old, memory_path("/memories/e"), memory.placed.files.sources_below(old)
    )
    other = make_memory(storage_format=2)
    finisher = ServerCopyMover(other.placed.files)
    origin = finisher.locate(memory_path("/memories/d/x.md"))
    assert origin is not None
    made = finisher.place(origin, memory_path("/memories/e/x.md"))  # another finisher's copy
    assert made is not None
    other.str_replace(memory_path("/memories/d/x.md"), "x", "edited")  # an edit since the plan
    assert memory.placed.jobs.run(job) == ["/memories/d/x.md"]  # kept
    assert marks(memory, s3) == []
    finisher.withdraw(made)
    assert memory.store.bucket.head(key(memory, "/memories/e/x.md")) is None
    assert text_at(memory, "/memories/d/x.md") == "edited\n"


def test_what_a_process_knows_of_its_objects_is_what_it_verified_or_made(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """Known: a read that opened the object at its path, a write of content placed at its path, a
    copy this process made. Not known: what a HEAD showed, an internal object, content written at
    a key its place record does not name, another memory's objects. Shared by a memory's twins."""
    files, verified = memory.placed.files, memory.placed.files.verified
    a, b = key(memory, "/memories/a.md"), key(memory, "/memories/b.md")

    def etag(object_key: str) -> str:
        return str(s3.head_object(Bucket=BUCKET, Key=object_key)["ETag"])

    memory.create(memory_path("/memories/a.md"), "alpha\n")
    header = verified.get(a, etag(a))
    assert header is not None
    assert header.place == place_digest(s3.head_object(Bucket=BUCKET, Key=a)["Metadata"][PLACE_METADATA])
    assert verified.get(a, etag(a).strip('"')) == header  # however the ETag is spelt
    memory.str_replace(memory_path("/memories/a.md"), "alpha", "omega")
    assert verified.get(a, etag(a)) not in (None, header)
    memory.acting_as("bob").rename(memory_path("/memories/a.md"), memory_path("/memories/b.md"))
    assert memory.acting_as("carol").placed.files.verified.get(b, etag(b)) is not None  # the copy
    other = make_memory(storage_format=2)
    assert ServerCopyMover(other.placed.files).locate(memory_path("/memories/b.md")) is not None
    assert len(other.placed.files.verified) == 0  # a HEAD teaches nothing
    assert other.placed.files.read(memory_path("/memories/b.md")) is not None
    assert other.placed.files.verified.get(b, etag(b)) == verified.get(b, etag(b))  # a read does
    misplaced = key(memory, "/memories/c.md")
    written = files.put_new(misplaced, files.encode(memory_path("/memories/elsewhere.md"), "c\n"))
    assert written is not None and verified.get(misplaced, written) is None
    format_1 = make_memory("bob", storage_format=1)
    format_1.create(memory_path("/memories/a.md"), "alpha\n")
    assert format_1.placed.files.read(memory_path("/memories/a.md")) is not None
    assert len(format_1.placed.files.verified) == 0  # format 1 renames read every file anyway


def header_of(known: VerifiedHeaders, object_key: str, etag: str) -> bytes | None:
    verified = known.get(object_key, etag)
    return None if verified is None else verified.header


def test_what_a_process_knows_is_bounded_least_recently_used_first_out() -> None:
    known = VerifiedHeaders()
    header = bytes(HEADER_BYTES)
    for index in range(VerifiedHeaders.LIMIT + 10):
        known.add(f"k{index}", f'"{index}"', header, "place")
        if index == VerifiedHeaders.LIMIT - 1:
            assert header_of(known, "k0", '"0"') == header  # used: kept longer
    assert len(known) == VerifiedHeaders.LIMIT
    assert header_of(known, "k0", '"0"') == header
    assert known.get("k1", '"1"') is None and known.get("k10", '"10"') is None
    assert header_of(known, "k11", '"11"') == header
    known.add("k", "", header, "place")  # no ETag, or no header: nothing learned
    known.add("k", '"e"', b"short", "place")
    assert known.get("k", '"e"') is None and known.get("k", "") is None


def test_what_a_process_knows_holds_as_many_of_the_longest_keys() -> None:
    known = VerifiedHeaders()
    header = bytes(HEADER_BYTES)
    long_key = "k" * 1020  # with its 4-digit start, as long as a key may be
    for index in range(VerifiedHeaders.LIMIT):
        known.add(f"{index:04d}{long_key}", f'"{index:04d}"', header, "place")
    assert len(known) == VerifiedHeaders.LIMIT  # a 1,000-file rename's copies all stay known
    assert header_of(known, f"0000{long_key}", "0000") == header  # quoted or not, one ETag
    assert known.get(f"0000{long_key}", "0001") is None and known.get(f"000{long_key}", "0000") is None
    known.add("ab", '"c"', header, "place")
    assert known.get("a", '"bc"') is None  # the key's end is framed, not run into the ETag


def test_a_file_rename_of_a_swapped_source_is_refused_and_changes_nothing(memory: S3Memory, s3: Any) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    memory.create(memory_path("/memories/secret.md"), "secret\n")
    overwrite(s3, memory, "/memories/a.md", "/memories/secret.md")
    with pytest.raises(IntegrityError):
        memory.run({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})
    assert memory.store.bucket.head(key(memory, "/memories/b.md")) is None
    assert text_at(memory, "/memories/secret.md") == "secret\n"


def test_a_copy_whose_answer_was_lost_is_known_as_ours(
    memory: S3Memory, monkeypatch: pytest.MonkeyPatch
) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover = ServerCopyMover(memory.placed.files)
    copy_new = memory.store.bucket.copy_new

    def lost_answer(*args: Any, **kwargs: Any) -> str | None:
        copy_new(*args, **kwargs)
        raise PreconditionFailed(args[1], after_retry=True)  # the retry found our own copy there

    monkeypatch.setattr(memory.store.bucket, "copy_new", lost_answer)
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    made = mover.place(origin, memory_path("/memories/b.md"))
    assert made is not None and made.path == memory_path("/memories/b.md")
    assert made.etag == memory.store.bucket.head(key(memory, "/memories/b.md")).etag  # type: ignore[union-attr]
    assert mover.place(origin, memory_path("/memories/b.md")) is None  # not after a retry: someone's


def test_a_copy_refused_with_nothing_at_the_destination_means_the_source_changed(memory: S3Memory) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover = ServerCopyMover(memory.placed.files)
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    memory.str_replace(memory_path("/memories/a.md"), "alpha", "omega")
    with pytest.raises(SourceChanged):
        mover.place(origin, memory_path("/memories/b.md"))
    memory.delete(memory_path("/memories/a.md"))
    with pytest.raises(SourceChanged):
        mover.place(origin, memory_path("/memories/b.md"))
    assert memory.store.bucket.head(key(memory, "/memories/b.md")) is None


def test_withdrawing_a_copy_spares_another_copy_with_the_same_bytes_and_etag(memory: S3Memory) -> None:
    """Two copies of one source have the same bytes, so the same ETag: an ETag condition alone
    cannot tell them apart. Withdrawing the first, already gone, must not remove the second."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover = ServerCopyMover(memory.placed.files)
    target = memory_path("/memories/b.md")
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    first = mover.place(origin, target)
    assert first is not None
    memory.store.bucket.delete(key(memory, "/memories/b.md"))
    second = mover.place(origin, target)
    assert second is not None and second.etag == first.etag and second.place != first.place
    mover.withdraw(first)
    assert text_at(memory, "/memories/b.md") == "alpha\n"
    mover.withdraw(second)
    assert memory.store.bucket.head(key(memory, "/memories/b.md")) is None


def test_a_copy_another_process_relied_on_is_not_withdrawn(memory: S3Memory) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    writer, finisher = ServerCopyMover(memory.placed.files), ServerCopyMover(memory.placed.files)
    target = memory_path("/memories/b.md")
    origin = writer.locate(memory_path("/memories/a.md"))
    assert origin is not None
    made = writer.place(origin, target)
    assert made is not None
    assert finisher.place(origin, target) is None
    assert finisher.accept(origin, target)
    writer.withdraw(made)
    assert text_at(memory, "/memories/b.md") == "alpha\n"


def test_only_a_copy_of_the_same_content_placed_at_the_destination_is_accepted(
    memory: S3Memory, s3: Any
) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    memory.create(memory_path("/memories/b.md"), "alpha\n")  # the same text, another write
    mover = ServerCopyMover(memory.placed.files)
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    assert not mover.accept(origin, memory_path("/memories/b.md"))
    assert not mover.accept(origin, memory_path("/memories/c.md"))  # nothing there
    memory.store.bucket.delete(key(memory, "/memories/b.md"))
    overwrite(s3, memory, "/memories/b.md", "/memories/a.md")  # keeps a.md's place record
    assert not mover.accept(origin, memory_path("/memories/b.md"))
    assert marks(memory, s3) == []


def test_the_copy_is_made_only_from_the_version_it_was_found_with(memory: S3Memory) -> None:
    """The ETag found by the HEAD is the copy's ``CopySourceIfMatch``: an edit in between is
    never moved under the old version's check, and the rename of a file says so."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover = ServerCopyMover(memory.placed.files)
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    memory.str_replace(memory_path("/memories/a.md"), "alpha", "omega")
    memory.placed.jobs.mover = _Stale(memory.placed.files, origin)
    with pytest.raises(CommandError) as refused:
        memory.rename(memory_path("/memories/a.md"), memory_path("/memories/b.md"))
    assert refused.value.message == (
        "Error: /memories/a.md changed while it was being renamed; it was left where it is and nothing was renamed."
    )
    assert text_at(memory, "/memories/a.md") == "omega\n"
    assert memory.store.bucket.head(key(memory, "/memories/b.md")) is None


class _Stale(ServerCopyMover):
    """A mover whose ``locate`` answers what it found before an edit (the edit lands between the
    HEAD and the copy)."""

    def __init__(self, files: Any, origin: Any) -> None:
        super().__init__(files)
        self._origin = origin

    def locate(self, path: Any) -> Any:
        return self._origin


def rotated(memory: S3Memory, make_memory: Callable[..., S3Memory]) -> S3Memory:
    """The same user's memory once the local master key has moved to version 2 (version 1 kept to
    open what it sealed)."""
    return make_memory(
        key_provider=LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}), storage_format=2
    )


def version_at(memory: S3Memory, s3: Any, path: str) -> int | None:
    return sealed_version(s3.get_object(Bucket=BUCKET, Key=key(memory, path))["Body"].read())


def test_a_file_sealed_under_an_older_key_version_is_sealed_again_not_copied(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """A copy would keep the version a rotation is retiring (docs/rotation.md): such a source is
    read and written under the current version, by the mover."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    memory.create(memory_path("/memories/d/x.md"), "x\n")
    memory.create(memory_path("/memories/d/y.md"), "y\n")
    later = rotated(memory, make_memory).acting_as("bob")
    with requests_of(later) as seen:
        later.run({"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"})
    assert seen["CopyObject"] == 0 and seen["GetObject"] == 1 and seen["PutObject"] == 1
    later.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    for path, text in [
        ("/memories/b.md", "alpha\n"),
        ("/memories/e/x.md", "x\n"),
        ("/memories/e/y.md", "y\n"),
    ]:
        assert version_at(later, s3, path) == 2
        moved = later.placed.files.read(memory_path(path))
        assert moved is not None and (moved.text, moved.author) == (text, "bob")
    assert text_at(later, "/memories/a.md") is None and text_at(later, "/memories/d/x.md") is None


def test_a_copy_sealed_again_is_accepted_by_a_twin_only_while_its_source_is_unchanged(
    memory: S3Memory, make_memory: Callable[..., S3Memory]
) -> None:
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    later = rotated(memory, make_memory)
    writer, twin = ServerCopyMover(later.placed.files), ServerCopyMover(later.placed.files)
    origin = writer.locate(memory_path("/memories/a.md"))
    assert origin is not None
    assert writer.place(origin, memory_path("/memories/b.md")) is not None
    assert twin.place(origin, memory_path("/memories/b.md")) is None
    assert twin.accept(origin, memory_path("/memories/b.md"))
    later.str_replace(memory_path("/memories/a.md"), "alpha", "omega")
    assert not twin.accept(origin, memory_path("/memories/b.md"))


def test_a_mark_names_one_copy_not_its_source_nor_another_copy_at_its_key(memory: S3Memory, s3: Any) -> None:
    """A mark says one copy was relied on: the copy's key and its place record name it. A copy of
    a marked file is not marked, nor is a later copy of the same source at the same key (the same
    bytes and ETag), so each can be withdrawn when its source changes under it."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    mover, other = ServerCopyMover(memory.placed.files), ServerCopyMover(memory.placed.files)
    target = memory_path("/memories/b.md")
    origin = mover.locate(memory_path("/memories/a.md"))
    assert origin is not None
    first = mover.place(origin, target)
    assert first is not None and other.accept(origin, target)
    assert marks(memory, s3) == [mover.mark_key(first)]
    memory.store.bucket.delete(key(memory, "/memories/b.md"))
    second = mover.place(origin, target)
    assert (
        second is not None and second.etag == first.etag and mover.mark_key(second) != mover.mark_key(first)
    )
    mover.withdraw(second)
    assert memory.store.bucket.head(key(memory, "/memories/b.md")) is None
    copied = memory.placed.jobs.mover.locate(memory_path("/memories/a.md"))
    assert copied is not None
    onward = mover.place(copied, memory_path("/memories/c.md"))
    assert onward is not None and mover.mark_key(onward) not in marks(memory, s3)


def test_a_late_finisher_does_not_move_again_a_file_moved_back_after_the_job_ended(memory: S3Memory) -> None:
    """A copy keeps its source's bytes, so a file renamed away and back has the ETag a job planned
    (where ETags digest the bytes): a finisher that finds the job's record gone moves nothing."""
    memory.create(memory_path("/memories/d/x.md"), "x\n")
    old, new = memory_path("/memories/d"), memory_path("/memories/e")
    job = memory.placed.jobs.plan("rename", old, new, memory.placed.files.sources_below(old))
    assert memory.placed.jobs.run(job) == []  # a fast finisher ends it
    memory.rename(memory_path("/memories/e/x.md"), memory_path("/memories/d/x.md"))
    assert [source.etag for source in memory.placed.files.sources_below(old)] == [
        source.etag for source in job.sources
    ]
    assert memory.placed.jobs.finish(job) == []  # the late finisher
    assert text_at(memory, "/memories/d/x.md") == "x\n"
    assert memory.store.bucket.head(key(memory, "/memories/e/x.md")) is None


def test_a_late_finisher_does_not_delete_a_file_moved_back_after_the_job_ended(memory: S3Memory) -> None:
    memory.create(memory_path("/memories/f/y.md"), "y\n")
    directory = memory_path("/memories/f")
    job = memory.placed.jobs.plan("delete", directory, None, memory.placed.files.sources_below(directory))
    memory.rename(memory_path("/memories/f/y.md"), memory_path("/memories/t.md"))  # raced the record
    assert memory.placed.jobs.run(job) == []  # ends: nothing planned is left
    memory.rename(memory_path("/memories/t.md"), memory_path("/memories/f/y.md"))
    assert memory.placed.jobs.finish(job) == []  # the late finisher
    assert text_at(memory, "/memories/f/y.md") == "y\n"


def test_a_relied_on_copy_is_marked_by_an_object_of_its_own_and_its_writer_keeps_it(
    memory: S3Memory, s3: Any
) -> None:
    """Issue 21: a copy relied on is marked without any request that writes it (SeaweedFS's
    PutObjectTagging rewrites the whole object, undoing an edit acknowledged meanwhile). The mark
    is an empty object of its own under ``internal/relied/``, named by the copy's key and place
    record; the copy's writer finds it before withdrawing, keeps the copy and removes the mark."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    writer, finisher = ServerCopyMover(memory.placed.files), ServerCopyMover(memory.placed.files)
    target = memory_path("/memories/b.md")
    origin = writer.locate(memory_path("/memories/a.md"))
    assert origin is not None
    made = writer.place(origin, target)
    assert made is not None
    before = s3.head_object(Bucket=BUCKET, Key=key(memory, "/memories/b.md"))
    with sent(memory) as requests:
        assert finisher.accept(origin, target)
    (mark,) = marks(memory, s3)
    assert requests == [("HeadObject", key(memory, "/memories/b.md")), ("PutObject", mark)]
    with sent(memory) as requests:
        writer.withdraw(made)
    assert requests == [("HeadObject", mark), ("DeleteObject", mark)]
    after = s3.head_object(Bucket=BUCKET, Key=key(memory, "/memories/b.md"))
    assert [after[field] for field in ("ETag", "LastModified", "Metadata")] == [
        before[field] for field in ("ETag", "LastModified", "Metadata")
    ]
    assert text_at(memory, "/memories/b.md") == "alpha\n" and marks(memory, s3) == []


def test_a_writer_back_after_its_window_keeps_its_copy_and_marks_that_outlived_it_are_removed(
    memory: S3Memory, s3: Any
) -> None:
    """A mark matters only while its copy's writer may still withdraw the copy: the writer does so
    only within ``WITHDRAW_WINDOW_SECONDS`` of starting the copy (by its clock, after it looked for
    the mark), so a view of the root removes the marks it lists once they are older than that plus
    the clock skew allowed, and keeps younger ones."""
    memory.create(memory_path("/memories/a.md"), "alpha\n")
    now = [time.time()]
    writer, finisher = (
        ServerCopyMover(memory.placed.files, lambda: now[0]),
        ServerCopyMover(memory.placed.files),
    )
    target = memory_path("/memories/b.md")
    origin = writer.locate(memory_path("/memories/a.md"))
    assert origin is not None
    made = writer.place(origin, target)
    assert made is not None
    now[0] += WITHDRAW_WINDOW_SECONDS + 1
    writer.withdraw(made)  # not marked, but too late to tell: kept
    assert text_at(memory, "/memories/b.md") == "alpha\n"
    assert finisher.accept(origin, target)
    (mark,) = marks(memory, s3)
    memory.placed.jobs.clock = lambda: time.time() + MARK_MAX_AGE_SECONDS - 60
    memory.run({"command": "view", "path": "/memories"})
    assert marks(memory, s3) == [mark]
    memory.placed.jobs.clock = lambda: time.time() + MARK_MAX_AGE_SECONDS + 60
    memory.run({"command": "view", "path": "/memories"})
    assert marks(memory, s3) == []


def test_a_replayed_rename_record_is_looked_at_even_by_a_process_that_knew_its_sources(
    memory: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """What a process verified of an object names the place record it saw, which the same bytes
    copied back to the same key no longer have. This process wrote /memories/d/x.md; others rename
    /memories/d away and back (the same key, bytes and ETag, a new place record); a bucket writer
    puts the first rename's record back. The process does not trust what it knows of a record it
    finds: it looks at the source, finds another place record than the recorded one, and moves
    nothing (it would have moved the file by what it knew)."""
    memory.create(memory_path("/memories/d/x.md"), "x\n")
    renamer, back = make_memory(storage_format=2), make_memory(storage_format=2)
    jobs = memory.placed.layout.key_of_internal("jobs/")
    records: dict[str, bytes] = {}

    def keep(params: dict[str, Any], **_: Any) -> None:
        if params["Key"].startswith(jobs):
            records[params["Key"]] = params["Body"]

    events = renamer.store.bucket.client.meta.events
    events.register("provide-client-params.s3.PutObject", keep)
    renamer.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    events.unregister("provide-client-params.s3.PutObject", keep)
    back.run({"command": "rename", "old_path": "/memories/e", "new_path": "/memories/d"})
    ((record_key, record),) = records.items()
    s3.put_object(Bucket=BUCKET, Key=record_key, Body=record)  # the replay
    with requests_of(memory) as seen:
        memory.run({"command": "view", "path": "/memories"})
    assert seen["HeadObject"] == 2 and seen["CopyObject"] == 0  # the source, looked at; the record
    assert text_at(memory, "/memories/d/x.md") == "x\n"
    assert memory.store.bucket.head(key(memory, "/memories/e/x.md")) is None
    assert stored_keys(s3, jobs) == []
