"""Moving a format-1 memory to format 2 (``migration.py``): a format-2 memory moves its user's
format-1 files before its first command; the move loses nothing under concurrent movers and
commands, survives a crash between any two requests, leaves (and reports) what it cannot move, and
a store is marked migrated at birth, or once nothing is left to move."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from s3memory.core.paths import memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError, PreconditionFailed, StorageError
from s3memory.formats import upgrade as migration
from s3memory.formats.upgrade import BORN, MIGRATED_NAME, SETTLED, UserMigration
from s3memory.memory import S3Memory
from s3memory.ops.migrate import migrate_store
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.store import forget_stores
from tests.support import console
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW, stored_keys
from tests.support.marks import mark_of
from tests.support.roles import confined

BACKENDS = ("moto", SEAWEEDFS_SLOW)
FILES = {f"/memories/{'notes/' * (index % 3)}file{index:02d}.md": f"line {index}\n" for index in range(24)}


@pytest.fixture
def v1(make_memory: Callable[..., S3Memory]) -> S3Memory:
    memory = make_memory("alice", storage_format=1, actor="ada")
    for path, text in FILES.items():
        memory.create(memory_path(path), text)
    memory.run({"command": "view", "path": "/memories"})  # writes the access record
    return memory


def v2(make_memory: Callable[..., S3Memory], user: str = "alice") -> S3Memory:
    forget_stores()  # another process: it has not looked yet
    return make_memory(user, storage_format=2)


def v2_with_legacy_delete(make_memory: Callable[..., S3Memory]) -> tuple[S3Memory, Callable[..., None]]:
    """A format-2 memory of alice, and the delete of her format-1 files, for a test to wrap."""
    memory = v2(make_memory)
    assert memory.placed.upgrade is not None
    return memory, memory.placed.upgrade._legacy.delete


def texts(memory: S3Memory) -> dict[str, str]:
    found: dict[str, str] = {}
    for key in stored_keys(memory.store.bucket.client, memory.placed.layout.memories_prefix):
        path = memory.placed.layout.path_of_key(key)
        assert path is not None
        file = memory.placed.files.read(path)
        assert file is not None
        found[path.canonical] = file.text
    return found


def test_a_format_1_memory_is_served_in_format_2_from_its_first_command(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    listing = v1.run({"command": "view", "path": "/memories"})
    last_access = v1.placed.access.read().at
    memory = v2(make_memory)
    assert memory.placed.upgrade is not None
    memory.placed.upgrade.ensure()  # what the first command does first
    assert memory.placed.access.read().at == last_access
    assert stored_keys(s3, v1.placed.layout.internal_prefix) == []  # the access record moved with the files
    assert stored_keys(s3, f"users/{MIGRATED_NAME}") == []  # a user was moved: the store is not marked
    assert memory.run({"command": "view", "path": "/memories"}) == listing
    assert texts(memory) == FILES
    moved = memory.placed.files.read(memory_path("/memories/file00.md"))
    assert moved is not None and moved.author == "ada"  # who wrote it, as format 1 said
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_a_user_is_looked_for_once_per_process(v1: S3Memory, make_memory: Callable[..., S3Memory]) -> None:
    memory = v2(make_memory)
    memory.run({"command": "view", "path": "/memories"})
    v1.create(memory_path("/memories/late.md"), "a format-1 writer that was not stopped\n")
    memory.run({"command": "view", "path": "/memories"})
    assert memory.placed.files.read(memory_path("/memories/late.md")) is None
    later = v2(make_memory)  # a new process looks again
    assert later.run({"command": "view", "path": "/memories/late.md"}) == (
        "Here's the content of /memories/late.md with line numbers:\n"
        "     1\ta format-1 writer that was not stopped"
    )


@pytest.mark.slow
@pytest.mark.format_1
def test_a_command_moves_a_bounded_number_of_files_and_the_next_goes_on(
    v1: S3Memory, make_memory: Callable[..., S3Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A command's work does not grow with files it does not name: it moves about one listing
    page's worth of format-1 files, is refused (nothing else done), and the next goes on."""
    listing = v1.run({"command": "view", "path": "/memories"})
    monkeypatch.setattr(migration, "FILES_MOVED_PER_COMMAND", 10)
    memory = v2(make_memory)
    memory.store.bucket.page_size = 10
    create = {"command": "create", "path": "/memories/new.md", "file_text": "new\n"}

    answers = []
    for _ in range(2):
        with pytest.raises(CommandError) as refused:
            memory.run(create)
        answers.append(refused.value.message)
    assert (
        answers
        == [
            "Error: This memory is moving to a new storage format, about 10 files per command: 10 moved now, "
            "more remain. The command was not run; send it again to go on."
        ]
        * 2
    )
    assert memory.placed.files.read(memory_path("/memories/new.md")) is None
    assert len(stored_keys(memory.store.bucket.client, v1.placed.layout.memories_prefix)) == len(FILES) - 20
    assert memory.run({"command": "view", "path": "/memories"}) == listing
    assert texts(memory) == FILES
    assert (
        stored_keys(memory.store.bucket.client, v1.placed.layout.namespace) == []
    )  # the access record moved last


@pytest.mark.slow
@pytest.mark.format_1
def test_a_storage_failure_while_a_file_moves_fails_the_command_and_the_next_moves_it(
    v1: S3Memory, make_memory: Callable[..., S3Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A write that fails while a file moves is not taken for a file that cannot move: the command
    fails (try again), the user is not taken as moved, and the next command moves the file."""
    listing = v1.run({"command": "view", "path": "/memories"})
    memory = v2(make_memory)
    put_new = memory.placed.files.put_new

    def failing(key: str, sealed: Any, origin: Any = None) -> str | None:
        if memory.placed.layout.path_of_key(key) == memory_path("/memories/file00.md"):
            raise StorageError(
                "Error: S3 PutObject failed (SlowDown). Nothing was reported as done; try again."
            )
        return put_new(key, sealed, origin)

    monkeypatch.setattr(memory.placed.files, "put_new", failing)
    with pytest.raises(StorageError, match="SlowDown"):
        memory.run({"command": "view", "path": "/memories"})
    monkeypatch.setattr(memory.placed.files, "put_new", put_new)

    assert memory.run({"command": "view", "path": "/memories"}) == listing
    assert texts(memory) == FILES
    assert stored_keys(memory.store.bucket.client, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_a_pending_format_1_rename_is_finished_before_the_move(
    v1: S3Memory, make_memory: Callable[..., S3Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    old, new = memory_path("/memories/notes"), memory_path("/memories/archive")
    job = v1.placed.jobs.plan("rename", old, new, v1.placed.files.sources_below(old))
    with monkeypatch.context() as crash:
        crash.setattr(
            v1.placed.files, "delete_all", lambda sources: (_ for _ in ()).throw(RuntimeError("crash"))
        )
        with pytest.raises(RuntimeError):
            v1.placed.jobs.run(job)  # copied, sources not deleted, record left
    memory = v2(make_memory)
    expected = {path.replace("/memories/notes/", "/memories/archive/"): text for path, text in FILES.items()}
    assert memory.run({"command": "view", "path": "/memories/archive/file01.md"}).endswith("line 1")
    assert texts(memory) == expected
    assert stored_keys(memory.store.bucket.client, v1.placed.layout.memories_prefix) == []


def test_a_move_that_dies_between_any_two_requests_is_finished_by_the_next_look(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory, delete = v2_with_legacy_delete(make_memory)
    deletes = 0

    def dies_on_the_third(key: str, *, if_match: str | None = None) -> None:
        nonlocal deletes
        deletes += 1
        if deletes == 3:
            raise RuntimeError("the process died")
        delete(key, if_match=if_match)

    memory.placed.upgrade._legacy.delete = dies_on_the_third  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        memory.placed.upgrade.run()
    left = len(stored_keys(s3, v1.placed.layout.memories_prefix))
    assert 0 < left < len(FILES)
    again = v2(make_memory)
    assert again.placed.upgrade is not None
    report = again.placed.upgrade.run()
    assert report.clean and report.moved + report.already == left
    assert texts(again) == FILES
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_concurrent_movers_and_commands_lose_nothing(
    v1: S3Memory, make_memory: Callable[..., S3Memory]
) -> None:
    movers = [make_memory("alice", storage_format=2) for _ in range(3)]
    reports: list[UserMigration] = []
    errors: list[BaseException] = []

    def move_then_edit(memory: S3Memory, index: int) -> None:
        try:
            assert memory.placed.upgrade is not None
            reports.append(memory.placed.upgrade.run())
            memory.run(
                {"command": "create", "path": f"/memories/new{index}.md", "file_text": f"new {index}\n"}
            )
            memory.run(
                {
                    "command": "str_replace",
                    "path": "/memories/file00.md",
                    "old_str": "line",
                    "new_str": "LINE",
                }
            )
        except BaseException as error:
            errors.append(error)

    threads = [
        threading.Thread(target=move_then_edit, args=(memory, index)) for index, memory in enumerate(movers)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    edits_refused = [error for error in errors if "No replacement was performed" in str(error)]
    assert len(errors) == len(edits_refused) == 2  # the first edit wins; the others find "line" gone
    expected = {
        **FILES,
        "/memories/file00.md": "LINE 0\n",
        **{f"/memories/new{index}.md": f"new {index}\n" for index in range(3)},
    }
    assert texts(movers[0]) == expected
    assert all(report.clean for report in reports)
    assert stored_keys(movers[0].store.bucket.client, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_a_different_file_already_in_format_2_is_left_in_format_1_and_reported(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory = v2(make_memory)
    assert memory.placed.upgrade is not None
    memory.placed.files.put_new(
        memory.placed.layout.file_key(memory_path("/memories/file00.md")),
        memory.placed.files.encode(memory_path("/memories/file00.md"), "other\n"),
    )
    report = memory.placed.upgrade.run()
    assert report.left == [("/memories/file00.md", "a different file is at its path in format 2")]
    assert report.moved == len(FILES) - 1
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == [
        v1.placed.layout.file_key(memory_path("/memories/file00.md"))
    ]
    assert memory.placed.upgrade.pending()


@pytest.mark.slow
@pytest.mark.format_1
def test_a_copy_whose_source_changed_is_withdrawn_and_moved_again(
    v1: S3Memory, make_memory: Callable[..., S3Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    memory, delete = v2_with_legacy_delete(make_memory)
    edited = False

    def edit_first(key: str, *, if_match: str | None = None) -> None:
        nonlocal edited
        if not edited and key == v1.placed.layout.file_key(memory_path("/memories/file00.md")):
            edited = True
            v1.str_replace(memory_path("/memories/file00.md"), "line", "edited")  # a format-1 writer
        delete(key, if_match=if_match)

    monkeypatch.setattr(memory.placed.upgrade._legacy, "delete", edit_first)  # type: ignore[union-attr]
    report = memory.placed.upgrade.run()
    assert edited and report.clean
    assert memory.placed.files.read(memory_path("/memories/file00.md")).text == "edited 0\n"  # type: ignore[union-attr]


@pytest.mark.slow
@pytest.mark.format_1
def test_a_new_format_2_store_is_marked_migrated_at_birth_and_never_lists_a_user_id(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory = make_memory("alice", storage_format=2)
    assert mark_of(s3) == BORN
    assert memory.placed.upgrade is not None and memory.placed.upgrade._marked()


@pytest.mark.slow
@pytest.mark.format_1
def test_a_store_holding_format_1_users_is_not_marked(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory = v2(make_memory)
    memory.run({"command": "view", "path": "/memories"})
    assert stored_keys(s3, f"users/{MIGRATED_NAME}") == []
    assert memory.placed.upgrade is not None and not memory.placed.upgrade._marked()


@pytest.mark.slow
@pytest.mark.format_1
def test_moving_never_loses_a_file_the_delete_of_its_source_could_not_confirm(
    v1: S3Memory, make_memory: Callable[..., S3Memory], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A delete whose answer was lost and whose retry found the source gone counts as done."""
    memory, delete = v2_with_legacy_delete(make_memory)

    def answer_lost(key: str, *, if_match: str | None = None) -> None:
        delete(key, if_match=if_match)
        raise PreconditionFailed(key, after_retry=True)

    monkeypatch.setattr(memory.placed.upgrade._legacy, "delete", answer_lost)  # type: ignore[union-attr]
    report = memory.placed.upgrade.run()
    assert report.clean and report.moved == len(FILES)
    assert texts(memory) == FILES


def run(operations: Operations, *argv: str, confirm: bool = False) -> tuple[int, str]:
    """The console's exit status and standard output."""
    return console.run(operations, *argv, confirm=confirm)[:2]


def test_migrate_moves_every_user_verifies_them_and_marks_the_store(
    v1: S3Memory, make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    bob = make_memory("bob", storage_format=1)
    bob.create(memory_path("/memories/bob.md"), "bob's\n")
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    before = stored_keys(s3)
    assert run(operations, "migrate") == (1, "")  # not confirmed: nothing changed
    assert stored_keys(s3) == before
    status, out = run(operations, "migrate", "--yes")
    assert (status, out) == (
        0,
        "2 users, 25 files moved (0 moved before), 0 left in format 1, 0 problems; the store is marked migrated\n",
    )
    assert list(operations.users()) == ["alice", "bob"]
    assert operations.read("bob", "/memories/bob.md") == "bob's\n"
    assert texts(operations.memory("alice")) == FILES
    assert stored_keys(s3, v1.placed.layout.namespace) == stored_keys(s3, bob.placed.layout.namespace) == []
    assert mark_of(s3) == SETTLED  # moved: not born
    assert run(operations, "migrate", "--yes") == (
        0,
        "0 users, 0 files moved (0 moved before), 0 left in format 1, 0 problems; the store is marked migrated\n",
    )


@pytest.mark.slow
@pytest.mark.format_1
def test_migrate_moves_a_user_whose_id_is_now_reserved_and_says_what_to_do(
    v1: S3Memory, local_keys: LocalKeyProvider, s3: Any
) -> None:
    """Issue 37, S2: a format-1 user named ``s3memory.…`` before such ids were reserved is moved like
    any (nothing is left behind in format 1, the store is marked), and reported with the fix: move it
    to a new id (``docs/operations.md`` "Reserved user ids"), which the operator commands still can."""
    reserved = Operations(Bucket(s3, BUCKET), local_keys, storage_format=1).memory("s3memory.notes")
    reserved.create(memory_path("/memories/n.md"), "n\n")
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    status, out = run(operations, "migrate", "--yes")
    namespace = operations.memory("s3memory.notes").placed.layout.namespace
    assert (status, out.splitlines()) == (
        1,
        [
            f"s3memory.notes: reserved id {namespace}: a user id beginning with 's3memory.', reserved: no "
            "memory tool, function or MCP server serves it; move this memory to a new id (export it, "
            'import it under the new id, erase this one: docs/operations.md, "Reserved user ids")',
            "2 users, 25 files moved (0 moved before), 0 left in format 1, 1 problems; the store is marked "
            "migrated",
        ],
    )
    assert stored_keys(s3, reserved.placed.layout.namespace) == [] and mark_of(s3) == SETTLED
    assert operations.read("s3memory.notes", "/memories/n.md") == "n\n"


@pytest.mark.slow
@pytest.mark.format_1
def test_after_migrate_no_memory_of_the_process_looks_for_format_1_files_again(
    v1: S3Memory, make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    """Memories built before ``migrate`` marked the store (their store resolved unmarked) and after it
    both take the mark from then on: no listing names a user, as on a store that was always marked."""
    carol = v2(make_memory, "carol")
    carol.run({"command": "view", "path": "/memories"})  # the store is resolved here: not marked
    dave = make_memory("dave", storage_format=2)  # built before the mark, first command after it
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    assert run(operations, "migrate", "--yes")[0] == 0 and mark_of(s3) == SETTLED
    listed: list[str] = []
    s3.meta.events.register(
        "provide-client-params.s3.ListObjectsV2", lambda params, **_: listed.append(params["Prefix"])
    )
    dave.run({"command": "view", "path": "/memories"})
    erin = make_memory("erin", storage_format=2)
    erin.run({"command": "view", "path": "/memories"})
    assert [prefix for prefix in listed if prefix.startswith(("users/dave", "users/erin"))] == []
    assert listed  # each listed its own format-2 namespace


@pytest.mark.slow
@pytest.mark.format_1
def test_migrate_reports_what_it_left_and_does_not_mark_the_store(
    v1: S3Memory, local_keys: LocalKeyProvider, s3: Any
) -> None:
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    alice = operations.memory("alice")
    path = memory_path("/memories/file00.md")
    alice.placed.files.put_new(
        alice.placed.layout.file_key(path), alice.placed.files.encode(path, "written in format 2 first\n")
    )
    status, out = run(operations, "migrate", "--yes")
    assert (status, out.splitlines()) == (
        1,
        [
            "alice: left /memories/file00.md: a different file is at its path in format 2",
            "1 users, 23 files moved (0 moved before), 1 left in format 1, 0 problems; "
            "run migrate again once they are resolved",
        ],
    )
    assert stored_keys(s3, f"users/{MIGRATED_NAME}") == []


@pytest.mark.slow
@pytest.mark.format_1
def test_migrate_refuses_a_format_1_store_setting(
    v1: S3Memory, local_keys: LocalKeyProvider, s3: Any
) -> None:
    before = stored_keys(s3)
    for setting in (1, "auto"):  # auto keeps a store of format-1 users in format 1
        operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=setting)
        status, _, err = console.run(operations, "migrate", "--yes")
        assert (status, err.splitlines()[0]) == (
            1,
            "s3memory migrate: Error: migrate moves a store to storage format 2, and this one is served in format 1 "
            "(S3MEMORY_STORAGE_FORMAT=1, or auto on a store of format-1 users); set "
            "S3MEMORY_STORAGE_FORMAT=2 (--storage-format 2) here and for every process that serves "
            "the store. Nothing was changed.",
        )
        assert stored_keys(s3) == before


@pytest.mark.slow
@pytest.mark.format_1
def test_a_store_migrated_under_concurrent_use_loses_nothing_and_verifies_clean(
    v1: S3Memory, make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    done = threading.Event()
    written: dict[str, str] = {}

    def use() -> None:  # the memory function, already switched to format 2, serving alice meanwhile
        index = 0
        while not done.is_set() or index < 5:
            memory = v2(make_memory)
            path = f"/memories/during/{index}.md"
            memory.run({"command": "create", "path": path, "file_text": f"during {index}\n"})
            written[path] = f"during {index}\n"
            index += 1

    user = threading.Thread(target=use)
    user.start()
    try:
        report = migrate_store(operations)
    finally:
        done.set()
        user.join()
    assert report.complete and not report.verified["alice"].problems
    assert texts(operations.memory("alice")) == {**FILES, **written}
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_a_path_too_long_for_private_names_stays_in_format_1_and_the_user_is_served(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    long_path = "/memories/" + "/".join(["a_fairly_long_directory_name_here"] * 12) + "/note.md"
    v1.create(memory_path(long_path), "deep\n")
    memory = v2(make_memory)
    assert memory.placed.upgrade is not None
    report = memory.placed.upgrade.run()
    assert report.left == [
        (
            long_path,
            "its path is too long for private names (export it with --storage-format 1, import it under a shorter path)",
        )
    ]
    assert report.moved == len(FILES)
    assert memory.run({"command": "view", "path": "/memories/file00.md"}).endswith("line 0")
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == [
        v1.placed.layout.file_key(memory_path(long_path))
    ]


@pytest.mark.slow
@pytest.mark.format_1
def test_erase_on_a_format_2_store_also_removes_what_format_1_left(
    v1: S3Memory,
    make_memory: Callable[..., S3Memory],
    local_keys: LocalKeyProvider,
    s3: Any,
    new_client: Callable[..., Any],
) -> None:
    """Files not moved yet, and what a move leaves (format-1 keys and history), are the user's too;
    a store whose prefix lies below the user's format-1 name is not."""
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    nested = (
        S3Memory(  # made by a role that cannot list outside it (else refused: tests/storage/test_nesting.py)
            Bucket(confined(new_client(), v1.placed.layout.namespace), BUCKET),
            "carol",
            local_keys,
            storage_format=2,
            prefix=v1.placed.layout.namespace,
        )
    )
    nested.create(memory_path("/memories/nested.md"), "not alice's\n")
    bob = make_memory("bob", storage_format=1)
    bob.create(memory_path("/memories/bob.md"), "bob's\n")
    erasure = operations.erase("alice")
    assert erasure.left == 0 and erasure.other_versions >= len(FILES)
    assert (
        stored_keys(s3, v1.placed.layout.memories_prefix)
        == stored_keys(s3, v1.placed.layout.internal_prefix)
        == []
    )
    assert operations.memory("alice").run({"command": "view", "path": "/memories"}).endswith("/memories")
    assert nested.run({"command": "view", "path": "/memories/nested.md"}).endswith("not alice's")
    assert bob.placed.files.read(memory_path("/memories/bob.md")) is not None


def a_mark_of_another_store(make_memory: Callable[..., S3Memory], s3: Any) -> bytes:
    """The authentic mark of a store born in format 2 at another prefix of the bucket."""
    make_memory("dan", storage_format=2, prefix="team/")
    return bytes(s3.get_object(Bucket=BUCKET, Key=f"team/{MIGRATED_NAME}")["Body"].read())


FORGED_MARKS = {
    "as-written-before-marks-were-sealed": lambda make_memory, s3: BORN,
    "of-another-store": a_mark_of_another_store,
}


@pytest.mark.slow
@pytest.mark.format_1
@pytest.mark.parametrize("forged", FORGED_MARKS.values(), ids=FORGED_MARKS.keys())
def test_erase_skips_what_format_1_left_only_on_a_store_whose_mark_authenticates_as_born(
    v1: S3Memory,
    make_memory: Callable[..., S3Memory],
    local_keys: LocalKeyProvider,
    s3: Any,
    forged: Callable[..., bytes],
) -> None:
    """A bucket writer's mark saying "born in format 2" (the bytes an earlier version wrote, or
    another store's authentic mark) does not make erase skip the user's format-1 files."""
    make_memory("carol", storage_format=2)  # the store key; alice is in format 1: not marked
    assert stored_keys(s3, f"users/{MIGRATED_NAME}") == []
    s3.put_object(Bucket=BUCKET, Key=f"users/{MIGRATED_NAME}", Body=forged(make_memory, s3))
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    erasure = operations.erase("alice")
    assert (erasure.other_versions, erasure.left) == (len(FILES) + 1, 0)  # the files, the access record
    assert stored_keys(s3, v1.placed.layout.namespace) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_erase_on_a_store_born_in_format_2_sends_no_request_naming_the_user(
    make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    make_memory("jane.doe", storage_format=2).create(memory_path("/memories/a.md"), "a\n")
    assert mark_of(s3) == BORN
    urls: list[str] = []
    s3.meta.events.register("before-send.s3", lambda request, **_: urls.append(request.url))
    erasure = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2).erase("jane.doe")
    assert (erasure.other_versions, erasure.left) == (1, 0)
    assert urls and not [url for url in urls if "jane" in url]


@pytest.mark.slow
@pytest.mark.format_1
def test_a_mark_that_does_not_authenticate_hides_no_format_1_file_from_commands(
    v1: S3Memory, make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    make_memory("carol", storage_format=2)  # the store key; alice is in format 1: not marked
    s3.put_object(Bucket=BUCKET, Key=f"users/{MIGRATED_NAME}", Body=b"")  # as migrate wrote it once
    forget_stores()  # a new process
    memory = v2(make_memory)
    assert memory.run({"command": "view", "path": "/memories/file00.md"}).endswith("line 0")
    assert texts(memory) == FILES
    assert stored_keys(s3, v1.placed.layout.memories_prefix) == []


@pytest.mark.slow
@pytest.mark.format_1
def test_a_store_migrated_before_marks_were_sealed_serves_everyone_until_migrate_marks_it_again(
    v1: S3Memory, make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    """A mark an earlier version wrote locks no one out: it is no mark (each user's first command
    in a process looks for format-1 files again) until ``migrate`` marks the store again."""
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    s3.put_object(Bucket=BUCKET, Key="users/alice/internal/keys/v1", Body=b"wrapped")  # as KMS keeps it
    assert migrate_store(operations).complete
    for old in (b"", BORN):
        s3.put_object(Bucket=BUCKET, Key=f"users/{MIGRATED_NAME}", Body=old)
        forget_stores()  # a new process
        memory = v2(make_memory)
        assert memory.run({"command": "view", "path": "/memories/file00.md"}).endswith("line 0")
        assert memory.placed.upgrade is not None and not memory.placed.upgrade._marked()
        assert mark_of(s3) is None and stored_keys(s3, f"users/{MIGRATED_NAME}") != []  # kept, not trusted
    assert run(operations, "migrate", "--yes")[0] == 0
    assert mark_of(s3) == SETTLED


@pytest.mark.slow
@pytest.mark.format_1
def test_a_store_born_before_marks_were_sealed_is_marked_again_but_not_as_born(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """Its namespaces are all of format 2: it is marked again, as holding no format-1 files; that
    it never held any is no longer known (erase looks for what format 1 may have left)."""
    make_memory("alice", storage_format=2).create(memory_path("/memories/a.md"), "a\n")
    s3.put_object(Bucket=BUCKET, Key=f"users/{MIGRATED_NAME}", Body=BORN)
    forget_stores()  # a new process
    memory = v2(make_memory, "bob")
    assert memory.placed.upgrade is not None and memory.placed.upgrade._marked()
    assert mark_of(s3) == SETTLED


@pytest.mark.slow
@pytest.mark.format_1
def test_migrate_carries_an_access_time_a_dying_move_left_behind(
    v1: S3Memory, make_memory: Callable[..., S3Memory], local_keys: LocalKeyProvider, s3: Any
) -> None:
    last_access = v1.placed.access.read().at
    memory = v2(make_memory)
    assert memory.placed.upgrade is not None
    carry = memory.placed.upgrade.carry_access
    memory.placed.upgrade.carry_access = lambda: None  # type: ignore[method-assign]  # dies before carrying
    memory.placed.upgrade.run()
    memory.placed.upgrade.carry_access = carry  # type: ignore[method-assign]
    assert stored_keys(s3, v1.placed.layout.internal_prefix) != []
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    assert migrate_store(operations).complete
    assert stored_keys(s3, v1.placed.layout.internal_prefix) == []
    assert operations.memory("alice").placed.access.read().at == last_access


@pytest.mark.slow
@pytest.mark.format_1
def test_migrate_marks_an_empty_store_and_makes_its_key(local_keys: LocalKeyProvider, s3: Any) -> None:
    operations = Operations(Bucket(s3, BUCKET), local_keys, storage_format=2)
    assert run(operations, "migrate", "--yes")[0] == 0
    assert operations.memory("alice").run(
        {"command": "create", "path": "/memories/a.md", "file_text": "a\n"}
    ) == ("File created successfully at: /memories/a.md")
