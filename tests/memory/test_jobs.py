"""The job protocol's invariants (docs/jobs.md), against crashes, races and a bucket writer without
the key: a job never loses a later write, never locks a user out, and cannot be replayed to move a
file. A "process" is a fresh ``S3Memory`` on a fresh client; ``ProcessDeath`` kills one mid-command.
"""

from __future__ import annotations

import json
import logging
import threading
import time
from collections.abc import Callable
from typing import Any
from urllib.parse import unquote, urlsplit

import pytest

from s3memory.core.job_records import PREVIOUS_RECORD_FORMAT, Job, Source
from s3memory.core.paths import KeyLayout, memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError, RecordRefused
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT, key_of, prefix_of, rename_crash_point
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW, snapshot, stored_keys
from tests.support.faults import Fault, ProcessDeath, SimulatedCrash, held, inject
from tests.support.memories import seed

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)
Process = Callable[[], tuple[S3Memory, Any]]


@pytest.fixture
def process(new_client: Callable[..., Any], local_keys: LocalKeyProvider) -> Process:
    """A new process: alice's memory on a client of its own (so a death ends only that process)."""

    def start() -> tuple[S3Memory, Any]:
        client = new_client()
        return S3Memory(Bucket(client, BUCKET), "alice", local_keys, storage_format=STORAGE_FORMAT), client

    return start


@pytest.fixture
def layout(process: Process) -> KeyLayout:
    """Where alice's objects live in this test's bucket (format 2: below her namespace token)."""
    return process()[0].placed.layout


@pytest.fixture
def jobs(layout: KeyLayout) -> str:
    """The prefix of alice's job records."""
    return layout.key_of_internal("jobs/")


@pytest.fixture
def quarantine(layout: KeyLayout) -> str:
    """The prefix of alice's records set aside."""
    return layout.key_of_internal("quarantine/")


def dies_during(process: Process, command: dict[str, Any], operation: str, ordinal: int) -> None:
    """Run ``command`` in a process that dies at its ``ordinal``-th ``operation`` request."""
    doomed, client = process()
    if command["command"] == "rename":
        operation, ordinal = rename_crash_point(operation, ordinal)
    death = ProcessDeath(client, operation, ordinal)
    with pytest.raises(SimulatedCrash):
        doomed.run(command)
    assert death.dead


def text_at(memory: S3Memory, path: str) -> str | None:
    """The file's text as stored, read without finishing pending jobs."""
    found = memory.placed.files.read(memory_path(path))
    return None if found is None else found.text


NOTES = {"/memories/notes/a.md": "alpha\n", "/memories/notes/b.md": "beta\n"}
EDIT_A = {"command": "str_replace", "path": "/memories/notes/a.md", "old_str": "alpha", "new_str": "gamma"}


def test_a_crashed_delete_never_removes_a_later_edit(
    backend: str, process: Process, s3: Any, jobs: str
) -> None:
    """Finding 1: the delete's record names each file's ETag, and its deletes are conditional on it."""
    seed(process()[0], NOTES)
    dies_during(process, {"command": "delete", "path": "/memories/notes"}, "DeleteObjects", 1)
    assert len(stored_keys(s3, jobs)) == 1
    assert process()[0].run(EDIT_A).startswith("The memory file has been edited.")
    later = process()[0]
    later.run({"command": "view", "path": "/memories"})  # finishes the old job
    assert text_at(later, "/memories/notes/a.md") == "gamma\n"
    assert text_at(later, "/memories/notes/b.md") is None
    assert stored_keys(s3, jobs) == []


def test_a_crashed_rename_never_moves_a_later_edit(process: Process, s3: Any, jobs: str) -> None:
    seed(process()[0], NOTES)
    # PutObject 1 is the record; the process dies before its first copy
    dies_during(
        process,
        {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"},
        "PutObject",
        2,
    )
    assert process()[0].run(EDIT_A).startswith("The memory file has been edited.")
    later = process()[0]
    later.run({"command": "view", "path": "/memories"})
    assert text_at(later, "/memories/notes/a.md") == "gamma\n"
    assert text_at(later, "/memories/old/a.md") is None
    assert text_at(later, "/memories/old/b.md") == "beta\n"
    assert stored_keys(s3, jobs) == []


def test_a_rename_by_the_process_that_wrote_its_files_never_moves_a_later_edit(
    backend: str, process: Process, s3: Any, jobs: str
) -> None:
    """J3 where the renamer wrote the files itself, so on format 2 it copies them without a look
    (``MemoryFiles.verified``): an edit by another process after the plan, before the first copy,
    is never moved; the copy's ``CopySourceIfMatch`` on the planned ETag refuses it."""
    renamer, client = process()
    seed(renamer, NOTES)
    editor = process()[0]
    edited: list[str] = []
    once = threading.Lock()

    def edit_first(**_: Any) -> None:
        with once:  # the copies go out in parallel: the first one waits for the edit
            if not edited:
                edited.append(editor.run(EDIT_A))

    operation, _ = rename_crash_point("PutObject", 2)  # the first copy
    client.meta.events.register_first(f"before-send.s3.{operation}", edit_first)
    with pytest.raises(CommandError) as refused:
        renamer.run({"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"})
    assert edited and refused.value.message == (
        "Error: Renamed /memories/notes to /memories/old, except 1 file(s) that changed during the "
        "rename and were left at their old paths: /memories/notes/a.md"
    )
    assert text_at(renamer, "/memories/notes/a.md") == "gamma\n"
    assert text_at(renamer, "/memories/old/a.md") is None
    assert text_at(renamer, "/memories/old/b.md") == "beta\n"
    assert stored_keys(s3, jobs) == []


def test_a_file_edited_while_a_delete_runs_is_kept_and_named(
    backend: str, process: Process, s3: Any, jobs: str
) -> None:
    seed(process()[0], NOTES)
    deleter, client = process()
    editor = process()[0]
    edited: list[str] = []

    def edit_first(**_: Any) -> None:
        if not edited:
            edited.append(editor.run(EDIT_A))

    client.meta.events.register_first("before-send.s3.DeleteObjects", edit_first)
    with pytest.raises(CommandError) as refused:
        deleter.run({"command": "delete", "path": "/memories/notes"})
    assert refused.value.message == (
        "Error: Deleted /memories/notes, except 1 file(s) that changed during the delete and were left "
        "in place: /memories/notes/a.md"
    )
    assert text_at(deleter, "/memories/notes/a.md") == "gamma\n"
    assert stored_keys(s3, jobs) == []


def test_nothing_changes_before_the_record_is_stored(process: Process, s3: Any) -> None:
    seed(process()[0], NOTES)
    before = snapshot(s3)
    dies_during(
        process,
        {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"},
        "PutObject",
        1,
    )
    dies_during(process, {"command": "delete", "path": "/memories/notes"}, "PutObject", 1)
    assert snapshot(s3) == before


def test_a_folder_marker_is_left_alone_and_locks_nobody_out(process: Process, s3: Any, jobs: str) -> None:
    """Finding 2: a key of no valid memory path below a directory is never recorded or touched."""
    memory = process()[0]
    seed(memory, {**NOTES, "/memories/keep/c.md": "gamma\n"})
    marker = prefix_of(memory, "/memories/notes")
    s3.put_object(Bucket=BUCKET, Key=marker, Body=b"")
    assert (
        memory.run({"command": "delete", "path": "/memories/notes"}) == "Successfully deleted /memories/notes"
    )
    assert stored_keys(s3, prefix_of(memory)) == sorted([key_of(memory, "/memories/keep/c.md"), marker])
    later = process()[0]
    assert "/memories/notes" not in later.run({"command": "view", "path": "/memories"})
    assert later.run({"command": "rename", "old_path": "/memories/keep", "new_path": "/memories/kept"}) == (
        "Successfully renamed /memories/keep to /memories/kept"
    )
    with pytest.raises(CommandError, match=r"^Error: The path /memories/notes does not exist$"):
        later.run({"command": "delete", "path": "/memories/notes"})
    assert marker in stored_keys(s3, prefix_of(memory))
    assert stored_keys(s3, jobs) == []


def seal_record(memory: S3Memory, job: Job, s3: Any, name: str | None = None) -> str:
    """Store ``job``'s record as s3memory would (sealed with alice's key), at ``name`` if given."""
    key = memory.placed.layout.key_of_internal(name or job.name)
    s3.put_object(Bucket=BUCKET, Key=key, Body=memory.placed.files.cipher.seal(job.record_path, job.encode()))
    return key


def test_a_record_that_can_never_run_is_set_aside(
    process: Process, s3: Any, caplog: pytest.LogCaptureFixture, jobs: str, quarantine: str
) -> None:
    memory = process()[0]
    seed(memory, NOTES)
    stray = Source(prefix_of(memory, "/memories/notes"), '"0"')  # an authentic record naming a folder marker
    bad_plan = Job.plan("delete", memory_path("/memories/notes"), None, (stray,), time.time())
    valid = Job.plan("delete", memory_path("/memories/other"), None, (), time.time())
    planted = [
        seal_record(memory, bad_plan, s3),
        seal_record(memory, valid, s3, name=Job.plan("delete", memory_path("/memories/x"), None, (), 0).name),
    ]
    s3.put_object(Bucket=BUCKET, Key=jobs + "junk", Body=b"not a record")
    planted.append(jobs + "junk")
    later = process()[0]
    with caplog.at_level(logging.WARNING, logger="s3memory"):
        listing = later.run({"command": "view", "path": "/memories"})
    assert "4.0K\t/memories/notes/" in listing
    assert stored_keys(s3, jobs) == []
    assert len(stored_keys(s3, quarantine)) == 3
    assert sorted(later.placed.jobs.set_aside) == sorted(
        key[len(memory.placed.layout.internal_prefix) :] for key in planted
    )
    reasons = [record.getMessage() for record in caplog.records if "set aside" in record.getMessage()]
    assert len(reasons) == 3 and not any("/memories" in reason or "alice" in reason for reason in reasons)
    assert text_at(later, "/memories/notes/a.md") == "alpha\n"
    assert (
        later.run({"command": "delete", "path": "/memories/notes"}) == "Successfully deleted /memories/notes"
    )


def test_a_replayed_rename_record_moves_nothing_written_since(process: Process, s3: Any, jobs: str) -> None:
    """Finding 3: a bucket writer restores a finished rename's record; nothing written since moves."""
    seed(process()[0], {"/memories/a/x.md": "old\n"})
    rename = {"command": "rename", "old_path": "/memories/a", "new_path": "/memories/b"}
    dies_during(process, rename, "PutObject", 2)
    (record_key,) = stored_keys(s3, jobs)
    record = s3.get_object(Bucket=BUCKET, Key=record_key)["Body"].read()
    user = process()[0]
    user.run({"command": "view", "path": "/memories"})  # finishes the rename
    user.run({"command": "rename", "old_path": "/memories/b", "new_path": "/memories/c"})
    user.run({"command": "create", "path": "/memories/a/x.md", "file_text": "new\n"})
    s3.put_object(Bucket=BUCKET, Key=record_key, Body=record)  # the replay
    later = process()[0]
    later.run({"command": "view", "path": "/memories"})
    assert text_at(later, "/memories/a/x.md") == "new\n"
    assert text_at(later, "/memories/b/x.md") is None
    assert text_at(later, "/memories/c/x.md") == "old\n"
    assert stored_keys(s3, jobs) == []


def test_a_replayed_rename_record_does_not_move_a_directory_renamed_back(
    process: Process, s3: Any, jobs: str
) -> None:
    """Finding 1 of issue 21: the directory renamed away and back is as the record planned it, key
    for key (on format 2 with the same ETags too: a server copy keeps the bytes), and a bucket
    writer puts the record back. Nothing moves: on format 2 the record binds each source to its
    place record, which every copy makes anew; on format 1 every move seals anew (new ETags)."""
    seed(process()[0], NOTES)
    notes = memory_path("/memories/notes")
    planned = process()[0].placed.files.sources_below(notes)
    rename = {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"}
    dies_during(process, rename, "PutObject", 2)  # the record is stored, nothing is copied yet
    (record_key,) = stored_keys(s3, jobs)
    record = s3.get_object(Bucket=BUCKET, Key=record_key)["Body"].read()
    user = process()[0]
    user.run({"command": "view", "path": "/memories"})  # finishes the rename
    user.run({"command": "rename", "old_path": "/memories/old", "new_path": "/memories/notes"})
    assert (user.placed.files.sources_below(notes) == planned) == (STORAGE_FORMAT == 2)
    s3.put_object(Bucket=BUCKET, Key=record_key, Body=record)  # the replay
    later = process()[0]
    assert "/memories/old" not in later.run({"command": "view", "path": "/memories"})
    assert text_at(later, "/memories/notes/a.md") == "alpha\n"
    assert text_at(later, "/memories/notes/b.md") == "beta\n"
    assert text_at(later, "/memories/old/a.md") is None and text_at(later, "/memories/old/b.md") is None
    assert stored_keys(s3, jobs) == []


@pytest.mark.parametrize("skew_days", [8.0, -1.0], ids=["older-than-the-bound", "from-the-future"])
def test_a_record_out_of_its_time_is_set_aside_not_run(
    process: Process, s3: Any, skew_days: float, jobs: str, quarantine: str
) -> None:
    seed(process()[0], NOTES)
    dies_during(
        process,
        {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"},
        "PutObject",
        2,
    )
    later = process()[0]
    later.placed.jobs.clock = lambda: time.time() + skew_days * 86_400
    later.run({"command": "view", "path": "/memories"})
    assert text_at(later, "/memories/notes/a.md") == "alpha\n"
    assert text_at(later, "/memories/old/a.md") is None
    assert stored_keys(s3, jobs) == [] and len(stored_keys(s3, quarantine)) == 1


def test_a_retry_is_matched_by_what_it_finds_not_by_name(process: Process, s3: Any, jobs: str) -> None:
    seed(process()[0], NOTES)
    rename = {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"}
    dies_during(process, rename, "PutObject", 2)
    process()[0].run({"command": "create", "path": "/memories/notes/c.md", "file_text": "written since\n"})
    retry = process()[0]
    with pytest.raises(CommandError, match=r"^Error: The destination /memories/old already exists$"):
        retry.run(rename)
    assert text_at(retry, "/memories/notes/c.md") == "written since\n"
    assert text_at(retry, "/memories/old/a.md") == "alpha\n"
    assert stored_keys(s3, jobs) == []


def test_a_retry_finding_what_its_first_try_left_answers_with_its_outcome(
    process: Process, s3: Any, layout: KeyLayout, jobs: str
) -> None:
    seed(process()[0], NOTES)
    delete = {"command": "delete", "path": "/memories/notes"}
    dies_during(process, delete, "DeleteObject", 1)  # every file deleted, the record not yet
    assert stored_keys(s3, layout.memories_prefix) == [] and len(stored_keys(s3, jobs)) == 1
    assert process()[0].run(delete) == "Successfully deleted /memories/notes"
    assert stored_keys(s3, jobs) == []


def test_a_command_finishes_only_the_jobs_that_touch_its_paths(process: Process, s3: Any, jobs: str) -> None:
    """Another process's job on paths a command has no need of is left to its runner (a second
    finisher is a chance of a late copy: docs/jobs.md); a command on its paths finishes it."""
    seed(process()[0], {**NOTES, "/memories/other/x.md": "x\n", "/memories/other/y.md": "y\n"})
    rename = {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"}
    dies_during(process, rename, "PutObject", 2)
    unrelated = [
        {"command": "delete", "path": "/memories/other/x.md"},
        {"command": "rename", "old_path": "/memories/other", "new_path": "/memories/elsewhere"},
        {"command": "view", "path": "/memories/missing"},
        {"command": "create", "path": "/memories/elsewhere/y.md", "file_text": "taken\n"},
    ]
    answers = []
    for command in unrelated:
        try:
            answers.append(process()[0].run(command))
        except CommandError as error:
            answers.append(error.message)
    assert answers == [
        "Successfully deleted /memories/other/x.md",
        "Successfully renamed /memories/other to /memories/elsewhere",
        "The path /memories/missing does not exist. Please provide a valid path.",
        "Error: File /memories/elsewhere/y.md already exists",
    ]
    assert len(stored_keys(s3, jobs)) == 1
    later = process()[0]
    assert text_at(later, "/memories/notes/a.md") == "alpha\n"
    assert later.run({"command": "view", "path": "/memories/old/a.md"}) == (
        "Here's the content of /memories/old/a.md with line numbers:\n     1\talpha"
    )
    assert stored_keys(s3, jobs) == []
    assert text_at(later, "/memories/notes/a.md") is None


@pytest.mark.xfail(
    STORAGE_FORMAT == 1,
    strict=True,
    reason="format 1 copies through the client, so its copy cannot be conditional on its source: "
    "docs/jobs.md, Limits",
)
def test_a_late_finisher_that_dies_after_its_copy_brings_back_no_file(
    process: Process, s3: Any, layout: KeyLayout
) -> None:
    """J9 when the late finisher dies between its copy and its withdrawal: on format 2 the copy is
    a ``CopyObject`` conditional on the source's ETag, which the job's end deleted, so the server
    refuses it and nothing comes back."""
    seed(process()[0], {"/memories/d/f.md": "f\n"})
    dies_during(
        process, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}, "PutObject", 2
    )
    late, client = process()
    target = layout.file_key(memory_path("/memories/e/f.md"))
    raced: list[str] = []

    def meanwhile(event_name: str, request: Any, **_: Any) -> Any:
        """At the late finisher's copy: another process ends the job and the user deletes the file;
        then the copy is sent and the late finisher dies."""
        if raced or request.method != "PUT" or not unquote(urlsplit(request.url).path).endswith(target):
            return None
        other = process()[0]
        raced.append(other.run({"command": "view", "path": "/memories"}))
        raced.append(other.run({"command": "delete", "path": "/memories/e/f.md"}))
        return inject(Fault.CRASH_AFTER, request, event_name.rsplit(".", 1)[-1])

    client.meta.events.register_first("before-send.s3", meanwhile)
    with pytest.raises(SimulatedCrash):
        late.run({"command": "view", "path": "/memories"})
    assert raced[1] == "Successfully deleted /memories/e/f.md"
    assert stored_keys(s3, layout.memories_prefix) == []


@pytest.mark.skipif(
    STORAGE_FORMAT != 1, reason="format 2's copies are conditional on their source: none comes late (above)"
)
def test_a_late_finisher_never_relies_on_a_late_copy(process: Process, s3: Any, layout: KeyLayout) -> None:
    """Two finishers that come late, W and M: after the job ended and the user deleted the moved
    file, W's copy lands, and M (whose own copy found the ender's there) finds W's copy at the
    destination. M looks for the record before it marks any copy relied-on, so it marks none, and
    W withdraws its copy: nothing comes back."""
    seed(process()[0], {"/memories/d/f.md": "f\n"})
    dies_during(
        process, {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}, "PutObject", 2
    )
    target = layout.file_key(memory_path("/memories/e/f.md"))
    marks = layout.key_of_internal("relied/")
    (w, w_client), (m, m_client) = process(), process()
    w_copy = held(w_client, "PutObject", target)
    w_mark = held(w_client, "HeadObject", marks)
    m_copy = held(m_client, "PutObject", target)
    m_looks = held(m_client, "GetObject", target)
    threads = [
        threading.Thread(target=lambda: w.run({"command": "view", "path": "/memories"})),
        threading.Thread(target=lambda: m.run({"command": "view", "path": "/memories"})),
    ]
    for thread in threads:
        thread.start()
    assert w_copy[0].wait(60) and m_copy[0].wait(60)  # both read the source and are about to copy
    ender = process()[0]
    assert ender.run({"command": "view", "path": "/memories"}).startswith("Here're the files")
    m_copy[1].set()  # refused: the ender's copy is there; M looks at what is
    assert m_looks[0].wait(60)
    assert (
        ender.run({"command": "delete", "path": "/memories/e/f.md"})
        == "Successfully deleted /memories/e/f.md"
    )
    w_copy[1].set()  # W's copy lands where nothing is
    assert w_mark[0].wait(60)  # W found the record gone and is about to look for a mark
    m_looks[1].set()  # M finds W's copy
    threads[1].join(60)
    w_mark[1].set()
    threads[0].join(60)
    assert stored_keys(s3, layout.memories_prefix) == []
    assert stored_keys(s3, marks) == []


def test_a_finisher_whose_job_ended_while_it_marked_copies_deletes_no_source(
    process: Process, s3: Any, layout: KeyLayout, jobs: str
) -> None:
    """A finisher relying on copies another process wrote looks for the record again once its marks
    are written: a writer that withdraws its copy on finding the record gone must have found the
    mark, or a source deleted here would leave the file at neither path (J2, J9)."""
    seed(process()[0], NOTES)
    rename = {"command": "rename", "old_path": "/memories/notes", "new_path": "/memories/old"}
    dies_during(process, rename, "DeleteObjects", 1)  # every copy written, no source deleted
    (record,) = stored_keys(s3, jobs)
    later, client = process()
    ended: list[str] = []

    def another_finisher_ends_the_job(request: Any, **_: Any) -> None:
        if (
            not ended
            and request.method == "PUT"
            and layout.key_of_internal("relied/") in unquote(request.url)
        ):
            ended.append(record)
            s3.delete_object(Bucket=BUCKET, Key=record)

    client.meta.events.register_first("before-send.s3", another_finisher_ends_the_job)
    later.run({"command": "view", "path": "/memories"})
    assert ended == [record]  # it marked the copies it found, and the job ended meanwhile
    assert text_at(later, "/memories/notes/a.md") == "alpha\n"
    assert text_at(later, "/memories/notes/b.md") == "beta\n"


def test_records_are_unique_and_bound_to_their_name(make_memory: Callable[..., S3Memory]) -> None:
    memory = make_memory()
    source = (Source(key_of(memory, "/memories/notes/a.md"), '"e"', ""),)
    first, second = (Job.plan("delete", memory_path("/memories/notes"), None, source, 1e9) for _ in range(2))
    assert first.name != second.name and first.encode() != second.encode()
    assert Job.decode(first.name, first.encode()) == first
    with pytest.raises(RecordRefused):
        Job.decode(second.name, first.encode())
    sealed = memory.placed.files.cipher.seal(first.record_path, first.encode())
    with pytest.raises(CommandError, match="failed its integrity check"):
        memory.placed.files.cipher.open(second.record_path, sealed)


SOURCES = (Source("users/alice/memories/d/x.md", '"e1"'), Source("users/alice/memories/d/y.md", '"e2"'))


def test_a_records_size_shows_no_more_of_its_paths_than_their_names_do(
    make_memory: Callable[..., S3Memory],
) -> None:
    """Finding 6 of issue 21: names show each path segment's length in 16-byte steps, and so does a
    sealed record's size: paths whose segments fall in the same steps give records of one size
    (whatever their bytes, quotes and non-ASCII included); a segment a step longer, a larger one."""
    cipher = make_memory().placed.files.cipher

    def size(old: str, new: str | None) -> int:
        job = Job.plan(
            "rename" if new else "delete", memory_path(old), new and memory_path(new), SOURCES, 1e9
        )
        return len(cipher.seal(job.record_path, job.encode()))

    rename = size("/memories/a", "/memories/b/c")
    assert rename == size("/memories/abcdefghijklmno", "/memories/bcdefghijklmno/c")
    assert rename == size('/memories/""""""""""""""', "/memories/ééééééé/ccccccccccccccc")
    assert rename < size("/memories/abcdefghijklmnop", "/memories/b/c")  # 16 bytes: one step more
    assert rename < size("/memories/a", "/memories/b/c/d")
    assert size("/memories/a", None) == size("/memories/abcdefghijklmno", None)


def test_malformed_padding_is_refused_and_a_record_of_the_previous_format_still_runs(
    process: Process, s3: Any, jobs: str
) -> None:
    """A record of the current format is padded, and decodes only with exactly its padding; one of
    the previous format (unpadded, no place records) is still run, so that a job in flight at an
    upgrade finishes (the age bound ends such records a week later)."""
    bound = tuple(Source(source.key, source.etag, "") for source in SOURCES)
    job = Job.plan("delete", memory_path("/memories/d"), None, bound, 1e9)
    data = job.encode()
    assert Job.decode(job.name, data) == job
    body = data.rstrip(b"\x00")[:-1]
    for malformed in (data[:-1], data + b"\x00", body, body + b"\x81" + data[len(body) + 1 :], data + b" "):
        with pytest.raises(RecordRefused):
            Job.decode(job.name, malformed)
    memory = process()[0]
    seed(memory, NOTES)
    notes = memory_path("/memories/notes")
    previous = Job.plan("rename", notes, memory_path("/memories/old"), (), time.time())
    fields = {
        "format": PREVIOUS_RECORD_FORMAT,
        "created": previous.created,
        "nonce": previous.nonce,
        "kind": "rename",
        "old": previous.old,
        "new": previous.new,
        "sources": [[source.key, source.etag] for source in memory.placed.files.sources_below(notes)],
    }
    unpadded = json.dumps(fields).encode()
    with pytest.raises(RecordRefused):
        Job.decode(previous.name, unpadded + b"\x80")  # the previous format was never padded
    with pytest.raises(RecordRefused):
        Job.decode(previous.name, json.dumps({**fields, "format": 3}).encode())  # the current one is
    key = memory.placed.layout.key_of_internal(previous.name)
    s3.put_object(
        Bucket=BUCKET, Key=key, Body=memory.placed.files.cipher.seal(previous.record_path, unpadded)
    )
    later = process()[0]
    later.run({"command": "view", "path": "/memories"})
    assert (
        text_at(later, "/memories/old/a.md") == "alpha\n" and text_at(later, "/memories/notes/a.md") is None
    )
    assert stored_keys(s3, jobs) == []
