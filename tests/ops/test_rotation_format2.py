"""Key rotation on storage format 2 alone (private names, ``docs/rotation.md`` "Format 2"): an object
that does not open at its path (a bucket writer's copy, place record and all) holds nothing back; a
rename's server-side copy, which carries its source's key version, made while a pass runs is found
by another pass before the old version goes; a store without a store key gets no data key; the
command with KMS. What format 2 shares with format 1 (every file sealed again with a fresh place
record naming its author, names unchanged, the data keys wrapped under the store-bound KMS context,
the old version retired under the same rules, the store key wrapped again by a local master key
rotation) is tested on both formats in ``test_rotation.py`` and ``test_rotate_command.py`` (moto and
SeaweedFS)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from s3memory.core.files import ORIGIN_METADATA
from s3memory.core.paths import memory_path
from s3memory.core.timestamps import when
from s3memory.crypto import PLACE_METADATA, KMSKeyProvider, LocalKeyProvider
from s3memory.ops import rotation
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import ROTATION_WAIT_SECONDS, rotate
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, snapshot
from tests.support.console import run as command
from tests.support.rotation import (
    FILES,
    NEW_MASTER_KEY,
    contents,
    kms_operations,
    records,
    seed,
    serving,
    wrapped_keys,
)
from tests.support.versions import objects, sealed_with

BACKENDS = ("moto", SEAWEEDFS_SLOW)


def local_operations(s3: Any, bucket: str, provider: LocalKeyProvider) -> Operations:
    return Operations(Bucket(s3, bucket), provider, storage_format=2)


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
    alone = serving(s3, BUCKET, LocalKeyProvider(NEW_MASTER_KEY, version=2), 2)
    assert contents(alone) == dict(FILES)


@pytest.mark.parametrize("sweeps", [rotation.SWEEPS, 1], ids=["passes-again", "one-pass-allowed"])
def test_a_file_renamed_while_the_pass_runs_is_found_before_the_old_key_goes(
    s3: Any,
    kms: Any,
    key_id: str,
    new_client: Callable[..., Any],
    monkeypatch: pytest.MonkeyPatch,
    sweeps: int,
) -> None:
    operations = kms_operations(s3, BUCKET, kms, key_id, 2)
    layout = seed(operations)
    stale = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms), 2)
    stale.run({"command": "view", "path": "/memories/notes.md"})
    stale.run({"command": "create", "path": "/memories/warm.md", "file_text": "w\n"})  # learns version 1
    first = rotate(operations, "alice")
    assert first.run_again_after is not None
    stale.run({"command": "create", "path": "/memories/late/x.md", "file_text": "late\n"})  # sealed with 1
    late = layout.file_key(memory_path("/memories/late/x.md"))
    assert sealed_with(s3, BUCKET, late)[late] == 1
    mover = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms), 2)  # knows version 2: seals it again
    client = new_client()
    listings: list[str] = []
    renamed: list[str] = []

    def count(params: dict[str, Any], **_: Any) -> None:
        listings.append(params["Prefix"])

    def rename_first(params: dict[str, Any], **_: Any) -> None:
        if params.get("Key") == late and not renamed:  # the pass listed it and is about to read it
            renamed.append(
                mover.run({"command": "rename", "old_path": "/memories/late", "new_path": "/memories/a"})
            )

    client.meta.events.register("before-parameter-build.s3.ListObjectsV2", count)
    client.meta.events.register("before-parameter-build.s3.GetObject", rename_first)
    monkeypatch.setattr(rotation, "SWEEPS", sweeps)
    operator = Operations(Bucket(client, BUCKET), KMSKeyProvider(key_id, kms_client=kms), storage_format=2)
    report = rotate(operator, "alice", now=first.run_again_after)
    moved = layout.file_key(memory_path("/memories/a/x.md"))
    assert renamed and objects(s3, BUCKET, late) == []
    if sweeps == 1:  # the pass missed the copy, so the old key stays: run it again
        assert report.left == [
            ("/memories", "files kept changing or moving while each of 1 passes read them; run it again")
        ]
        assert (report.retired, report.complete) == ([], False)
        assert wrapped_keys(s3, BUCKET, layout) == ["keys/v1", "keys/v2"]
        assert sealed_with(s3, BUCKET, moved)[moved] == 2  # the rename sealed it again: a copy would keep 1
        monkeypatch.undo()
        report = rotate(kms_operations(s3, BUCKET, kms, key_id, 2), "alice", now=first.run_again_after)
    reader = serving(s3, BUCKET, KMSKeyProvider(key_id, kms_client=kms), 2)
    assert "late" in reader.run({"command": "view", "path": "/memories/a/x.md"})  # the copy reads
    if sweeps != 1:  # the file gone under the first pass makes a second, which reads every file as listed
        assert listings.count(layout.namespace) == 2
    assert "/memories/a/x.md" not in report.reencrypted and report.left == []  # the rename sealed it with 2
    assert (report.retired, report.complete) == ([1], True)
    assert wrapped_keys(s3, BUCKET, layout) == ["keys/v2"]
    assert set(sealed_with(s3, BUCKET, layout.memories_prefix).values()) == {2}
    assert set(records(s3, BUCKET, layout).values()) == {2}
    assert contents(reader) == dict(FILES)


def test_on_a_store_without_a_store_key_a_rotation_gets_no_data_key_and_writes_nothing(
    s3: Any, kms: Any, key_id: str
) -> None:
    for provider in (KMSKeyProvider(key_id, kms_client=kms), LocalKeyProvider(MASTER_KEY)):
        empty = Operations(Bucket(s3, BUCKET), provider, storage_format=2)
        for dry_run in (True, False):
            nobody = rotate(empty, "alice", dry_run=dry_run)
            assert (nobody.current, nobody.old, nobody.complete) == (None, [], True)
        assert snapshot(s3) == {}  # no store key, no data key


# -- the command ------------------------------------------------------------------------------------


def test_the_rotate_command_with_kms_says_when_to_run_again(s3: Any, kms: Any, key_id: str) -> None:
    operations = kms_operations(s3, BUCKET, kms, key_id, 2)
    layout = seed(operations)
    status, out, _ = command(operations, "rotate", "--user", "alice", "--yes")
    new_key = layout.key_of_internal("keys/v2")
    (listed,) = [version for page in Bucket(s3, BUCKET).versions(new_key) for version in page]
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
