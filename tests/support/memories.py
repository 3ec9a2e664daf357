"""Filling a user's memory before the part of a test that counts."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from s3memory.memory import S3Memory


def seed(memory: S3Memory, files: Mapping[str, str] | Iterable[str]) -> None:
    """Create each file: ``files`` maps paths to their text, or lists paths (each file then holds
    ``content of <path>``)."""
    texts = files if isinstance(files, Mapping) else {path: f"content of {path}\n" for path in files}
    for path, text in texts.items():
        memory.run({"command": "create", "path": path, "file_text": text})
