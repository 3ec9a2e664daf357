"""``s3memory mcp`` servers in processes of their own, driven by the official ``mcp`` client from
synchronous tests: each client runs on an event loop of its own thread (an anyio blocking portal), so a
test calls the tool from as many threads as it likes, and one server can serve a whole module.

A stdio server reads its requests from a pipe of this process: when the test run ends, or dies, the
pipe closes and the server exits (``test_mcp.py`` checks that it does).
"""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from anyio.from_thread import BlockingPortal, start_blocking_portal
from mcp import Client, StdioServerParameters
from mcp.client.client import ConnectMode
from mcp.client.stdio import stdio_client
from mcp.server.lowlevel import Server
from mcp.types import TextContent

from s3memory.assembly import make_store
from s3memory.memory import S3Memory
from s3memory.settings import Settings

from .bucket import LOCAL_KEY_B64

AWS_TEST_ENVIRONMENT = {
    "AWS_ACCESS_KEY_ID": "testing",
    "AWS_SECRET_ACCESS_KEY": "testing",
    "AWS_DEFAULT_REGION": "us-east-1",
}
CALL_TIMEOUT_SECONDS = 60
HTTP_START_SECONDS = 60


def server_command(user: str, mounts: Sequence[str] = (), options: Sequence[str] = ()) -> list[str]:
    """The command that serves ``user``'s memory on stdio (the ``s3memory`` script's entry), with
    ``mounts`` (``POINT=MEMORY[:MODE]``) mounted in it and more ``options`` (``--no-check``...)."""
    mounted = [argument for mount in mounts for argument in ("--mount", mount)]
    return [sys.executable, "-m", "s3memory.cli.main", "mcp", "--user", user, *mounted, *options]


@contextlib.contextmanager
def http_command(
    environment: Mapping[str, str], log: Path, **popen: Any
) -> Iterator[tuple[str, subprocess.Popen[bytes]]]:
    """``s3memory mcp --transport http`` on a free port of 127.0.0.1, in a process of its own with
    exactly ``environment`` (tokens required; ``popen``: more arguments of ``subprocess.Popen``), its
    standard error written to ``log``: its ``/mcp`` URL and the process, once it serves the
    protected-resource metadata; terminated after the block."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "s3memory.cli.main", "mcp", "--transport", "http", "--port", str(port)]
    url = f"http://127.0.0.1:{port}/mcp"
    with log.open("w") as errors:
        process = subprocess.Popen(
            command,
            env=dict(environment),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=errors,
            **popen,
        )
    try:
        deadline = time.monotonic() + HTTP_START_SECONDS
        while True:
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource"):
                    break
            except OSError:
                if process.poll() is not None or time.monotonic() > deadline:
                    raise AssertionError(f"the server did not start: {log.read_text()}") from None
                time.sleep(0.1)
        yield url, process
    finally:
        process.terminate()
        process.wait(HTTP_START_SECONDS)


@dataclass
class McpClient:
    """One connected client of one server process, callable from any thread."""

    portal: BlockingPortal
    client: Client
    log: Path | None
    """Where the server's standard error goes (None: a server in this process)."""

    @property
    def instructions(self) -> str | None:
        return self.client.instructions

    @property
    def protocol_version(self) -> str:
        return self.client.protocol_version

    def server_info(self) -> Any:
        return self.client.server_info

    def list_tools(self) -> list[dict[str, Any]]:
        """``tools/list``: each tool as it went on the wire."""
        listed = self.portal.call(self.client.list_tools)
        return [tool.model_dump(by_alias=True, exclude_none=True) for tool in listed.tools]

    def call(self, name: str = "memory", /, **arguments: Any) -> tuple[str, bool]:
        """``tools/call``: the answer's text and ``isError``."""
        result = self.portal.call(self.client.call_tool, name, arguments, CALL_TIMEOUT_SECONDS)
        assert len(result.content) == 1 and result.structured_content is None, result
        (block,) = result.content
        assert isinstance(block, TextContent), result
        return block.text, result.is_error


@contextlib.contextmanager
def mcp_server(
    environment: Mapping[str, str],
    user: str,
    log: Path,
    *,
    mode: ConnectMode = "auto",
    mounts: Sequence[str] = (),
    options: Sequence[str] = (),
) -> Iterator[McpClient]:
    """``s3memory mcp --user USER`` (``--mount`` each of ``mounts``, and ``options``) with
    ``environment`` (``S3MEMORY_*``, AWS test credentials added) and a connected official client
    (``mode``: ``auto`` negotiates the newest protocol, ``legacy`` the initialize handshake); the
    server's standard error is written to ``log``."""
    command = server_command(user, mounts, options)
    parameters = StdioServerParameters(
        command=command[0],
        args=command[1:],
        env={**AWS_TEST_ENVIRONMENT, **environment},
    )
    with contextlib.ExitStack() as stack:
        errors: TextIO = stack.enter_context(log.open("a", encoding="utf-8"))
        portal = stack.enter_context(start_blocking_portal())
        client = Client(
            stdio_client(parameters, errlog=errors), mode=mode, read_timeout_seconds=CALL_TIMEOUT_SECONDS
        )
        stack.enter_context(portal.wrap_async_context_manager(client))
        yield McpClient(portal, client, log)


@contextlib.contextmanager
def in_process(server: Server[Any]) -> Iterator[McpClient]:
    """The official client connected to ``server`` in this process (no transport, no process)."""
    with start_blocking_portal() as portal:
        client = Client(server, read_timeout_seconds=CALL_TIMEOUT_SECONDS)
        with portal.wrap_async_context_manager(client):
            yield McpClient(portal, client, None)


def store_environment_named(endpoint: str, bucket: str, name: str) -> dict[str, str]:
    """The ``S3MEMORY_*`` settings of a store of a test module's own: its ``bucket``, at a prefix
    named ``name-<random>/``."""
    return {
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_PREFIX": f"{name}-{uuid.uuid4().hex[:12]}/",
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_ENDPOINT_URL": endpoint,
    }


def library(environment: Mapping[str, str], user: str) -> S3Memory:
    """``user``'s memory in the same store, through the library: built as the Lambda functions build
    it from the same settings (``assembly.make_store`` and the limits)."""
    settings = Settings.from_env({**AWS_TEST_ENVIRONMENT, **environment})
    return S3Memory(make_store(settings), user, **settings.limits.memory_options())


def directory() -> str:
    """A directory of the memory that no other test uses."""
    return f"/memories/t{uuid.uuid4().hex[:10]}"


def ok(client: McpClient, **arguments: Any) -> str:
    """The answer of a call that must succeed."""
    text, is_error = client.call(**arguments)
    assert is_error is False, text
    return text
