"""The operator tools on storage format 2 (private names): users, ls, cat, export, import, verify,
erase, history, restore, redact, expire (library and function) answer as on format 1; the tests of
what is the same on both formats run on each in ``test_operations.py`` and ``test_versions.py``
(rotate: ``test_rotation.py``, ``test_rotate_command.py``, ``test_rotation_format2.py``).
A bucket writer's planted namespaces are no users, and planted keys are reported by verify and never
read as files (moto; KMS where erase and shredding matter)."""

from __future__ import annotations

import base64
import json
import logging
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.assembly import memory_options
from s3memory.aws_lambda import expiry as expiry_function
from s3memory.aws_lambda import runtime as lambda_runtime
from s3memory.cli.console import settings_from
from s3memory.cli.main import _parser
from s3memory.core.files import ORIGIN_METADATA
from s3memory.core.paths import memory_path
from s3memory.crypto import KeyProvider, KMSKeyProvider, LocalKeyProvider
from s3memory.errors import CommandError, IntegrityError
from s3memory.formats.names import namespace_of, user_of_namespace
from s3memory.formats.store_keys import STORE_KEY_NAME, store_identity, stored_store_key
from s3memory.formats.upgrade import MIGRATED_NAME
from s3memory.memory import S3Memory
from s3memory.ops import folder_writes
from s3memory.ops.idle_expiry import ACTIVE, expire
from s3memory.ops.operations import Operations
from s3memory.ops.versions import MemoryVersions
from s3memory.settings import Limits, Settings
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import SERVER_RECORD_NAME
from tests.ops.test_operations import seed
from tests.ops.test_versions import tick
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY, snapshot, stored_keys
from tests.support.console import run as command
from tests.support.formats import REFUSED_TOKEN
from tests.support.records import invocation_records
from tests.support.versions import all_versions, history_for

DAY = 24 * 3600


def private(client: Any, bucket: str = BUCKET, keys: KeyProvider | None = None, **options: Any) -> Operations:
    return Operations(
        Bucket(client, bucket), keys or LocalKeyProvider(MASTER_KEY), storage_format=2, **options
    )


@pytest.fixture
def operations(s3: Any) -> Operations:
    return private(s3)


def key_of(operations: Operations, user: str, path: str) -> str:
    return operations.memory(user).placed.layout.file_key(memory_path(path))


def namespace(operations: Operations, user: str) -> str:
    return operations.memory(user).placed.layout.namespace


# -- users, ls, cat ---------------------------------------------------------------------------------


def test_users_are_the_namespaces_that_decrypt_in_the_order_of_their_ids(
    operations: Operations, s3: Any
) -> None:
    for user in ("zoë", "bob@example.com", "alice", "Zed"):
        seed(operations, user, {"/memories/a.md": user})
    other_store = bytes(range(1, 33))
    planted = [
        f"users/{REFUSED_TOKEN}/memories/x",  # a token no key made
        f"users/{namespace_of(other_store, 'mallory')}/memories/x",  # a token of another store key
        "users/carol/memories/x",  # a plain (format-1) name
        "users/" + "u" * 300 + "/x",
    ]
    for key in planted:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"x")
    assert list(operations.users()) == ["Zed", "alice", "bob@example.com", "zoë"]  # UTF-8 order
    assert not any("alice" in key or "zoë" in key for key in stored_keys(s3))


def test_a_store_without_a_store_key_has_no_users_and_reading_tools_write_nothing(
    operations: Operations, s3: Any, tmp_path: Path
) -> None:
    assert list(operations.users()) == []
    nobody = "^Error: The user nobody does not exist in this store: `s3memory users` lists its users"
    with pytest.raises(CommandError, match=nobody):
        operations.files("nobody")
    with pytest.raises(CommandError, match=nobody):
        operations.read("nobody", "/memories/a.md")
    with pytest.raises(CommandError, match=nobody):
        operations.check_exists("nobody", through_time=True)
    assert operations.verify("nobody").checked == 0
    with pytest.raises(CommandError, match=nobody):
        operations.export("nobody", tmp_path)
    assert operations.erase("nobody").left == 0
    report = expire(operations, 30, ["nobody"], now=time.time() + 31 * DAY)
    assert [(user.user_id, user.expired, user.skipped) for user in report.users] == [("nobody", [], None)]
    with pytest.raises(ValueError, match="user_id must not contain"):
        operations.files("../bob")
    for argv in (  # these named paths with a store key, which they made
        ["history", "--user", "nobody", "/memories/a.md"],
        ["restore", "--user", "nobody", "--as-of", "2026-01-01", "--yes"],
        ["redact", "--user", "nobody", "/memories/a.md", "--version", "v", "--yes"],
        ["verify", "--user", "nobody"],
    ):
        status, _, err = command(operations, *argv)
        assert (status, err.splitlines()[0]) == (
            1,
            f"s3memory {argv[0]}: {nobody[1:]} (--bucket and --prefix choose the store).",
        ), argv
    assert stored_keys(s3) == []  # not even a store key, nor verify's probe of the server


def test_the_store_id_and_prefix_must_be_those_the_memory_was_written_with(s3: Any) -> None:
    seed(private(s3, store_id="source-bucket"), "alice", {"/memories/a.md": "a\n"})
    assert list(private(s3, store_id="source-bucket").users()) == ["alice"]
    assert private(s3, store_id="source-bucket").read("alice", "/memories/a.md") == "a\n"
    with pytest.raises(IntegrityError) as refused:
        list(private(s3).users())  # the default id, the bucket's name, is another store
    assert refused.value.message.endswith(
        "Check that S3MEMORY_STORE_ID and S3MEMORY_PREFIX (--store-id, --prefix) are those the store's "
        "memory was written with."
    )
    assert list(private(s3, prefix="other/").users()) == []


# -- export and import --------------------------------------------------------------------------------


def test_import_refuses_what_the_tool_refuses_also_a_path_too_long_for_private_names(
    s3: Any, tmp_path: Path
) -> None:
    operations = private(s3, limits=Limits(max_file_bytes=64))
    deep = "/memories/" + "/".join(["directory-name-20ch"] * 12) + "/f.md"  # fine on format 1
    folder_writes.write(tmp_path, "/memories/ok/fine.md", b"fine\n")
    folder_writes.write(tmp_path, "/memories/big.md", b"x" * 65)
    folder_writes.write(tmp_path, deep, b"deep\n")
    dry = operations.import_folder("erin", tmp_path, dry_run=True)
    assert stored_keys(s3) == [  # made for the names, and the record of the server the key's write checked
        f"users/{MIGRATED_NAME}",
        f"users/{SERVER_RECORD_NAME}",
        f"users/{STORE_KEY_NAME}",
    ]
    transfer = operations.import_folder("erin", tmp_path)
    assert transfer.written == dry.written == ["/memories/ok/fine.md"]
    refused = dict(transfer.refused)
    assert refused == dict(dry.refused)
    assert refused["/memories/big.md"] == (
        "Error: The file /memories/big.md would be 65 bytes; the limit is 64 bytes. Nothing was changed."
    )
    assert refused[deep].startswith("Error: The path /memories/directory-name-20ch/")
    assert "is too long: its storage key would exceed 1024 bytes" in refused[deep]
    assert "With private names each name is stored encrypted" in refused[deep]
    assert Operations(
        Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), limits=Limits(max_file_bytes=64), storage_format=1
    ).import_folder("erin", tmp_path, dry_run=True).refused == [
        ("/memories/big.md", refused["/memories/big.md"])
    ]  # format 1 takes the deep path


# -- the commands and settings ------------------------------------------------------------------------


def test_settings_and_flags_choose_the_format_and_store_id(s3: Any) -> None:
    seed(private(s3, store_id="src"), "alice", {"/memories/a.md": "a\n"})
    environ = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_STORAGE_FORMAT": "2"}
    arguments = _parser().parse_args(["users", "--store-id", "src"])
    settings = settings_from(arguments, environ)
    assert (settings.storage_format, settings.store_id) == (2, "src")
    built = Operations.from_settings(settings, s3)
    assert (built.storage_format, built.store_id) == (2, "src")
    assert built.memory_options() == memory_options(settings)
    assert command(None, "users", "--store-id", "src", **environ)[:2] == (0, "alice\n")
    status, _, err = command(None, "users", **environ)  # the bucket's name: another store
    assert status == 1 and "Check that S3MEMORY_STORE_ID and S3MEMORY_PREFIX" in err
    plain = {**environ, "S3MEMORY_STORAGE_FORMAT": "1"}
    assert command(None, "users", "--storage-format", "2", "--store-id", "src", **plain)[:2] == (0, "alice\n")
    status, out, _ = command(
        None, "ls", "--user", "alice", "--storage-format", "2", "--store-id", "src", **plain
    )
    assert (status, out) == (0, "         2  /memories/a.md\n")


# -- erase ------------------------------------------------------------------------------------------


def test_erase_leaves_no_version_of_the_user_and_no_one_else_is_touched(s3: Any, versioned: str) -> None:
    operations = Operations(
        Bucket(s3, versioned, page_size=2), LocalKeyProvider(MASTER_KEY), storage_format=2
    )
    history_for(operations, "alice")
    history_for(operations, "alice2")  # a user whose id starts with the other's
    space = namespace(operations, "alice")
    s3.put_object(Bucket=versioned, Key=space + "internal/keys/v1", Body=b"wrapped")  # as KMS stores it
    others = all_versions(s3, versioned, "users/")
    mine = all_versions(s3, versioned, space)
    dry = operations.erase("alice", dry_run=True)
    assert (dry.key_versions, dry.other_versions) == (1, len(mine) - 1)
    erased = operations.erase("alice")
    assert (erased.key_versions, erased.other_versions, erased.left) == (1, len(mine) - 1, 0)
    assert all_versions(s3, versioned, space) == []
    assert all_versions(s3, versioned, "users/") == sorted(set(others) - set(mine))  # the store key stays
    assert list(operations.users()) == ["alice2"]
    again = operations.erase("alice")
    assert (again.key_versions, again.other_versions, again.left) == (0, 0, 0)


def test_erase_with_kms_shreds_the_content_and_leaves_the_names_to_the_store_key(
    s3: Any, versioned: str, kms: Any, key_id: str
) -> None:
    def operations() -> Operations:  # a new process: nothing cached
        return private(s3, versioned, keys=KMSKeyProvider(key_id, kms_client=kms))

    seed(operations(), "alice", {"/memories/plans/a.md": "secret plan\n"})
    space = namespace(operations(), "alice")
    key = key_of(operations(), "alice", "/memories/plans/a.md")
    copy = s3.get_object(Bucket=versioned, Key=key)  # a copy kept elsewhere (a backup, a replica)
    copy_body, copy_metadata = copy["Body"].read(), copy["Metadata"]
    out = command(operations(), "erase", "--user", "alice", "--yes")[1]
    assert out.splitlines()[-1] == (
        "copies kept elsewhere can no longer be decrypted: every version of the wrapped data keys is gone; "
        "their private names (user id, paths) still decrypt with the store key, which stays"
    )
    assert all_versions(s3, versioned, space) == []
    seed(operations(), "alice", {"/memories/b.md": "back again\n"})  # a new data key
    s3.put_object(Bucket=versioned, Key=key, Body=copy_body, Metadata=copy_metadata)  # the copy, put back
    with pytest.raises(IntegrityError):
        operations().read("alice", "/memories/plans/a.md")
    assert {finding.key for finding in operations().verify("alice").problems} == {key}
    serving = operations()
    names = stored_store_key(
        serving.bucket, "users/", store_identity(versioned, "users/"), serving.key_provider
    )
    assert (
        names is not None and user_of_namespace(names, space.split("/")[1]) == "alice"
    )  # a name still opens


def test_the_erase_command_says_a_local_master_key_shreds_nothing(s3: Any, versioned: str) -> None:
    operations = private(s3, versioned)
    history_for(operations, "dave")
    status, out, err = command(operations, "erase", "--user", "dave", confirm=True)
    assert status == 0 and "left: 0 object versions" in out
    assert "with a local master key, copies kept elsewhere stay readable with that key" in out
    assert '"left": 0' in err and "a.md" not in err


# -- history, restore, redact -------------------------------------------------------------------------


@pytest.fixture
def versioned_operations(s3: Any, versioned: str) -> Operations:
    return private(s3, versioned)


def test_history_shows_each_edit_its_author_and_the_deletion_newest_first(
    versioned_operations: Operations,
) -> None:
    memory = versioned_operations.memory("alice").acting_as("session-1")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.acting_as("session-2").run(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"}
    )
    memory.run({"command": "delete", "path": "/memories/a.md"})
    versions = MemoryVersions(memory)
    deletion, *edits = versions.history("/memories/a.md")
    assert (deletion.operation, deletion.current, deletion.author, deletion.size) == (
        "deleted",
        True,
        None,
        0,
    )
    assert sorted(
        (
            v.operation,
            v.current,
            v.author,
            v.renamed_from,
            v.authentic,
            v.size,
            versions.text_of(v.path, v.version_id),
        )
        for v in edits
    ) == [
        ("written", False, "session-1", None, True, 4, "one\n"),
        ("written", False, "session-2", None, True, 4, "two\n"),
    ]


def test_history_of_a_renamed_file_follows_its_key(
    versioned_operations: Operations, s3: Any, versioned: str
) -> None:
    memory = versioned_operations.memory("gina")
    memory.run({"command": "create", "path": "/memories/old.md", "file_text": "moved\n"})
    memory.acting_as("mover").run(
        {"command": "rename", "old_path": "/memories/old.md", "new_path": "/memories/new.md"}
    )
    memory.run(
        {"command": "str_replace", "path": "/memories/new.md", "old_str": "moved", "new_str": "edited"}
    )
    versions = MemoryVersions(memory)
    assert sorted(
        (v.current, v.operation, v.author, v.renamed_from) for v in versions.history("/memories/new.md")
    ) == [
        (False, "written", "mover", None),  # where the history of /memories/new.md begins
        (True, "written", None, None),
    ]
    assert [v.operation for v in versions.history("/memories/old.md")] == ["deleted", "written"]
    key = key_of(versioned_operations, "gina", "/memories/new.md")
    metadata = s3.head_object(Bucket=versioned, Key=key)["Metadata"]
    fingerprint = memory.placed.files.cipher.fingerprint("/memories/old.md")
    s3.copy_object(  # a format-1 origin, planted: format 2 reads none
        Bucket=versioned,
        Key=key,
        CopySource={"Bucket": versioned, "Key": key},
        Metadata={**metadata, ORIGIN_METADATA: fingerprint},
        MetadataDirective="REPLACE",
    )
    current = versions.history("/memories/new.md")[0]
    assert (current.current, current.authentic, current.renamed_from) == (True, True, None)


def test_a_version_that_fails_authentication_is_marked_and_the_command_exits_1(
    versioned_operations: Operations, s3: Any, versioned: str
) -> None:
    memory = versioned_operations.memory("hal")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    memory.run({"command": "create", "path": "/memories/b.md", "file_text": "b\n"})
    key = key_of(versioned_operations, "hal", "/memories/a.md")
    s3.copy_object(  # b's object at a's key: placed for another path
        Bucket=versioned,
        Key=key,
        CopySource={"Bucket": versioned, "Key": key_of(versioned_operations, "hal", "/memories/b.md")},
    )
    history = MemoryVersions(memory).history("/memories/a.md")
    assert [(v.current, v.authentic, v.author) for v in history] == [(True, False, None), (False, True, None)]
    status, out, _ = command(versioned_operations, "history", "--user", "hal", "/memories/a.md")
    assert status == 1 and "FAILED AUTHENTICATION" in out.splitlines()[0]


def test_the_history_restore_and_redact_commands(versioned_operations: Operations) -> None:
    memory = versioned_operations.memory("frank")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "oops: a secret\n"})
    moment = tick()
    memory.run(
        {"command": "str_replace", "path": "/memories/a.md", "old_str": "oops: a secret", "new_str": "ok"}
    )
    status, out, err = command(versioned_operations, "history", "--user", "frank", "/memories/a.md", "--json")
    versions = json.loads(out)["versions"]
    assert status == 0 and [v["current"] for v in versions] == [True, False] and '"versions": 2' in err
    old = versions[1]["version_id"]
    status, out, _ = command(
        versioned_operations, "restore", "--user", "frank", "--as-of", moment.isoformat(), confirm=True
    )
    assert status == 0 and out.splitlines() == [
        "written /memories/a.md",
        "1 written, 0 deleted, 0 unchanged, 0 changed meanwhile, 0 failed authentication",
    ]
    assert versioned_operations.read("frank", "/memories/a.md") == "oops: a secret\n"
    status, out, _ = command(
        versioned_operations, "redact", "--user", "frank", "/memories/a.md", "--version", old, "--yes"
    )
    assert (status, out) == (0, f"removed {old}\n")
    assert old not in [v.version_id for v in MemoryVersions(memory).history("/memories/a.md")]
    status, _, err = command(
        versioned_operations, "redact", "--user", "frank", "/memories/a.md", "--version", old, "--yes"
    )
    assert status == 1 and "nothing was changed" in err


# -- expiry -----------------------------------------------------------------------------------------


@pytest.fixture
def start() -> float:
    """Now, before the test writes anything (see ``test_expire.py``)."""
    return time.time() - 1


def written(operations: Operations, user: str, files: dict[str, str], clock: Callable[[], float]) -> S3Memory:
    memory = S3Memory(
        operations.bucket, user, operations.key_provider, clock=clock, **operations.memory_options()
    )
    for path, text in files.items():
        memory.run({"command": "create", "path": path, "file_text": text})
    return memory


def test_expire_deletes_an_idle_users_files_only_and_keeps_an_active_users(
    operations: Operations, s3: Any, start: float
) -> None:
    now = start + 31 * DAY
    written(operations, "alice", {"/memories/old.md": "idle\n", "/memories/d/b.md": "b\n"}, time.time)
    written(operations, "bob", {"/memories/notes.md": "x\n"}, lambda: now - 60)
    space = namespace(operations, "alice")
    planted = [
        space + "memories/" + REFUSED_TOKEN,
        key_of(operations, "alice", "/memories/d") + "/",
        space + "elsewhere",
    ]
    for key in planted:
        s3.put_object(Bucket=BUCKET, Key=key, Body=b"")
    before = snapshot(s3)
    dry = expire(operations, 30, ["alice", "bob"], now=now, dry_run=True)
    assert snapshot(s3) == before
    report = expire(operations, 30, list(operations.users()), now=now)
    assert (
        [(user.user_id, user.expired, user.skipped) for user in report.users]
        == [(user.user_id, user.expired, user.skipped) for user in dry.users]
        == [("alice", ["/memories/d/b.md", "/memories/old.md"], None), ("bob", [], ACTIVE)]
    )
    assert sorted(stored_keys(s3, space)) == sorted([space + "internal/access", *planted])
    assert operations.files("bob") != []


@pytest.fixture
def function_env(s3: Any) -> Iterator[dict[str, str]]:
    environ = {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_STORAGE_FORMAT": "2",
        "S3MEMORY_EXPIRE_IDLE_DAYS": "30",
    }
    lambda_runtime.reset()
    yield environ
    lambda_runtime.reset()


def test_the_expiry_function_serves_a_format_2_store_and_writes_nothing(
    operations: Operations,
    s3: Any,
    function_env: dict[str, str],
    start: float,
    caplog: pytest.LogCaptureFixture,
) -> None:
    written(operations, "pat", {"/memories/secret-plan.md": "a\n"}, lambda: start)
    written(operations, "quin", {"/memories/b.md": "b\n"}, lambda: start + 31 * DAY - 60)
    requests = RequestCounter(lambda_runtime.get_runtime(function_env).s3_client)
    caplog.set_level(logging.INFO, logger="s3memory")

    answer = expiry_function.handle({}, None, function_env, lambda: start + 31 * DAY)

    assert (answer["outcome"], answer["users"], answer["expired"], answer["active"], answer["problems"]) == (
        "ok",
        2,
        1,
        1,
        0,
    )
    assert operations.files("pat") == [] and [file.path for file in operations.files("quin")] == [
        "/memories/b.md"
    ]
    assert requests.calls["PutObject"] == requests.calls["CopyObject"] == 0
    (line,) = invocation_records(caplog, "expiry")
    text = json.dumps(line)
    assert "pat" not in text and "quin" not in text and "/memories" not in text and "secret" not in text


# -- what the tools log ---------------------------------------------------------------------------------


def test_the_tools_log_no_user_id_path_or_content(
    operations: Operations, s3: Any, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    seed(operations, "jane.doe@example.com", {"/memories/clients_quorx/plan_zebra.md": "sapphire-ledger\n"})
    caplog.set_level(logging.DEBUG)
    list(operations.users())
    operations.files("jane.doe@example.com")
    operations.verify("jane.doe@example.com")
    operations.export("jane.doe@example.com", tmp_path)
    expire(operations, 30, ["jane.doe@example.com"], now=time.time() + 31 * DAY)
    operations.erase("jane.doe@example.com")
    logged = "\n".join(entry.getMessage() for entry in caplog.records)
    assert logged  # botocore shows each request
    for secret in (
        "jane.doe",
        "clients_quorx",
        "plan_zebra",
        "sapphire",
        base64.b64encode(MASTER_KEY).decode(),
    ):
        assert secret not in logged


def test_settings_memory_options_are_the_operations(s3: Any) -> None:
    environ = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_QUOTA_FILES": "3"}
    pinned = Settings.from_env({**environ, "S3MEMORY_STORAGE_FORMAT": "2"})
    assert Operations.from_settings(pinned, s3).memory_options() == memory_options(pinned)
    auto = Settings.from_env(environ)  # each memory finds the format in the store, as operations do
    assert memory_options(auto)["storage_format"] == "auto"
    assert Operations.from_settings(auto, s3).memory_options() == memory_options(auto)
    with pytest.raises(ValueError, match='storage_format must be 1, 2 or "auto"'):
        Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=3)
