"""``s3memory rotate``: the command over ``rotation.rotate`` (moto): it asks first, a dry run changes
nothing, and the answer names what was sealed again and what the operator may drop, line for line
the same on both storage formats (the command with KMS on format 2: ``test_rotation_format2.py``)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from s3memory.cli.console import settings_from
from s3memory.cli.main import _parser
from s3memory.core.paths import KeyLayout, memory_path
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider, sealed_version
from s3memory.formats.store_keys import STORE_KEY_NAME
from s3memory.formats.upgrade import MIGRATED_NAME
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import rotate
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import SERVER_RECORD_NAME, open_record
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY, SEAWEEDFS_SLOW, snapshot
from tests.support.console import run
from tests.support.formats import both_formats
from tests.support.rotation import NEW_MASTER_KEY


def rotated(s3: Any, storage_format: int) -> tuple[Operations, KeyLayout]:
    """alice's two files (and her access record) sealed with master key version 1, and an operator
    holding version 2, on a store of ``storage_format``; alice's layout."""
    bucket = Bucket(s3, BUCKET)
    memory = Operations(bucket, LocalKeyProvider(MASTER_KEY), storage_format=storage_format).memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    memory.run({"command": "create", "path": "/memories/d/b.md", "file_text": "b\n"})
    operator = Operations(
        bucket,
        LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}),
        storage_format=storage_format,
    )
    return operator, memory.placed.layout


@both_formats
@pytest.mark.parametrize("backend", ("moto", SEAWEEDFS_SLOW), indirect=True)  # moto and SeaweedFS
def test_rotate_seals_every_file_again_and_says_which_key_may_go(s3: Any, storage_format: int) -> None:
    operations, layout = rotated(s3, storage_format)
    before = snapshot(s3)
    asked: list[str] = []

    def refuse(question: str) -> bool:
        asked.append(question)
        return False

    assert run(operations, "rotate", "--user", "alice", confirm=refuse)[0] == 1  # not confirmed
    assert asked == ["Seal every file of user alice again under a new data key version?"]
    status, out, _ = run(operations, "rotate", "--user", "alice", "--dry-run")
    assert (status, out.splitlines()) == (
        0,
        [
            "alice: key version 2",
            "alice: would seal 2 files and 1 records again",
            "alice: once sealed again, nothing would need key version 1",
        ],
    )
    assert snapshot(s3) == before
    status, out, err = run(operations, "rotate", "--all", "--yes")
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
    sealed = {key: sealed_version(body) for key, body in snapshot(s3).items()}
    expected: dict[str, int | None] = {
        layout.key_of_internal("access"): 2,
        layout.file_key(memory_path("/memories/a.md")): 2,
        layout.file_key(memory_path("/memories/d/b.md")): 2,
        "users/" + SERVER_RECORD_NAME: None,  # its key wrapped again under master key version 2
    }
    if storage_format == 2:
        sealed.pop("users/" + MIGRATED_NAME, None)  # written, or not, by the process's first format-2 memory
        expected["users/" + STORE_KEY_NAME] = None  # wrapped again under master key version 2
    assert sealed == expected
    assert operations.read("alice", "/memories/d/b.md") == "b\n"
    alone = Operations(
        Bucket(s3, BUCKET), LocalKeyProvider(NEW_MASTER_KEY, version=2), storage_format=storage_format
    )
    assert alone.read("alice", "/memories/d/b.md") == "b\n"  # the previous key dropped from the settings
    record = s3.get_object(Bucket=BUCKET, Key="users/" + SERVER_RECORD_NAME)["Body"].read()
    open_record(record, alone.store_identity, LocalKeyProvider(NEW_MASTER_KEY, version=2))  # no probe again
    status, out, _ = run(operations, "rotate", "--user", "alice", "--yes", "--json")
    (report,) = json.loads(out)["users"]
    assert (status, report["reencrypted"], report["retired"], report["complete"]) == (0, [], [1], True)


def test_a_kms_key_flag_drops_every_local_key_setting() -> None:
    arguments = _parser().parse_args(["rotate", "--all", "--kms-key-id", "alias/k", "--bucket", "b"])
    environ = {
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_LOCAL_KEY_VERSION": "2",
        "S3MEMORY_PREVIOUS_LOCAL_KEYS": f"1:{LOCAL_KEY_B64}",
    }
    assert settings_from(arguments, environ).kms_key_id == "alias/k"


def test_an_old_key_stays_for_history_unless_the_operator_drops_it(s3: Any, versioned: str) -> None:
    bucket = Bucket(s3, versioned)
    memory = Operations(bucket, LocalKeyProvider(MASTER_KEY), storage_format=1).memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    operations = Operations(
        bucket, LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}), storage_format=1
    )
    status, out, _ = run(operations, "rotate", "--user", "alice", "--yes")
    assert (status, out.splitlines()[-1]) == (
        1,
        "alice: key version 1 kept: 2 earlier versions of files need it (history, restore); it can go "
        "once noncurrent-version expiry removes them, or with --drop-history",
    )
    status, out, _ = run(operations, "rotate", "--user", "alice", "--drop-history", "--yes")
    assert (status, out.splitlines()[-2:]) == (
        0,
        [
            "alice: no object needs key version 1: drop it from S3MEMORY_PREVIOUS_LOCAL_KEYS",
            "alice: 2 earlier versions of files are now unreadable",
        ],
    )


def test_verify_shows_an_old_key_version_without_calling_it_a_problem(s3: Any, kms: Any, key_id: str) -> None:
    operations = Operations(Bucket(s3, BUCKET), KMSKeyProvider(key_id, kms_client=kms), storage_format=1)
    memory = operations.memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    assert [f.kind for f in operations.verify("alice").findings] == []
    report = rotate(operations, "alice")  # the switch: the old key stays until the wait is over
    assert report.run_again_after is not None and not report.retired
    status, out, _ = run(operations, "verify", "--user", "alice")
    assert (status, out.splitlines()) == (
        0,
        [
            "alice: old key users/alice/internal/keys/v1: an earlier data key version, kept while objects "
            "or their earlier versions need it (`s3memory rotate` retires it once nothing does)",
            "4 objects of 1 users checked: no problem",
        ],
    )
