"""Request counts bounded by what the answer shows (finding 5 of issue 9), and a view listed in
pieces that answers exactly what a view of everything at once would."""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.core.placement import MAX_DEPTH
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from tests.conftest import STORAGE_FORMAT, key_of, prefix_of
from tests.support.access import AccessRecordWrites
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW, stored_keys

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)


def put_raw(s3: Any, memory: S3Memory, paths: list[str], size: int = 120) -> None:
    """Objects straight to S3 at the keys of ``paths`` in ``memory``'s format (a view reads only the
    listing, so their bodies do not matter)."""
    keys = [key_of(memory, path) for path in paths]
    with ThreadPoolExecutor(max_workers=8) as pool:
        for future in [pool.submit(s3.put_object, Bucket=BUCKET, Key=key, Body=b"\0" * size) for key in keys]:
            future.result()


def counted(memory: S3Memory, command: dict[str, Any]) -> tuple[str, int]:
    """The answer to ``command`` and the requests it made. The access record an answered command
    writes before its answer (at most one PUT) is not counted as the command's."""
    requests = RequestCounter(memory.store.bucket.client)
    records = AccessRecordWrites(memory.store.bucket.client)
    try:
        answer = memory.run(command)
    except CommandError as refused:
        answer = refused.message
    assert records.count <= 1
    return answer, requests.total - records.count


@pytest.mark.slow
@pytest.mark.scale
def test_a_view_over_many_top_level_directories_stops_once_its_answer_is_cut(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory = make_memory()
    put_raw(s3, memory, [f"/memories/dir{index:04d}/notes.md" for index in range(1_001)])  # one past a page
    answer, requests = counted(memory, {"command": "view", "path": "/memories"})
    assert requests == 1  # the first page shows more than the answer has room for
    assert answer.endswith("rows shown. View a subdirectory to see the rest.]")
    first = ["dir0000", "dir0001"]
    if STORAGE_FORMAT != 1:  # private names: the rows are the first names of the entries found first
        first = rows_found_first(memory, s3, answer)[:2]
    # the top level's own rows come before any of the level below (docs/library.md)
    assert answer.splitlines()[2:4] == [f"4.0K\t/memories/{name}/" for name in first]
    assert "notes.md" not in answer


@pytest.mark.slow
@pytest.mark.scale
def test_a_cut_view_shows_every_entry_of_its_own_level_before_any_below(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """A top-level file or directory after a large directory stays in a cut view of /memories: no
    view of a subdirectory could show it (helper-38: format 2 left out top-level entries at random)."""
    memory = make_memory()
    logs = [f"/memories/logs/{index:04d}.md" for index in range(1_001)]
    put_raw(s3, memory, ["/memories/user_preferences.md", "/memories/project/notes.md", *logs])
    answer, _requests = counted(memory, {"command": "view", "path": "/memories"})
    rows = answer.splitlines()
    logs_shown = rows[3:-3]
    assert rows[1:3] == ["4.0K\t/memories", "4.0K\t/memories/logs/"]
    assert rows[-3:] == [
        "4.0K\t/memories/project/",
        "19B\t/memories/user_preferences.md",
        f"[Listing cut near 16,000 characters: {len(rows) - 2} rows shown. View a subdirectory to see the rest.]",
    ]
    assert len(logs_shown) > 500 and logs_shown == sorted(logs_shown)
    assert {row.split("\t")[1] for row in logs_shown} < set(logs)
    if STORAGE_FORMAT == 1:  # names in key order: the first logs by name
        assert logs_shown == [f"19B\t{path}" for path in logs[: len(logs_shown)]]


@pytest.mark.slow
@pytest.mark.scale
def test_a_view_lists_no_more_keys_than_its_answer_could_show_were_they_all_visible(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """Hidden names (and keys of no memory path) show nothing, but each is charged the least row it
    could make: thousands of them after a large directory cost the view no more requests than
    fewer do (helper-44: every page of them was listed)."""
    memory = make_memory()
    put_raw(s3, memory, [f"/memories/-big/{index:04d}.md" for index in range(1_200)])
    costs = []
    for hidden in (range(2_500), range(2_500, 5_000)):
        put_raw(s3, memory, [f"/memories/.h{index:05d}" for index in hidden])
        answer, requests = counted(make_memory(), {"command": "view", "path": "/memories"})  # a new process
        assert answer.endswith("rows shown. View a subdirectory to see the rest.]") and ".h0" not in answer
        costs.append(requests)
    # the first page, at most two more of the first level (each charged ~1,000 rows of 15
    # characters against the cap of 16,000), and two of -big's own: whatever lies hidden
    assert max(costs) <= 5


def rows_found_first(memory: S3Memory, s3: Any, answer: str) -> list[str]:
    """The top-level names a cut view ``answer`` of ``/memories`` shows, checked to be the first in
    name order of some set of names found first in key order (with private names, key order is not
    name order: docs/format-v2.md)."""
    rows = answer.splitlines()[2:-1]
    shown = sorted({row.split("\t")[1].split("/")[2] for row in rows})
    found: list[str] = []
    for key in stored_keys(s3, prefix_of(memory)):
        path = memory.placed.layout.path_of_key(key)
        assert path is not None
        if path.segments[0] not in found:
            found.append(path.segments[0])
    assert any(sorted(found[:count])[: len(shown)] == shown for count in range(len(shown), len(found) + 1))
    return shown


@pytest.mark.parametrize("files", [15, 30])
def test_a_view_of_a_deep_tree_costs_the_same_whatever_lies_below_level_two(
    make_memory: Callable[..., S3Memory], s3: Any, files: int
) -> None:
    memory = make_memory()
    memory.store.bucket.page_size = 10  # a page of 10 keys stands for S3's 1,000: 1.5 and 3 pages of them
    put_raw(s3, memory, [f"/memories/project/a/b/c/f{index:05d}.md" for index in range(files)])
    answer, requests = counted(memory, {"command": "view", "path": "/memories"})
    assert requests == 3  # the namespace, then level 2 of project and the rest of level 1, delimited
    assert answer.splitlines()[1:] == [
        "4.0K\t/memories",
        "4.0K\t/memories/project/",
        "4.0K\t/memories/project/a/",
    ]


def test_a_deep_create_is_refused_before_any_request(make_memory: Callable[..., S3Memory], s3: Any) -> None:
    memory = make_memory()
    assert memory.store.bucket.gate is not None
    memory.store.bucket.gate.enforced()  # the store's first use (tests/formats/test_store_format.py::FIRST_USE)
    too_deep = "/memories/" + "/".join(f"d{level}" for level in range(MAX_DEPTH)) + "/f.md"
    answer, requests = counted(memory, {"command": "create", "path": too_deep, "file_text": "x"})
    assert requests == 0
    assert answer == (
        f"Error: Cannot create {too_deep}: it would lie {MAX_DEPTH + 1} levels below /memories; new files "
        f"may lie at most {MAX_DEPTH} deep."
    )
    deepest = "/memories/" + "/".join(f"d{level}" for level in range(MAX_DEPTH - 1)) + "/f.md"
    answer, requests = counted(memory, {"command": "create", "path": deepest, "file_text": "x"})
    assert answer == f"File created successfully at: {deepest}"
    assert requests == 2 + MAX_DEPTH - 1  # the write, a one-key listing, a HEAD per ancestor
    assert stored_keys(s3, prefix_of(memory)) == [key_of(memory, deepest)]


def test_a_directory_rename_that_would_go_too_deep_is_refused(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    memory = make_memory()
    memory.run({"command": "create", "path": "/memories/a/b/c/d.md", "file_text": "x"})
    deep = "/memories/" + "/".join(f"d{level}" for level in range(MAX_DEPTH - 2))
    with pytest.raises(
        CommandError, match=rf"^Error: Cannot rename to {deep}: it would lie {MAX_DEPTH + 1} levels"
    ):
        memory.run({"command": "rename", "old_path": "/memories/a", "new_path": deep})
    assert stored_keys(s3, prefix_of(memory)) == [key_of(memory, "/memories/a/b/c/d.md")]
