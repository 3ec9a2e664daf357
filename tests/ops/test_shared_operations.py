"""Every operator command on a shared memory (``--user shared/NAME``, ``docs/shared.md``): what it
lists, reads, writes and removes is the shared memory's, each writer named in its history, and no user's
memory is touched."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from s3memory.cli.console import operator_actor
from s3memory.cli.operator_commands import COMMANDS
from s3memory.crypto import LocalKeyProvider
from s3memory.formats.names import namespace_of
from s3memory.memory import S3Memory
from s3memory.mounts import READ_WRITE, Mount, MountedMemory
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.bucket import MASTER_KEY
from tests.support.console import run

TEAM = "shared/team-acme"
NEW_MASTER_KEY = bytes(range(1, 33))


def namespace_keys(s3: Any, bucket: str, namespace: str) -> list[str]:
    """The current keys of the namespace ``namespace`` in ``bucket``."""
    listed = s3.list_objects_v2(Bucket=bucket, Prefix=f"users/{namespace}/")
    return [item["Key"] for item in listed.get("Contents", [])]


def report(operations: Operations, *argv: str, status: int = 0) -> dict[str, Any]:
    """``s3memory *argv --json`` that exits ``status``: its report."""
    exited, out, err = run(operations, *argv, "--json", confirm=True)
    assert exited == status, err
    document: dict[str, Any] = json.loads(out)
    return document


def test_every_operator_command_works_on_a_shared_memory(s3: Any, versioned: str, tmp_path: Path) -> None:
    operations = Operations(
        Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=2, actor=operator_actor()
    )
    alice = operations.memory("alice")
    alice.run({"command": "create", "path": "/memories/mine.md", "file_text": "alice's own\n"})
    (tmp_path / "in" / "memories" / "oncall").mkdir(parents=True)
    (tmp_path / "in" / "memories" / "runbook.md").write_text("step one\n")
    (tmp_path / "in" / "memories" / "oncall" / "notes.md").write_text("page bob\n")
    used: set[str] = set()
    serving = [operations]

    def command(*argv: str, status: int = 0) -> dict[str, Any]:
        used.add(argv[0])
        return report(serving[-1], *argv, status=status)

    # import makes the shared memory; users lists users only, shared lists it with its namespace.
    assert sorted(command("import", "--user", TEAM, str(tmp_path / "in"))["written_paths"]) == [
        "/memories/oncall/notes.md",
        "/memories/runbook.md",
    ]
    assert command("users")["users"] == ["alice"]
    namespace = namespace_of(operations.store_key() or b"", TEAM)
    assert command("shared")["shared"] == [{"memory": TEAM, "namespace": namespace}]
    assert namespace_keys(s3, versioned, namespace)

    # a user writes through a read-write mount: ls, cat and history show it, history names each writer.
    mounted = MountedMemory(
        S3Memory(operations.store, "alice"), [Mount("/memories/team", "team-acme", READ_WRITE)]
    )
    mounted.run(
        {"command": "str_replace", "path": "/memories/team/runbook.md", "old_str": "one", "new_str": "two"}
    )
    assert command("ls", "--user", TEAM)["files"] == [
        {"path": "/memories/oncall/notes.md", "size": 9},
        {"path": "/memories/runbook.md", "size": 9},
    ]
    assert command("cat", "--user", TEAM, "/memories/runbook.md")["text"] == "step two\n"
    versions = command("history", "--user", TEAM, "/memories/runbook.md")["versions"]
    assert [(v["operation"], v["author"], v["current"]) for v in versions] == [
        ("written", "alice", True),
        ("written", operator_actor(), False),
    ]

    # export writes its files; restore brings the operator's version back; redact removes alice's.
    assert command("export", "--user", TEAM, str(tmp_path / "out"))["written"] == 2
    assert (tmp_path / "out" / "memories" / "runbook.md").read_text() == "step two\n"
    # sync keeps a folder in step with it (the folder is /memories itself).
    assert command("sync", "--user", TEAM, str(tmp_path / "synced"), "--once")["pulled_paths"] == [
        "/memories/oncall/notes.md",
        "/memories/runbook.md",
    ]
    assert (tmp_path / "synced" / "runbook.md").read_text() == "step two\n"
    imported, edited = versions[1]["version_id"], versions[0]["version_id"]
    assert command("restore", "--user", TEAM, "/memories/runbook.md", "--version", imported, "--yes")[
        "outcome"
    ]
    assert command("cat", "--user", TEAM, "/memories/runbook.md")["text"] == "step one\n"
    command("redact", "--user", TEAM, "/memories/runbook.md", "--version", edited, "--yes")
    after = command("history", "--user", TEAM, "/memories/runbook.md")["versions"]
    assert edited not in [v["version_id"] for v in after] and len(after) == 2

    # verify, rotate and expire name the shared memory; a recent one is not idle.
    verified = command("verify", "--user", TEAM)
    assert (verified["problems"], [user["user_id"] for user in verified["users"]]) == (0, [TEAM])
    serving.append(
        Operations(
            Bucket(s3, versioned),
            LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}),
            storage_format=2,
            actor=operator_actor(),
        )
    )
    # (the earlier versions that history shows still need key version 1: not complete, exit 1)
    rotated = command("rotate", "--user", TEAM, "--yes", status=1)["users"]
    assert [(user["user_id"], len(user["reencrypted"]), user["kept_for_history"]) for user in rotated] == [
        (TEAM, 2, 3)
    ]
    assert command("cat", "--user", TEAM, "/memories/runbook.md")["text"] == "step one\n"
    expired = command("expire", "--user", TEAM, "--idle-days", "1", "--dry-run")
    assert expired["counts"]["expired"] == 0 and expired["counts"]["users"] == 1
    assert command("restore", "--user", TEAM, "--as-of", "2000-01-01T00:00:00Z", "--yes")["deleted"] == [
        "/memories/oncall/notes.md",
        "/memories/runbook.md",
    ]

    # erase removes the shared memory, keys first, and nothing of alice's.
    assert command("erase", "--user", TEAM, "--yes")["left"] == 0
    assert command("shared")["shared"] == []
    assert namespace_keys(s3, versioned, namespace) == []
    assert alice.run({"command": "view", "path": "/memories/mine.md"}).endswith("     1\talice's own")

    assert used | {"migrate"} == {
        declared.name for declared in COMMANDS
    }  # migrate takes a store, not a memory
