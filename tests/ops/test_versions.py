"""History, restore and redact over S3 versioning (moto and SeaweedFS). The tests that take
``storage_format`` run on both storage formats (``operations`` is then of the test's format; of
format 1 otherwise); those of format 2 alone are in ``test_operations_format2.py``."""

from __future__ import annotations

import io
import json
import time
from collections.abc import Callable
from datetime import UTC, datetime
from typing import Any

import pytest

from s3memory.cli.console import Console
from s3memory.cli.main import _parser
from s3memory.core.files import ORIGIN_METADATA
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError, shown
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.ops.rotation import rotate
from s3memory.ops.versions import MemoryVersions
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW
from tests.support.console import run as command
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.formats import both_formats, on_format_1

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)


@pytest.fixture
def storage_format() -> int:
    """The suites' format (``STORAGE_FORMAT``: the library's default unless set), unless the test
    runs on both (``both_formats`` parametrizes this)."""
    return STORAGE_FORMAT


@pytest.fixture
def operations(s3: Any, versioned: str, storage_format: int) -> Operations:
    return Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=storage_format)


def tick() -> datetime:
    """A moment strictly between two writes (S3 keeps modification times to the second)."""
    time.sleep(1.1)
    moment = datetime.now(UTC)
    time.sleep(1.1)
    return moment


EARLIER_TREE = {
    "/memories/keep.md": "keep\n",
    "/memories/edit.md": "before\n",
    "/memories/gone.md": "gone\n",
    "/memories/d/x.md": "x\n",
}
"""The files ``changed_after_a_moment`` writes before its moment, in that order, with their text."""


def changed_after_a_moment(memory: S3Memory) -> datetime:
    """``EARLIER_TREE`` written, then, after the moment returned, one file edited, one deleted, one
    created and a folder renamed."""
    for path, text in EARLIER_TREE.items():
        memory.run({"command": "create", "path": path, "file_text": text})
    moment = tick()
    memory.run(
        {"command": "str_replace", "path": "/memories/edit.md", "old_str": "before", "new_str": "after"}
    )
    memory.run({"command": "delete", "path": "/memories/gone.md"})
    memory.run({"command": "create", "path": "/memories/new.md", "file_text": "new\n"})
    memory.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    return moment


def test_history_shows_each_edit_and_the_deletion_newest_first(operations: Operations) -> None:
    memory = operations.memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    memory.run({"command": "insert", "path": "/memories/a.md", "insert_line": 1, "insert_text": "three"})
    memory.run({"command": "delete", "path": "/memories/a.md"})
    versions = MemoryVersions(memory)
    history = versions.history("/memories/a.md")
    assert [(v.operation, v.current) for v in history] == [
        ("deleted", True),
        ("written", False),
        ("written", False),
        ("written", False),
    ]
    written = [v for v in history if v.operation == "written"]
    assert sorted(versions.text_of("/memories/a.md", v.version_id) for v in written) == [
        "one\n",
        "two\n",
        "two\nthree\n",
    ]
    assert sorted(v.size for v in written) == [4, 4, 10]


@on_format_1
def test_history_says_where_a_renamed_file_came_from(operations: Operations) -> None:
    memory = operations.memory("gina")
    memory.run({"command": "create", "path": "/memories/old.md", "file_text": "moved\n"})
    memory.run({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"})
    memory.run({"command": "create", "path": "/memories/d/x.md", "file_text": "x\n"})
    memory.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"})
    memory.run(
        {"command": "str_replace", "path": "/memories/new.md", "old_str": "moved", "new_str": "edited"}
    )
    versions = MemoryVersions(memory)
    assert [(v.current, v.renamed_from) for v in versions.history("/memories/new.md")] == [
        (True, None),
        (False, "/memories/old.md"),
    ]
    assert [v.renamed_from for v in versions.history("/memories/e/x.md")] == ["/memories/d/x.md"]
    assert [v.renamed_from for v in versions.history("/memories/old.md")] == [None, None]


@on_format_1
def test_history_names_the_origin_of_a_rename_made_before_a_rotation(operations: Operations) -> None:
    memory = operations.memory("gina")
    memory.run({"command": "create", "path": "/memories/old.md", "file_text": "moved\n"})
    memory.run({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"})
    new_key = bytes(range(100, 132))
    rotated = Operations(
        operations.bucket, LocalKeyProvider(new_key, version=2, previous={1: MASTER_KEY}), storage_format=1
    )
    assert rotate(rotated, "gina").reencrypted == ["/memories/new.md"]
    rotated.memory("gina").run(
        {"command": "rename", "old_path": "/memories/new.md", "new_path": "/memories/newer.md"}
    )
    versions = MemoryVersions(rotated.memory("gina"))
    # the deletion; the copy sealed again by the rotation, its origin kept; the rename's own copy
    assert [(v.operation, v.renamed_from) for v in versions.history("/memories/new.md")] == [
        ("deleted", None),
        ("written", "/memories/old.md"),
        ("written", "/memories/old.md"),
    ]
    assert [v.renamed_from for v in versions.history("/memories/newer.md")] == ["/memories/new.md"]


@on_format_1
@pytest.mark.parametrize(
    ("stored", "named"),
    [
        (lambda fingerprint: fingerprint.removeprefix("1:"), "/memories/old.md"),  # written before versions
        (lambda fingerprint: fingerprint.replace("1:", "7:", 1), None),  # no key of version 7
        (lambda fingerprint: fingerprint.upper(), None),
        (lambda fingerprint: "", None),
    ],
    ids=["bare", "unknown-version", "malformed", "empty"],
)
def test_history_reads_a_bare_fingerprint_and_names_nothing_for_another(
    operations: Operations, s3: Any, versioned: str, stored: Callable[[str], str], named: str | None
) -> None:
    memory = operations.memory("gina")
    memory.run({"command": "create", "path": "/memories/old.md", "file_text": "moved\n"})
    memory.run({"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"})
    key = "users/gina/memories/new.md"
    metadata = s3.head_object(Bucket=versioned, Key=key)["Metadata"]
    s3.copy_object(  # a bucket writer's, or how a rename wrote it before fingerprints named their key
        Bucket=versioned,
        Key=key,
        CopySource={"Bucket": versioned, "Key": key},
        Metadata={**metadata, ORIGIN_METADATA: stored(metadata[ORIGIN_METADATA])},
        MetadataDirective="REPLACE",
    )
    history = MemoryVersions(memory).history("/memories/new.md")
    assert [(v.current, v.authentic, v.renamed_from) for v in history] == [
        (True, True, named),
        (False, True, "/memories/old.md"),
    ]


@both_formats
def test_restore_a_version_of_a_deleted_file_and_of_an_edited_one(operations: Operations) -> None:
    memory = operations.memory("bob")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "first\n"})
    versions = MemoryVersions(memory)
    (first,) = versions.history("/memories/a.md")
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "first", "new_str": "second"})
    assert versions.restore("/memories/a.md", first.version_id) == "written"
    assert operations.read("bob", "/memories/a.md") == "first\n"
    assert versions.restore("/memories/a.md", first.version_id) == "unchanged"
    memory.run({"command": "delete", "path": "/memories/a.md"})
    assert versions.restore("/memories/a.md", first.version_id) == "written"
    assert operations.read("bob", "/memories/a.md") == "first\n"
    with pytest.raises(CommandError, match="has no version"):
        versions.restore("/memories/a.md", "no-such-version")
    with pytest.raises(CommandError):  # a version of another file, named at this path
        versions.restore("/memories/b.md", first.version_id)


@both_formats
def test_restore_as_of_brings_back_the_earlier_tree_exactly(operations: Operations) -> None:
    memory = operations.memory("carol")
    moment = changed_after_a_moment(memory)
    restored = MemoryVersions(memory).restore_as_of(moment)
    assert restored.changed_meanwhile == []
    assert restored.deleted == ["/memories/e/x.md", "/memories/new.md"]  # in path order on either format
    assert restored.written == ["/memories/d/x.md", "/memories/edit.md", "/memories/gone.md"]
    assert restored.unchanged == ["/memories/keep.md"]
    files = {file.path: operations.read("carol", file.path) for file in operations.files("carol")}
    assert files == EARLIER_TREE


def test_redact_removes_one_version_for_good(operations: Operations) -> None:
    memory = operations.memory("dave")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "oops: a secret\n"})
    memory.run(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "oops: a secret", "new_str": "ok"}
    )
    versions = MemoryVersions(memory)
    leaked = [v for v in versions.history("/memories/a.md") if not v.current]
    (old,) = leaked
    versions.redact("/memories/a.md", old.version_id)
    assert [v.version_id for v in versions.history("/memories/a.md")] != [] and all(
        v.version_id != old.version_id for v in versions.history("/memories/a.md")
    )
    assert operations.read("dave", "/memories/a.md") == "ok\n"
    with pytest.raises(CommandError, match="nothing was changed"):
        versions.redact("/memories/a.md", old.version_id)


def test_without_versioning_history_is_refused_clearly(s3: Any) -> None:
    memory = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1).memory("erin")
    with pytest.raises(CommandError, match="has never had S3 versioning on"):
        MemoryVersions(memory)


def test_the_commands(operations: Operations) -> None:
    memory = operations.memory("frank")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    moment = tick()
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})

    def run(*argv: str, confirm: bool = False) -> tuple[int, str, str]:
        out, err = io.StringIO(), io.StringIO()
        arguments = _parser().parse_args(list(argv))
        console = Console(
            arguments, environ={}, out=out, err=err, confirm=lambda _: confirm, operations=operations
        )
        return console.run(), out.getvalue(), err.getvalue()

    status, out, err = run("history", "--user", "frank", "/memories/a.md", "--json")
    versions = json.loads(out)["versions"]
    assert status == 0 and [v["current"] for v in versions] == [True, False] and '"versions": 2' in err
    old = versions[1]["version_id"]
    assert run("restore", "--user", "frank", "/memories/a.md", "--version", old)[0] == 1  # not confirmed
    assert operations.read("frank", "/memories/a.md") == "two\n"
    status, out, _ = run("restore", "--user", "frank", "--as-of", moment.isoformat(), confirm=True)
    assert status == 0 and out.splitlines() == [
        "written /memories/a.md",
        "1 written, 0 deleted, 0 unchanged, 0 changed meanwhile, 0 failed authentication",
    ]
    assert operations.read("frank", "/memories/a.md") == "one\n"
    for as_of in ("yesterday", "1" * 5_000, "2026-13-01", "20261201"):  # "1" * 8: 1111-11-11 to Python
        status, _, err = command(operations, "restore", "--user", "frank", "--as-of", as_of, "--yes")
        assert status == 2 and err.splitlines()[-1] == (  # a usage error, after the usage
            "s3memory restore: error: argument --as-of: an ISO 8601 time like 2026-12-01T09:00:00Z (a date, a "
            f"time, a zone), not {shown(as_of)!r}"
        )
    status, out, _ = run("redact", "--user", "frank", "/memories/a.md", "--version", old, "--yes")
    assert (status, out) == (0, f"removed {old}\n")


@on_format_1
def test_a_restore_that_dies_half_way_is_finished_by_running_it_again(
    operations: Operations, s3: Any, versioned: str, new_client: Callable[..., Any]
) -> None:
    memory = operations.memory("hank")
    for name in ("a", "b", "c", "d"):
        memory.run({"command": "create", "path": f"/memories/{name}.md", "file_text": f"{name} before\n"})
    moment = tick()
    for name in ("a", "b", "c", "d"):
        memory.run(
            {
                "command": "str_replace",
                "path": f"/memories/{name}.md",
                "old_str": "before",
                "new_str": "after",
            }
        )
    dying = new_client()
    ProcessDeath(dying, "PutObject", 2)
    dead = Operations(Bucket(dying, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1).memory("hank")
    with pytest.raises(SimulatedCrash):
        MemoryVersions(dead).restore_as_of(moment)
    again = MemoryVersions(memory).restore_as_of(moment)
    assert len(again.unchanged) == 1 and len(again.written) == 3 and again.changed_meanwhile == []
    assert {f.path: operations.read("hank", f.path) for f in operations.files("hank")} == {
        f"/memories/{name}.md": f"{name} before\n" for name in ("a", "b", "c", "d")
    }


@pytest.mark.parametrize(
    ("argv", "status", "message"),
    [  # a command line that cannot work: 2; what the store holds refuses: 1
        (
            ["history", "--user", "ivy", "/memories/../x"],
            2,
            "argument path: Path /memories/../x would escape",
        ),
        (["history", "--user", "../ivy", "/memories/a.md"], 2, "s3memory history: error: argument --user: "),
        (
            ["restore", "--user", "ivy", "--version", "v1", "--yes"],
            2,
            "s3memory restore: --version needs the",
        ),
        (
            ["restore", "--user", "ivy", "/memories/a.md", "--version", "nope", "--yes"],
            1,
            "has no version nope",
        ),
        (  # no S3 server's id: refused before a request (helper-40: a 414 that said "try again")
            ["restore", "--user", "ivy", "/memories/a.md", "--version", "v" * 100_000, "--yes"],
            1,
            "s3memory restore: Error: /memories/a.md has no version "
            + "v" * 200
            + "… (or it is a deletion): "
            "`s3memory history /memories/a.md` lists its versions.",
        ),
        (
            ["restore", "--user", "ivy", "/memories/a.md", "--version", "a\x1b[2Jb", "--yes"],
            1,
            "has no version a\\x1b[2Jb (or it is a deletion)",
        ),
        (
            ["redact", "--user", "ivy", "/memories/a.md", "--version", "nope", "--yes"],
            1,
            "nothing was changed",
        ),
        (
            ["redact", "--user", "ivy", "/etc/passwd", "--version", "v", "--yes"],
            2,
            "s3memory redact: error: argument path: Path must start with /memories",
        ),
    ],
)
def test_bad_input_is_refused_clearly_and_changes_nothing(
    operations: Operations, s3: Any, versioned: str, argv: list[str], status: int, message: str
) -> None:
    operations.memory("ivy").run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    before = sorted(
        (item["Key"], item["VersionId"])
        for item in s3.list_object_versions(Bucket=versioned).get("Versions", [])
    )
    refused, _, err = command(operations, *argv)
    assert (refused, message in err) == (status, True), err
    after = sorted(
        (item["Key"], item["VersionId"])
        for item in s3.list_object_versions(Bucket=versioned).get("Versions", [])
    )
    assert after == before
