"""A process remembers which paths it last saw as directories, to order its requests.

The hint is never trusted as a fact: when another process has since replaced a directory with a
file (or removed it), every command still answers what S3 holds now.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.core.files import KnownDirectories
from s3memory.core.paths import memory_path
from s3memory.errors import CommandError
from s3memory.memory import S3Memory
from tests.conftest import prefix_of
from tests.support.bucket import BUCKET, SEAWEEDFS_SLOW

pytestmark = [pytest.mark.takes_format]

BACKENDS = ("moto", SEAWEEDFS_SLOW)


@pytest.fixture
def stale(make_memory: Callable[..., S3Memory], s3: Any) -> tuple[S3Memory, S3Memory]:
    """``seen`` listed ``/memories/d`` as a directory; ``other`` then made it a file."""
    other = make_memory()
    other.run({"command": "create", "path": "/memories/d/inner.md", "file_text": "inner\n"})
    seen = make_memory()
    assert "4.0K\t/memories/d/" in seen.run({"command": "view", "path": "/memories"})
    other.run({"command": "delete", "path": "/memories/d"})
    # SeaweedFS keeps an emptied directory (and refuses a file in its place) until it is removed.
    s3.delete_object(Bucket=BUCKET, Key=prefix_of(other, "/memories/d"))
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


def test_a_directory_seen_before_is_viewed_with_one_listing(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    """A view of a directory a process has not seen sends a GET, then a LIST; one it has seen, one LIST
    (from the path's own key, so a file there is still found). A file is one GET either way."""
    writer = make_memory()
    writer.run({"command": "create", "path": "/memories/d/inner.md", "file_text": "inner\n"})
    writer.run({"command": "create", "path": "/memories/d-old.md", "file_text": "sorts between d and d/\n"})
    counter = RequestCounter(s3)
    for seen, requests in [(False, {"GetObject": 1, "ListObjectsV2": 1}), (True, {"ListObjectsV2": 1})]:
        memory = make_memory()
        memory.run({"command": "view", "path": "/memories/d-old.md"})  # its access record: written here
        if seen:
            memory.run({"command": "view", "path": "/memories"})
        counter.reset()
        assert memory.run({"command": "view", "path": "/memories/d"}).splitlines()[1:] == [
            "4.0K\t/memories/d",
            "6B\t/memories/d/inner.md",
        ]
        assert counter.calls == requests
        counter.reset()
        memory.run({"command": "view", "path": "/memories/d/inner.md"})
        assert counter.calls == {"GetObject": 1}


def test_hints_are_bounded_by_their_characters_as_well_as_their_number() -> None:
    """A warm Lambda container keeps one set of hints per user: long names must not make it large."""
    hints = KnownDirectories()
    short = memory_path("/memories/a")
    hints.add([short])
    long_names = [memory_path(f"/memories/{index:03d}{'x' * 900}") for index in range(200)]
    held = []
    for path in long_names:
        hints.add([path])
        held.append(sum(path in hints for path in long_names))
    assert max(held) * 903 <= KnownDirectories.CHARACTER_LIMIT  # never more than the budget holds
    assert max(held) > 100 and short not in hints  # it filled up, and was cleared once past the budget
    hints.forget(memory_path("/memories"))
    hints.add([short])
    assert short in hints
