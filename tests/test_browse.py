"""A directory view listed in pieces (pages, levels, probes) answers exactly what a view computed
from every key at once would: same rows, same order, same cut."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from s3memory.core.listing import Tree, render_listing
from s3memory.core.paths import memory_path
from s3memory.crypto import LocalKeyProvider, plaintext_size
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket

from .conftest import STORAGE_FORMAT, key_of, prefix_of
from .support.bucket import BUCKET, MASTER_KEY, empty_bucket, stored_keys

CUT_NOTE_END = "rows shown. View a subdirectory to see the rest.]"


def expected_view(s3: Any, memory: S3Memory, path: str) -> str:
    """The answer for the directory ``path`` rendered from a listing of every key at once."""
    directory = memory_path(path)
    tree = Tree()
    for key in stored_keys(s3, prefix_of(memory, path)):
        size = s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"]
        stored = memory.layout.path_of_key(key)
        assert stored is not None, key
        tree.add_file(stored.relative_to(directory), plaintext_size(size))
    return render_listing(path, directory.canonical, tree)


def views_found_first(s3: Any, memory: S3Memory, path: str) -> list[str]:
    """With private names, the answers a view of ``path`` cut near the cap may give: it shows the
    entries its listing found first, in key order, which is no longer name order (docs/format-v2.md),
    the first level's before the second's, directory by directory in name order. Each is rendered
    from the first of those entries."""
    directory = memory_path(path)
    levels: tuple[list[tuple[tuple[str, ...], int | None]], ...] = ([], [])  # (relative path, size or None)
    for key in stored_keys(s3, prefix_of(memory, path)):
        stored = memory.layout.path_of_key(key)
        assert stored is not None, key
        relative = stored.relative_to(directory)
        size = plaintext_size(s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"])
        for depth in (1, 2):
            if len(relative) >= depth:
                step = (relative[:depth], size if len(relative) == depth else None)
                if step not in levels[depth - 1]:
                    levels[depth - 1].append(step)
    by_directory = sorted(levels[1], key=lambda step: step[0][0])  # stable: key order within each
    steps = [*levels[0], *by_directory]
    views = []
    for count in range(len(steps) + 1):
        tree = Tree()
        for relative, size in steps[:count]:
            if size is None:
                tree.add_directory(relative)
            else:
                tree.add_file(relative, size)
        views.append(render_listing(path, directory.canonical, tree))
    return views


def fits(memory: S3Memory, path: str) -> bool:
    """True if the key of ``path`` is within S3's key limit (with private names, names are longer)."""
    try:
        key_of(memory, path)
    except CommandError:
        return False
    return True


# Names that sort around '/': a listing in key order puts `notes.md` and `notes-x/...` before
# `notes/...`, while a view lists `notes/` first; hidden names must stay hidden.
_LONG = st.builds(
    lambda number, suffix: f"{'y' * 400}{number}{suffix}",  # forty rows pass the view cap
    st.integers(min_value=0, max_value=40),
    st.sampled_from(["", ".md", "-x", " x"]),
)
_NAMES = st.one_of(
    st.sampled_from(
        ["notes", "notes.md", "notes-x", "notes x", "note", "a", "a-", "a.b", ".hidden", "node_modules", "z"]
    ),
    _LONG,
)
_PATHS = st.lists(
    st.lists(_NAMES, min_size=1, max_size=4).map("/".join), min_size=1, max_size=60, unique=True
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    paths=_PATHS,
    page_size=st.integers(min_value=1, max_value=9),
    view=st.sampled_from(["/memories", "/memories/notes", "/memories/a"]),
)
@example(
    paths=["notes x", "notes-x", "notes.md", "notes/a"], page_size=1, view="/memories"
)  # two pages held back by `notes`
@example(paths=[f"{'y' * 400}{number}" for number in range(41)], page_size=3, view="/memories")  # a cut
def test_a_view_listed_in_pieces_answers_what_a_view_of_everything_would(
    s3: Any, paths: list[str], page_size: int, view: str
) -> None:
    # a path cannot be both a file and a directory: drop files that another path lies below
    files = [path for path in paths if not any(other.startswith(path + "/") for other in paths)]
    empty_bucket(s3)
    memory = S3Memory(
        Bucket(s3, BUCKET, page_size=page_size),
        "alice",
        LocalKeyProvider(MASTER_KEY),
        storage_format=STORAGE_FORMAT,
    )
    files = [path for path in files if fits(memory, f"/memories/{path}")]  # S3's key limit
    for index, path in enumerate(files):
        s3.put_object(Bucket=BUCKET, Key=key_of(memory, f"/memories/{path}"), Body=b"\0" * (101 + index))
    if view != "/memories" and not any(path.startswith(view[len("/memories/") :] + "/") for path in files):
        return  # no such directory
    answer = memory.run({"command": "view", "path": view})
    expected = expected_view(s3, memory, view)
    if STORAGE_FORMAT != 1 and expected.endswith(CUT_NOTE_END):
        assert answer.endswith(CUT_NOTE_END) and answer in views_found_first(s3, memory, view)
    else:
        assert answer == expected
