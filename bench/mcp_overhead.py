"""Section 7: the memory tool over MCP stdio against the same commands through the library.

One ``s3memory mcp --user ID`` server (a child process: this interpreter, ``-m s3memory.cli.main``)
with the ``S3MEMORY_*`` settings of a store on the bench's endpoint, and the official ``mcp`` client
connected to it over stdio, in this process. Beside it, ``S3Memory.run`` here, on the same store,
built from the same settings the same way (``assembly.make_store``, the settings' limits), for the
same user. Each sample is one call, timed from the client's send to its answer (``Client.call_tool``)
or around ``S3Memory.run``; the two run back to back, alternating which goes first, and the overhead
(MCP minus library) and the ratio (MCP / library) are taken pair by pair.

- ``view`` of one file (a note of 40 lines) that both view;
- ``create`` of a new file of 10 lines one directory deep, each path in a directory of its own
  (``/memories/mcp``, ``/memories/library``), each call a new name.

The server's start-up is timed from spawn until the client is connected (the protocol negotiated:
``initialize`` or the newer discovery), a few times; the last server serves the calls. Both sides use
storage format 2 (the default of a new store) with a local master key. The timed loop runs on the
client's event loop: the library's call blocks it, which holds nothing up, as no MCP request is in
flight then.

Without the ``mcp`` extra the section is skipped and the report says so.
"""

from __future__ import annotations

import base64
import contextlib
import os
import sys
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from s3memory.crypto import FORMAT_2
from s3memory.mcp import MCP_INSTALL_HINT, missing_for_mcp

from .metrics import Summary, paired_ratios, quantile, quiet_gc
from .servers import REGION, Backend
from .tables import ms, table
from .workload import MASTER_KEY, PRIVATE_PREFIX, Tenant, note_text, s3memory_client

BUCKET = "bench-mcp"
USER = "mcp-bench"
VIEWED = "/memories/notes/viewed.md"
CALL_TIMEOUT_SECONDS = 60.0
COMMANDS = ("view file", "create")
MCP = "mcp"
LIBRARY = "library"


@dataclass
class McpCommand:
    """One command over MCP stdio and through the library, ``calls`` pairs."""

    command: str
    mcp: Summary
    library: Summary
    mcp_p90: float
    library_p90: float
    overhead: Summary
    """MCP minus library, seconds, per pair."""
    ratio: Summary
    """MCP / library, per pair."""

    against: str = LIBRARY
    """What ``library`` measured: the library, or the memory function beside the MCP function."""

    @classmethod
    def of(cls, command: str, over: list[float], local: list[float], against: str = LIBRARY) -> McpCommand:
        """The summaries of ``calls`` pairs: ``over`` MCP's seconds, ``local`` the other side's."""
        return cls(
            command=command,
            mcp=Summary.of(over),
            library=Summary.of(local),
            mcp_p90=quantile(over, 0.9),
            library_p90=quantile(local, 0.9),
            overhead=Summary.of([a - b for a, b in zip(over, local, strict=True)]),
            ratio=paired_ratios(over, local),
            against=against,
        )

    def as_dict(self) -> dict[str, Any]:
        return {
            key: value.as_dict() if isinstance(value, Summary) else value
            for key, value in self.__dict__.items()
        }


def pairs(warmup: int, calls: int) -> Iterator[tuple[int, str, bool, bool]]:
    """The order of a comparison's calls: ``(number, command, mcp_first, measured)``, each command of
    ``COMMANDS`` once per number, MCP first on even numbers, the first ``warmup`` numbers unmeasured."""
    for number in range(warmup + calls):
        for command in COMMANDS:
            yield number, command, number % 2 == 0, number >= warmup


def arguments(command: str, side: str, number: int) -> dict[str, Any]:
    """The memory tool's input for call ``number`` of ``command`` (one of ``COMMANDS``) on ``side``:
    every side views ``VIEWED``; each creates in a directory of its own, a new name each call."""
    if command == "view file":
        return {"command": "view", "path": VIEWED}
    return {
        "command": "create",
        "path": f"/memories/{side}/c-{number}.md",
        "file_text": note_text(number, 10),
    }


@dataclass
class McpOverhead:
    backend: str
    storage_format: int
    calls: int
    warmup: int
    startup: Summary = field(default_factory=lambda: Summary.of([]))
    """Spawn until the client is connected, seconds."""
    first_call: float = float("nan")
    """The first ``view`` after the last start-up, seconds (not in the medians)."""
    protocol_version: str = ""
    mcp_version: str = ""
    commands: list[McpCommand] = field(default_factory=list)
    skipped: str = ""
    """Why the section did not run (the ``mcp`` extra missing), else empty."""

    def as_dict(self) -> dict[str, Any]:
        return {
            **{
                key: value.as_dict() if isinstance(value, Summary) else value
                for key, value in self.__dict__.items()
                if key != "commands"
            },
            "commands": [command.as_dict() for command in self.commands],
        }


def store_environment(backend: Backend) -> dict[str, str]:
    """The ``S3MEMORY_*`` settings of the section's store, and the bench's dummy AWS credentials."""
    return {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_PREFIX": PRIVATE_PREFIX,
        "S3MEMORY_STORAGE_FORMAT": str(FORMAT_2),
        "S3MEMORY_LOCAL_KEY": base64.b64encode(MASTER_KEY).decode(),
        "S3MEMORY_ENDPOINT_URL": backend.endpoint_url,
        "AWS_ACCESS_KEY_ID": os.environ.get("AWS_ACCESS_KEY_ID", "bench"),
        "AWS_SECRET_ACCESS_KEY": os.environ.get("AWS_SECRET_ACCESS_KEY", "bench-secret"),
        "AWS_DEFAULT_REGION": REGION,
        "AWS_EC2_METADATA_DISABLED": "true",
    }


def _library_memory(environment: dict[str, str]) -> Any:
    """``S3Memory`` built from the settings exactly as ``s3memory mcp`` builds its own."""
    from s3memory.assembly import make_store
    from s3memory.core.paths import UserId
    from s3memory.memory import S3Memory
    from s3memory.settings import Settings

    settings = Settings.from_env(environment)
    return S3Memory(make_store(settings), UserId(USER), **settings.limits.memory_options())


def run(backend: Backend, calls: int, warmup: int, starts: int) -> McpOverhead:
    result = McpOverhead(backend.name, FORMAT_2, calls, warmup)
    missing = missing_for_mcp()
    if missing:
        result.skipped = f"the `mcp` extra is not installed ({MCP_INSTALL_HINT})"
        return result
    import importlib.metadata

    import anyio

    result.mcp_version = importlib.metadata.version("mcp")
    backend.create_bucket(BUCKET)
    tenant = Tenant(backend, s3memory_client(backend), BUCKET, USER, storage_format=FORMAT_2)
    tenant.clear()
    tenant.seed({VIEWED: note_text(1, 40), "/memories/notes/other.md": note_text(2, 40)})
    environment = store_environment(backend)
    try:
        with tempfile.TemporaryDirectory(prefix="s3memory-bench-mcp-") as scratch:
            anyio.run(_measure, result, environment, Path(scratch) / "server.log", max(1, starts))
    finally:
        tenant.clear()
    return result


async def _connect(environment: dict[str, str], log: Any) -> tuple[contextlib.AsyncExitStack, Any, float]:
    """Starts ``s3memory mcp --user USER`` and connects the official client; the exit stack that
    closes both, the client, and the seconds from spawn until connected."""
    from mcp import Client, StdioServerParameters
    from mcp.client.stdio import stdio_client

    parameters = StdioServerParameters(
        command=sys.executable,
        args=["-m", "s3memory.cli.main", "mcp", "--user", USER],
        env=environment,
        cwd=tempfile.gettempdir(),
    )
    stack = contextlib.AsyncExitStack()
    started = time.perf_counter()
    try:
        client = await stack.enter_async_context(
            Client(stdio_client(parameters, errlog=log), read_timeout_seconds=CALL_TIMEOUT_SECONDS)
        )
    except BaseException:
        await stack.aclose()
        raise
    return stack, client, time.perf_counter() - started


async def _measure(result: McpOverhead, environment: dict[str, str], log_path: Path, starts: int) -> None:
    with log_path.open("w", encoding="utf-8") as log:
        try:
            await _measure_with(result, environment, log, starts)
        except Exception as error:
            log.flush()
            said = log_path.read_text(encoding="utf-8").strip()[-2000:]
            raise RuntimeError(f"{error} (server said: {said or 'nothing'})") from error


async def _measure_with(result: McpOverhead, environment: dict[str, str], log: Any, starts: int) -> None:
    from mcp.types import TextContent

    memory = _library_memory(environment)
    startups: list[float] = []
    for _ in range(starts - 1):
        stack, _client, seconds = await _connect(environment, log)
        startups.append(seconds)
        await stack.aclose()
    stack, client, seconds = await _connect(environment, log)
    startups.append(seconds)
    result.startup = Summary.of(startups)
    result.protocol_version = str(client.protocol_version)

    async def over_mcp(arguments: dict[str, Any]) -> tuple[float, str]:
        with quiet_gc():
            started = time.perf_counter()
            answered = await client.call_tool("memory", arguments, CALL_TIMEOUT_SECONDS)
            elapsed = time.perf_counter() - started
        (block,) = answered.content
        if answered.is_error or not isinstance(block, TextContent):
            raise RuntimeError(f"the MCP server refused a bench {arguments['command']}")
        return elapsed, block.text

    def in_library(arguments: dict[str, Any]) -> tuple[float, str]:
        with quiet_gc():
            started = time.perf_counter()
            text = str(memory.run(dict(arguments)))
            elapsed = time.perf_counter() - started
        return elapsed, text

    async with stack:
        result.first_call, _ = await over_mcp(arguments("view file", MCP, 0))
        in_library(arguments("view file", LIBRARY, 0))
        samples: dict[str, dict[str, list[float]]] = {command: {MCP: [], LIBRARY: []} for command in COMMANDS}
        for number, command, mcp_first, measured in pairs(result.warmup, result.calls):
            mcp_arguments = arguments(command, MCP, number)
            library_arguments = arguments(command, LIBRARY, number)
            if mcp_first:
                mcp_seconds, mcp_text = await over_mcp(mcp_arguments)
                library_seconds, library_text = in_library(library_arguments)
            else:
                library_seconds, library_text = in_library(library_arguments)
                mcp_seconds, mcp_text = await over_mcp(mcp_arguments)
            if command == "view file" and mcp_text != library_text:
                raise RuntimeError("the MCP server's view differs from the library's")
            if measured:
                samples[command][MCP].append(mcp_seconds)
                samples[command][LIBRARY].append(library_seconds)
    result.commands = [
        McpCommand.of(command, samples[command][MCP], samples[command][LIBRARY]) for command in COMMANDS
    ]


def mcp_stdio_lines(measured: McpOverhead | None) -> list[str]:
    out = [
        "## 7. The memory tool over MCP stdio",
        "",
        "What `s3memory mcp` adds to a call: one `s3memory mcp --user ID` server (a child process) with the "
        "official `mcp` client over stdio in the bench process, against `S3Memory.run` in the bench "
        "process on the same store and user, built from the same `S3MEMORY_*` settings; each call timed "
        "from send to answer, the two back to back (alternating which goes first). *Overhead* is MCP "
        "minus library per pair, *ratio* MCP / library per pair.",
        "",
    ]
    if measured is None or measured.skipped:
        return [*out, *not_run(measured.skipped if measured is not None else "")]
    out += [
        f"**{measured.backend}**, storage format {measured.storage_format}, local key; mcp "
        f"{measured.mcp_version}, protocol {measured.protocol_version}; {measured.calls} pairs per "
        f"command after {measured.warmup} unmeasured. `view file` views one note of 40 lines; `create` "
        "writes a new note of 10 lines one directory deep on each call.",
        "",
    ]
    out += mcp_table(measured.commands, "MCP", "library")
    out += [
        f"Server start-up (spawn until the client is connected): **{measured.startup.ms(0)} ms** over "
        f"{measured.startup.n} start(s); the first call after it (a `view file`): "
        f"{ms(measured.first_call, 1)} ms.",
        "",
    ]
    return out


def not_run(why: str) -> list[str]:
    """What stands for a part of section 7 that did not run, ``why`` (its ``skipped``) or not measured."""
    return [f"Skipped: {why}." if why else "Not measured in this run.", ""]


def mcp_table(commands: list[McpCommand], mcp: str, other: str) -> list[str]:
    """Per command: each side's median (IQR) and p90, the overhead and the ratio, per pair."""
    return table(
        [
            "command",
            f"{mcp} ms",
            f"{mcp} p90 ms",
            f"{other} ms",
            f"{other} p90 ms",
            "overhead ms/call",
            f"{mcp} / {other}",
            "pairs",
        ],
        [
            [
                c.command,
                c.mcp.ms(2),
                ms(c.mcp_p90, 2),
                c.library.ms(2),
                ms(c.library_p90, 2),
                c.overhead.ms(2),
                c.ratio.ratio(),
                str(c.ratio.n),
            ]
            for c in commands
        ],
    )
