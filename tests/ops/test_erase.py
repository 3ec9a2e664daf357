"""``s3memory erase``: every object and every version of a user goes, wrapped keys first; a rerun
finishes an interrupted erase (moto and SeaweedFS, with and without versioning)."""

from __future__ import annotations

import io
import json
from collections.abc import Callable, Sequence
from typing import Any

import pytest

from s3memory.cli.console import Console
from s3memory.cli.main import _parser
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket, Version
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW
from tests.support.console import audit
from tests.support.console import run as command
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.versions import history_for

BACKENDS = ("moto", SEAWEEDFS_SLOW)


def all_versions(s3: Any, bucket: str, prefix: str) -> list[tuple[str, bool]]:
    found: list[tuple[str, bool]] = []
    for page in s3.get_paginator("list_object_versions").paginate(Bucket=bucket, Prefix=prefix):
        found += [(item["Key"], False) for item in page.get("Versions", [])]
        found += [(item["Key"], True) for item in page.get("DeleteMarkers", [])]
    return sorted(found)


def test_erase_leaves_no_version_of_the_user_and_no_one_else_is_touched(s3: Any, versioned: str) -> None:
    operations = Operations(
        Bucket(s3, versioned, page_size=2), LocalKeyProvider(MASTER_KEY), storage_format=1
    )  # many pages
    history_for(operations, "alice")
    history_for(operations, "alice2")  # a user whose id starts with the other's
    s3.put_object(Bucket=versioned, Key="users/alice/internal/keys/v1", Body=b"wrapped")  # as KMS stores it
    before = all_versions(s3, versioned, "users/alice2/")
    assert any(marker for _, marker in all_versions(s3, versioned, "users/alice/"))
    dry = operations.erase("alice", dry_run=True)
    assert (
        dry.key_versions == 1 and dry.other_versions == len(all_versions(s3, versioned, "users/alice/")) - 1
    )
    erased = operations.erase("alice")
    assert (erased.key_versions, erased.other_versions, erased.left) == (
        dry.key_versions,
        dry.other_versions,
        0,
    )
    assert all_versions(s3, versioned, "users/alice/") == []
    assert all_versions(s3, versioned, "users/alice2/") == before
    again = operations.erase("alice")
    assert (again.key_versions, again.other_versions, again.left) == (0, 0, 0)


def test_erase_without_versioning(s3: Any) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    history_for(operations, "bob")
    assert operations.erase("bob").left == 0
    assert all_versions(s3, BUCKET, "users/bob/") == []


def test_an_erase_that_dies_half_way_has_removed_the_keys_and_a_rerun_finishes(
    s3: Any, versioned: str, new_client: Callable[..., Any]
) -> None:
    operations = Operations(
        Bucket(s3, versioned, page_size=2), LocalKeyProvider(MASTER_KEY), storage_format=1
    )
    history_for(operations, "carol")
    s3.put_object(Bucket=versioned, Key="users/carol/internal/keys/v1", Body=b"wrapped")
    dying = new_client()
    ProcessDeath(dying, "DeleteObjects", 2)
    with pytest.raises(SimulatedCrash):
        Operations(
            Bucket(dying, versioned, page_size=2), LocalKeyProvider(MASTER_KEY), storage_format=1
        ).erase("carol")
    assert all_versions(s3, versioned, "users/carol/internal/keys/") == []  # the keys went first
    assert all_versions(s3, versioned, "users/carol/") != []
    assert operations.erase("carol").left == 0
    assert all_versions(s3, versioned, "users/carol/") == []


def test_the_erase_command_asks_first(s3: Any, versioned: str) -> None:
    operations = Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1)
    history_for(operations, "dave")
    before = all_versions(s3, versioned, "users/dave/")

    def run(*argv: str, confirm: bool = False) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        arguments = _parser().parse_args(["erase", "--user", "dave", *argv])
        console = Console(
            arguments, environ={}, out=out, err=err, confirm=lambda _: confirm, operations=operations
        )
        return console.run(), out.getvalue(), err.getvalue()

    status, _, err = run()
    assert status == 1 and "not confirmed; nothing was changed" in err
    status, out, _ = run("--dry-run")
    assert status == 0 and out.startswith("would remove 0 wrapped key versions and ")
    assert all_versions(s3, versioned, "users/dave/") == before
    status, out, err = run(confirm=True)
    assert status == 0 and "left: 0 object versions" in out
    assert "with a local master key, copies kept elsewhere stay readable with that key" in out
    assert '"left": 0' in err and "a.md" not in err
    assert all_versions(s3, versioned, "users/dave/") == []


def test_an_erase_a_serving_process_writes_into_claims_no_shredding_and_names_the_fix(
    s3: Any, versioned: str, kms: Any, key_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def serving() -> Operations:
        return Operations(Bucket(s3, versioned), KMSKeyProvider(key_id, kms_client=kms), storage_format=1)

    for user in ("erin", "frank"):
        history_for(serving(), user)
    erasing = serving()
    delete_versions = erasing.bucket.delete_versions
    written: set[str] = set()

    def written_meanwhile(versions: Sequence[Version]) -> None:
        """The removal, then (once a user) a write of a process still serving the user, as soon as
        its files are gone."""
        delete_versions(versions)
        user = versions[0].key.split("/")[1]
        if user not in written and any("/memories/" in version.key for version in versions):
            written.add(user)
            serving().memory(user).run({"command": "create", "path": "/memories/late.md", "file_text": "x\n"})

    monkeypatch.setattr(erasing.bucket, "delete_versions", written_meanwhile)
    status, out, err = command(erasing, "erase", "--user", "erin", "--yes")
    left = all_versions(s3, versioned, "users/erin/")
    assert ("users/erin/internal/keys/v1", False) in left  # the writer's new wrapped data key
    assert status == 1 and out.startswith("removed 1 wrapped key versions and ")
    assert out.splitlines()[1:] == [
        f"left: {len(left)} object versions: something is still writing to this user: stop serving it "
        "and run erase again",
        "copies kept elsewhere may still decrypt: a wrapped data key may be among what is left",
    ]
    assert audit(err)["left"] == len(left)
    status, out, _ = command(erasing, "erase", "--user", "frank", "--yes", "--json")
    erased = json.loads(out)
    assert (status, erased["shredded"], erased["left"]) == (
        1,
        False,
        len(all_versions(s3, versioned, "users/frank/")),
    )
    assert erased["left"] > 0
    monkeypatch.undo()  # the user is no longer served: erase again finishes, and now it is shredded
    status, out, _ = command(erasing, "erase", "--user", "erin", "--yes")
    assert status == 0 and all_versions(s3, versioned, "users/erin/") == []
    assert out.splitlines()[1:] == [
        "left: 0 object versions",
        "copies kept elsewhere can no longer be decrypted: every version of the wrapped data keys is gone",
    ]


def test_erasure_says_shredded_only_once_nothing_is_left_and_never_in_a_dry_run(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    """``Erasure.shredded`` is decided once, in ``Erasure``, and the library's caller reads what the
    command prints: a dry run shreds nothing, a finished erase under KMS shreds every copy."""
    operations = Operations(Bucket(s3, versioned), KMSKeyProvider(key_id, kms_client=kms), storage_format=1)
    history_for(operations, "erin")
    dry = operations.erase("erin", dry_run=True)
    assert (dry.key_versions, dry.shredded, dry.document()["shredded"]) == (1, False, False)
    erased = operations.erase("erin")
    assert (erased.left, erased.shredded, erased.document()["shredded"]) == (0, True, True)
