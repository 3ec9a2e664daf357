"""Key rotation on storage format 2 (private names, ``docs/rotation.md`` "Format 2"): every file sealed
again under the new version with a fresh place record naming its author, names unchanged, the data
keys wrapped under the store-bound KMS context, the old version retired under the same rules as on
format 1; a rename's server-side copy, which carries its source's key version, made while a pass
runs is found by another pass before the old version goes; a local master key rotation wraps the
store key again (moto and SeaweedFS)."""

from __future__ import annotations

import io
import json
import struct
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from s3memory import rotation
from s3memory.cli import _parser
from s3memory.console import Console
from s3memory.crypto import (
    MAX_KEY_CACHE_SECONDS,
    PLACE_METADATA,
    STORE_KEY_MAGIC,
    WRAPPED_KEY_MAGIC,
    KeyProvider,
    KMSKeyProvider,
    LocalKeyProvider,
    sealed_version,
)
from s3memory.errors import CommandError
from s3memory.files import ORIGIN_METADATA
from s3memory.memory import S3Memory
from s3memory.operations import Operations
from s3memory.paths import KeyLayout, memory_path
from s3memory.rotation import ROTATION_WAIT_SECONDS, rotate, rotate_waiting
from s3memory.store import S3Store
from s3memory.store_keys import STORE_KEY_NAME
from s3memory.versions import MemoryVersions, when

from .support.bucket import ALL_BACKENDS, BUCKET, MASTER_KEY, snapshot
from .support.console import run as command
from .support.faults import ProcessDeath, SimulatedCrash
from .support.rotation import FILES, NEW_MASTER_KEY, contents, later, run, seed
from .support.versions import all_versions, everything, objects, sealed_with
from .test_versions import tick

BACKENDS = ALL_BACKENDS


def kms_operations(s3: Any, bucket: str, kms: Any, key_id: str) -> Operations:
    """An operator's process of a format-2 store (a store and a KMS provider of its own)."""
    return Operations(S3Store(s3, bucket), KMSKeyProvider(key_id, kms_client=kms), storage_format=2)


def local_operations(s3: Any, bucket: str, provider: LocalKeyProvider) -> Operations:
    return Operations(S3Store(s3, bucket), provider, storage_format=2)


def serving(s3: Any, bucket: str, provider: KeyProvider, user: str = "alice") -> S3Memory:
    """A serving process of ``user`` on the format-2 store, with ``provider``."""
    return S3Memory(S3Store(s3, bucket), user, provider, storage_format=2)


def key_names(s3: Any, bucket: str, layout: KeyLayout) -> list[str]:
    """Every S3 version of the user's wrapped keys, by name (``keys/v<n>``)."""
    keys = layout.key_of_internal("keys/")
    return [key.removeprefix(layout.internal_prefix) for key, _ in all_versions(s3, bucket, keys)]


def records(s3: Any, bucket: str, layout: KeyLayout) -> dict[str, int | None]:
    """The key version each internal object but the wrapped keys names, by name."""
    return {
        key.removeprefix(layout.internal_prefix): version
        for key, version in sealed_with(s3, bucket, layout.internal_prefix).items()
        if not key.startswith(layout.key_of_internal("keys/"))
    }


@pytest.fixture(params=["versioned", "unversioned"])
def bucket(request: pytest.FixtureRequest, s3: Any) -> str:
    """A bucket with S3 versioning on, or ``BUCKET``, which never had it."""
    return str(request.getfixturevalue("versioned")) if request.param == "versioned" else BUCKET


def test_a_kms_rotation_seals_everything_again_and_removes_the_old_key_only_when_allowed(
    s3: Any, bucket: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, bucket, kms, key_id)
    layout = seed(operations)
    names = objects(s3, bucket, layout.memories_prefix)
    assert set(sealed_with(s3, bucket, layout.memories_prefix).values()) == {1}
    first = rotate(operations, "alice")
    assert (first.current, first.created, first.old, first.retired) == (2, True, [1], [])
    assert first.reencrypted == sorted(FILES) and first.records == ["access"] and not first.complete
    assert (
        first.switched_at is not None and first.run_again_after == first.switched_at + ROTATION_WAIT_SECONDS
    )
    assert set(sealed_with(s3, bucket, layout.namespace).values()) - {None} == {2}  # the wrapped keys: None
    assert objects(s3, bucket, layout.memories_prefix) == names  # rotating data keys renames nothing
    assert key_names(s3, bucket, layout) == ["keys/v1", "keys/v2"]

    # the new key is wrapped under the store-bound context (the store identity and the user's token)
    owner = operations.memory("alice").key_owner
    wrapped = s3.get_object(Bucket=bucket, Key=layout.key_of_internal("keys/v2"))["Body"].read()
    blob = wrapped.removeprefix(WRAPPED_KEY_MAGIC)
    assert owner.store is not None and owner.kms_context(2)["s3memory:store"] == owner.store
    assert len(kms.decrypt(CiphertextBlob=blob, EncryptionContext=owner.kms_context(2))["Plaintext"]) == 32
    with pytest.raises(kms.exceptions.InvalidCiphertextException):  # format 1's context: the user id
        kms.decrypt(
            CiphertextBlob=blob, EncryptionContext={"s3memory:user": "alice", "s3memory:key_version": "2"}
        )

    just_before = rotate(operations, "alice", now=first.run_again_after - 1)
    assert (just_before.created, just_before.reencrypted, just_before.retired) == (False, [], [])
    assert key_names(s3, bucket, layout) == ["keys/v1", "keys/v2"]

    done = rotate(operations, "alice", now=first.run_again_after)
    assert (done.current, done.old, done.reencrypted, done.run_again_after) == (2, [1], [], None)
    if bucket != BUCKET:  # each file's version sealed with v1 is history now: v1 stays for it
        assert (done.retired, done.kept_for_history, done.complete) == ([], len(FILES), False)
        assert key_names(s3, bucket, layout) == ["keys/v1", "keys/v2"]
        done = rotate(operations, "alice", drop_history=True, now=first.run_again_after)
        assert (done.history_dropped, done.kept_for_history) == (len(FILES), 0)
    else:
        assert (done.kept_for_history, done.history_dropped) == (0, 0)
    assert done.retired == [1] and done.complete
    assert key_names(s3, bucket, layout) == ["keys/v2"]  # every S3 version of v1 is gone
    cold = serving(s3, bucket, KMSKeyProvider(key_id, kms_client=kms))
    assert contents(cold) == dict(FILES)  # the text, and the author the new place record names

    # a rename after the rotation: the copy's place record is made with version 2's place key
    run(
        cold.acting_as("agent:mover"),
        {"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/done"},
    )
    run(cold, {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/kept.md"})
    reader = serving(s3, bucket, KMSKeyProvider(key_id, kms_client=kms))
    assert contents(reader, {"/memories/done/plan.md": FILES["/memories/projects/plan.md"]}) == {
        "/memories/done/plan.md": ("beta\n", "agent:mover")  # who moved it there
    }
    assert "alpha" in run(reader, {"command": "view", "path": "/memories/kept.md"})
    assert "gamma" in run(reader, {"command": "view", "path": "/memories/done/deep/todo.md"})

    again = rotate(operations, "alice", now=later())  # a finished rotation: the next one starts
    assert (again.current, again.created, again.old) == (3, True, [2])


def test_a_local_master_key_rotation_wraps_the_store_key_again(s3: Any) -> None:
    layout = seed(local_operations(s3, BUCKET, LocalKeyProvider(MASTER_KEY)))
    mover = serving(s3, BUCKET, LocalKeyProvider(MASTER_KEY)).acting_as("agent:mover")
    run(mover, {"command": "rename", "old_path": "/memories/notes.md", "new_path": "/memories/moved.md"})
    files = {**FILES, "/memories/moved.md": ("alpha\n", "agent:mover")}
    del files["/memories/notes.md"]
    rotated = local_operations(
        s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY})
    )
    before = snapshot(s3)
    dry = rotate(rotated, "alice", dry_run=True)
    assert (dry.current, dry.old, dry.reencrypted, dry.retired) == (2, [1], sorted(files), [1])
    assert snapshot(s3) == before  # the store key too is left as it is
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
    wrapped = s3.get_object(Bucket=BUCKET, Key="users/" + STORE_KEY_NAME)["Body"].read()
    assert wrapped.startswith(STORE_KEY_MAGIC + b"L" + struct.pack(">I", 2))

    alone = local_operations(s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2))  # the old key dropped
    assert list(alone.users()) == ["alice"]
    assert contents(serving(s3, BUCKET, alone.key_provider), files) == files  # the mover stays the author
    again = rotate(rotated, "alice")
    assert (again.reencrypted, again.records, again.retired) == ([], [], [1])
    assert s3.get_object(Bucket=BUCKET, Key="users/" + STORE_KEY_NAME)["Body"].read() == wrapped
    assert [f.kind for f in alone.verify("alice").findings] == []


def test_an_object_that_does_not_open_at_its_path_holds_nothing_back(s3: Any) -> None:
    layout = seed(local_operations(s3, BUCKET, LocalKeyProvider(MASTER_KEY)))
    notes = layout.file_key(memory_path("/memories/notes.md"))
    ours = s3.get_object(Bucket=BUCKET, Key=notes)
    body, metadata = ours["Body"].read(), ours["Metadata"]
    for name in ("/memories/forged.md", "/memories/zz/forged.md"):  # a bucket writer's copies of notes.md
        forged = layout.file_key(memory_path(name))
        s3.put_object(Bucket=BUCKET, Key=forged, Body=body, Metadata=metadata)  # placed for notes.md
    s3.put_object(Bucket=BUCKET, Key=layout.file_key(memory_path("/memories/junk.md")), Body=b"S3ME\x02")
    rotated = local_operations(
        s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY})
    )
    report = rotate(rotated, "alice")
    assert (report.reencrypted, report.left, report.retired) == (sorted(FILES), [], [1])
    found = sealed_with(s3, BUCKET, layout.memories_prefix)
    assert found.pop(layout.file_key(memory_path("/memories/forged.md"))) == 1  # not ours: left as it is
    assert found.pop(layout.file_key(memory_path("/memories/zz/forged.md"))) == 1
    assert found.pop(layout.file_key(memory_path("/memories/junk.md"))) is None
    assert set(found.values()) == {2}  # notes.md among them, though its bytes were also elsewhere
    alone = serving(s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2))
    assert contents(alone) == dict(FILES)


def test_on_a_versioned_bucket_the_old_key_is_kept_while_history_needs_it(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    writer = operations.memory("alice")
    moment = tick()
    run(
        writer,
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha", "new_str": "omega"},
    )
    run(writer, {"command": "delete", "path": "/memories/ünï.md"})  # its version 1 behind a delete marker
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
    assert key_names(s3, versioned, layout) == ["keys/v1", "keys/v2"]

    cold = MemoryVersions(kms_operations(s3, versioned, kms, key_id).memory("alice"))
    history = cold.history("/memories/notes.md")
    assert [(v.authentic, cold.text_of(v.path, v.version_id)) for v in history] == [
        (True, "omega\n"),  # sealed again under version 2
        (True, "omega\n"),
        (True, "alpha\n"),
    ]
    restored = cold.restore_as_of(moment)
    assert restored.written == ["/memories/notes.md", "/memories/ünï.md"]
    assert restored.unchanged == ["/memories/projects/deep/todo.md", "/memories/projects/plan.md"]
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))) == {
        path: (text, author) for path, (text, author) in FILES.items() if path != "/memories/ünï.md"
    } | {"/memories/ünï.md": ("delta\n", None)}  # a restore is written by who restores

    dropped = rotate(operations, "alice", drop_history=True, now=later())
    assert (dropped.retired, dropped.history_dropped, dropped.kept_for_history) == ([1], 5, 0)
    assert dropped.complete and key_names(s3, versioned, layout) == ["keys/v2"]
    cold = MemoryVersions(kms_operations(s3, versioned, kms, key_id).memory("alice"))
    history = cold.history("/memories/notes.md")
    assert [v.authentic for v in history] == [True, True, False, False]
    with pytest.raises(CommandError, match="names data key version 1"):
        cold.text_of("/memories/notes.md", history[-1].version_id)
    assert cold.text_of("/memories/notes.md", history[0].version_id) == "alpha\n"


def test_a_dry_run_changes_nothing(s3: Any, versioned: str, kms: Any, key_id: str) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
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
    assert key_names(s3, versioned, layout) == ["keys/v1", "keys/v2"]


def test_a_file_edited_during_the_rotation_keeps_the_edit(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any]
) -> None:
    layout = seed(kms_operations(s3, versioned, kms, key_id))
    client = new_client()
    editor = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))
    run(editor, {"command": "create", "path": "/memories/warm-up.md", "file_text": "x"})  # learns version 1
    notes = layout.file_key(memory_path("/memories/notes.md"))
    edited: list[str] = []

    def edit_first(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == notes and "IfMatch" in params and not edited:
            edited.append(
                run(
                    editor,
                    {
                        "command": "str_replace",
                        "path": "/memories/notes.md",
                        "old_str": "alpha",
                        "new_str": "omega",
                    },
                )
            )

    client.meta.events.register("before-parameter-build.s3.PutObject", edit_first)
    operations = Operations(
        S3Store(client, versioned), KMSKeyProvider(key_id, kms_client=kms), storage_format=2
    )
    report = rotate(operations, "alice")
    assert edited and report.left == []
    assert report.reencrypted == sorted([*FILES, "/memories/warm-up.md"])  # the edit (version 1) read again
    assert sealed_with(s3, versioned, notes)[notes] == 2
    done = rotate(kms_operations(s3, versioned, kms, key_id), "alice", drop_history=True, now=later())
    assert done.complete  # history: every first version, warm-up.md's, and the edit sealed with version 1
    assert done.history_dropped == len(FILES) + 2
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))) == {
        **FILES,
        "/memories/notes.md": ("omega\n", None),
    }


@pytest.mark.parametrize("sweeps", [rotation.SWEEPS, 1], ids=["passes-again", "one-pass-allowed"])
def test_a_file_renamed_while_the_pass_runs_is_found_before_the_old_key_goes(
    s3: Any,
    kms: Any,
    key_id: str,
    new_client: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    sweeps: int,
) -> None:
    operations = kms_operations(s3, BUCKET, kms, key_id)
    layout = seed(operations)
    stale = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms))
    run(stale, {"command": "view", "path": "/memories/notes.md"})
    run(stale, {"command": "create", "path": "/memories/warm.md", "file_text": "w\n"})  # learns version 1
    first = rotate(operations, "alice")
    assert first.run_again_after is not None
    run(stale, {"command": "create", "path": "/memories/late/x.md", "file_text": "late\n"})  # sealed with 1
    late = layout.file_key(memory_path("/memories/late/x.md"))
    assert sealed_with(s3, BUCKET, late)[late] == 1
    mover = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms))  # knows version 2: seals it again
    client = new_client()
    listings: list[str] = []
    renamed: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        listings.append(params["Prefix"])

    def rename_first(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == late and not renamed:  # the pass listed it and is about to read it
            renamed.append(
                run(mover, {"command": "rename", "old_path": "/memories/late", "new_path": "/memories/a"})
            )

    client.meta.events.register("before-parameter-build.s3.ListObjectsV2", count)
    client.meta.events.register("before-parameter-build.s3.GetObject", rename_first)
    monkeypatch.setattr(rotation, "SWEEPS", sweeps)
    operator = Operations(S3Store(client, BUCKET), KMSKeyProvider(key_id, kms_client=kms), storage_format=2)
    report = rotate(operator, "alice", now=first.run_again_after)
    moved = layout.file_key(memory_path("/memories/a/x.md"))
    assert renamed and objects(s3, BUCKET, late) == []
    if sweeps == 1:  # the pass missed the copy, so the old key stays: run it again
        assert report.left == [
            ("/memories", "files kept changing or moving while each of 1 passes read them; run it again")
        ]
        assert (report.retired, report.complete) == ([], False)
        assert key_names(s3, BUCKET, layout) == ["keys/v1", "keys/v2"]
        assert sealed_with(s3, BUCKET, moved)[moved] == 2  # the rename sealed it again: a copy would keep 1
        monkeypatch.undo()
        report = rotate(kms_operations(s3, BUCKET, kms, key_id), "alice", now=first.run_again_after)
    reader = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms))
    assert "late" in run(reader, {"command": "view", "path": "/memories/a/x.md"})  # the copy reads
    if sweeps != 1:  # the file gone under the first pass makes a second, which reads every file as listed
        assert listings.count(layout.namespace) == 2
    assert "/memories/a/x.md" not in report.reencrypted and report.left == []  # the rename sealed it with 2
    assert (report.retired, report.complete) == ([1], True)
    assert key_names(s3, BUCKET, layout) == ["keys/v2"]
    assert set(sealed_with(s3, BUCKET, layout.memories_prefix).values()) == {2}
    assert set(records(s3, BUCKET, layout).values()) == {2}
    assert contents(reader) == dict(FILES)


@pytest.mark.parametrize("shared", [False, True], ids=["own-provider", "shared-provider"])
def test_a_serving_process_with_a_warm_cache_loses_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, shared: bool
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    clock = [0.0]
    provider = (
        operations.key_provider if shared else KMSKeyProvider(key_id, kms_client=kms, clock=lambda: clock[0])
    )
    warm = serving(s3, versioned, provider)
    run(warm, {"command": "view", "path": "/memories/notes.md"})
    run(warm, {"command": "create", "path": "/memories/warm.md", "file_text": "one\n"})  # learns version 1
    first = rotate(operations, "alice")
    assert first.run_again_after is not None
    run(warm, {"command": "create", "path": "/memories/during.md", "file_text": "two\n"})
    run(
        warm,
        {"command": "str_replace", "path": "/memories/notes.md", "old_str": "alpha", "new_str": "alpha!"},
    )
    during, notes = (layout.file_key(memory_path(f"/memories/{name}")) for name in ("during.md", "notes.md"))
    found = sealed_with(s3, versioned, layout.memories_prefix)
    expected = 2 if shared else 1  # a process of its own seals with what it cached until the cache lapses
    assert (found[during], found[notes]) == (expected, expected)
    too_soon = rotate(operations, "alice", now=first.run_again_after - 1)
    assert too_soon.retired == [] and "keys/v1" in key_names(s3, versioned, layout)
    clock[0] += MAX_KEY_CACHE_SECONDS  # the serving process's cache lapses
    run(warm, {"command": "create", "path": "/memories/after.md", "file_text": "three\n"})
    after = layout.file_key(memory_path("/memories/after.md"))
    assert sealed_with(s3, versioned, after)[after] == 2
    done = rotate(operations, "alice", drop_history=True, now=first.run_again_after)
    assert done.complete and key_names(s3, versioned, layout) == ["keys/v2"]
    assert set(sealed_with(s3, versioned, layout.memories_prefix).values()) == {2}
    for memory in (warm, serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))):
        assert "alpha!" in run(memory, {"command": "view", "path": "/memories/notes.md"})
        for path in ("/memories/warm.md", "/memories/during.md", "/memories/after.md"):
            run(memory, {"command": "view", "path": path})


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
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    moment = later()
    dying = new_client()
    death = ProcessDeath(dying, operation, ordinal)
    if operation == "DeleteObjects":
        rotate(operations, "alice")  # the dying run is the one that may remove the old key
    with pytest.raises(SimulatedCrash):
        rotate(
            Operations(S3Store(dying, versioned), KMSKeyProvider(key_id, kms_client=kms), storage_format=2),
            "alice",
            drop_history=True,
            now=moment,
        )
    assert death.dead
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))) == dict(FILES)
    finished = rotate(kms_operations(s3, versioned, kms, key_id), "alice", drop_history=True, now=moment)
    assert finished.complete and finished.current == 2
    assert key_names(s3, versioned, layout) == ["keys/v2"]
    assert set(sealed_with(s3, versioned, layout.memories_prefix).values()) == {2}
    assert contents(serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))) == dict(FILES)


def test_a_deleted_old_key_still_needed_is_never_removed(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    stale = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))
    run(stale, {"command": "create", "path": "/memories/stale.md", "file_text": "s\n"})  # learns version 1
    rotate(operations, "alice")
    run(stale, {"command": "create", "path": "/memories/late.md", "file_text": "late\n"})  # sealed with 1
    v1 = layout.key_of_internal("keys/v1")
    s3.delete_object(Bucket=versioned, Key=v1)  # a bucket writer
    operations = kms_operations(s3, versioned, kms, key_id)  # an operator who never had version 1's key
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
    assert "late" in run(
        serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms)),
        {"command": "view", "path": "/memories/late.md"},
    )


def dies_renaming(client: Any, bucket: str, provider: KeyProvider) -> None:
    """A serving process that records a rename of ``/memories/projects`` and dies before its first copy."""
    doomed = serving(client, bucket, provider)
    run(doomed, {"command": "view", "path": "/memories"})
    death = ProcessDeath(client, "CopyObject", 1)  # the record is written, then the copies are made
    with pytest.raises(SimulatedCrash):
        run(doomed, {"command": "rename", "old_path": "/memories/projects", "new_path": "/memories/done"})
    assert death.dead


def test_pending_jobs_are_finished_first_and_records_are_sealed_again(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any]
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    dies_renaming(new_client(), versioned, KMSKeyProvider(key_id, kms_client=kms))
    stale = records(s3, versioned, layout)
    assert any(name.startswith("jobs/") for name in stale) and set(stale.values()) == {1}
    dry = rotate(operations, "alice", dry_run=True, now=later())
    assert len(dry.records) == len(stale) and dry.retired == []
    report = rotate(operations, "alice", now=later())
    assert report.created and len(report.records) == len(stale) - 1  # the job was finished, not sealed again
    assert not any(name.startswith("jobs/") for name in records(s3, versioned, layout))
    assert set(records(s3, versioned, layout).values()) <= {2}
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))
    assert contents(reader, {"/memories/done/plan.md": FILES["/memories/projects/plan.md"]}) == {
        "/memories/done/plan.md": ("beta\n", None)  # moved by the finisher (no actor named)
    }


def test_a_job_recorded_during_the_pass_is_sealed_again_and_loses_nothing(
    s3: Any, versioned: str, kms: Any, key_id: str, new_client: Callable[..., Any]
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    stale = KMSKeyProvider(key_id, kms_client=kms)  # a serving process that learned version 1
    run(serving(s3, versioned, stale), {"command": "create", "path": "/memories/warm.md", "file_text": "w\n"})
    client = new_client()
    listings: list[str] = []

    def die_renaming_before_the_pass(params: dict[str, Any], **_: Any) -> None:
        if params["Prefix"] == layout.namespace and layout.namespace not in listings:
            dies_renaming(new_client(), versioned, stale)  # the pass begins: a stale process records a job
        listings.append(params["Prefix"])

    client.meta.events.register("before-parameter-build.s3.ListObjectsV2", die_renaming_before_the_pass)
    operator = Operations(
        S3Store(client, versioned), KMSKeyProvider(key_id, kms_client=kms), storage_format=2
    )
    report = rotate(operator, "alice")
    assert layout.namespace in listings and report.left == []
    assert [name for name in report.records if name.startswith("jobs/")] != []
    assert set(records(s3, versioned, layout).values()) == {2}  # the job's record among them
    assert rotate(operations, "alice", drop_history=True, now=later()).complete
    assert key_names(s3, versioned, layout) == ["keys/v2"]
    reader = serving(s3, versioned, KMSKeyProvider(key_id, kms_client=kms))
    listing = run(reader, {"command": "view", "path": "/memories"})  # finishes the job
    assert not any(name.startswith("jobs/") for name in records(s3, versioned, layout))
    for path, (text, _) in FILES.items():
        moved = path.replace("/memories/projects", "/memories/done")
        found = reader.files.read(memory_path(path)) or reader.files.read(memory_path(moved))
        assert found is not None and found.text == text, listing


def test_rotate_waiting_does_the_whole_rotation_in_one_call(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    operations = kms_operations(s3, versioned, kms, key_id)
    layout = seed(operations)
    moment = [time.time()]
    slept: list[float] = []

    def sleep(seconds: float) -> None:
        slept.append(seconds)
        moment[0] += seconds

    started = time.time()
    report = rotate_waiting(operations, "alice", drop_history=True, clock=lambda: moment[0], sleep=sleep)
    assert report.complete and report.created and report.reencrypted == sorted(FILES)
    assert report.history_dropped == len(FILES)
    # the switch is dated by S3's clock, in whole seconds, while this test's clock stands still
    late = time.time() - started + 1
    assert len(slept) == 1 and ROTATION_WAIT_SECONDS - 60 < slept[0] <= ROTATION_WAIT_SECONDS + late
    assert key_names(s3, versioned, layout) == ["keys/v2"]


def test_bad_input_is_refused_and_a_store_without_a_store_key_gets_none(
    s3: Any, kms: Any, key_id: str
) -> None:
    for provider in (KMSKeyProvider(key_id, kms_client=kms), LocalKeyProvider(MASTER_KEY)):
        empty = Operations(S3Store(s3, BUCKET), provider, storage_format=2)
        for dry_run in (True, False):
            nobody = rotate(empty, "alice", dry_run=dry_run)
            assert (nobody.current, nobody.old, nobody.complete) == (None, [], True)
        assert snapshot(s3) == {}  # no store key, no data key

    operations = kms_operations(s3, BUCKET, kms, key_id)
    seed(operations)
    before = snapshot(s3)
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

        def new_store_key(self, store: str) -> tuple[bytes, bytes]:
            raise AssertionError("not asked")

        def open_store_key(self, store: str, wrapped: bytes) -> bytes:
            raise AssertionError("not asked")

    odd = Operations(S3Store(s3, BUCKET), Other(), storage_format=2)
    with pytest.raises(ValueError, match="rotate needs a KMSKeyProvider or a LocalKeyProvider"):
        rotate(odd, "alice")
    nobody = rotate(operations, "nobody")  # a user of the store without a data key gets none
    assert (nobody.current, nobody.old, nobody.complete) == (None, [], True)
    assert snapshot(s3) == before


# -- the command ------------------------------------------------------------------------------------


def test_the_rotate_command_answers_as_on_format_1(s3: Any) -> None:
    store = S3Store(s3, BUCKET)
    memory = local_operations(s3, BUCKET, LocalKeyProvider(MASTER_KEY)).memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    memory.run({"command": "create", "path": "/memories/d/b.md", "file_text": "b\n"})
    memory.access.wait()
    layout = memory.layout
    operations = Operations(
        store, LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}), storage_format=2
    )
    before = snapshot(s3)
    asked: list[str] = []

    def refuse(question: str) -> bool:
        asked.append(question)
        return False

    console = Console(
        _parser().parse_args(["rotate", "--user", "alice"]),
        environ={},
        out=io.StringIO(),
        err=io.StringIO(),
        confirm=refuse,
        operations=operations,
    )
    assert console.run() == 1 and asked == [
        "Seal every file of user alice again under a new data key version?"
    ]
    status, out, _ = command(operations, "rotate", "--user", "alice", "--dry-run")
    assert (status, out.splitlines()) == (
        0,
        [
            "alice: key version 2",
            "alice: would seal 2 files and 1 records again",
            "alice: once sealed again, nothing would need key version 1",
        ],
    )
    assert snapshot(s3) == before
    status, out, err = command(operations, "rotate", "--all", "--yes")
    assert (status, out.splitlines()) == (
        0,
        [
            "alice: key version 2",
            "alice: sealed 2 files and 1 records again",
            "alice: no object needs key version 1: drop it from S3MEMORY_PREVIOUS_LOCAL_KEYS",
        ],
    )
    audit = json.loads(err.splitlines()[-1])
    assert (audit["command"], audit["users"], audit["reencrypted"], audit["retired"]) == ("rotate", 1, 2, 1)
    assert "/memories" not in err
    marker = "users/s3memory.migrated"  # written, or not, by the first format-2 memory of the process
    assert {key: sealed_version(body) for key, body in snapshot(s3).items() if key != marker} == {
        "users/" + STORE_KEY_NAME: None,  # wrapped again under master key version 2
        layout.key_of_internal("access"): 2,
        layout.file_key(memory_path("/memories/a.md")): 2,
        layout.file_key(memory_path("/memories/d/b.md")): 2,
    }
    alone = local_operations(s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2))
    assert alone.read("alice", "/memories/d/b.md") == "b\n"
    status, out, _ = command(operations, "rotate", "--user", "alice", "--yes", "--json")
    (report,) = json.loads(out)["users"]
    assert (status, report["reencrypted"], report["retired"], report["complete"]) == (0, [], [1], True)


def test_the_rotate_command_with_kms_says_when_to_run_again(s3: Any, kms: Any, key_id: str) -> None:
    operations = kms_operations(s3, BUCKET, kms, key_id)
    layout = seed(operations)
    status, out, _ = command(operations, "rotate", "--user", "alice", "--yes")
    new_key = layout.key_of_internal("keys/v2")
    (listed,) = [version for page in S3Store(s3, BUCKET).versions(new_key) for version in page]
    written = when(listed.modified)  # S3's time of the switch, as the rotation reads it
    moment = datetime.fromtimestamp(written.timestamp() + ROTATION_WAIT_SECONDS, UTC).isoformat(
        timespec="seconds"
    )
    assert (status, out.splitlines()) == (
        1,
        [
            "alice: key version 2 (created)",
            "alice: sealed 4 files and 1 records again",
            f"alice: the old key can go once no process can still use it: run again after {moment}",
        ],
    )
    status, out, _ = command(operations, "verify", "--user", "alice")
    assert status == 0 and out.splitlines()[0] == (
        f"alice: old key {layout.key_of_internal('keys/v1')}: an earlier data key version, kept while objects "
        "or their earlier versions need it (`s3memory rotate` retires it once nothing does)"
    )
    for key in objects(s3, BUCKET, layout.memories_prefix):  # a fresh place record, no origin
        metadata = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
        assert PLACE_METADATA in metadata and ORIGIN_METADATA not in metadata
