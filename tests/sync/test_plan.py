"""A sync round's decisions (``sync/plan.py``): every pair of local and remote states against the baseline, the
mass-delete guard at its boundaries, the paths left alone, and the names of conflict copies."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3memory.core.paths import check_new_name, memory_path
from s3memory.errors import CommandError
from s3memory.sync.local_entries import LocalStat
from s3memory.sync.plan import (
    GUARD_FILES,
    NAME_BYTES,
    Action,
    BaselineEntry,
    Kind,
    LocalSide,
    LocalVersion,
    RemoteSide,
    RemoteVersion,
    conflict_name,
    conflict_names,
    decide,
    guarded,
    plan,
)

PATH = "/memories/notes.md"
BASE_STAT = LocalStat(5, 1_000, 7, 1_000)
NEW_STAT = LocalStat(6, 2_000, 8, 2_000)
BASE = BaselineEntry("a" * 64, '"e1"', BASE_STAT)

LOCAL = {
    "same": LocalVersion(BASE_STAT),  # stat unchanged: not read
    "reread": LocalVersion(NEW_STAT, "a" * 64),  # stat changed, the same bytes
    "changed": LocalVersion(NEW_STAT, "b" * 64),
    "deleted": None,
}
REMOTE = {"same": RemoteVersion('"e1"', 33), "changed": RemoteVersion('"e2"', 34), "deleted": None}

WITH_BASELINE = {
    ("same", "same"): None,
    ("same", "changed"): Action(Kind.PULL, PATH, '"e2"', BASE_STAT),
    ("same", "deleted"): Action(Kind.DELETE_LOCAL, PATH, None, BASE_STAT),
    ("reread", "same"): Action(Kind.REFRESH, PATH, '"e1"', NEW_STAT, "a" * 64),
    ("reread", "changed"): Action(Kind.PULL, PATH, '"e2"', NEW_STAT),
    ("reread", "deleted"): Action(Kind.DELETE_LOCAL, PATH, None, NEW_STAT),
    ("changed", "same"): Action(Kind.PUSH, PATH, '"e1"', NEW_STAT, "b" * 64),
    ("changed", "changed"): Action(Kind.RECONCILE, PATH, '"e2"', NEW_STAT, "b" * 64),
    ("changed", "deleted"): Action(Kind.PUSH, PATH, None, NEW_STAT, "b" * 64),  # a local edit brings it back
    ("deleted", "same"): Action(Kind.DELETE_REMOTE, PATH, '"e1"'),
    ("deleted", "changed"): Action(Kind.PULL, PATH, '"e2"', None),  # a remote edit brings it back
    ("deleted", "deleted"): Action(Kind.FORGET, PATH),
}
"""Every cell with a baseline entry: (local, remote) -> the action."""

WITHOUT_BASELINE = {
    ("new", "new"): Action(Kind.RECONCILE, PATH, '"e2"', NEW_STAT, "b" * 64),
    ("new", "absent"): Action(Kind.PUSH, PATH, None, NEW_STAT, "b" * 64),
    ("absent", "new"): Action(Kind.PULL, PATH, '"e2"', None),
    ("absent", "absent"): None,
}


@pytest.mark.parametrize(("cell", "expected"), WITH_BASELINE.items(), ids=lambda value: str(value))
def test_every_cell_with_a_baseline_takes_its_action(cell: tuple[str, str], expected: Action | None) -> None:
    local, remote = cell
    assert decide(PATH, BASE, LOCAL[local], REMOTE[remote]) == expected
    files = {} if LOCAL[local] is None else {PATH: LOCAL[local]}
    listed = {} if REMOTE[remote] is None else {PATH: REMOTE[remote]}
    whole = plan({PATH: BASE}, LocalSide(files), RemoteSide(listed))
    assert whole.actions == (() if expected is None else (expected,))
    assert whole.guard is None and whole.left_alone == () and whole.withheld == ()
    assert whole.in_step == (expected is None)


@pytest.mark.parametrize(("cell", "expected"), WITHOUT_BASELINE.items(), ids=lambda value: str(value))
def test_every_cell_without_a_baseline_takes_its_action(
    cell: tuple[str, str], expected: Action | None
) -> None:
    local = LocalVersion(NEW_STAT, "b" * 64) if cell[0] == "new" else None
    remote = RemoteVersion('"e2"') if cell[1] == "new" else None
    assert decide(PATH, None, local, remote) == expected


def test_an_etag_quoted_or_not_is_the_same() -> None:
    assert decide(PATH, BASE, LOCAL["same"], RemoteVersion("e1")) is None


def test_the_table_covers_every_cell() -> None:
    assert set(WITH_BASELINE) == {(local, remote) for local in LOCAL for remote in REMOTE}


def test_deletions_come_first_then_everything_by_path() -> None:
    baseline = {f"/memories/{name}": BASE for name in ("a", "b", "c")}
    local = LocalSide(
        {"/memories/a": LocalVersion(NEW_STAT, "b" * 64), "/memories/c": LocalVersion(BASE_STAT)}
    )
    remote = RemoteSide(
        {path: RemoteVersion('"e1"') for path in baseline} | {"/memories/0": RemoteVersion("x")}
    )
    kinds = [(action.kind, action.path) for action in plan(baseline, local, remote).actions]
    assert kinds == [
        (Kind.DELETE_REMOTE, "/memories/b"),
        (Kind.PULL, "/memories/0"),
        (Kind.PUSH, "/memories/a"),
    ]


def _tree(
    files: int, local_deleted: int = 0, remote_deleted: int = 0
) -> tuple[dict[str, BaselineEntry], LocalSide, RemoteSide]:
    """A baseline of ``files`` files in step, with the first ``local_deleted`` gone from the folder and
    the last ``remote_deleted`` gone from the memory."""
    paths = [f"/memories/f{number:04}.md" for number in range(files)]
    baseline = dict.fromkeys(paths, BASE)
    local = LocalSide({path: LocalVersion(BASE_STAT) for path in paths[local_deleted:]})
    remote = RemoteSide({path: RemoteVersion('"e1"') for path in paths[: files - remote_deleted]})
    return baseline, local, remote


@pytest.mark.parametrize(
    ("files", "deleted", "withheld"),
    [
        (1, 1, False),  # a single deletion in a small memory goes through
        (8, 8, False),  # every file of a tree of 8: not more than 8
        (9, 9, True),  # more than 8, more than half
        (18, 9, False),  # half the tree: not more than half
        (17, 9, True),
        (100, 9, False),
        (100, 51, True),
        (1000, 1000, True),  # an emptied folder
    ],
)
def test_the_guard_withholds_more_than_8_deletions_that_are_more_than_half_the_tree(
    files: int, deleted: int, withheld: bool
) -> None:
    for local_deleted, remote_deleted in ((deleted, 0), (0, deleted)):
        baseline, local, remote = _tree(files, local_deleted, remote_deleted)
        decided = plan(baseline, local, remote)
        deletions = [
            action for action in decided.actions if action.kind in (Kind.DELETE_LOCAL, Kind.DELETE_REMOTE)
        ]
        assert (len(decided.withheld), len(deletions)) == ((deleted, 0) if withheld else (0, deleted))
        assert (decided.guard is not None) == withheld
        allowed = plan(baseline, local, remote, allow_deletes=True)
        assert len(allowed.actions) == deleted and allowed.guard is None


def test_the_guard_counts_both_sides_together() -> None:
    baseline, local, remote = _tree(17, local_deleted=5, remote_deleted=4)
    assert [action.kind for action in plan(baseline, local, remote).withheld].count(Kind.DELETE_REMOTE) == 5
    assert len(plan(baseline, local, remote).withheld) == 9


def test_an_emptied_folder_against_1000_files_deletes_nothing_and_says_why() -> None:
    baseline, _, remote = _tree(1000)
    decided = plan(baseline, LocalSide({}), remote)
    assert decided.actions == ()
    assert len(decided.withheld) == 1000
    assert decided.guard == (
        "this round would delete 1,000 of the 1,000 files the last round saw (more than 8 and more than "
        "half), as an unmounted disk, an emptied folder or a wiped memory would: none was deleted. If the "
        "deletions are meant, run again with --allow-deletes"
    )


def test_the_guard_withholds_only_deletions() -> None:
    baseline, local, remote = _tree(20, local_deleted=12)
    edited = dict(local.files)
    edited["/memories/f0019.md"] = LocalVersion(NEW_STAT, "b" * 64)
    decided = plan(
        baseline, LocalSide(edited), RemoteSide({**remote.files, "/memories/new": RemoteVersion("n")})
    )
    assert [(action.kind, action.path) for action in decided.actions] == [
        (Kind.PUSH, "/memories/f0019.md"),
        (Kind.PULL, "/memories/new"),
    ]
    assert guarded(GUARD_FILES + 1, 0) is not None and guarded(GUARD_FILES, 0) is None


@pytest.mark.parametrize(
    "left",
    ["/memories/notes.md", "/memories/dir"],  # the file itself, or a directory above it (a link...)
)
def test_a_path_left_alone_locally_never_counts_as_a_deletion_of_the_memorys_file(left: str) -> None:
    baseline = {"/memories/dir/notes.md": BASE, "/memories/notes.md": BASE}
    remote = RemoteSide({path: RemoteVersion('"e1"') for path in baseline})
    local = LocalSide({}, {left: "a symbolic link"})
    decided = plan(baseline, local, remote)
    assert [action.path for action in decided.actions] == [
        path for path in sorted(baseline) if not (path == left or path.startswith(left + "/"))
    ]
    assert decided.left_alone == ((left, "a symbolic link"),)


def test_a_path_left_alone_is_neither_pulled_nor_pushed_nor_forgotten() -> None:
    local = LocalSide(
        {"/memories/big": LocalVersion(NEW_STAT, "b" * 64)}, {"/memories/link": "a symbolic link"}
    )
    remote = RemoteSide(
        {"/memories/link": RemoteVersion("x"), "/memories/big": RemoteVersion("y")}, {"/memories/big": "why"}
    )
    decided = plan({"/memories/gone": BASE, "/memories/link": BASE}, local, remote)
    assert [(action.kind, action.path) for action in decided.actions] == [(Kind.FORGET, "/memories/gone")]
    assert decided.left_alone == (("/memories/big", "why"), ("/memories/link", "a symbolic link"))
    assert decided.in_step == 0


WHEN = 1_765_000_000_123_456_789  # 2025-12-06T05:46:40Z


def test_a_conflict_name_says_conflict_machine_and_when_and_keeps_the_extension() -> None:
    assert conflict_name("/memories/dir/notes.md", "laptop", WHEN, ()) == (
        "/memories/dir/notes.conflict-laptop-20251206T054640Z.md"
    )
    assert (
        conflict_name("/memories/README", "laptop", WHEN, ())
        == "/memories/README.conflict-laptop-20251206T054640Z"
    )
    assert (
        conflict_name("/memories/.bashrc", "laptop", WHEN, ())
        == "/memories/.bashrc.conflict-laptop-20251206T054640Z"
    )
    assert (
        conflict_name("/memories/a.tar.gz", "laptop", WHEN, ())
        == "/memories/a.tar.conflict-laptop-20251206T054640Z.gz"
    )


def test_a_conflict_name_is_deterministic_and_never_collides() -> None:
    first = conflict_name("/memories/n.md", "m", WHEN, ())
    assert first == conflict_name("/memories/n.md", "m", WHEN, ())
    second = conflict_name("/memories/n.md", "m", WHEN, {first})
    assert second == "/memories/n.conflict-m-20251206T054640Z-2.md"
    assert (
        conflict_name("/memories/n.md", "m", WHEN, {first, second})
        == "/memories/n.conflict-m-20251206T054640Z-3.md"
    )


@pytest.mark.parametrize(
    ("machine", "shown"),
    [
        ("host.example.com", "host-example-com"),
        ("../../etc", "etc"),
        ("caf\u00e9 \u200b\nbox", "caf----box"),
        ("x" * 100, "x" * 32),
    ],
)
def test_a_machines_name_is_cut_to_safe_characters(machine: str, shown: str) -> None:
    assert conflict_name("/memories/n", machine, WHEN, ()) == f"/memories/n.conflict-{shown}-20251206T054640Z"


def test_a_machine_without_a_usable_character_is_left_out() -> None:
    assert conflict_name("/memories/n", "\u00e9\u00e9", WHEN, ()) == "/memories/n.conflict-20251206T054640Z"


def test_a_long_name_is_cut_to_fit_a_local_file_systems_names() -> None:
    name = conflict_name("/memories/" + "\u00e9" * 127 + ".md", "laptop", WHEN, ())
    last = name.rsplit("/", 1)[1]
    assert len(last.encode("utf-8")) <= NAME_BYTES and last.endswith(".conflict-laptop-20251206T054640Z.md")


def test_no_room_for_a_conflict_name_is_refused() -> None:
    deep = "/memories/" + "/".join(["d" * 200] * 5)
    with pytest.raises(CommandError, match="No conflict copy of a file in"):
        conflict_name(deep + "/n.md", "m", WHEN, ())


@given(
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), min_size=1, max_size=40),
    st.text(max_size=40),
    st.integers(min_value=0, max_value=2**62),
)
def test_every_conflict_name_passes_the_path_policy(name: str, machine: str, when: int) -> None:
    try:
        path = memory_path(f"/memories/{name}")
        check_new_name(path)
    except CommandError:
        return
    if len(path.segments) != 1:
        return
    names = conflict_names(path.canonical, machine, when)
    for candidate in (next(names), next(names)):
        assert check_new_name(memory_path(candidate)).segments[:-1] == path.segments[:-1]
        assert len(candidate.rsplit("/", 1)[1].encode("utf-8")) <= NAME_BYTES
