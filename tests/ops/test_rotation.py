"""Key rotation (``s3memory.ops.rotation``, docs/rotation.md): every file sealed again under the new
version with its author, the old KMS version removed only when no serving process can still seal with
it and nothing needs it, local master keys MultiFernet-style; concurrent edits, warm serving
processes, crashes and a bucket writer (moto and SeaweedFS). The tests that take ``storage_format``
run on both storage formats; those of format 2 alone are in ``test_rotation_format2.py``."""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from typing import Any

import pytest

from s3memory.core.files import ORIGIN_METADATA
from s3memory.core.paths import memory_path
from s3memory.crypto import (
    MAX_KEY_CACHE_SECONDS,
    OVERHEAD,
    STORE_KEY_MAGIC,
    WRAPPED_KEY_MAGIC,
    KeyProvider,
    KMSKeyProvider,
    LocalKeyProvider,
)
from s3memory.errors import CommandError
from s3memory.formats.store_keys import STORE_KEY_NAME
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import ROTATION_WAIT_SECONDS, rotate, rotate_waiting
from s3memory.ops.rotation_report import RotationReport
from s3memory.ops.versions import MemoryVersions
from s3memory.settings import Limits
from s3memory.storage.bucket import Bucket
from tests.ops.test_versions import tick
from tests.support import versions
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, snapshot
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.formats import both_formats
from tests.support.rotation import (
    FILES,
    NEW_MASTER_KEY,
    contents,
    dies_renaming,
    kms_operations,
    later,
    records,
    seed,
    seeded,
    serving,
    wrapped_keys,
)
from tests.support.versions import all_versions, everything, objects

BACKENDS = ("moto", SEAWEEDFS_SLOW)
MEMORIES = "users/alice/memories/"
"""Format 1's plain keys, for the tests of format 1 alone."""
KEYS = "users/alice/internal/keys/"


def sealed_with(s3: Any, bucket: str, prefix: str = MEMORIES) -> dict[str, int | None]:
    """The key version each object below ``prefix`` (alice's format-1 files unless told) names in its header."""
    return versions.sealed_with(s3, bucket, prefix)


def key_names(s3: Any, bucket: str) -> list[str]:
    """Every S3 version of alice's format-1 wrapped keys, by object key."""
    return [key for key, _ in all_versions(s3, bucket, KEYS)]


@pytest.fixture(params=["versioned", "unversioned"])
def bucket(request: pytest.FixtureRequest, s3: Any) -> str:
    """A bucket with S3 versioning on, or ``BUCKET``, which never had it."""
    return str(request.getfixturevalue("versioned")) if request.param == "versioned" else BUCKET


@both_formats
def test_a_kms_rotation_seals_everything_again_and_removes_the_old_key_only_when_allowed(
    s3: Any, bucket: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations, layout = seeded(s3, bucket, kms, key_id, storage_format)
    names = objects(s3, bucket, layout.memories_prefix)
    assert set(sealed_with(s3, bucket, layout.memories_prefix).values()) == {1}
    first = rotate(operations, "alice")
    assert (first.current, first.created, first.old, first.retired) == (2, True, [1], [])
    assert first.reencrypted == sorted(FILES) and first.records == ["access"] and not first.complete
    assert (
        first.switched_at is not None and first.run_again_after == first.switched_at + ROTATION_WAIT_SECONDS
    )
    assert set(sealed_with(s3, bucket, layout.memories_prefix).values()) == {2}
    assert set(sealed_with(s3, bucket, layout.namespace).values()) - {None} == {2}  # the wrapped keys: None
    assert objects(s3, bucket, layout.memories_prefix) == names  # rotating data keys renames nothing
    assert wrapped_keys(s3, bucket, layout) == [
        "keys/v1",
        "keys/v2",
    ]  # the old key stays until the wait is over

    # the new key is wrapped under the owner's context: on format 2 the store-bound one (the store
    # identity and the user's token), which format 1's (the user id) does not open
    owner = operations.memory("alice").placed.key_owner
    wrapped = s3.get_object(Bucket=bucket, Key=layout.key_of_internal("keys/v2"))["Body"].read()
    blob = wrapped.removeprefix(WRAPPED_KEY_MAGIC)
    assert len(kms.decrypt(CiphertextBlob=blob, EncryptionContext=owner.kms_context(2))["Plaintext"]) == 32
    if storage_format == 2:
        assert owner.store is not None and owner.kms_context(2)["s3memory:store"] == owner.store
        with pytest.raises(kms.exceptions.InvalidCiphertextException):
            kms.decrypt(
                CiphertextBlob=blob, EncryptionContext={"s3memory:user": "alice", "s3memory:key_version": "2"}
            )

    just_before = rotate(operations, "alice", now=first.run_again_after - 1)
    assert (just_before.created, just_before.reencrypted, just_before.retired) == (False, [], [])
    assert wrapped_keys(s3, bucket, layout) == ["keys/v1", "keys/v2"]

    done = rotate(operations, "alice", now=first.run_again_after)
    assert (done.current, done.old, done.reencrypted, done.run_again_after) == (2, [1], [], None)
    if bucket != BUCKET:  # each file's version sealed with v1 is history now: v1 stays for it
        assert (done.retired, done.kept_for_history, done.complete) == ([], len(FILES), False)
        assert wrapped_keys(s3, bucket, layout) == ["keys/v1", "keys/v2"]
        done = rotate(operations, "alice", drop_history=True, now=first.run_again_after)
        assert (done.history_dropped, done.kept_for_history) == (len(FILES), 0)
    else:
        assert (done.kept_for_history, done.history_dropped) == (0, 0)  # as before versions counted
    assert done.retired == [1] and done.complete
    assert wrapped_keys(s3, bucket, layout) == ["keys/v2"]  # every S3 version of v1 is gone
    cold = serving(s3, bucket, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    assert contents(cold) == dict(FILES)  # the text, and the author its sealed object names

    # a rename after the rotation: the copy is made with version 2's keys
    cold.acting_as("agent:mover").run(
        {"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/done"},
    )
    cold.run({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/kept.md"})
    reader = serving(s3, bucket, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    assert contents(reader, {"/memories/done/plan.md": FILES["/memories/projects/plan.md"]}) == {
        "/memories/done/plan.md": ("beta\n", "agent:mover")  # who moved it there
    }
    assert "alpha" in reader.run({"command": "view", "path": "/memories/kept.md"})
    assert "gamma" in reader.run({"command": "view", "path": "/memories/done/deep/todo.md"})

    again = rotate(operations, "alice", now=later())  # a finished rotation: the next one starts
    assert (again.current, again.created, again.old) == (3, True, [2])


@both_formats
def test_on_a_versioned_bucket_the_old_key_is_kept_while_history_needs_it(
    s3: Any, versioned: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    writer = operations.memory("alice")
    moment = tick()
    writer.run(
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha", "new_str": "omega"},
    )
    writer.run({"command": "delete", "path": "/memories/ünï.md"})  # its version 1 behind a delete marker
    notes = layout.file_key(memory_path("/memories/notes.md"))
    forged = layout.file_key(memory_path("/memories/forged.md"))
    ours = s3.get_object(Bucket=versioned, Key=notes)
    placed = {name: ours["Metadata"][name] for name in ours["Metadata"]}
    s3.put_object(Bucket=versioned, Key=forged, Body=ours["Body"].read(), Metadata=placed)  # placed elsewhere
    s3.delete_object(Bucket=versioned, Key=forged)  # names version 1, does not open at its path: not ours
    first = rotate(operations, "alice")
    assert first.run_again_after is not None
    kept = rotate(operations, "alice", now=first.run_again_after)
    # notes.md: alpha and omega; plan.md and todo.md: their first versions; ünï.md's behind its marker
    assert (kept.left, kept.retired, kept.kept_for_history, kept.complete) == ([], [], 5, False)
    assert wrapped_keys(s3, versioned, layout) == ["keys/v1", "keys/v2"]

    cold = MemoryVersions(kms_operations(s3, versioned, kms, key_id, storage_format).memory("alice"))
    history = cold.history("/memories/notes.md")
    assert [(v.authentic, cold.text_of(v.path, v.version_id)) for v in history] == [
        (True, "omega\n"),  # sealed again under version 2
        (True, "omega\n"),
        (True, "alpha\n"),
    ]
    restored = cold.restore_as_of(moment)
    assert restored.written == ["/memories/notes.md", "/memories/ünï.md"]
    assert restored.unchanged == ["/memories/projects/deep/todo.md", "/memories/projects/plan.md"]
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)) == {
        path: (text, author) for path, (text, author) in FILES.items() if path != "/memories/ünï.md"
    } | {"/memories/ünï.md": ("delta\n", None)}  # a restore is written by who restores

    dropped = rotate(operations, "alice", drop_history=True, now=later())
    assert (dropped.retired, dropped.history_dropped, dropped.kept_for_history) == ([1], 5, 0)
    assert dropped.complete and wrapped_keys(s3, versioned, layout) == ["keys/v2"]
    cold = MemoryVersions(kms_operations(s3, versioned, kms, key_id, storage_format).memory("alice"))
    history = cold.history("/memories/notes.md")
    assert [v.authentic for v in history] == [True, True, False, False]
    with pytest.raises(CommandError, match="names data key version 1"):
        cold.text_of("/memories/notes.md", history[-1].version_id)
    assert cold.text_of("/memories/notes.md", history[0].version_id) == "alpha\n"


@pytest.mark.parametrize("unknowable", ["key-deleted", "too-large"])
def test_an_earlier_version_that_cannot_be_told_holds_the_old_key(
    s3: Any, versioned: str, kms: Any, key_id: str, unknowable: str
) -> None:
    def operations() -> Operations:  # an operator's process, with files of at most 64 bytes
        provider = KMSKeyProvider(key_id, kms_client=kms)
        return Operations(Bucket(s3, versioned), provider, limits=Limits(max_file_bytes=64), storage_format=1)

    seed(operations())
    held = len(FILES)
    if unknowable == "too-large":  # planted, then hidden behind a delete marker: what it names is unread
        s3.put_object(Bucket=versioned, Key=MEMORIES + "huge.md", Body=b"S3ME" + bytes(64 + OVERHEAD))
        s3.delete_object(Bucket=versioned, Key=MEMORIES + "huge.md")
        held += 1
    rotate(operations(), "alice")
    if unknowable == "key-deleted":
        s3.delete_object(Bucket=versioned, Key=KEYS + "v1")  # a bucket writer, after the pass
    kept = rotate(operations(), "alice", now=later())
    assert (kept.left, kept.retired, kept.kept_for_history) == ([], [], held)
    assert len(all_versions(s3, versioned, KEYS + "v1")) == (2 if unknowable == "key-deleted" else 1)
    dropped = rotate(operations(), "alice", drop_history=True, now=later())
    assert (dropped.retired, dropped.history_dropped) == ([1], held)
    assert key_names(s3, versioned) == [KEYS + "v2"]


def test_a_local_rotation_keeps_the_previous_key_while_history_needs_it(s3: Any, versioned: str) -> None:
    seed(Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1))
    rotated = Operations(
        Bucket(s3, versioned),
        LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}),
        storage_format=1,
    )
    report = rotate(rotated, "alice")
    assert (report.reencrypted, report.retired, report.kept_for_history) == (sorted(FILES), [], len(FILES))
    history = MemoryVersions(rotated.memory("alice")).history("/memories/notes.md")
    assert [v.authentic for v in history] == [True, True]
    dropped = rotate(rotated, "alice", drop_history=True)
    assert (dropped.reencrypted, dropped.retired, dropped.history_dropped) == ([], [1], len(FILES))
    alone = Operations(Bucket(s3, versioned), LocalKeyProvider(NEW_MASTER_KEY, version=2), storage_format=1)
    history = MemoryVersions(alone.memory("alice")).history("/memories/notes.md")
    assert [v.authentic for v in history] == [True, False]  # what dropping the previous key costs
    assert contents(alone.memory("alice")) == dict(FILES)


@both_formats
def test_a_dry_run_changes_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    before = everything(s3, versioned)
    would = rotate(operations, "alice", dry_run=True, now=later())
    assert (would.current, would.created, would.old, would.reencrypted, would.records, would.retired) == (
        2,
        True,
        [1],
        sorted(FILES),
        ["access"],
        [],
    )
    assert would.run_again_after is not None and everything(s3, versioned) == before
    rotate(operations, "alice")
    middle = everything(s3, versioned)
    would = rotate(operations, "alice", dry_run=True, now=later())
    assert (would.created, would.reencrypted, would.retired, would.kept_for_history) == (
        False,
        [],
        [],
        len(FILES),
    )
    would = rotate(operations, "alice", dry_run=True, drop_history=True, now=later())
    assert (would.retired, would.history_dropped) == ([1], len(FILES))
    assert everything(s3, versioned) == middle
    assert wrapped_keys(s3, versioned, layout) == ["keys/v1", "keys/v2"]


@both_formats
def test_a_local_master_key_rotation(s3: Any, storage_format: int) -> None:
    layout = seed(Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=storage_format))
    mover = serving(s3, BUCKET, LocalKeyProvider(MASTER_KEY), storage_format).acting_as("agent:mover")
    mover.run({"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/moved.md"})
    files = {**FILES, "/memories/moved.md": ("alpha\n", "agent:mover")}
    del files["/memories/notes.md"]
    rotated = Operations(
        Bucket(s3, BUCKET),
        LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}),
        storage_format=storage_format,
    )
    before = snapshot(s3)
    dry = rotate(rotated, "alice", dry_run=True)
    assert (dry.current, dry.old, dry.reencrypted, dry.retired) == (2, [1], sorted(files), [1])
    assert set(sealed_with(s3, BUCKET, layout.memories_prefix).values()) == {1}
    assert snapshot(s3) == before  # on format 2 the store key too is left as it is
    names = objects(s3, BUCKET, layout.memories_prefix)

    report = rotate(rotated, "alice")
    assert (report.current, report.created, report.old, report.reencrypted, report.retired) == (
        2,
        False,
        [1],
        sorted(files),
        [1],
    )
    assert report.complete and report.run_again_after is None and report.records == ["access"]
    assert set(sealed_with(s3, BUCKET, layout.namespace).values()) == {2}
    assert objects(s3, BUCKET, layout.memories_prefix) == names
    store_key = "users/" + STORE_KEY_NAME
    if storage_format == 2:  # the store key, wrapped again under master key version 2
        wrapped = s3.get_object(Bucket=BUCKET, Key=store_key)["Body"].read()
        assert wrapped.startswith(STORE_KEY_MAGIC + b"L" + struct.pack(">I", 2))

    alone = Operations(  # the old key dropped
        Bucket(s3, BUCKET), LocalKeyProvider(NEW_MASTER_KEY, version=2), storage_format=storage_format
    )
    assert list(alone.users()) == ["alice"]
    assert (
        contents(serving(s3, BUCKET, alone.key_provider, storage_format), files) == files
    )  # the mover stays the author
    again = rotate(rotated, "alice")
    assert (again.reencrypted, again.records, again.retired) == ([], [], [1])
    if storage_format == 2:  # wrapped again once
        assert s3.get_object(Bucket=BUCKET, Key=store_key)["Body"].read() == wrapped
    assert [f.kind for f in alone.verify("alice").findings] == []


@both_formats
def test_a_file_edited_during_the_rotation_keeps_the_edit(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any], storage_format: int
) -> None:
    layout = seed(kms_operations(s3, versioned, kms, key_id, storage_format))
    client = new_client()
    editor = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    editor.run({"command": "create", "path": "/memories/warm-up.md", "file_text": "x"})  # learns version 1
    notes = layout.file_key(memory_path("/memories/notes.md"))
    edited: list[str] = []

    def edit_first(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == notes and "IfMatch" in params and not edited:
            edited.append(
                editor.run(
                    {
                        "command": "str_replace",
                        "path": "/memories/notes.md",
                        "old_str": "alpha",
                        "new_str": "omega",
                    },
                )
            )

    client.meta.events.register("before-parameter-build.s3.PutObject", edit_first)
    report = rotate(kms_operations(client, versioned, kms, key_id, storage_format), "alice")
    assert edited and report.left == []
    assert report.reencrypted == sorted([*FILES, "/memories/warm-up.md"])  # the edit (version 1) read again
    assert sealed_with(s3, versioned, notes)[notes] == 2
    done = rotate(
        kms_operations(s3, versioned, kms, key_id, storage_format), "alice", drop_history=True, now=later()
    )
    assert done.complete  # history: every first version, warm-up.md's, and the edit sealed with version 1
    assert done.history_dropped == len(FILES) + 2
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)) == {
        **FILES,
        "/memories/notes.md": ("omega\n", None),
    }


@both_formats
@pytest.mark.parametrize("shared", [False, True], ids=["own-provider", "shared-provider"])
def test_a_serving_process_with_a_warm_cache_loses_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, shared: bool, storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    clock = [0.0]
    provider = (
        operations.key_provider if shared else KMSKeyProvider(key_id, kms_client=kms, clock=lambda: clock[0])
    )
    warm = serving(s3, versioned, provider, storage_format)
    warm.run({"command": "view", "path": "/memories/notes.md"})
    warm.run({"command": "create", "path": "/memories/warm.md", "file_text": "one\n"})  # learns version 1
    first = rotate(operations, "alice")
    assert first.run_again_after is not None
    warm.run({"command": "create", "path": "/memories/during.md", "file_text": "two\n"})
    warm.run(
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha", "new_str": "alpha!"},
    )
    during, notes = (layout.file_key(memory_path(f"/memories/{name}")) for name in ("during.md", "notes.md"))
    found = sealed_with(s3, versioned, layout.memories_prefix)
    expected = 2 if shared else 1  # a process of its own seals with what it cached until the cache lapses
    assert (found[during], found[notes]) == (expected, expected)
    too_soon = rotate(operations, "alice", now=first.run_again_after - 1)
    assert too_soon.retired == [] and "keys/v1" in wrapped_keys(s3, versioned, layout)
    clock[0] += MAX_KEY_CACHE_SECONDS  # the serving process's cache lapses
    warm.run({"command": "create", "path": "/memories/after.md", "file_text": "three\n"})
    after = layout.file_key(memory_path("/memories/after.md"))
    assert sealed_with(s3, versioned, after)[after] == 2
    done = rotate(operations, "alice", drop_history=True, now=first.run_again_after)
    assert done.complete and wrapped_keys(s3, versioned, layout) == ["keys/v2"]
    assert set(sealed_with(s3, versioned, layout.memories_prefix).values()) == {2}
    for memory in (warm, serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)):
        assert "alpha!" in memory.run({"command": "view", "path": "/memories/notes.md"})
        for path in ("/memories/warm.md", "/memories/during.md", "/memories/after.md"):
            memory.run({"command": "view", "path": path})


@both_formats
@pytest.mark.parametrize(
    ("operation", "ordinal"),
    [("PutObject", 1), ("PutObject", 3), ("DeleteObjects", 1)],
    ids=["creating-the-key", "sealing-again", "removing-the-old-key"],
)
def test_a_rotation_that_dies_half_way_is_finished_by_running_it_again(
    s3: Any,
    versioned: str,
    kms: Any,
    key_id: str,
    new_client: Callable[..., Any],
    operation: str,
    ordinal: int,
    storage_format: int,
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    moment = later()
    dying = new_client()
    death = ProcessDeath(dying, operation, ordinal)
    if operation == "DeleteObjects":
        rotate(operations, "alice")  # the dying run is the one that may remove the old key
    with pytest.raises(SimulatedCrash):
        rotate(
            kms_operations(dying, versioned, kms, key_id, storage_format),
            "alice",
            drop_history=True,
            now=moment,
        )
    assert death.dead
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)) == dict(
        FILES
    )
    finished = rotate(
        kms_operations(s3, versioned, kms, key_id, storage_format), "alice", drop_history=True, now=moment
    )
    assert finished.complete and finished.current == 2
    assert wrapped_keys(s3, versioned, layout) == ["keys/v2"]
    assert set(sealed_with(s3, versioned, layout.memories_prefix).values()) == {2}
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)) == dict(
        FILES
    )


def test_a_restored_old_key_seals_nothing_and_is_removed_again(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, 1)
    seed(operations)
    kept = s3.get_object(Bucket=versioned, Key=KEYS + "v1")["Body"].read()  # a bucket writer's copy
    rotate(operations, "alice")
    assert rotate(operations, "alice", drop_history=True, now=later()).complete
    s3.put_object(Bucket=versioned, Key=KEYS + "v1", Body=kept)
    cold = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    cold.run({"command": "create", "path": "/memories/new.md", "file_text": "new\n"})
    assert sealed_with(s3, versioned)[MEMORIES + "new.md"] == 2  # the highest version seals
    forged = s3.get_object(Bucket=versioned, Key=MEMORIES + "notes.md")["Body"].read()
    forged = forged[:5] + (1).to_bytes(4, "big") + forged[9:]  # names version 1: not ours
    s3.put_object(Bucket=versioned, Key=MEMORIES + "forged.md", Body=forged)
    kept_for_history = rotate(operations, "alice", now=later())  # the restored key opens history again
    assert (kept_for_history.retired, kept_for_history.kept_for_history) == ([], len(FILES))
    again = rotate(operations, "alice", drop_history=True, now=later())
    assert (again.created, again.retired, again.reencrypted) == (False, [1], [])
    assert key_names(s3, versioned) == [KEYS + "v2"]


def test_a_deleted_new_key_stops_the_rotation_until_it_is_put_back(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, 1)
    seed(operations)
    rotate(operations, "alice")
    s3.delete_object(Bucket=versioned, Key=KEYS + "v2")  # a bucket writer
    cold = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    cold.run({"command": "create", "path": "/memories/meanwhile.md", "file_text": "kept\n"})  # sealed with 1
    with pytest.raises(CommandError, match=r"version 2\) was deleted.*nothing was changed"):
        rotate(operations, "alice", now=later())
    before = everything(s3, versioned)
    with pytest.raises(CommandError):
        rotate(operations, "alice", dry_run=True, now=later())
    assert everything(s3, versioned) == before
    (latest,) = [
        item["VersionId"]
        for item in s3.list_object_versions(Bucket=versioned, Prefix=KEYS + "v2")["Versions"]
    ]
    s3.copy_object(
        Bucket=versioned,
        Key=KEYS + "v2",
        CopySource={"Bucket": versioned, "Key": KEYS + "v2", "VersionId": latest},
    )
    done = rotate(operations, "alice", drop_history=True, now=later())
    assert done.complete and done.reencrypted == ["/memories/meanwhile.md"]
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    assert contents(reader) == dict(FILES)
    assert "kept" in reader.run({"command": "view", "path": "/memories/meanwhile.md"})


@both_formats
def test_a_deleted_old_key_still_needed_is_never_removed(
    s3: Any, versioned: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    stale = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    stale.run({"command": "create", "path": "/memories/stale.md", "file_text": "s\n"})  # learns version 1
    rotate(operations, "alice")
    stale.run({"command": "create", "path": "/memories/late.md", "file_text": "late\n"})  # sealed with 1
    v1 = layout.key_of_internal("keys/v1")
    s3.delete_object(Bucket=versioned, Key=v1)  # a bucket writer
    operations = kms_operations(
        s3, versioned, kms, key_id, storage_format
    )  # an operator who never had version 1's key
    blocked = rotate(operations, "alice", now=later())
    (late,) = [(path, why) for path, why in blocked.left if not path.startswith("internal/")]
    assert late[0] == "/memories/late.md" and "names data key version 1" in late[1]
    assert (blocked.retired, blocked.complete) == ([], False)
    assert len(all_versions(s3, versioned, v1)) == 2  # the key and the marker: nothing shredded
    (latest,) = [
        item["VersionId"] for item in s3.list_object_versions(Bucket=versioned, Prefix=v1)["Versions"]
    ]
    s3.copy_object(Bucket=versioned, Key=v1, CopySource={"Bucket": versioned, "Key": v1, "VersionId": latest})
    done = rotate(operations, "alice", drop_history=True, now=later())
    assert done.complete and done.reencrypted == ["/memories/late.md"]
    assert "late" in serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format).run(
        {"command": "view", "path": "/memories/late.md"},
    )


def test_a_planted_newer_key_stops_the_rotation_and_locks_no_reader_out(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, 1)
    seed(operations)
    wrapped = s3.get_object(Bucket=versioned, Key=KEYS + "v1")["Body"].read()
    s3.put_object(Bucket=versioned, Key=KEYS + "v2", Body=wrapped)  # version 1's key under another version
    s3.put_object(Bucket=versioned, Key=MEMORIES + "planted.md", Body=wrapped)  # not ours
    before = everything(s3, versioned)
    with pytest.raises(CommandError, match=r"newest data key \(version 2\), which cannot be had"):
        rotate(operations, "alice", now=later())
    assert everything(s3, versioned) == before
    cold = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    assert contents(cold) == dict(FILES)
    with pytest.raises(CommandError, match="refused by KMS"):
        cold.run({"command": "create", "path": "/memories/x.md", "file_text": "x"})


@pytest.mark.parametrize("bare", [False, True], ids=["fingerprint-with-version", "bare-fingerprint"])
def test_a_rename_copy_made_before_the_switch_is_accepted_after_it(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any], bare: bool
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, 1)
    seed(operations)
    client = new_client()
    doomed = serving(client, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    doomed.run({"command": "view", "path": "/memories"})
    death = ProcessDeath(client, "DeleteObjects", 1)  # both copies written under version 1, no source deleted
    with pytest.raises(SimulatedCrash):
        doomed.run({"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/done"})
    assert death.dead
    copies = [MEMORIES + "done/deep/todo.md", MEMORIES + "done/plan.md"]
    origins: dict[str, str] = {}
    for key in copies:
        metadata = s3.head_object(Bucket=versioned, Key=key)["Metadata"]
        assert metadata[ORIGIN_METADATA].startswith("1:")
        origins[key] = metadata[ORIGIN_METADATA].removeprefix("1:") if bare else metadata[ORIGIN_METADATA]
        if bare:  # as a copy written before fingerprints named their key version
            s3.copy_object(
                Bucket=versioned,
                Key=key,
                CopySource={"Bucket": versioned, "Key": key},
                Metadata={**metadata, ORIGIN_METADATA: origins[key]},
                MetadataDirective="REPLACE",
            )
    report = rotate(operations, "alice")  # the switch, then the pending rename finished under version 2
    assert report.created and report.left == []
    stored = sealed_with(s3, versioned)
    assert not any(key.startswith(MEMORIES + "projects/") for key in stored)  # the copies were accepted
    assert {key: stored[key] for key in copies} == {key: 2 for key in copies}
    for key in copies:  # sealed again, the origin kept as it was
        assert s3.head_object(Bucket=versioned, Key=key)["Metadata"][ORIGIN_METADATA] == origins[key]
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), 1)
    for path in ("/memories/projects/plan.md", "/memories/projects/deep/todo.md"):
        found = reader.placed.files.read(memory_path(path.replace("/projects/", "/done/")))
        assert found is not None and (found.text, found.author) == (FILES[path][0], None)


def test_a_fingerprint_names_its_key_version_and_matches_only_its_path(s3: Any) -> None:
    path, other = "/memories/a.md", "/memories/b.md"
    before = S3Memory(
        Bucket(s3, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=1
    ).placed.files.cipher
    provider = LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY})
    after = S3Memory(Bucket(s3, BUCKET), "alice", provider, storage_format=1).placed.files.cipher
    made = before.fingerprint(path)
    version, digest = made.split(":")
    assert version == "1" and len(digest) == 32
    assert after.fingerprint(path, 1) == made and after.fingerprint(path).startswith("2:")
    for stored in (made, digest, after.fingerprint(path)):  # made before the switch, bare (older), after
        assert after.made_of(stored, path) and not after.made_of(stored, other)
    for malformed in (
        None,
        "",
        "0:" + digest,
        "01:" + digest,
        "3:" + digest,  # no key of version 3
        ":" + digest,
        "1:1:" + digest,
        "1:" + digest.upper(),
        "1:" + digest[:-1],
        "\uff11:" + digest,
    ):
        assert not after.made_of(malformed, path), malformed
    bob = S3Memory(Bucket(s3, BUCKET), "bob", provider, storage_format=1).placed.files.cipher
    assert not bob.made_of(made, path)  # another user's keys


@both_formats
def test_pending_jobs_are_finished_first_and_records_are_sealed_again(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any], storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    dies_renaming(new_client(), versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    stale = records(s3, versioned, layout)
    assert any(name.startswith("jobs/") for name in stale) and set(stale.values()) == {1}
    dry = rotate(operations, "alice", dry_run=True, now=later())
    assert len(dry.records) == len(stale) and dry.retired == []
    report = rotate(operations, "alice", now=later())
    assert report.created and len(report.records) == len(stale) - 1  # the job was finished, not sealed again
    assert not any(name.startswith("jobs/") for name in records(s3, versioned, layout))
    assert set(records(s3, versioned, layout).values()) <= {2}
    done = layout.file_key(memory_path("/memories/done/plan.md"))
    assert done in sealed_with(s3, versioned, layout.memories_prefix)
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    assert contents(reader, {"/memories/done/plan.md": FILES["/memories/projects/plan.md"]}) == {
        "/memories/done/plan.md": ("beta\n", None)  # moved by the finisher (no actor named)
    }


@both_formats
def test_a_job_recorded_during_the_pass_is_sealed_again_and_loses_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any], storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    stale = KMSKeyProvider(key_id, kms_client=kms)  # a serving process that learned version 1
    serving(s3, versioned, stale, storage_format).run(
        {"command": "create", "path": "/memories/warm.md", "file_text": "w\n"},
    )
    client = new_client()
    listings: list[str] = []

    def die_renaming_before_the_pass(params: dict[str, Any], **_: Any) -> None:
        if params["Prefix"] == layout.namespace and layout.namespace not in listings:
            # the pass begins: a stale process records a job and dies
            dies_renaming(new_client(), versioned, stale, storage_format)
        listings.append(params["Prefix"])

    client.meta.events.register("before-parameter-build.s3.ListObjectsV2", die_renaming_before_the_pass)
    report = rotate(kms_operations(client, versioned, kms, key_id, storage_format), "alice")
    assert layout.namespace in listings and report.left == []
    assert [name for name in report.records if name.startswith("jobs/")] != []
    assert set(records(s3, versioned, layout).values()) == {2}  # the job's record among them
    assert rotate(operations, "alice", drop_history=True, now=later()).complete
    assert wrapped_keys(s3, versioned, layout) == ["keys/v2"]
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms), storage_format)
    listing = reader.run({"command": "view", "path": "/memories"})  # finishes the job
    assert sealed_with(s3, versioned, layout.key_of_internal("jobs/")) == {}
    for path, (text, _) in FILES.items():
        moved = path.replace("/memories/projects", "/memories/done")
        found = reader.placed.files.read(memory_path(path)) or reader.placed.files.read(memory_path(moved))
        assert found is not None and found.text == text, listing


@both_formats
def test_bad_input_is_refused_clearly_and_changes_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, storage_format)
    seed(operations)
    before = everything(s3, versioned)
    for user in ("", "a/b", "..", "x" * 300):
        with pytest.raises(ValueError, match="user_id"):
            rotate(operations, user)

    class Other(KeyProvider):
        def current(self, user_id: Any, vault: Any) -> tuple[int, bytes]:
            raise AssertionError("not asked")

        def data_key(self, user_id: Any, version: int, vault: Any) -> bytes:
            raise AssertionError("not asked")

        def forget(self, user_id: Any, vault: Any) -> None:
            raise AssertionError("not asked")

        def new_store_key(self, store: str, purpose: str = "") -> tuple[bytes, bytes]:
            raise AssertionError("not asked")

        def open_store_key(self, store: str, wrapped: bytes, purpose: str = "") -> bytes:
            raise AssertionError("not asked")

    odd = Operations(Bucket(s3, versioned), Other(), storage_format=storage_format)
    with pytest.raises(ValueError, match="rotate needs a KMSKeyProvider or a LocalKeyProvider"):
        rotate(odd, "alice")
    nobody = rotate(operations, "nobody")  # a user of the store without a data key gets none
    assert (nobody.current, nobody.old, nobody.complete) == (None, [], True)
    assert everything(s3, versioned) == before


@both_formats
def test_rotate_waiting_does_the_whole_rotation_in_one_call(
    s3: Any, versioned: str, kms: Any, key_id: str, storage_format: int
) -> None:
    operations, layout = seeded(s3, versioned, kms, key_id, storage_format)
    moment = [time.time()]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        moment[0] += seconds

    started = time.time()
    (report,) = rotate_waiting(operations, ["alice"], drop_history=True, clock=lambda: moment[0], sleep=sleep)
    assert report.complete and report.created and report.reencrypted == sorted(FILES)
    assert report.history_dropped == len(FILES)
    # the switch is dated by S3's clock, in whole seconds, while this test's clock stands still
    late = time.time() - started + 1
    assert len(slept) == 1 and ROTATION_WAIT_SECONDS - 60 < slept[0] <= ROTATION_WAIT_SECONDS + late
    assert wrapped_keys(s3, versioned, layout) == ["keys/v2"]


@pytest.mark.slow
@pytest.mark.scale
def test_rotating_many_memories_waits_once_for_all_of_them(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id, 2)
    users = [f"user{number}" for number in range(6)]
    layouts = [seed(operations, user) for user in users]
    moment = [time.time()]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        moment[0] += seconds

    reports = rotate_waiting(operations, users, drop_history=True, clock=lambda: moment[0], sleep=sleep)
    assert [(report.user_id, report.complete, report.created) for report in reports] == [
        (user, True, True) for user in users
    ]
    assert len(slept) == 1  # one key-cache wait for the fleet, not one per memory
    assert [wrapped_keys(s3, versioned, layout) for layout in layouts] == [["keys/v2"]] * len(users)
    assert all(contents(operations.memory(user)) == FILES for user in users)


def test_the_report_counts_name_no_path() -> None:
    report = RotationReport(
        "alice",
        reencrypted=["/memories/secret-name.md"],
        left=[("/memories/b.md", "why")],
        kept_for_history=3,
    )
    assert report.counts() == {
        "reencrypted": 1,
        "left": 1,
        "records": 0,
        "retired": 0,
        "kept_for_history": 3,
        "history_dropped": 0,
    }
