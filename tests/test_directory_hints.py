"""A process remembers which paths it last saw as directories, to order its requests.

The hint is never trusted as a fact: when another process has since replaced a directory with a
file (or removed it), every command still answers what S3 holds now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from s3memory.errors import CommandError
from s3memory.memory import S3Memory

from .conftest import ALL_BACKENDS, BUCKET, RequestCounter

BACKENDS = ALL_BACKENDS


@pytest.fixture
def stale(make_memory: Callable[..., S3Memory], s3: Any) -> tuple[S3Memory, S3Memory]:
    """``seen`` listed ``/memories/d`` as a directory; ``other`` then made it a file."""
    other = make_memory()
    other.run({"command": "create", "path": "/memories/d/inner.md", "file_text": "inner\n"})
    seen = make_memory()
    assert "4.0K\t/memories/d/" in seen.run({"command": "view", "path": "/memories"})
    other.run({"command": "delete", "path": "/memories/d"})
    # SeaweedFS keeps an emptied directory (and refuses a file in its place) until it is removed.
    s3.delete_object(Bucket=BUCKET, Key=other.layout.memories_prefix + "d/")
    other.run({"command": "create", "path": "/memories/d", "file_text": "now a file\n"})
    return seen, other


def test_a_directory_replaced_by_a_file_is_viewed_as_the_file(stale: tuple[S3Memory, S3Memory]) -> None:
    seen, _ = stale
    assert seen.run({"command": "view", "path": "/memories/d"}) == (
        "Here's the content of /memories/d with line numbers:\n     1\tnow a file"
    )


def test_a_directory_replaced_by_a_file_is_renamed_as_a_file(stale: tuple[S3Memory, S3Memory]) -> None:
    seen, other = stale
    assert (
        seen.run({"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e.md"})
        == "Successfully renamed /memories/d to /memories/e.md"
    )
    assert other.run({"command": "view", "path": "/memories/e.md"}).endswith("     1\tnow a file")


def test_a_directory_replaced_by_a_file_is_deleted_as_a_file(stale: tuple[S3Memory, S3Memory]) -> None:
    seen, other = stale
    assert seen.run({"command": "delete", "path": "/memories/d"}) == "Successfully deleted /memories/d"
    with pytest.raises(
        CommandError, match=r"^The path /memories/d does not exist\. Please provide a valid path\.$"
    ):
        other.run({"command": "view", "path": "/memories/d"})


def test_a_directory_removed_elsewhere_does_not_exist(make_memory: Callable[..., S3Memory]) -> None:
    other = make_memory()
    other.run({"command": "create", "path": "/memories/d/inner.md", "file_text": "inner\n"})
    seen = make_memory()
    seen.run({"command": "view", "path": "/memories"})
    other.run({"command": "delete", "path": "/memories/d"})
    for command, message in [
        (
            {"command": "view", "path": "/memories/d"},
            "The path /memories/d does not exist. Please provide a valid path.",
        ),
        ({"command": "delete", "path": "/memories/d"}, "Error: The path /memories/d does not exist"),
        (
            {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"},
            "Error: The path /memories/d does not exist",
        ),
    ]:
        with pytest.raises(CommandError) as refused:
            seen.run(command)
        assert refused.value.message == message


def test_what_a_process_has_seen_changes_the_order_of_requests_not_their_number(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """A view of a directory sends a GET and a LIST whether or not it was seen before; a file, one GET."""
    make_memory().run({"command": "create", "path": "/memories/d/inner.md", "file_text": "inner\n"})
    counter = RequestCounter(s3)
    for warm in (False, True):
        memory = make_memory()
        if warm:
            memory.run({"command": "view", "path": "/memories"})
        counter.reset()
        memory.run({"command": "view", "path": "/memories/d"})
        assert counter.calls == {"GetObject": 1, "ListObjectsV2": 1}
        counter.reset()
        memory.run({"command": "view", "path": "/memories/d/inner.md"})
        assert counter.calls == {"GetObject": 1}
