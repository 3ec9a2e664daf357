"""Section 7, on Lambda: the MCP function against the memory function, warm and cold.

Both Lambda handlers run in the bench process (warm) or in a new interpreter each (cold), with the
same settings: the ``S3MEMORY_*`` of section 7's store on the bench's endpoint (storage format 2, a
local key), ``S3MEMORY_JWT_ISSUER``/``AUDIENCE`` of a loopback issuer (``tests/support/issuer.py``,
served on 127.0.0.1 while the section runs) and ``S3MEMORY_MCP_URL``. Each request is an API Gateway
HTTP API event (payload 2.0) with a bearer token the issuer signed for the section's user, which both
functions verify themselves.

- **Warm**: ``s3memory.aws_lambda.mcp_function.handle`` served a JSON-RPC ``tools/call`` of the
  memory tool on ``ANY /mcp`` (stateless, JSON answers: a new app and event loop per invocation)
  against ``s3memory.aws_lambda.memory_function.handle`` served ``{"input": {...}}`` on ``POST /memory``; both
  given the settings as ``environ``, so they share one runtime (clients, key provider, the issuer's
  keys, the user's memory), as a function's container keeps its own. The commands, the pairing and
  the alternation are section 7's (``mcp_overhead.pairs``, ``mcp_overhead.arguments``), each call
  timed around the handler with the collector paused; the views must answer the same text.
- **Cold**: a new interpreter (this one's executable, byte-code from a warm ``PYTHONPYCACHEPREFIX``
  as in section 4) imports ``s3memory.aws_lambda``, looks up the handler as the Lambda runtime does
  (``mcp_handler`` imports ``mcp_function`` and the MCP SDK; ``memory_handler`` is already there) and
  serves its first request, a ``view`` of the same file, which also builds the runtime and fetches
  the issuer's keys. Timed from spawn to exit, and inside the child: the package's import, the
  handler's, and the first request. The two children alternate.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from s3memory.crypto import FORMAT_2
from s3memory.mcp import MCP_INSTALL_HINT, missing_for_mcp

from .coldstart import child_environment, spawn
from .mcp_overhead import (
    BUCKET,
    USER,
    VIEWED,
    McpCommand,
    arguments,
    mcp_table,
    not_run,
    pairs,
    store_environment,
)
from .metrics import Summary, paired_ratios, plain, print_alone, quiet_gc
from .servers import Backend, fake_credentials, moto_backend
from .tables import table
from .workload import Tenant, note_text, s3memory_client

PROTOCOL_VERSION = "2026-07-28"
"""The protocol of the MCP function's requests: what the official client (``mcp`` 2.3) sends through
API Gateway, each request carrying it in its ``_meta`` envelope (``ENVELOPE``) and its headers."""
ENVELOPE = {
    "io.modelcontextprotocol/protocolVersion": PROTOCOL_VERSION,
    "io.modelcontextprotocol/clientInfo": {"name": "s3memory-bench", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MCP_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/mcp"
MCP_FUNCTION = "mcp-function"
MEMORY_FUNCTION = "memory-function"
HANDLERS = {MCP_FUNCTION: "mcp_handler", MEMORY_FUNCTION: "memory_handler"}
"""Each side's handler, an attribute of ``s3memory.aws_lambda`` (the Lambda handler string)."""

LAMBDA_CHILD = r"""
import json, os, sys, time
event = json.loads(os.environ["BENCH_EVENT"])
started = time.perf_counter()
import s3memory.aws_lambda as entry
imported = time.perf_counter()
handler = getattr(entry, os.environ["BENCH_HANDLER"])
loaded = time.perf_counter()
answer = handler(event, None)
served = time.perf_counter()
print(json.dumps({"seconds": served - started, "package_import": imported - started,
                  "handler_import": loaded - imported, "first_request": served - loaded,
                  "failed": answer.get("statusCode") != 200, "modules": len(sys.modules),
                  "answer": answer}))
"""


@dataclass
class ColdHandler:
    """One handler's cold starts: a new interpreter serving its first request."""

    handler: str
    process: Summary
    """Spawn to exit, seconds."""
    package_import: Summary
    """``import s3memory.aws_lambda`` in the child."""
    handler_import: Summary
    """Looking the handler up on the package: ``mcp_function`` and the MCP SDK for ``mcp_handler``."""
    first_request: Summary
    """The first request: the runtime built, the issuer's keys fetched, the command served."""
    modules: int
    """``sys.modules`` after the request."""

    def as_dict(self) -> dict[str, Any]:
        return plain(self.__dict__)


@dataclass
class McpLambda:
    """The MCP function against the memory function, warm (pairs per command) and cold."""

    backend: str
    storage_format: int
    calls: int
    warmup: int
    cold_reps: int
    protocol_version: str = ""
    """The ``mcp-protocol-version`` header of the MCP function's requests."""
    mcp_version: str = ""
    commands: list[McpCommand] = field(default_factory=list)
    """Per command: ``mcp`` the MCP function, ``library`` the memory function."""
    cold: list[ColdHandler] = field(default_factory=list)
    cold_ratio: Summary = field(default_factory=lambda: Summary.of([]))
    """The MCP function's process time over the memory function's, per pair of cold starts."""
    skipped: str = ""

    def as_dict(self) -> dict[str, Any]:
        return {
            **plain(self.__dict__),
            "commands": [command.as_dict() for command in self.commands],
            "cold": [handler.as_dict() for handler in self.cold],
        }


def answer_text(answer: dict[str, Any]) -> str:
    """The text of a tool result that either function answered over HTTP; raises on any refusal or
    tool error (without quoting the answer: it may hold content)."""
    status = answer.get("statusCode")
    if status != 200:
        raise RuntimeError(f"a Lambda handler answered a bench request with HTTP {status}")
    body = json.loads(answer["body"])
    if "jsonrpc" not in body:  # the memory function: {"content": ..., "is_error": ...}
        if body.get("is_error") is not False:
            raise RuntimeError("the memory function answered a bench command with an error")
        return str(body["content"])
    result = body.get("result")
    if not isinstance(result, dict) or result.get("isError") is not False:
        raise RuntimeError("the MCP function answered a bench tools/call with an error")
    (block,) = result["content"]
    return str(block["text"])


class Events:
    """The section's API Gateway events, each with a bearer token for ``USER``: the MCP function's as
    the official client sends a ``tools/call`` (``PROTOCOL_VERSION``), the memory function's
    ``{"input": ...}``."""

    def __init__(self, token: str) -> None:
        self.token = token
        self.sent = 0

    def of(self, side: str, tool_input: dict[str, Any]) -> dict[str, Any]:
        from tests.support.issuer import http_event

        if side == MEMORY_FUNCTION:
            return http_event({"input": tool_input}, token=self.token, claimed_sub=USER)
        self.sent += 1
        call = {
            "jsonrpc": "2.0",
            "id": self.sent,
            "method": "tools/call",
            "params": {"name": "memory", "arguments": tool_input, "_meta": ENVELOPE},
        }
        headers = {
            "accept": "application/json, text/event-stream",
            "mcp-protocol-version": PROTOCOL_VERSION,
            "mcp-method": "tools/call",
            "mcp-name": "memory",
        }
        return http_event(
            call, token=self.token, claimed_sub=USER, route="ANY /mcp", method="POST", headers=headers
        )


def run(backend: Backend, calls: int, warmup: int, cold_reps: int) -> McpLambda:
    result = McpLambda(backend.name, FORMAT_2, calls, warmup, cold_reps)
    missing = missing_for_mcp()
    if missing:
        result.skipped = f"the `mcp` extra is not installed ({MCP_INSTALL_HINT})"
        return result
    from s3memory.aws_lambda import runtime
    from tests.support.issuer import loopback_issuer

    result.mcp_version = importlib.metadata.version("mcp")
    result.protocol_version = PROTOCOL_VERSION
    backend.create_bucket(BUCKET)
    tenant = Tenant(backend, s3memory_client(backend), BUCKET, USER, storage_format=FORMAT_2)
    tenant.clear()
    tenant.seed({VIEWED: note_text(1, 40), "/memories/notes/other.md": note_text(2, 40)})
    runtime.reset()
    try:
        with loopback_issuer() as issuer:
            settings = {**store_environment(backend), **issuer.environ(), "S3MEMORY_MCP_URL": MCP_URL}
            events = Events(issuer.token(USER))
            _warm(result, settings, events)
            _cold(result, settings, events)
    finally:
        runtime.reset()
        tenant.clear()
    return result


def _warm(result: McpLambda, settings: dict[str, str], events: Events) -> None:
    from s3memory.aws_lambda import mcp_function, memory_function

    handlers: dict[str, Callable[..., dict[str, Any]]] = {
        MCP_FUNCTION: mcp_function.handle,
        MEMORY_FUNCTION: memory_function.handle,
    }

    def invoke(side: str, tool_input: dict[str, Any]) -> tuple[float, str]:
        event = events.of(side, tool_input)
        with quiet_gc():
            started = time.perf_counter()
            answer = handlers[side](event, None, settings)
            elapsed = time.perf_counter() - started
        return elapsed, answer_text(answer)

    samples: dict[str, dict[str, list[float]]] = {}
    for number, command, mcp_first, measured in pairs(result.warmup, result.calls):
        order = (MCP_FUNCTION, MEMORY_FUNCTION) if mcp_first else (MEMORY_FUNCTION, MCP_FUNCTION)
        answers = {side: invoke(side, arguments(command, side, number)) for side in order}
        if command == "view file" and answers[MCP_FUNCTION][1] != answers[MEMORY_FUNCTION][1]:
            raise RuntimeError("the MCP function's view differs from the memory function's")
        if measured:
            for side, (seconds, _text) in answers.items():
                samples.setdefault(command, {}).setdefault(side, []).append(seconds)
    result.commands = [
        McpCommand.of(command, sides[MCP_FUNCTION], sides[MEMORY_FUNCTION], against="memory function")
        for command, sides in samples.items()
    ]


def _cold(result: McpLambda, settings: dict[str, str], events: Events) -> None:
    view = arguments("view file", MCP_FUNCTION, 0)
    reports: dict[str, list[tuple[float, dict[str, Any]]]] = {side: [] for side in HANDLERS}
    with tempfile.TemporaryDirectory(prefix="s3memory-bench-pycache-") as cache:
        base = child_environment(settings, cache)
        children = {
            side: {**base, "BENCH_HANDLER": handler, "BENCH_EVENT": json.dumps(events.of(side, view))}
            for side, handler in HANDLERS.items()
        }
        for side in (*HANDLERS, *HANDLERS):
            spawn(LAMBDA_CHILD, children[side])  # fills the byte-code cache and the page cache
        for rep in range(result.cold_reps):
            for side in HANDLERS if rep % 2 == 0 else reversed(HANDLERS):
                reports[side].append(spawn(LAMBDA_CHILD, children[side]))
    texts = {side: {answer_text(report["answer"]) for _, report in runs} for side, runs in reports.items()}
    if len(texts[MCP_FUNCTION] | texts[MEMORY_FUNCTION]) != 1:
        raise RuntimeError("the cold MCP function's view differs from the cold memory function's")
    for side, runs in reports.items():
        result.cold.append(
            ColdHandler(
                handler=f"s3memory.aws_lambda.{HANDLERS[side]}",
                process=Summary.of([seconds for seconds, _ in runs]),
                package_import=Summary.of([report["package_import"] for _, report in runs]),
                handler_import=Summary.of([report["handler_import"] for _, report in runs]),
                first_request=Summary.of([report["first_request"] for _, report in runs]),
                modules=max(int(report["modules"]) for _, report in runs),
            )
        )
    result.cold_ratio = paired_ratios(
        [seconds for seconds, _ in reports[MCP_FUNCTION]],
        [seconds for seconds, _ in reports[MEMORY_FUNCTION]],
    )


LAMBDA_ABOUT = (
    "Both Lambda handlers in the bench process, with the same settings (the store above, a loopback "
    "token issuer, `S3MEMORY_MCP_URL`); every request an API Gateway HTTP API event (payload 2.0) "
    "with a bearer token that both functions verify. No Lambda service: the handlers are called "
    "directly, the store is the moto endpoint above.",
    "",
    "- *Warm*: `mcp_function.handle` serving a JSON-RPC `tools/call` of the memory tool on "
    "`ANY /mcp` (a new app and event loop per invocation) against `memory.handle` serving "
    '`{"input": ...}` on `POST /memory`, sharing one warm runtime; the same commands, pairs and '
    "alternation as above, each call timed around the handler. *Overhead* is MCP function minus "
    "memory function per pair.",
    "- *Cold*: a new interpreter (byte-code from a warm cache, as in section 4) that imports "
    "`s3memory.aws_lambda`, looks the handler up as the Lambda runtime does (for `mcp_handler` that "
    "imports `mcp_function` and the MCP SDK) and serves its first request, a `view file` (which "
    "also builds the runtime and fetches the issuer's keys over loopback); timed from spawn to exit, "
    "and inside the child. The two handlers alternate.",
)
"""What section 7's part on Lambda measures (``bench/mcp_lambda.py``)."""


def mcp_lambda_lines(found: McpLambda | None) -> list[str]:
    """Section 7's second part: the MCP function against the memory function, warm and cold."""
    out = ["### On Lambda: the MCP function against the memory function", "", *LAMBDA_ABOUT, ""]
    if found is None or found.skipped:
        return out + not_run(found.skipped if found is not None else "")
    out.append(
        f"**{found.backend}**, storage format {found.storage_format}, local key; mcp {found.mcp_version}, "
        f"`mcp-protocol-version: {found.protocol_version}`; {found.calls} pairs per command after "
        f"{found.warmup} unmeasured; {found.cold_reps} cold start(s) of each handler.\n"
    )
    out += mcp_table(found.commands, "MCP function", "memory function")
    out += table(
        [
            "cold start",
            "process ms",
            "import s3memory.aws_lambda ms",
            "handler import ms",
            "first request ms",
            "modules",
            "starts",
        ],
        [
            [
                f"`{cold.handler}`",
                cold.process.ms(0),
                cold.package_import.ms(0),
                cold.handler_import.ms(1),
                cold.first_request.ms(0),
                str(cold.modules),
                str(cold.process.n),
            ]
            for cold in found.cold
        ],
    )
    out += [
        f"Cold start, MCP function / memory function (process time, per pair): {found.cold_ratio.ratio()}. "
        "*Handler import* for `mcp_handler` is the import of `s3memory.aws_lambda.mcp_function` with the "
        "MCP SDK, which a Lambda container pays once, at init.",
        "",
    ]
    return out


def main(argv: list[str] | None = None) -> int:
    """Run this part of section 7 alone on a moto server of its own and print its part of ``latest.md``."""
    from .plan import FULL, QUICK

    parser = argparse.ArgumentParser(prog="python -m bench.mcp_lambda", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the counts of `python -m bench --quick`")
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL
    fake_credentials()
    with moto_backend() as backend:
        found = run(backend, plan.mcp_lambda_calls, plan.mcp_warmup, plan.mcp_lambda_cold_reps)
    print_alone(mcp_lambda_lines(found), options.json, found.as_dict())
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
