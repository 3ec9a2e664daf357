"""One way to build the memory, the SDK adapter and the operator API from the settings the command line
and the Lambda functions read (``Settings.from_env``, ``docs/settings.md``)."""

from __future__ import annotations

import os
import uuid

import pytest

from s3memory import Mount, MountedMemory, S3Memory, S3MemoryTool, Settings
from s3memory.assembly import make_memory
from s3memory.errors import CommandError
from s3memory.ops.operations import Operations
from tests.support.bucket import LOCAL_KEY_B64

BUCKET = "settings-in-code"


def test_the_memory_the_tool_and_the_operator_api_from_this_processs_settings(
    moto_endpoint_with_bucket: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    prefix = f"from-env-{uuid.uuid4().hex[:8]}/"
    for name, value in {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_PREFIX": prefix,
        "S3MEMORY_ENDPOINT_URL": moto_endpoint_with_bucket,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_QUOTA_FILES": "1",
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_DEFAULT_REGION": "us-east-1",
    }.items():
        monkeypatch.setenv(name, value)
    settings = Settings.from_env()
    assert settings == Settings.from_env(dict(os.environ))

    memory = make_memory(settings, "alice")
    assert isinstance(memory, S3Memory)
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "from the settings\n"})
    with pytest.raises(CommandError, match="the memory quota allows 1 files"):  # the settings' limits
        memory.run({"command": "create", "path": "/memories/b.md", "file_text": "x"})

    tool = S3MemoryTool.from_settings(settings, "alice")
    assert isinstance(tool, S3MemoryTool)
    assert tool.call({"command": "view", "path": "/memories/a.md"}).endswith("     1\tfrom the settings")

    mounted = make_memory(settings, "bob", [Mount("/memories/team", "team-acme")])
    assert isinstance(mounted, MountedMemory)
    assert mounted.run({"command": "view", "path": "/memories"}).endswith(
        "[Read-only shared memory: /memories/team; writes there are refused.]"
    )

    operations = Operations.from_env(actor="operator:test")
    assert list(operations.users()) == ["alice", "bob"]  # bob's view recorded his use
    assert operations.read("alice", "/memories/a.md") == "from the settings\n"
