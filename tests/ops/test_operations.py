"""The operator's library API and commands: users, ls, cat, export and import (moto and SeaweedFS).
The tests that take ``storage_format`` run on both storage formats (``operations`` is then of the
test's format; of format 1 otherwise); those of format 2 alone are in ``test_operations_format2.py``."""

from __future__ import annotations

import io
import json
import os
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from anthropic.tools import BetaLocalFilesystemMemoryTool
from anthropic.types.beta import BetaMemoryTool20250818CreateCommand
from botocore.exceptions import ClientError

from bench.metrics import RequestCounter
from s3memory.cli.console import Console
from s3memory.cli.main import _parser
from s3memory.core.job_records import Job
from s3memory.core.paths import memory_path
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.errors import CommandError, IntegrityError, StorageError
from s3memory.memory import S3Memory
from s3memory.ops import folder_writes, folders, writes
from s3memory.ops.idle_expiry import DAY_SECONDS, expire
from s3memory.ops.operations import Operations
from s3memory.ops.versions import MemoryVersions
from s3memory.settings import Limits
from s3memory.storage.bucket import Bucket
from tests.conftest import STORAGE_FORMAT
from tests.support.bucket import (
    BUCKET,
    LOCAL_KEY_B64,
    MASTER_KEY,
    SEAWEEDFS_SLOW,
    snapshot,
    stored_keys,
)
from tests.support.console import audit
from tests.support.console import run as command
from tests.support.faults import ProcessDeath, SimulatedCrash
from tests.support.formats import REFUSED_TOKEN, both_formats, on_format_1

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)
AWS_KEY = "AKIA" + "IOSFODNN7EXAMPLE"
FILES = {
    "/memories/preferences.md": "# Preferences\n- metric units\n",
    "/memories/projects/acme/notes.md": "line one\nline two",
    "/memories/projects/acme/todo.txt": "ünïcödé ✓\n",
    "/memories/empty.md": "",
}


@pytest.fixture
def storage_format() -> int:
    """The suites' format (``STORAGE_FORMAT``: the library's default unless set), unless the test
    runs on both (``both_formats`` parametrizes this)."""
    return STORAGE_FORMAT


@pytest.fixture
def operations(s3: Any, storage_format: int) -> Operations:
    return Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=storage_format)


def seed(operations: Operations, user: str, files: dict[str, str] = FILES) -> S3Memory:
    """The files created, and the access record the first create writes."""
    memory = operations.memory(user)
    for path, text in files.items():
        memory.run({"command": "create", "path": path, "file_text": text})
    return memory


def tree(base: Path) -> dict[str, bytes]:
    """Every file below ``base``, by its path relative to it."""
    return {
        path.relative_to(base).as_posix(): path.read_bytes()
        for path in sorted(base.rglob("*"))
        if path.is_file()
    }


def test_users_are_the_valid_names_below_the_prefix(operations: Operations, s3: Any, backend: str) -> None:
    seed(operations, "alice", {"/memories/a.md": "a"})
    seed(operations, "bob@example.com", {"/memories/b.md": "b"})
    if backend == "moto":  # SeaweedFS refuses the key itself
        s3.put_object(Bucket=BUCKET, Key="users/../planted", Body=b"x")
    s3.put_object(Bucket=BUCKET, Key="users/" + "u" * 300 + "/x", Body=b"x")  # no user id is that long
    assert list(operations.users()) == ["alice", "bob@example.com"]


@both_formats
def test_files_and_read(operations: Operations) -> None:
    seed(operations, "alice")
    assert [(file.path, file.size) for file in operations.files("alice")] == sorted(
        (path, len(text.encode())) for path, text in FILES.items()
    )
    assert [file.path for file in operations.files("alice", "/memories/projects")] == [
        "/memories/projects/acme/notes.md",
        "/memories/projects/acme/todo.txt",
    ]
    assert [file.path for file in operations.files("alice", "/memories/empty.md")] == ["/memories/empty.md"]
    assert operations.read("alice", "/memories/projects/acme/todo.txt") == "ünïcödé ✓\n"
    with pytest.raises(CommandError, match=r"^Error: The file /memories/missing.md does not exist\.$"):
        operations.read("alice", "/memories/missing.md")


def nobody(user_id: str) -> str:
    """What the operator commands say of a user or shared memory that does not exist."""
    if user_id.startswith("shared/"):
        return (
            f"Error: The shared memory {user_id} does not exist in this store: `s3memory shared` lists its "
            "shared memories (--bucket and --prefix choose the store)."
        )
    return (
        f"Error: The user {user_id} does not exist in this store: `s3memory users` lists its users "
        "(--bucket and --prefix choose the store)."
    )


class Requests:
    """The operations and parameters of the requests one client sends."""

    def __init__(self, client: Any) -> None:
        self.sent: list[tuple[str, dict[str, Any]]] = []
        client.meta.events.register("provide-client-params.s3", self._record)

    def _record(self, params: dict[str, Any], model: Any, **_: Any) -> None:
        self.sent.append((model.name, dict(params)))


@both_formats
def test_a_user_that_does_not_exist_is_said_not_to_exist_and_an_empty_memory_is_not(
    s3: Any, versioned: str, storage_format: int, tmp_path: Path
) -> None:
    """Issue 38, 4: a typo in ``--user`` looked like an empty memory (``ls`` printed ``(no files at
    /memories)`` and exited 0; ``cat`` said the file did not exist). Each command that reads one
    memory says the user does not exist (exit 1), for a name never used and for one erased (whose
    emptied folder SeaweedFS still lists), with one listing of one key below the namespace and no
    write; a user whose files were all deleted exists, and its memory is empty."""
    operations = Operations(
        Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=storage_format
    )
    seed(operations, "alice")
    seed(operations, "gone")
    emptied = seed(operations, "emptied", {"/memories/a.md": "a\n"})
    emptied.run({"command": "delete", "path": "/memories/a.md"})  # its access record stays
    assert command(operations, "erase", "--user", "gone", "--yes")[0] == 0
    assert list(operations.users()) == ["alice", "emptied"]  # not the erased user's empty folder
    moment = datetime.now(UTC).isoformat()
    before = snapshot(s3)
    requests = Requests(s3)
    for user in ("bob", "gone"):
        for argv in (
            ["ls", "--user", user],
            ["ls", "--user", user, "/memories/projects"],
            ["cat", "--user", user, "/memories/preferences.md"],
            ["cat", "--user", user, "/memories"],
            ["export", "--user", user, str(tmp_path / "out")],
            ["history", "--user", user, "/memories/preferences.md"],
            ["restore", "--user", user, "--as-of", moment, "--yes"],
            ["restore", "--user", user, "/memories/preferences.md", "--version", "v", "--yes"],
            ["verify", "--user", user],
        ):
            status, out, err = command(operations, *argv)
            assert (status, out, err.splitlines()[0]) == (1, "", f"s3memory {argv[0]}: {nobody(user)}"), argv
    assert snapshot(s3) == before and not (tmp_path / "out").exists()
    assert not [name for name, _ in requests.sent if not name.startswith(("List", "Get", "Head"))]
    namespace = operations.memory("bob").placed.layout.namespace
    looks = [(name, params["MaxKeys"]) for name, params in requests.sent if params.get("Prefix") == namespace]
    assert looks == [  # one listing of one key each; history and restore: of versions
        *[("ListObjectsV2", 1)] * 5,
        ("ListObjectVersions", 1),
        ("ListObjectVersions", 1),
        ("ListObjectVersions", 1),
        ("ListObjectsV2", 1000),  # verify's own listing of the namespace, which found nothing
    ]
    assert command(operations, "ls", "--user", "emptied")[:2] == (0, "(no files at /memories)\n")
    assert command(operations, "cat", "--user", "emptied", "/memories/a.md")[2].splitlines()[0] == (
        "s3memory cat: Error: The file /memories/a.md does not exist."
    )
    status, out, _ = command(operations, "history", "--user", "emptied", "/memories/a.md")
    assert (status, [line.split()[1] for line in out.splitlines()]) == (0, ["deleted", "written"])


@pytest.mark.parametrize("storage_format", [2], ids=["format-2"])
def test_a_shared_memory_that_does_not_exist_is_said_not_to_exist(operations: Operations, s3: Any) -> None:
    seed(operations, "shared/team-acme", {"/memories/runbook.md": "r\n"})
    before = snapshot(s3)
    for argv in (
        ["ls", "--user", "shared/team-acme"],
        ["cat", "--user", "shared/team-acme", "/memories/runbook.md"],
    ):
        assert command(operations, *argv)[0] == 0
    for argv in (
        ["ls", "--user", "shared/team-acne"],
        ["cat", "--user", "shared/team-acne", "/memories/runbook.md"],
    ):
        status, out, err = command(operations, *argv)
        assert (status, out, err.splitlines()[0]) == (
            1,
            "",
            f"s3memory {argv[0]}: {nobody('shared/team-acne')}",
        )
    assert snapshot(s3) == before


def test_users_costs_a_listing_per_namespace_or_per_page_of_objects_whichever_is_fewer(s3: Any) -> None:
    """``users`` lists without delimiter (a delimited listing names a folder SeaweedFS keeps once it is
    empty), each page starting past the namespace its last key lies in: a user with many objects
    costs one listing, not one per page of them (a listing of every key takes 5 pages here)."""
    operations = Operations(Bucket(s3, BUCKET, page_size=3), LocalKeyProvider(MASTER_KEY), storage_format=1)
    seed(operations, "ann", {f"/memories/{n}.md": "x\n" for n in range(7)})  # 8 objects with the record
    for name in ("ann0", "ann-b", "bo"):  # "0" and "-" sort around "/", S3 and SeaweedFS differently
        seed(operations, name, {"/memories/a.md": "x\n"})
    requests = Requests(s3)
    assert sorted(operations.users()) == ["ann", "ann-b", "ann0", "bo"]
    assert [name for name, params in requests.sent if params["Prefix"] == "users/"] == ["ListObjectsV2"] * 3


def test_keys_a_bucket_writer_plants_past_the_namespace_mark_cannot_keep_users_listing(s3: Any) -> None:
    """The review of issue 38: each page started at ``<namespace>/\U0010ffff``, so keys planted below a
    namespace that sort after that mark (``carol/\U0010ffff00000``...) filled every page, the start
    never moved, and ``users`` (every ``--all``, the expiry function) sent listings without end. A
    page now starts past its last key where that lies beyond the mark: one listing per page of them."""
    operations = Operations(Bucket(s3, BUCKET, page_size=3), LocalKeyProvider(MASTER_KEY), storage_format=1)
    seed(operations, "carol", {"/memories/a.md": "x\n"})
    seed(operations, "dave", {"/memories/a.md": "x\n"})
    for number in range(7):
        s3.put_object(Bucket=BUCKET, Key=f"users/carol/\U0010ffff{number:05}", Body=b"")
    requests = Requests(s3)
    assert sorted(operations.users()) == ["carol", "dave"]
    listings = [name for name, params in requests.sent if params["Prefix"] == "users/"]
    assert listings == ["ListObjectsV2"] * 4  # 2 + 7 + 2 keys, 3 a page


def test_a_server_that_ignores_start_after_is_refused_not_listed_for_ever(s3: Any) -> None:
    """A server that answers each listing from its start whatever ``StartAfter`` says (a lax one)
    would give the same page for ever: ``users`` refuses it, naming the cause."""
    operations = Operations(Bucket(s3, BUCKET, page_size=3), LocalKeyProvider(MASTER_KEY), storage_format=1)
    seed(operations, "ann", {f"/memories/{n}.md": "x\n" for n in range(4)})
    seed(operations, "bo", {"/memories/a.md": "x\n"})
    s3.meta.events.register(
        "before-parameter-build.s3.ListObjectsV2", lambda params, **_: params.pop("StartAfter", None)
    )
    with pytest.raises(StorageError) as refused:
        list(operations.users())
    assert refused.value.message == (
        f"Error: The S3 server of {operations.bucket.where} listed the same keys again from a later start "
        "(it ignores ListObjectsV2's StartAfter), so the users cannot be listed to the end. Use an S3 "
        "server that honours it (docs/servers.md); nothing was changed."
    )


@both_formats
def test_export_import_export_gives_identical_folders(
    operations: Operations, s3: Any, tmp_path: Path, storage_format: int
) -> None:
    seed(operations, "alice")
    first = operations.export("alice", tmp_path / "one")
    assert first.written == sorted(FILES) and first.complete  # in path order on either format
    assert tree(tmp_path / "one") == {path[1:]: text.encode() for path, text in FILES.items()}
    loaded = operations.import_folder("carol", tmp_path / "one")
    assert loaded.written == sorted(FILES) and loaded.complete
    operations.export("carol", tmp_path / "two")
    assert tree(tmp_path / "two") == tree(tmp_path / "one")
    mode = os.stat(tmp_path / "two" / "memories" / "preferences.md").st_mode & 0o777
    assert mode == folders.FILE_MODE
    other = Operations(  # a store of the other format: its folder imports here and exports the same
        Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), prefix="other/", storage_format=3 - storage_format
    )
    assert other.import_folder("dave", tmp_path / "one").complete
    other.export("dave", tmp_path / "three")
    assert operations.import_folder("erin", tmp_path / "three").complete
    operations.export("erin", tmp_path / "four")
    assert tree(tmp_path / "four") == tree(tmp_path / "one")


def test_a_folder_the_sdks_local_tool_wrote_reads_the_same_after_import(
    operations: Operations, tmp_path: Path
) -> None:
    local = BetaLocalFilesystemMemoryTool(base_path=str(tmp_path / "sdk"))
    for path, text in FILES.items():
        local.create(BetaMemoryTool20250818CreateCommand(command="create", path=path, file_text=text))
    assert operations.import_folder("dave", tmp_path / "sdk").complete
    for path, text in FILES.items():
        assert operations.read("dave", path) == text
    memory = operations.memory("dave")
    assert memory.run({"command": "view", "path": "/memories/preferences.md"}) == (
        "Here's the content of /memories/preferences.md with line numbers:\n"
        "     1\t# Preferences\n     2\t- metric units"
    )


def test_import_refuses_what_the_tool_refuses_and_reports_it(s3: Any, tmp_path: Path) -> None:
    operations = Operations(
        Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), limits=Limits(max_file_bytes=64), storage_format=1
    )
    root = tmp_path / "memories"
    (root / "ok").mkdir(parents=True)
    (root / "ok" / "fine.md").write_text("fine\n")
    (root / "big.md").write_text("x" * 65)
    (root / "secret.md").write_text(f"key {AWS_KEY}\n")
    (root / "binary.md").write_bytes(b"\xff\xfe")
    (root / "back\\slash.md").write_text("x")
    (root / "link.md").symlink_to(root / "ok" / "fine.md")
    before = snapshot(s3)
    dry = operations.import_folder("erin", tmp_path, dry_run=True)
    assert snapshot(s3) == before  # a dry run changes nothing
    transfer = operations.import_folder("erin", tmp_path)
    assert transfer.written == ["/memories/ok/fine.md"] == dry.written
    refused = dict(transfer.refused)
    assert (
        sorted(refused)
        == sorted(dict(dry.refused))
        == [
            "/memories/back\\slash.md",
            "/memories/big.md",
            "/memories/binary.md",
            "/memories/link.md",
            "/memories/secret.md",
        ]
    )
    assert refused["/memories/big.md"] == (
        "Error: The file /memories/big.md would be 65 bytes; the limit is 64 bytes. Nothing was changed."
    )
    assert refused["/memories/binary.md"] == (
        "Error: /memories/binary.md is not a valid UTF-8 text file; it was not imported."
    )
    assert refused["/memories/link.md"] == "Error: /memories/link.md is a symbolic link; it was not imported."
    assert "AWS" in refused["/memories/secret.md"] and AWS_KEY not in refused["/memories/secret.md"]
    assert refused["/memories/back\\slash.md"].startswith("Error: ")
    assert stored_keys(s3, "users/erin/") == ["users/erin/internal/access", "users/erin/memories/ok/fine.md"]
    assert not transfer.complete


@both_formats
def test_import_never_overwrites_unless_asked(operations: Operations, tmp_path: Path) -> None:
    seed(operations, "frank", {"/memories/a.md": "stored\n", "/memories/b.md": "same\n"})
    folder_writes.write(tmp_path, "/memories/a.md", b"local\n")
    folder_writes.write(tmp_path, "/memories/b.md", b"same\n")
    kept = operations.import_folder("frank", tmp_path)
    assert kept.skipped == [("/memories/a.md", "a file with other text is stored there")]
    assert kept.unchanged == ["/memories/b.md"]
    assert operations.read("frank", "/memories/a.md") == "stored\n"
    replaced = operations.import_folder("frank", tmp_path, overwrite=True)
    assert replaced.written == ["/memories/a.md"] and replaced.complete
    assert operations.read("frank", "/memories/a.md") == "local\n"
    assert operations.export("frank", tmp_path).unchanged == ["/memories/a.md", "/memories/b.md"]


@both_formats
def test_an_overwrite_the_tool_refuses_keeps_the_stored_file(operations: Operations, tmp_path: Path) -> None:
    """``--overwrite`` replaces a stored file: a text that ``create`` refuses (here, a secret the
    content guard refuses) is refused before anything is written."""
    seed(operations, "frank", {"/memories/a.md": "stored\n"})
    folder_writes.write(tmp_path, "/memories/a.md", f"key {AWS_KEY}\n".encode())
    transfer = operations.import_folder("frank", tmp_path, overwrite=True)
    assert [path for path, _ in transfer.refused] == ["/memories/a.md"] and not transfer.written
    assert operations.read("frank", "/memories/a.md") == "stored\n"


def test_an_overwrite_is_one_conditional_write_that_a_racing_change_refuses(
    operations: Operations, tmp_path: Path, s3: Any
) -> None:
    seed(operations, "hank", {"/memories/a.md": "stored\n"})
    folder_writes.write(tmp_path, "/memories/a.md", b"local\n")
    requests = RequestCounter(s3)
    assert operations.import_folder("hank", tmp_path, overwrite=True).written == ["/memories/a.md"]
    assert not {"DeleteObject", "DeleteObjects"} & set(requests.calls)  # the file is never gone
    memory = operations.memory("hank")
    target = memory_path("/memories/a.md")
    found = memory.placed.files.read(target)
    assert found is not None
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "local", "new_str": "theirs"})
    before = snapshot(s3)
    with pytest.raises(CommandError) as refused:
        writes.overwrite(memory.placed, target, found, "mine\n")
    assert refused.value.message == (
        "Error: /memories/a.md changed while it was being replaced; nothing was written. Try again."
    )
    assert snapshot(s3) == before and operations.read("hank", "/memories/a.md") == "theirs\n"


def test_export_leaves_a_different_local_file_alone_unless_asked(
    operations: Operations, tmp_path: Path
) -> None:
    seed(operations, "gina", {"/memories/a.md": "stored\n"})
    folder_writes.write(tmp_path, "/memories/a.md", b"local\n")
    assert operations.export("gina", tmp_path).skipped == [
        ("/memories/a.md", "a different local file is there")
    ]
    assert (tmp_path / "memories" / "a.md").read_bytes() == b"local\n"
    assert operations.export("gina", tmp_path, overwrite=True).written == ["/memories/a.md"]
    assert (tmp_path / "memories" / "a.md").read_bytes() == b"stored\n"


def tamper(s3: Any, bucket: str, key: str) -> None:
    """The object at ``key`` rewritten by a bucket writer with its last byte flipped (a new version
    where the bucket keeps versions)."""
    stored = s3.get_object(Bucket=bucket, Key=key)
    body = bytearray(stored["Body"].read())
    body[-1] ^= 1
    s3.put_object(Bucket=bucket, Key=key, Body=bytes(body), Metadata=stored["Metadata"])


FAILED_AUTHENTICATION = (
    "Error: The stored object for {path} failed its integrity check (tampered, truncated, foreign, wrongly "
    "keyed or not encrypted); it was not read. `s3memory history` marks each version of the file that "
    "fails authentication: `s3memory redact` that version (if it is the current one, the version before "
    "it becomes current), then run this again."
)


@both_formats
def test_an_export_refuses_a_file_that_fails_authentication_and_goes_on(
    operations: Operations, s3: Any, tmp_path: Path
) -> None:
    seed(operations, "alice")
    tampered = "/memories/empty.md"  # the first in path order: every later file was never written
    tamper(s3, BUCKET, operations.memory("alice").placed.layout.file_key(memory_path(tampered)))
    refused = FAILED_AUTHENTICATION.format(path=tampered)
    transfer = operations.export("alice", tmp_path)
    assert transfer.refused == [(tampered, refused)]
    assert transfer.written == sorted(set(FILES) - {tampered})
    assert tree(tmp_path) == {path[1:]: text.encode() for path, text in FILES.items() if path != tampered}
    status, out, _ = command(operations, "export", "--user", "alice", str(tmp_path))
    assert status == 1
    assert out.splitlines()[-2:] == [
        f"refused {tampered}: {refused}",
        "0 written, 3 unchanged, 0 skipped, 1 refused",
    ]


def test_an_export_stops_at_a_failure_of_the_store_not_of_a_file(
    operations: Operations, s3: Any, tmp_path: Path
) -> None:
    """Expired credentials fail every file alike: the export ends at the first, naming the cause,
    and does not send one failing request per file (helper-44)."""
    seed(operations, "alice")
    gets: list[str] = []

    def expired(**_: Any) -> None:
        gets.append("GET")
        raise ClientError({"Error": {"Code": "ExpiredToken", "Message": "expired"}}, "GetObject")

    s3.meta.events.register_first("before-call.s3.GetObject", expired)
    try:
        with pytest.raises(StorageError, match=r"^Error: S3 GetObject failed \(ExpiredToken\)"):
            operations.export("alice", tmp_path)
    finally:
        s3.meta.events.unregister("before-call.s3.GetObject", expired)
    assert len(gets) == 1


@both_formats
def test_a_restore_as_of_reports_a_file_that_fails_authentication_and_its_fix_works(
    s3: Any, versioned: str, storage_format: int
) -> None:
    operations = Operations(
        Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=storage_format
    )
    memory = seed(operations, "alice", {"/memories/a.md": "before\n", "/memories/b.md": "before\n"})
    time.sleep(1.1)  # S3 keeps modification times to the second
    moment = datetime.now(UTC)
    time.sleep(1.1)
    for path in ("/memories/a.md", "/memories/b.md"):
        memory.run({"command": "str_replace", "path": path, "old_str": "before", "new_str": "after"})
    tamper(s3, versioned, memory.placed.layout.file_key(memory_path("/memories/a.md")))  # its current version
    versions = MemoryVersions(memory)
    restored = versions.restore_as_of(moment)  # it was "changed meanwhile", however often run again
    assert restored.failed_authentication == [
        ("/memories/a.md", FAILED_AUTHENTICATION.format(path="/memories/a.md"))
    ]
    assert (restored.changed_meanwhile, restored.written) == ([], ["/memories/b.md"])
    status, out, _ = command(operations, "restore", "--user", "alice", "--as-of", moment.isoformat(), "--yes")
    assert status == 1
    assert out.splitlines() == [
        f"failed authentication /memories/a.md: {FAILED_AUTHENTICATION.format(path='/memories/a.md')}",
        "0 written, 0 deleted, 1 unchanged, 0 changed meanwhile, 1 failed authentication",
    ]
    current, *_ = versions.history("/memories/a.md")
    assert current.current and not current.authentic
    versions.redact("/memories/a.md", current.version_id)  # the fix the message names
    again = versions.restore_as_of(moment)
    assert (again.written, again.unchanged, again.failed_authentication) == (
        ["/memories/a.md"],
        ["/memories/b.md"],
        [],
    )
    assert operations.read("alice", "/memories/a.md") == "before\n"


class Died(BaseException):
    """The process died here."""


@on_format_1
def test_an_import_that_dies_half_way_is_finished_by_running_it_again(
    operations: Operations, tmp_path: Path, new_client: Callable[..., Any]
) -> None:
    seed(operations, "source")
    folder = tmp_path / "folder"
    operations.export("source", folder)
    dying = new_client()
    ProcessDeath(dying, "GetObject", 3)  # at its third file: each is read before it is created
    with pytest.raises(SimulatedCrash):
        Operations(Bucket(dying, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1).import_folder(
            "target", folder
        )
    again = operations.import_folder("target", folder)
    assert len(again.unchanged) == 2 and len(again.written) == 2 and again.complete
    assert operations.export("target", tmp_path / "check").complete
    assert tree(tmp_path / "check") == tree(folder)


def test_an_export_that_dies_half_way_is_finished_by_running_it_again(
    operations: Operations, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    seed(operations, "alice")
    real_put = folder_writes.Target.put
    calls = {"count": 0}

    def dying_put(target: folder_writes.Target, path: str, data: bytes, *, overwrite: bool) -> bool:
        calls["count"] += 1
        if calls["count"] == 3:
            raise Died()
        return real_put(target, path, data, overwrite=overwrite)

    monkeypatch.setattr(folder_writes.Target, "put", dying_put)
    with pytest.raises(Died):
        operations.export("alice", tmp_path)
    monkeypatch.setattr(folder_writes.Target, "put", real_put)
    again = operations.export("alice", tmp_path)
    assert len(again.unchanged) == 2 and len(again.written) == 2
    assert tree(tmp_path) == {path[1:]: text.encode() for path, text in FILES.items()}


# -- the commands ------------------------------------------------------------------------------


@both_formats
def test_the_commands_answer_as_text_and_as_json(operations: Operations, tmp_path: Path) -> None:
    seed(operations, "alice")
    status, out, err = command(operations, "users")
    assert (status, out) == (0, "alice\n")
    assert audit(err)["command"] == "users" and audit(err)["users"] == 1
    status, out, _ = command(operations, "ls", "--user", "alice")
    assert status == 0 and out.splitlines() == [
        f"{len(FILES[path].encode()):>10,}  {path}" for path in sorted(FILES)
    ]
    status, out, _ = command(operations, "ls", "--user", "alice", "--json")
    assert status == 0 and json.loads(out)["files"][0] == {"path": "/memories/empty.md", "size": 0}
    status, out, err = command(operations, "cat", "--user", "alice", "/memories/preferences.md")
    assert (status, out) == (0, FILES["/memories/preferences.md"])
    record = audit(err)
    assert record["user_id"] == "alice" and record["bytes"] == len(FILES["/memories/preferences.md"])
    assert "preferences" not in err and "metric" not in err  # the audit line names no path or content
    status, out, err = command(operations, "export", "--user", "alice", str(tmp_path), "--json")
    assert status == 0 and json.loads(out)["written"] == 4 and audit(err)["written"] == 4
    assert "memories/" not in err


def test_bad_input_gets_a_clear_error_and_changes_nothing(
    operations: Operations, s3: Any, tmp_path: Path
) -> None:
    seed(operations, "alice")
    before = snapshot(s3)
    assert command(operations, "cat", "--user", "alice", "/memories/../x")[0] == 2
    status, _, err = command(operations, "cat", "--user", "alice", "/memories/missing.md")
    assert status == 1 and "Error: The file /memories/missing.md does not exist." in err
    for directory in ("/memories/projects", "/memories/projects/acme", "/memories"):
        status, out, err = command(operations, "cat", "--user", "alice", directory)
        assert (status, out, err.splitlines()[0]) == (
            1,
            "",
            f"s3memory cat: Error: {directory} is a directory, not a file: `s3memory ls` lists what it holds.",
        )
    status, _, err = command(operations, "ls", "--user", "../bob")
    assert (status, err.splitlines()[-1]) == (
        2,
        "s3memory ls: error: argument --user: user_id must not contain '/', '\\' or control characters, nor "
        "be '.' or '..'",
    )
    status, _, err = command(operations, "import", "--user", "alice", str(tmp_path / "absent"))
    assert status == 1 and "is not a directory" in err
    folder_writes.write(tmp_path, "/memories/preferences.md", b"other\n")
    status, _, err = command(operations, "import", "--user", "alice", str(tmp_path), "--overwrite")
    assert status == 1 and "not confirmed; nothing was changed" in err
    assert snapshot(s3) == before
    status, out, _ = command(
        operations, "import", "--user", "alice", str(tmp_path), "--overwrite", "--dry-run"
    )
    assert (status, out) == (
        0,
        "would write /memories/preferences.md\n1 would be written, 0 unchanged, 0 skipped, 0 refused\n",
    )
    assert snapshot(s3) == before
    assert command(operations, "import", "--user", "alice", str(tmp_path), "--overwrite", "--yes")[0] == 0
    assert operations.read("alice", "/memories/preferences.md") == "other\n"


RESERVED = "s3memory.probe-notes"
RESERVED_REFUSAL = (
    "user_id must not begin with 's3memory.', which names the store's own objects; choose another user id"
)


@both_formats
def test_a_memory_under_a_user_id_now_reserved_is_moved_by_the_operator(
    operations: Operations, s3: Any, tmp_path: Path
) -> None:
    """Issue 37, S2: user ids beginning with ``s3memory.`` are reserved, and no edge serves one
    (``test_each_rule_once.py::test_every_edge_refuses_a_reserved_user_id_and_only_an_operator_names_one``).
    A memory made under one before is not locked away: the operator lists it, ``verify`` reports
    it with the fix, and the steps of ``docs/operations.md`` "Reserved user ids" move it (export,
    import under a new id, which import alone refuses to make a reserved one, erase)."""
    seed(operations, RESERVED, {"/memories/a.md": "a\n", "/memories/b/c.md": "c\n"})  # made before
    seed(operations, "alice", {"/memories/x.md": "x\n"})
    assert list(operations.users()) == ["alice", RESERVED]
    (found,) = operations.verify(RESERVED).problems
    assert (found.kind, found.detail) == (
        "reserved id",
        "a user id beginning with 's3memory.', reserved: no memory tool, function or MCP server serves "
        "it; move this memory to a new id (export it, import it under the new id, erase this one: "
        'docs/operations.md, "Reserved user ids")',
    )
    assert command(operations, "verify", "--user", RESERVED)[0] == 1
    idle = expire(operations, 1, [RESERVED], now=time.time() + 2 * DAY_SECONDS, dry_run=True)
    assert [(user.user_id, sorted(user.expired)) for user in idle.users] == [
        (RESERVED, ["/memories/a.md", "/memories/b/c.md"])  # idle like any: no edge serves it
    ]

    assert command(operations, "export", "--user", RESERVED, str(tmp_path / "moved"))[0] == 0
    before = snapshot(s3)
    status, _, err = command(operations, "import", "--user", RESERVED, str(tmp_path / "moved"))
    assert (status, err.splitlines()[-1]) == (
        2,
        f"s3memory import: error: argument --user: {RESERVED_REFUSAL}",
    )
    assert snapshot(s3) == before
    assert command(operations, "import", "--user", "probe-notes", str(tmp_path / "moved"))[0] == 0
    assert command(operations, "export", "--user", "probe-notes", str(tmp_path / "again"))[0] == 0
    assert tree(tmp_path / "again") == tree(tmp_path / "moved") != {}
    assert command(operations, "erase", "--user", RESERVED, "--yes")[0] == 0

    with pytest.raises(CommandError, match=f"^Error: The user {RESERVED} does not exist in this store"):
        operations.files(RESERVED)
    assert list(operations.users()) == ["alice", "probe-notes"]  # SeaweedFS lists the emptied folder
    status, out, _ = command(operations, "verify", "--all")
    assert (status, out.splitlines()[-1].split(": ")[-1]) == (0, "no problem")


def test_settings_come_from_the_environment_under_the_flags(session_s3: Any) -> None:
    session_s3.create_bucket(Bucket="operator-settings")
    out, err = io.StringIO(), io.StringIO()
    arguments = _parser().parse_args(["users", "--bucket", "operator-settings", "--json"])
    environ = {"S3MEMORY_BUCKET": "not-this-one", "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}
    assert Console(arguments, environ=environ, out=out, err=err).run() == 0
    assert json.loads(out.getvalue()) == {"users": []}
    arguments = _parser().parse_args(["users"])
    status = Console(arguments, environ={"S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}, out=out, err=err).run()
    assert status == 2 and "s3memory users: S3MEMORY_BUCKET is required" in err.getvalue()


# -- verify ----------------------------------------------------------------------------------------


def seal_job(operations: Operations, user: str, kind: str, path: str, created: float) -> str:
    """A job record as s3memory writes it, created at ``created`` (seconds)."""
    memory = operations.memory(user)
    job = Job.plan(kind, memory_path(path), None, (), created)  # type: ignore[arg-type]
    key = memory.placed.layout.key_of_internal(job.name)
    memory.store.bucket.put(key, memory.placed.files.cipher.seal(job.record_path, job.encode()))
    return key


@both_formats
def test_verify_finds_tampered_foreign_and_stuck_and_changes_nothing(
    operations: Operations, s3: Any, storage_format: int
) -> None:
    seed(operations, "alice")
    seed(operations, "bob", {"/memories/bob.md": "bob's\n"})
    clean, _, _ = command(operations, "verify", "--user", "alice")
    assert clean == 0
    alice, bob = operations.memory("alice").placed.layout, operations.memory("bob").placed.layout
    space = alice.namespace
    tampered = alice.file_key(memory_path("/memories/preferences.md"))
    tamper(s3, BUCKET, tampered)
    copied = alice.file_key(memory_path("/memories/copied.md"))  # bob's file, at a path of alice's
    s3.copy_object(
        Bucket=BUCKET,
        Key=copied,
        CopySource={"Bucket": BUCKET, "Key": bob.file_key(memory_path("/memories/bob.md"))},
    )
    folder = alice.file_key(memory_path("/memories/folder")) + "/"
    planted = [folder, space + "internal/other", space + "internal/jobs/junk"]
    expected = {
        ("unreadable", tampered, True),
        ("unreadable", copied, True),
        ("foreign", folder, True),
        ("foreign", space + "internal/other", True),
        ("bad job record", space + "internal/jobs/junk", True),
    }
    if storage_format == 2:  # what a place record and private names add
        moved = alice.file_key(memory_path("/memories/moved.md"))  # alice's own file, placed for another path
        empty = alice.file_key(memory_path("/memories/empty.md"))
        s3.copy_object(Bucket=BUCKET, Key=moved, CopySource={"Bucket": BUCKET, "Key": empty})
        swapped = alice.file_key(
            memory_path("/memories/projects/acme/notes.md")
        )  # another file's place record
        todo = s3.head_object(
            Bucket=BUCKET, Key=alice.file_key(memory_path("/memories/projects/acme/todo.txt"))
        )
        s3.copy_object(
            Bucket=BUCKET,
            Key=swapped,
            CopySource={"Bucket": BUCKET, "Key": swapped},
            Metadata=todo["Metadata"],
            MetadataDirective="REPLACE",
        )
        token = space + "memories/" + REFUSED_TOKEN
        planted += [token, space + "elsewhere"]
        expected |= {
            ("unreadable", moved, True),
            ("unreadable", swapped, True),
            ("foreign", token, True),
            ("foreign", space + "elsewhere", True),
        }
        s3.put_object(Bucket=BUCKET, Key=f"users/{REFUSED_TOKEN}/memories/x", Body=b"x")  # no user's
    for key in planted:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x" if not key.endswith("/") else b"")
    now = time.time()
    stuck = seal_job(operations, "alice", "delete", "/memories/old", now - 3600)
    pending = seal_job(operations, "alice", "delete", "/memories/new", now - 5)
    before = snapshot(s3)

    report = operations.verify("alice", now=now)
    found = {(finding.kind, finding.key, finding.problem) for finding in report.findings}
    assert found == expected | {("stuck job", stuck, True), ("pending job", pending, False)}
    if storage_format == 2:
        details = {finding.key: finding.detail for finding in report.findings}
        assert details[moved].startswith(
            "Error: The stored object for /memories/moved.md failed its integrity check"
        )
        assert details[token] == "a key that maps to no memory path"
        assert details[space + "elsewhere"] == "an object outside memories/ and internal/"
    # the files, the objects planted in alice's namespace (six; on format 2 nine) and the access record
    # (local keys store no wrapped key)
    assert report.checked == len(FILES) + (6 if storage_format == 1 else 9) + 1
    problems = 6 if storage_format == 1 else 10
    status, out, err = command(operations, "verify", "--all", "--json")
    assert status == 1
    document = json.loads(out)
    assert [user["user_id"] for user in document["users"]] == ["alice", "bob"] and document[
        "problems"
    ] == problems
    assert audit(err)["problems"] == problems and "preferences" not in err
    assert snapshot(s3) == before  # verify reads; it never moves, deletes or finishes anything
    unreadable = ["/memories/copied.md"]
    if storage_format == 2:
        unreadable += ["/memories/moved.md", "/memories/projects/acme/notes.md"]
    for path in unreadable:
        with pytest.raises(IntegrityError):
            operations.read("alice", path)  # never read as a file
    assert "/memories/folder" not in [file.path for file in operations.files("alice")]


@both_formats
def test_verify_finds_a_wrapped_key_kms_refuses(s3: Any, kms: Any, key_id: str, storage_format: int) -> None:
    def operations() -> Operations:  # a new process: no data key (nor store key) cached
        provider = KMSKeyProvider(key_id, kms_client=kms)
        return Operations(Bucket(s3, BUCKET), provider, storage_format=storage_format)

    layout = seed(operations(), "alice", {"/memories/a.md": "a\n"}).placed.layout
    assert list(operations().users()) == ["alice"]
    assert operations().verify("alice").problems == []
    wrapped = layout.key_of_internal("keys/v1")
    body = bytearray(s3.get_object(Bucket=BUCKET, Key=wrapped)["Body"].read())
    body[len(body) // 2] ^= 1
    s3.put_object(Bucket=BUCKET, Key=wrapped, Body=bytes(body))
    kinds = {(finding.kind, finding.key) for finding in operations().verify("alice").problems}
    assert kinds == {
        ("unreadable key", wrapped),
        ("unreadable", layout.file_key(memory_path("/memories/a.md"))),
        ("unreadable access record", layout.key_of_internal("access")),
    }


def test_a_dry_run_refuses_what_the_import_refuses_also_for_the_place_and_the_quota(
    s3: Any, tmp_path: Path
) -> None:
    from s3memory.core.quota import Quota

    bucket, keys = Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY)
    for user, limits in (("gail", Limits(quota=Quota(max_files=3))), ("hal", Limits())):
        operations = Operations(bucket, keys, limits=limits, storage_format=1)
        seed(operations, user, {"/memories/0": "a file where the folder has a directory\n"})
        base = tmp_path / user
        for path in ("/memories/0/x.md", "/memories/a.md", "/memories/b.md", "/memories/c.md"):
            folder_writes.write(base, path, b"text\n")
        before = snapshot(s3)
        dry = operations.import_folder(user, base, dry_run=True)
        assert snapshot(s3) == before
        transfer = operations.import_folder(user, base)
        assert (dry.written, dict(dry.refused)) == (transfer.written, dict(transfer.refused))
        refused = dict(dry.refused)
        if user == "gail":
            assert dry.written == ["/memories/a.md", "/memories/b.md"]
            assert refused["/memories/c.md"] == (
                "Error: Cannot write /memories/c.md: the memory quota allows 3 files and 3 exist. Delete "
                "or merge files first; nothing was changed."
            )
        else:
            assert dry.written == ["/memories/a.md", "/memories/b.md", "/memories/c.md"]
            assert list(refused) == ["/memories/0/x.md"]
            assert refused["/memories/0/x.md"].startswith("Error: Cannot create /memories/0/x.md: ")
