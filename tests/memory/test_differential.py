"""Random command sequences against the SDK's local filesystem tool and ours: same final files.

Inputs stay where the contract and the SDK agree on the files (the contract differs on answers,
not on what a successful command writes). Empty directories are left aside: S3 has none.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from typing import Any

import pytest
from anthropic.lib.tools import ToolError
from anthropic.tools import BetaLocalFilesystemMemoryTool
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from s3memory import S3MemoryTool
from s3memory.crypto import LocalKeyProvider
from tests.support.bucket import BUCKET, MASTER_KEY

pytestmark = [pytest.mark.slow, pytest.mark.fuzz]

MOTO_AS_SHIPPED = True
"""On moto as shipped, no patch: s3memory finds out what it does not enforce (``conftest.moto_semantics``)."""

_NAMES = st.sampled_from(["a.txt", "b.md", "notes", "d", "e"])
_PATHS = st.lists(_NAMES, min_size=1, max_size=3).map(lambda parts: "/memories/" + "/".join(parts))
_WORDS = st.sampled_from(["alpha", "beta", "gamma", "\n", "\r\n", " ", "é", "x"])
_TEXT = st.lists(_WORDS, max_size=8).map("".join)


def _command() -> st.SearchStrategy[dict[str, Any]]:
    return st.one_of(
        st.fixed_dictionaries({"command": st.just("create"), "path": _PATHS, "file_text": _TEXT}),
        st.fixed_dictionaries(
            {
                "command": st.just("str_replace"),
                "path": _PATHS,
                "old_str": st.sampled_from(["alpha", "beta", "gamma", "a", "\n"]),
                "new_str": _TEXT,
            }
        ),
        st.fixed_dictionaries(
            {
                "command": st.just("insert"),
                "path": _PATHS,
                "insert_line": st.integers(min_value=0, max_value=4),
                "insert_text": st.lists(st.sampled_from(["alpha", "beta", " ", "é"]), max_size=4).map(
                    "".join
                ),
            }
        ),
        st.fixed_dictionaries({"command": st.just("delete"), "path": _PATHS}),
        st.fixed_dictionaries({"command": st.just("rename"), "old_path": _PATHS, "new_path": _PATHS}),
    )


def _local_files(root: Path) -> dict[str, str]:
    files: dict[str, str] = {}
    for directory, _, names in os.walk(root):
        for name in names:
            full = Path(directory) / name
            files["/memories/" + full.relative_to(root).as_posix()] = full.read_bytes().decode("utf-8")
    return files


def _s3_files(tool: S3MemoryTool) -> dict[str, str]:
    files: dict[str, str] = {}
    memory = tool.memory
    for page in memory.store.bucket.pages(memory.placed.layout.memories_prefix):
        for listed in page.objects:
            path = memory.placed.layout.path_of_key(listed.key)
            assert path is not None
            found = memory.placed.files.read(path)
            assert found is not None
            files[path.canonical] = found.text
    return files


def _outcome(tool: Any, command: dict[str, Any]) -> bool:
    """Whether the command succeeded. The SDK's tool lets some OSErrors out: those are refusals too."""
    try:
        tool.call(command)
    except (ToolError, OSError):
        return False
    return True


def _prune_empty_directories(root: Path) -> None:
    """Remove the empty directories the SDK's tool leaves behind (S3 has no empty directories)."""
    for directory, _, _ in os.walk(root, topdown=False):
        if Path(directory) != root and not os.listdir(directory):
            os.rmdir(directory)


def _comparable(command: dict[str, Any], local: BetaLocalFilesystemMemoryTool) -> bool:
    """False for inputs where the SDK's rules differ from the contract's on purpose."""
    if command["command"] == "str_replace":
        target = Path(local.memory_root, command["path"][len("/memories/") :])
        if target.is_file():
            text = target.read_text("utf-8")
            old = command["old_str"]
            overlapping = sum(1 for i in range(len(text)) if text.startswith(old, i))
            return overlapping == text.count(old)
    if command["command"] == "insert" and command["insert_text"].rstrip("\n") == "":
        return False  # the SDK's join drops an empty last line; the contract's line model keeps it
    if command["command"] == "rename":
        old, new = command["old_path"], command["new_path"]
        return not (new + "/").startswith(old + "/")
    return True


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(_command(), min_size=1, max_size=14))
def test_random_sequences_leave_the_same_files(s3: Any, commands: list[dict[str, Any]]) -> None:
    ours = S3MemoryTool(
        bucket=BUCKET, user_id="diff", key_provider=LocalKeyProvider(MASTER_KEY), s3_client=s3
    )
    ours.clear_all_memory()
    with tempfile.TemporaryDirectory() as base:
        local = BetaLocalFilesystemMemoryTool(base_path=base)
        for command in commands:
            _prune_empty_directories(Path(local.memory_root))
            if not _comparable(command, local):
                continue
            assert _outcome(ours, command) == _outcome(local, command), command
        assert _s3_files(ours) == _local_files(Path(local.memory_root))
