"""Shared memories mounted into users' ``/memories`` (``s3memory/mounts.py``, ``docs/shared.md``): routing,
read-only refusals that write nothing, mount points that cannot be changed, renames across memories
refused, the root view, authors, and a shared memory's namespace, which no user's can be."""

from __future__ import annotations

import json
import threading
import time
from base64 import b32encode
from collections import Counter
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.core.paths import SharedName, memory_path, shown_path
from s3memory.core.quota import Quota
from s3memory.core.text import VIEW_CHARACTER_CAP
from s3memory.crypto import LocalKeyProvider, shown_author
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.mounts import MAX_MOUNTS, MAX_POINT_NAME, READ_WRITE, Mount, MountedMemory
from s3memory.ops import idle_expiry
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.store import Store
from tests.support.bucket import BUCKET, MASTER_KEY, snapshot, stored_keys
from tests.support.console import run
from tests.support.rotation import NEW_MASTER_KEY

TEAM = "team-acme"


@pytest.fixture
def seeded(store: Store) -> S3Memory:
    """The shared memory ``team-acme``, with a runbook and a note one directory deep."""
    team = S3Memory(store, SharedName(TEAM), actor="curator")
    team.run({"command": "create", "path": "/memories/runbook.md", "file_text": "step one\nstep two\n"})
    team.run({"command": "create", "path": "/memories/oncall/notes.md", "file_text": "pager"})
    return team


def mounted(store: Store, user: str, mode: str = "read_only", **options: Any) -> MountedMemory:
    own = S3Memory(store, user, **options)
    return MountedMemory(own, [Mount("/memories/team", TEAM, mode)])  # type: ignore[arg-type]


WRITES = [
    {"command": "create", "path": "/memories/team/new.md", "file_text": "x"},
    {"command": "str_replace", "path": "/memories/team/runbook.md", "old_str": "one", "new_str": "1"},
    {"command": "insert", "path": "/memories/team/runbook.md", "insert_line": 0, "insert_text": "zero"},
    {"command": "delete", "path": "/memories/team/runbook.md"},
    {"command": "delete", "path": "/memories/team/oncall"},
    {"command": "rename", "old_path": "/memories/team/runbook.md", "new_path": "/memories/team/r.md"},
]


# -- reading and writing through a mount ------------------------------------------------------------


def test_two_users_read_one_read_only_mount(store: Store, seeded: S3Memory) -> None:
    for user in ("alice", "bob"):
        assert mounted(store, user).run({"command": "view", "path": "/memories/team/runbook.md"}) == (
            "Here's the content of /memories/team/runbook.md with line numbers:\n     1\tstep one\n     2\tstep two"
        )


def test_the_root_view_shows_the_mount_as_a_directory_and_says_it_is_read_only(
    store: Store, seeded: S3Memory
) -> None:
    alice = mounted(store, "alice")
    alice.run({"command": "create", "path": "/memories/mine.md", "file_text": "mine"})
    assert alice.run({"command": "view", "path": "/memories"}) == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n"
        "4.0K\t/memories\n"
        "4B\t/memories/mine.md\n"
        "4.0K\t/memories/team/\n"
        "4.0K\t/memories/team/oncall/\n"
        "18B\t/memories/team/runbook.md\n"
        "[Read-only shared memory: /memories/team; writes there are refused.]"
    )
    assert alice.run({"command": "view", "path": "/memories/team"}) == (
        "Here're the files and directories up to 2 levels deep in /memories/team, excluding hidden items and "
        "node_modules:\n"
        "4.0K\t/memories/team\n"
        "4.0K\t/memories/team/oncall/\n"
        "5B\t/memories/team/oncall/notes.md\n"
        "18B\t/memories/team/runbook.md\n"
        "[Read-only shared memory: /memories/team; writes there are refused.]"
    )


def test_an_empty_mount_is_still_a_directory(store: Store) -> None:
    listing = mounted(store, "alice", READ_WRITE).run({"command": "view", "path": "/memories"})
    assert listing.endswith("4.0K\t/memories\n4.0K\t/memories/team/")


@pytest.mark.parametrize("write", WRITES, ids=lambda write: f"{write['command']}-{write.get('path', '')}")
def test_every_write_into_a_read_only_mount_is_refused_and_writes_nothing(
    store: Store, seeded: S3Memory, s3: Any, write: dict[str, Any]
) -> None:
    alice = mounted(store, "alice")
    before = snapshot(s3)
    requests = RequestCounter(s3)
    with pytest.raises(CommandError) as refused:
        alice.run(write)
    assert requests.total == 0  # refused before any request
    shown = write.get("path", write.get("old_path"))
    assert str(refused.value) == (
        f"Error: Cannot change {shown}: /memories/team is a read-only shared memory. Nothing was changed."
    )
    assert snapshot(s3) == before


def test_a_view_of_a_read_only_mount_writes_nothing(store: Store, seeded: S3Memory, s3: Any) -> None:
    alice = mounted(store, "alice")
    alice.run({"command": "create", "path": "/memories/mine.md", "file_text": "m"})
    before = snapshot(s3)
    requests = RequestCounter(s3)
    for path in ("/memories", "/memories/team", "/memories/team/runbook.md", "/memories/team/oncall"):
        alice.run({"command": "view", "path": path})
    assert snapshot(s3) == before
    assert set(requests.calls) <= {"GetObject", "ListObjectsV2", "HeadObject"}


def test_a_read_write_mount_is_shared_and_records_each_writer(store: Store, seeded: S3Memory) -> None:
    alice = mounted(store, "alice", READ_WRITE)
    bob = mounted(store, "bob", READ_WRITE, actor="agent-7")
    assert alice.run(
        {"command": "create", "path": "/memories/team/decisions.md", "file_text": "use S3\n"}
    ) == ("File created successfully at: /memories/team/decisions.md")
    assert bob.run(
        {
            "command": "str_replace",
            "path": "/memories/team/decisions.md",
            "old_str": "S3",
            "new_str": "S3 + KMS",
        }
    ) == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tuse S3 + KMS"
    )
    found = seeded.placed.files.read(memory_path("/memories/decisions.md"))
    assert found is not None and found.text == "use S3 + KMS\n" and found.author == "bob/agent-7"
    alice.run(
        {"command": "insert", "path": "/memories/team/decisions.md", "insert_line": 0, "insert_text": "#"}
    )
    found = seeded.placed.files.read(memory_path("/memories/decisions.md"))
    assert found is not None and found.author == "alice"
    assert "decisions.md" not in S3Memory(store, "alice").run({"command": "view", "path": "/memories"})


def test_racing_writers_on_a_shared_file_lose_no_acknowledged_update(store: Store, seeded: S3Memory) -> None:
    writers = {user: mounted(store, user, READ_WRITE) for user in ("alice", "bob", "carol", "dave")}
    writers["alice"].run({"command": "create", "path": "/memories/team/log.md", "file_text": "log\n"})
    acknowledged: list[str] = []
    lock = threading.Lock()

    def append(user: str) -> None:
        for number in range(3):
            line = f"{user}-{number}"
            answer = writers[user].run(
                {"command": "insert", "path": "/memories/team/log.md", "insert_line": 1, "insert_text": line}
            )
            if answer == "The file /memories/team/log.md has been edited.":
                with lock:
                    acknowledged.append(line)

    threads = [threading.Thread(target=append, args=(user,)) for user in writers]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    found = seeded.placed.files.read(memory_path("/memories/log.md"))
    assert found is not None and len(acknowledged) == 12
    assert sorted(found.text.splitlines()[1:]) == sorted(acknowledged)


# -- mount points and boundaries ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("command", "message"),
    [
        (
            {"command": "delete", "path": "/memories/team"},
            "Error: Cannot delete /memories/team: a shared memory is mounted at /memories/team. Nothing was changed.",
        ),
        (
            {"command": "create", "path": "/memories/team", "file_text": "x"},
            "Error: Cannot create /memories/team: /memories/team is a directory.",
        ),
        (
            {"command": "rename", "old_path": "/memories/team", "new_path": "/memories/other"},
            "Error: Cannot rename /memories/team to /memories/other: a shared memory is mounted at /memories/team. Nothing was changed.",
        ),
        (
            {"command": "rename", "old_path": "/memories/mine.md", "new_path": "/memories/team"},
            "Error: Cannot rename /memories/mine.md to /memories/team: a shared memory is mounted at /memories/team. Nothing was changed.",
        ),
        (
            {"command": "rename", "old_path": "/memories/mine.md", "new_path": "/memories/team/mine.md"},
            "Error: Cannot rename /memories/mine.md to /memories/team/mine.md: they lie in different memories "
            "(/memories/team is a shared memory). Nothing was changed; create the file at the new path and "
            "delete the old one instead.",
        ),
        (
            {
                "command": "rename",
                "old_path": "/memories/team/runbook.md",
                "new_path": "/memories/runbook.md",
            },
            "Error: Cannot rename /memories/team/runbook.md to /memories/runbook.md: they lie in different "
            "memories (/memories/team is a shared memory). Nothing was changed; create the file at the new "
            "path and delete the old one instead.",
        ),
    ],
    ids=["delete-point", "create-point", "rename-point", "rename-onto-point", "rename-in", "rename-out"],
)
def test_mount_points_and_boundaries_are_refused_and_change_nothing(
    store: Store, seeded: S3Memory, s3: Any, command: dict[str, Any], message: str
) -> None:
    alice = mounted(store, "alice", READ_WRITE)
    alice.run({"command": "create", "path": "/memories/mine.md", "file_text": "mine"})
    before = snapshot(s3)
    with pytest.raises(Exception) as refused:
        alice.run(command)
    assert str(refused.value) == message
    assert snapshot(s3) == before


def test_a_rename_inside_a_read_write_mount_answers_with_the_mounted_paths(
    store: Store, seeded: S3Memory
) -> None:
    alice = mounted(store, "alice", READ_WRITE)
    assert alice.run(
        {"command": "rename", "old_path": "/memories/team/oncall", "new_path": "/memories/team/pager"}
    ) == ("Successfully renamed /memories/team/oncall to /memories/team/pager")
    assert seeded.run({"command": "view", "path": "/memories/pager/notes.md"}).endswith("     1\tpager")
    with pytest.raises(Exception) as refused:
        alice.run({"command": "create", "path": "/memories/team/runbook.md/x.md", "file_text": "x"})
    assert str(refused.value) == (
        "Error: Cannot create /memories/team/runbook.md/x.md: /memories/team/runbook.md is a file, not a directory."
    )


def test_the_users_own_files_at_a_mount_point_are_hidden_not_lost(store: Store, seeded: S3Memory) -> None:
    own = S3Memory(store, "alice")
    own.run({"command": "create", "path": "/memories/team/private.md", "file_text": "mine"})
    alice = MountedMemory(S3Memory(store, "alice"), [Mount("/memories/team", TEAM)])
    assert "private.md" not in alice.run({"command": "view", "path": "/memories"})
    with pytest.raises(Exception) as refused:
        alice.run({"command": "view", "path": "/memories/team/private.md"})
    assert (
        str(refused.value)
        == "The path /memories/team/private.md does not exist. Please provide a valid path."
    )
    assert own.run({"command": "view", "path": "/memories/team/private.md"}).endswith("     1\tmine")


def test_a_shared_memory_has_the_users_quota_counted_on_its_own(
    store: Store, seeded: S3Memory, s3: Any
) -> None:
    alice = mounted(store, "alice", READ_WRITE, quota=Quota(max_files=2))
    before = snapshot(s3)
    with pytest.raises(CommandError) as caught:
        alice.run({"command": "create", "path": "/memories/team/third.md", "file_text": "x"})
    assert caught.value.message == (
        "Error: Cannot write /memories/team/third.md: the memory quota allows 2 files and 2 exist. "
        "Delete or merge files first; nothing was changed."
    )
    assert snapshot(s3) == before
    for name in ("a", "b"):  # the team's two files do not count against alice's own
        alice.run({"command": "create", "path": f"/memories/{name}.md", "file_text": name})


# -- what a mount may be --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("point", "memory", "mode"),
    [
        ("/memories", TEAM, "read_only"),
        ("/memories/a/b", TEAM, "read_only"),
        ("/memories/.hidden", TEAM, "read_only"),
        ("/memories/team/", TEAM, "read_only"),
        ("/elsewhere/team", TEAM, "read_only"),
        ("/memories/team", "Team Acme", "read_only"),
        ("/memories/team", "../alice", "read_only"),
        ("/memories/team", TEAM, "append"),
        ("/memories/" + "t" * (MAX_POINT_NAME + 1), TEAM, "read_only"),
    ],
)
def test_a_bad_mount_is_refused(point: str, memory: str, mode: str) -> None:
    with pytest.raises(ValueError):
        Mount(point, memory, mode)  # type: ignore[arg-type]


def test_mounts_are_bounded_and_unique(store: Store) -> None:
    own = S3Memory(store, "alice")
    with pytest.raises(ValueError, match="share a mount point"):
        MountedMemory(own, [Mount("/memories/team", TEAM), Mount("/memories/team", "other")])
    assert Mount("/memories/" + "t" * MAX_POINT_NAME, TEAM).name == "t" * MAX_POINT_NAME
    many = [Mount(f"/memories/m{number}", f"m{number}") for number in range(MAX_MOUNTS + 1)]
    with pytest.raises(ValueError, match=f"at most {MAX_MOUNTS}"):
        MountedMemory(own, many)


def test_a_user_whose_id_no_author_may_be_mounts_read_only_only(store: Store) -> None:
    """An id over 79 bytes (in base32, over the 128 characters of an author), or one that makes too
    long an author with its actor."""
    MountedMemory(S3Memory(store, "é" * 40), [Mount("/memories/team", TEAM)])
    for user, actor in (("é" * 40, None), ("é" * 30, "session-" + "1" * 60)):
        with pytest.raises(
            ValueError, match=r"^this user cannot write into a shared memory .*; mount it read-only$"
        ):
            MountedMemory(S3Memory(store, user, actor=actor), [Mount("/memories/team", TEAM, READ_WRITE)])


@pytest.mark.parametrize("user", ["auth0|5f7c8ec7c33c6c004bbafe82", "operator", "café", "=MFRGG"])
def test_a_user_whose_id_is_no_authors_name_writes_as_its_id_in_base32(
    store: Store, seeded: S3Memory, user: str
) -> None:
    """An id with a character no author holds, the operator's name, or a leading '=' is recorded as
    '=' and the base32 of its UTF-8, so it passes for neither an operator nor another user."""
    writer = MountedMemory(S3Memory(store, user, actor="mcp"), [Mount("/memories/team", TEAM, READ_WRITE)])
    writer.run({"command": "create", "path": "/memories/team/n.md", "file_text": "x\n"})
    found = seeded.placed.files.read(memory_path("/memories/n.md"))
    assert found is not None and found.author == f"={b32encode(user.encode()).decode().rstrip('=')}/mcp"
    assert shown_author(found.author) == f"{json.dumps(user)}/mcp"


# -- a shared memory's namespace ---------------------------------------------------------------------------


def test_no_user_can_reach_a_shared_memory_and_its_name_is_in_no_key(
    store: Store, seeded: S3Memory, s3: Any, local_keys: LocalKeyProvider
) -> None:
    for user in ("shared", TEAM, "shared-team-acme"):
        assert "runbook" not in S3Memory(store, user).run({"command": "view", "path": "/memories"})
    assert not [key for key in stored_keys(s3) if TEAM in key or "shared" in key or "runbook" in key]
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    assert list(operations.users()) == ["shared", "shared-team-acme", TEAM]


def test_a_shared_memory_needs_format_2(s3: Any, local_keys: LocalKeyProvider) -> None:
    store = Store(Bucket(s3, BUCKET), local_keys, storage_format=1)
    with pytest.raises(Exception) as refused:
        S3Memory(store, SharedName(TEAM)).run({"command": "view", "path": "/memories"})
    assert str(refused.value) == (
        "Error: A shared memory cannot be opened in this store: shared memories need storage format 2 and the "
        "store is served in format 1 (`s3memory migrate` moves a store to format 2). Nothing was read or changed."
    )
    assert stored_keys(s3) == []


# -- what a command costs inside a mount ---------------------------------------------------------------


def test_a_command_inside_a_mount_costs_what_it_costs_in_the_users_own_memory(
    store: Store, seeded: S3Memory, s3: Any
) -> None:
    """Warm, request for request: the same commands in a read-write mount and in the user's own
    memory; ``view /memories`` lists the user's namespace and each mount's once."""
    alice = mounted(store, "alice", READ_WRITE)
    alice.run({"command": "view", "path": "/memories/team/runbook.md"})  # both memories placed, both
    alice.run({"command": "create", "path": "/memories/warm.md", "file_text": "w"})  # access records written
    requests = RequestCounter(s3)

    def costs(base: str) -> list[Counter[str]]:
        spent = []
        for command in (
            {"command": "create", "path": f"{base}/d/a.md", "file_text": "one\n"},
            {"command": "view", "path": f"{base}/d/a.md"},
            {"command": "view", "path": f"{base}/d"},
            {"command": "str_replace", "path": f"{base}/d/a.md", "old_str": "one", "new_str": "1"},
            {"command": "insert", "path": f"{base}/d/a.md", "insert_line": 0, "insert_text": "0"},
            {"command": "rename", "old_path": f"{base}/d/a.md", "new_path": f"{base}/e/a.md"},
            {"command": "rename", "old_path": f"{base}/e", "new_path": f"{base}/f"},
            {"command": "delete", "path": f"{base}/f"},
        ):
            requests.reset()
            alice.run(command)
            spent.append(requests.calls)
        return spent

    own = costs("/memories/work")
    assert costs("/memories/team/work") == own
    assert own[0]["PutObject"] == 1 and own[1] == Counter(GetObject=1)
    requests.reset()
    alice.run({"command": "view", "path": "/memories"})
    assert requests.calls == Counter(ListObjectsV2=2)


def test_renames_at_the_root_or_into_a_read_only_mount_are_refused_as_such(
    store: Store, seeded: S3Memory
) -> None:
    alice = mounted(store, "alice")
    alice.run({"command": "create", "path": "/memories/mine.md", "file_text": "mine"})
    for command, message in [
        (
            {"command": "rename", "old_path": "/memories/mine.md", "new_path": "/memories/team/mine.md"},
            "Error: Cannot change /memories/team/mine.md: /memories/team is a read-only shared memory. "
            "Nothing was changed.",
        ),
        (
            {"command": "rename", "old_path": "/memories/team/runbook.md", "new_path": "/memories"},
            "Error: The destination /memories already exists",
        ),
    ]:
        with pytest.raises(CommandError) as refused:
            alice.run(command)
        assert refused.value.message == message


def test_a_tampered_shared_file_is_refused_naming_the_path_the_user_sees(
    store: Store, seeded: S3Memory, s3: Any
) -> None:
    key = seeded.placed.layout.file_key(memory_path("/memories/runbook.md"))
    body = bytearray(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())
    body[-1] ^= 1
    metadata = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
    s3.put_object(Bucket=BUCKET, Key=key, Body=bytes(body), Metadata=metadata)
    with pytest.raises(CommandError) as refused:
        mounted(store, "alice").run({"command": "view", "path": "/memories/team/runbook.md"})
    assert refused.value.message.startswith("Error: The stored object for /memories/team/runbook.md failed")


def test_a_path_in_a_mounted_memory_is_shown_below_its_mount() -> None:
    assert shown_path("/memories/oncall/notes.md", ("team",)) == "/memories/team/oncall/notes.md"
    assert shown_path("/memories", ("team",)) == "/memories/team"
    inner = memory_path("/memories/oncall/notes.md")
    mounted_path = type(inner)("/memories/team/oncall/notes.md", inner.segments, ("team",))
    assert [path.text for path in mounted_path.ancestors()] == ["/memories/team/oncall"]
    assert mounted_path.joined(("x",)).shown == "/memories/team/oncall/notes.md/x"
    assert mounted_path == type(inner)(mounted_path.text, inner.segments)  # the mount is not compared


def test_the_read_only_note_stays_within_the_view_cap(store: Store, seeded: S3Memory) -> None:
    own = S3Memory(store, "alice")
    for number in range(110):
        own.run({"command": "create", "path": f"/memories/{'n' * 140}{number:03}.md", "file_text": "x"})
    listing = mounted(store, "alice").run({"command": "view", "path": "/memories"})
    assert len(listing) <= VIEW_CHARACTER_CAP
    assert listing.endswith(
        "rows shown. View a subdirectory to see the rest.]\n"
        "[Read-only shared memory: /memories/team; writes there are refused.]"
    )


# -- operators ---------------------------------------------------------------------------------------------


def test_rotate_all_seals_shared_memories_too_before_it_says_the_old_key_may_go(s3: Any) -> None:
    """Else an operator told to drop the old key would lock every mounter out of the shared memory."""
    old = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    old.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    old.memory(f"shared/{TEAM}").run(
        {"command": "create", "path": "/memories/runbook.md", "file_text": "r\n"}
    )
    assert list(old.users()) == ["alice"] and list(old.shared_memories()) == [f"shared/{TEAM}"]
    operator = Operations(
        Bucket(s3, BUCKET),
        LocalKeyProvider(NEW_MASTER_KEY, version=2, previous={1: MASTER_KEY}),
        storage_format=2,
    )
    status, out, _ = run(operator, "rotate", "--all", "--yes")
    assert status == 0 and f"shared/{TEAM}: sealed 1 files and 1 records again" in out.splitlines()
    alone = Store(Bucket(s3, BUCKET), LocalKeyProvider(NEW_MASTER_KEY, version=2), storage_format=2)
    listing = MountedMemory(S3Memory(alone, "bob"), [Mount("/memories/team", TEAM)]).run(
        {"command": "view", "path": "/memories/team/runbook.md"}
    )
    assert listing.endswith("     1\tr")
    status, out, _ = run(operator, "cat", "--user", f"shared/{TEAM}", "/memories/runbook.md")
    assert (status, out) == (0, "r\n")
    status, out, _ = run(operator, "verify", "--all")
    assert status == 0


def test_idle_expiry_of_every_user_leaves_shared_memories_alone(
    store: Store, seeded: S3Memory, s3: Any
) -> None:
    S3Memory(store, "alice").run({"command": "create", "path": "/memories/a.md", "file_text": "a"})
    operator = Operations(Bucket(s3, BUCKET), store.key_provider, storage_format=2)
    later = time.time() + 400 * 86_400
    report = idle_expiry.expire(operator, 30, list(operator.users()), now=later)
    assert [user.user_id for user in report.users] == ["alice"]
    assert seeded.run({"command": "view", "path": "/memories/runbook.md"}).endswith("     2\tstep two")
