"""A directory view listed in pieces (pages, levels, probes) answers exactly what a view computed
from every key at once would: same rows, same order, same cut."""

from __future__ import annotations

from typing import Any

from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from s3memory.crypto import LocalKeyProvider, plaintext_size
from s3memory.listing import Tree, render_listing
from s3memory.memory import S3Memory
from s3memory.paths import memory_path
from s3memory.store import S3Store

from .support.bucket import BUCKET, MASTER_KEY, empty_bucket, stored_keys

MEMORIES = "users/alice/memories/"


def expected_view(s3: Any, path: str) -> str:
    """The answer for the directory ``path`` rendered from a listing of every key at once."""
    directory = memory_path(path)
    prefix = MEMORIES + "".join(segment + "/" for segment in directory.segments)
    tree = Tree()
    for key in stored_keys(s3, prefix):
        size = s3.head_object(Bucket=BUCKET, Key=key)["ContentLength"]
        tree.add_file(tuple(key[len(prefix) :].split("/")), plaintext_size(size))
    return render_listing(path, directory.canonical, tree)


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
def test_a_view_listed_in_pieces_answers_what_a_view_of_everything_would(
    s3: Any, paths: list[str], page_size: int, view: str
) -> None:
    # a path cannot be both a file and a directory: drop files that another path lies below
    files = [path for path in paths if not any(other.startswith(path + "/") for other in paths)]
    files = [path for path in files if len(MEMORIES + path) <= 1024]  # S3's key limit
    empty_bucket(s3)
    for index, path in enumerate(files):
        s3.put_object(Bucket=BUCKET, Key=MEMORIES + path, Body=b"\0" * (101 + index))
    memory = S3Memory(S3Store(s3, BUCKET, page_size=page_size), "alice", LocalKeyProvider(MASTER_KEY))
    if view != "/memories" and not any(path.startswith(view[len("/memories/") :] + "/") for path in files):
        return  # no such directory
    assert memory.run({"command": "view", "path": view}) == expected_view(s3, view)
