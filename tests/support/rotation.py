"""What the key rotation tests of both storage formats share: the files they seed, with their
authors, a command run until what it wrote off the answer's path has landed, a moment past the
rotation's wait, and the files read back through a memory."""

from __future__ import annotations

import time
from typing import Any

from s3memory.memory import S3Memory
from s3memory.operations import Operations
from s3memory.paths import KeyLayout, memory_path
from s3memory.rotation import ROTATION_WAIT_SECONDS

NEW_MASTER_KEY = bytes(range(64, 96))
FILES = {
    "/memories/notes.md": ("alpha\n", None),
    "/memories/projects/plan.md": ("beta\n", "session:1"),
    "/memories/projects/deep/todo.md": ("gamma\n", "agent:helper"),
    "/memories/ünï.md": ("delta\n", "operator:ann"),
}


def settled(memory: S3Memory) -> S3Memory:
    """``memory`` once the writes it started off the answer's path (its access record) have landed."""
    wait = getattr(getattr(memory, "access", None), "wait", None)
    if wait is not None:
        wait()
    return memory


def run(memory: S3Memory, command: dict[str, Any]) -> str:
    """``memory.run(command)``, returning once what it wrote off the answer's path has landed too."""
    try:
        return memory.run(command)
    finally:
        settled(memory)


def seed(operations: Operations, user: str = "alice") -> KeyLayout:
    """The files of ``FILES``, each written by its author; the user's layout."""
    memory = operations.memory(user)
    for path, (text, author) in FILES.items():
        memory.acting_as(author).run({"command": "create", "path": path, "file_text": text})
    settled(memory)
    return memory.layout


def later() -> float:
    """A moment when a switch made now is older than the wait."""
    return time.time() + ROTATION_WAIT_SECONDS + 60


def contents(
    memory: S3Memory, files: dict[str, tuple[str, str | None]] = FILES
) -> dict[str, tuple[str, str | None]]:
    """Each file's text and author, read and authenticated through ``memory``."""
    found: dict[str, tuple[str, str | None]] = {}
    for path in files:
        read = memory.files.read(memory_path(path))
        assert read is not None, path
        found[path] = (read.text, read.author)
    return found
