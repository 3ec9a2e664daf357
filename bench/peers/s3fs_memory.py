"""The s3fs peer: the memory tool a user would write with fsspec/s3fs and ``cryptography``.

A simple, honest implementation of the six commands over an ``s3fs.S3FileSystem``, written the way
the libraries invite: AES-256-GCM per file (a random 12-byte nonce in front of the ciphertext),
``fs.cat_file`` to read, ``fs.find`` for listings (one flat listing, filtered to two levels),
``fs.pipe_file(mode="create")`` to create (S3's ``IfNoneMatch``), read-modify-write for edits,
``fs.rm(recursive=True)`` to delete, and ``fs.mv`` to rename a file; a directory is renamed with
``fs.copy(recursive=True)`` + ``fs.rm(recursive=True)``, which is what ``fs.mv(recursive=True)`` does,
because ``mv`` itself fails on S3 directories (fsspec/s3fs#394).

What it does not do, unlike s3memory, and why it can be cheaper: it binds no ciphertext to its path
or user (``fs.mv`` copies bytes server-side, so a bound ciphertext would no longer open after a
rename), edits are not conditional (a concurrent edit can be lost), it does not refuse a file where
a directory is, and renames are not crash-safe. It runs in the bench's s3fs virtualenv, which holds
neither s3memory nor the project's boto3 (aiobotocore pins an older botocore).
"""

from __future__ import annotations

import errno
import os
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM

ROOT = "/memories"
NONCE = 12
OVERHEAD = NONCE + 16


class ToolError(Exception):
    """A refusal, answered to the model as an error."""


def _size(size: int) -> str:
    for unit in ("B", "K", "M"):
        if size < 1024 or unit == "M":
            return f"{size}{unit}" if unit == "B" else f"{size:.1f}{unit}"
        size /= 1024  # type: ignore[assignment]
    return f"{size}"


class S3fsMemoryTool:
    """One user's memory under ``root`` (``bucket/prefix``) of an s3fs filesystem."""

    def __init__(self, fs: Any, root: str, key: bytes) -> None:
        self.fs = fs
        self.root = root.rstrip("/")
        self.aead = AESGCM(key)

    # -- plumbing ---------------------------------------------------------------------------

    def _full(self, path: str) -> str:
        if not isinstance(path, str) or not (path == ROOT or path.startswith(ROOT + "/")):
            raise ToolError(f"Error: The path {path} must start with {ROOT}")
        if ".." in path.split("/") or "\\" in path:
            raise ToolError(f"Error: The path {path} is not allowed")
        return self.root + path.rstrip("/")

    def _seal(self, text: str) -> bytes:
        nonce = os.urandom(NONCE)
        return nonce + self.aead.encrypt(nonce, text.encode("utf-8"), None)

    def _open(self, blob: bytes) -> str:
        return self.aead.decrypt(blob[:NONCE], blob[NONCE:], None).decode("utf-8")

    def _read(self, full: str) -> str | None:
        try:
            return self._open(self.fs.cat_file(full))
        except FileNotFoundError:
            return None

    def seed(self, files: dict[str, str]) -> None:
        self.fs.pipe({self._full(path): self._seal(text) for path, text in files.items()})

    # -- the six commands -------------------------------------------------------------------

    def call(self, command: dict[str, Any]) -> str:
        name = command.get("command")
        if name == "view":
            return self.view(command["path"], command.get("view_range"))
        if name == "create":
            return self.create(command["path"], command["file_text"])
        if name == "str_replace":
            return self.str_replace(command["path"], command["old_str"], command["new_str"])
        if name == "insert":
            return self.insert(command["path"], command["insert_line"], command["insert_text"])
        if name == "delete":
            return self.delete(command["path"])
        if name == "rename":
            return self.rename(command["old_path"], command["new_path"])
        raise ToolError(f"Error: Unknown command {name}")

    def view(self, path: str, view_range: list[int] | None = None) -> str:
        full = self._full(path)
        if full != self.root + ROOT:
            text = self._read(full)
            if text is not None:
                lines = text.split("\n")
                if text.endswith("\n"):
                    lines = lines[:-1]
                first, last = (1, len(lines)) if not view_range else (view_range[0], view_range[1])
                if last == -1:
                    last = len(lines)
                shown = [f"{number:6d}\t{lines[number - 1]}" for number in range(first, last + 1)]
                return f"Here's the content of {path} with line numbers:\n" + "\n".join(shown)
        found = self.fs.find(full, withdirs=True, detail=True)
        if not found:
            raise ToolError(f"The path {path} does not exist. Please provide a valid path.")
        base = full + "/"
        rows = []
        for name, info in sorted(found.items()):
            relative = name[len(base) :] if name.startswith(base) else ""
            if (
                not relative
                or relative.count("/") > 1
                or any(part.startswith(".") for part in relative.split("/"))
            ):
                continue
            if info.get("type") == "directory":
                rows.append(f"4.0K\t{path.rstrip('/')}/{relative}/")
            else:
                rows.append(
                    f"{_size(max(0, int(info.get('size', 0)) - OVERHEAD))}\t{path.rstrip('/')}/{relative}"
                )
        header = f"Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:"
        return "\n".join([header, f"4.0K\t{path}", *rows])

    def create(self, path: str, file_text: str) -> str:
        full = self._full(path)
        try:
            self.fs.pipe_file(full, self._seal(file_text), mode="create")
        except FileExistsError:
            raise ToolError(f"Error: File {path} already exists") from None
        except OSError as error:
            if error.errno == errno.EINVAL:  # PreconditionFailed without the condition named
                raise ToolError(f"Error: File {path} already exists") from None
            raise
        return f"File created successfully at: {path}"

    def _edit(self, path: str, change: Any) -> str:
        full = self._full(path)
        text = self._read(full)
        if text is None:
            raise ToolError(f"Error: The path {path} does not exist. Please provide a valid path.")
        self.fs.pipe_file(full, self._seal(change(text)))
        return "ok"

    def str_replace(self, path: str, old_str: str, new_str: str) -> str:
        def change(text: str) -> str:
            count = text.count(old_str)
            if count == 0:
                raise ToolError(
                    f"No replacement was performed, old_str `{old_str}` did not appear verbatim in {path}."
                )
            if count > 1:
                raise ToolError(f"No replacement was performed. Multiple occurrences of old_str `{old_str}`.")
            return text.replace(old_str, new_str)

        self._edit(path, change)
        return "The memory file has been edited."

    def insert(self, path: str, insert_line: int, insert_text: str) -> str:
        def change(text: str) -> str:
            lines = text.split("\n")
            if insert_line < 0 or insert_line > len(lines):
                raise ToolError(f"Error: Invalid `insert_line` parameter: {insert_line}.")
            lines[insert_line:insert_line] = insert_text.rstrip("\n").split("\n")
            return "\n".join(lines)

        self._edit(path, change)
        return f"The file {path} has been edited."

    def delete(self, path: str) -> str:
        full = self._full(path)
        if full == self.root + ROOT:
            raise ToolError("Error: Cannot delete the /memories directory itself")
        if not self.fs.exists(full):
            raise ToolError(f"Error: The path {path} does not exist")
        self.fs.rm(full, recursive=True)
        return f"Successfully deleted {path}"

    def rename(self, old_path: str, new_path: str) -> str:
        old, new = self._full(old_path), self._full(new_path)
        if not self.fs.exists(old):
            raise ToolError(f"Error: The path {old_path} does not exist")
        if self.fs.exists(new):
            raise ToolError(f"Error: The destination {new_path} already exists")
        if self.fs.isfile(old):
            self.fs.mv(old, new)
        else:
            # ``fs.mv(recursive=True)`` copies the files, then fails on the directory itself, which
            # is no S3 object (fsspec/s3fs#394; ``mv`` passes ``on_error="raise"``). ``copy``
            # ignores it by default, so a user writes ``mv`` as copy + rm, as ``mv`` does.
            self.fs.copy(old, new, recursive=True)
            self.fs.rm(old, recursive=True)
        return f"Successfully renamed {old_path} to {new_path}"
