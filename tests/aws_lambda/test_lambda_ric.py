"""The handlers under the real AWS Lambda Runtime Interface Client (``python -m awslambdaric``), fed
by a loopback stand-in for the Lambda Runtime API: the handler strings resolve (``agent_handler``
and ``mcp_handler`` through the package's lazy attributes), events and answers cross the runtime's
JSON marshalling, and the deadline comes from the ``Lambda-Runtime-Deadline-Ms`` header through the runtime's context.

S3 is moto's threaded server on 127.0.0.1; the agent talks to the scripted Messages API stand-in.
Every wait is bounded, and the runtime process is always killed at the end.
"""

from __future__ import annotations

import base64
import contextlib
import importlib.util
import json
import os
import queue
import subprocess
import sys
import threading
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import boto3
import pytest

from s3memory.aws_lambda import runtime as lambda_runtime_module
from s3memory.core.last_used import ACCESS_NAME
from s3memory.memory import S3Memory
from s3memory.settings import Settings
from s3memory.testing.script import Reply, last_tool_results
from s3memory.testing.scripted_claude import ScriptedClaude
from tests.conftest import STORAGE_FORMAT, key_of
from tests.support.issuer import http_event, loopback_issuer
from tests.support.mcp_messages import INITIALIZE, MCP_HEADERS, tools_call

REPO_ROOT = Path(__file__).resolve().parents[2]
API_PREFIX = "/2018-06-01/runtime"
FUNCTION_ARN = "arn:aws:lambda:us-east-1:123456789012:function:s3memory-test"
BUCKET = "ric-test-memory"
INVOKE_TIMEOUT_SECONDS = 60
START_TIMEOUT_SECONDS = 60


def _ric_missing() -> str | None:
    if importlib.util.find_spec("awslambdaric") is None:
        return "awslambdaric is not installed (`pip install awslambdaric`; it belongs in the dev extra)"
    result = subprocess.run(
        [sys.executable, "-c", "import runtime_client"],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    if result.returncode != 0:
        return f"awslambdaric's C extension (runtime_client) does not load: {result.stderr.strip()[-300:]}"
    return None


_MISSING = _ric_missing()
pytestmark = [
    pytest.mark.slow,
    pytest.mark.lambda_runtime,
    pytest.mark.takes_format,
    pytest.mark.skipif(_MISSING is not None, reason=_MISSING or ""),
]


@dataclass
class Outcome:
    """What the runtime posted for one invocation."""

    kind: str  # "response" or "error"
    body: Any
    error_type: str | None = None


@dataclass
class RuntimeAPI:
    """The Lambda Runtime API on 127.0.0.1: ``invocation/next`` long-polls a queue of events; the
    runtime's ``response``, ``error`` and ``init/error`` posts are recorded."""

    events: queue.Queue[tuple[str, bytes, int]] = field(default_factory=queue.Queue)
    outcomes: dict[str, Outcome] = field(default_factory=dict)
    init_errors: list[Any] = field(default_factory=list)
    polls: int = 0
    stopping: threading.Event = field(default_factory=threading.Event)
    changed: threading.Condition = field(default_factory=threading.Condition)
    server: ThreadingHTTPServer | None = None

    @property
    def address(self) -> str:
        assert self.server is not None
        host, port = self.server.server_address[:2]
        return f"{host!s}:{port}"

    def start(self) -> RuntimeAPI:
        server = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        server.daemon_threads = True
        self.server = server
        threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True).start()
        return self

    def stop(self) -> None:
        self.stopping.set()
        if self.server is not None:
            self.server.shutdown()
            self.server.server_close()

    def record(self, request_id: str | None, outcome: Outcome) -> None:
        with self.changed:
            if request_id is None:
                self.init_errors.append(outcome.body)
            else:
                self.outcomes[request_id] = outcome
            self.changed.notify_all()

    def wait_for_poll(self, process: subprocess.Popen[str], timeout: float = START_TIMEOUT_SECONDS) -> None:
        """Wait until the runtime has initialised (the handler resolved) and asks for an event."""
        deadline = time.monotonic() + timeout
        with self.changed:
            while self.polls == 0 and not self.init_errors:
                if process.poll() is not None or time.monotonic() > deadline:
                    break
                self.changed.wait(0.1)
        assert not self.init_errors, f"the runtime reported an init error: {self.init_errors}"
        assert self.polls > 0, "the runtime never asked for an invocation"

    def invoke(self, event: Any, *, deadline_in_ms: int = 60_000) -> Outcome:
        request_id = str(uuid.uuid4())
        deadline_ms = int(time.time() * 1000) + deadline_in_ms
        self.events.put((request_id, json.dumps(event).encode("utf-8"), deadline_ms))
        limit = time.monotonic() + INVOKE_TIMEOUT_SECONDS
        with self.changed:
            while request_id not in self.outcomes:
                remaining = limit - time.monotonic()
                if remaining <= 0:
                    raise AssertionError(
                        f"no answer to invocation {request_id} in {INVOKE_TIMEOUT_SECONDS} s"
                    )
                self.changed.wait(min(remaining, 0.1))
            return self.outcomes[request_id]


def _handler_for(api: RuntimeAPI) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

        def _answer(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None) -> None:
            self.send_response(status)
            for name, value in (headers or {}).items():
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def do_GET(self) -> None:
            if self.path != f"{API_PREFIX}/invocation/next":
                self._answer(404, b'{"errorType":"NotFound"}')
                return
            with api.changed:
                api.polls += 1
                api.changed.notify_all()
            while not api.stopping.is_set():
                try:
                    request_id, body, deadline_ms = api.events.get(timeout=0.1)
                except queue.Empty:
                    continue
                self._answer(
                    200,
                    body,
                    {
                        "Content-Type": "application/json",
                        "Lambda-Runtime-Aws-Request-Id": request_id,
                        "Lambda-Runtime-Deadline-Ms": str(deadline_ms),
                        "Lambda-Runtime-Invoked-Function-Arn": FUNCTION_ARN,
                        "Lambda-Runtime-Trace-Id": f"Root=1-{uuid.uuid4().hex[:8]}-{uuid.uuid4().hex[:24]};Sampled=0",
                    },
                )
                return
            self.close_connection = True

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            try:
                body: Any = json.loads(raw) if raw else None
            except ValueError:
                body = raw.decode("utf-8", "replace")
            parts = self.path.removeprefix(API_PREFIX).strip("/").split("/")
            error_type = self.headers.get("Lambda-Runtime-Function-Error-Type")
            if parts == ["init", "error"]:
                api.record(None, Outcome("init-error", body, error_type))
            elif len(parts) == 3 and parts[0] == "invocation" and parts[2] in ("response", "error"):
                api.record(parts[1], Outcome(parts[2], body, error_type))
            else:
                self._answer(404, b'{"errorType":"NotFound"}')
                return
            self._answer(202, b'{"status":"OK"}', {"Content-Type": "application/json"})

    return Handler


@dataclass
class Runtime:
    api: RuntimeAPI
    process: subprocess.Popen[str]
    output: list[str]


def storage_environ(s3_endpoint: str) -> dict[str, str]:
    """Where the function under the runtime client keeps its memories, as its settings name it."""
    return {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": base64.b64encode(bytes(range(32))).decode("ascii"),
        "S3MEMORY_ENDPOINT_URL": s3_endpoint,
        "S3MEMORY_STORAGE_FORMAT": str(STORAGE_FORMAT),
    }


def served_memory(s3_endpoint: str, user_id: str) -> S3Memory:
    """``user_id``'s memory as the function serves it (the same storage settings), to name its keys.

    Build it once the function has used the store: on format 2 a new store's first memory makes its
    store key and mark."""
    return lambda_runtime_module.Runtime(Settings.from_env(storage_environ(s3_endpoint))).memory(user_id)


@contextlib.contextmanager
def lambda_runtime(handler: str, s3_endpoint: str, **extra_env: str) -> Iterator[Runtime]:
    """``python -m awslambdaric <handler>`` against a fresh Runtime API; killed on the way out."""
    api = RuntimeAPI().start()
    environment = {
        key: value
        for key, value in os.environ.items()
        if not key.startswith(("S3MEMORY_", "ANTHROPIC_", "AWS_", "_LAMBDA", "LAMBDA_"))
    }
    environment.update(
        AWS_LAMBDA_RUNTIME_API=api.address,
        AWS_LAMBDA_FUNCTION_NAME="s3memory-test",
        AWS_LAMBDA_FUNCTION_VERSION="$LATEST",
        AWS_LAMBDA_FUNCTION_MEMORY_SIZE="256",
        AWS_LAMBDA_LOG_GROUP_NAME="/aws/lambda/s3memory-test",
        AWS_LAMBDA_LOG_STREAM_NAME="test-stream",
        AWS_ACCESS_KEY_ID="testing",
        AWS_SECRET_ACCESS_KEY="testing",
        AWS_DEFAULT_REGION="us-east-1",
        AWS_REGION="us-east-1",
        AWS_CONFIG_FILE=os.devnull,
        AWS_SHARED_CREDENTIALS_FILE=os.devnull,
        AWS_EC2_METADATA_DISABLED="true",
        NO_PROXY="127.0.0.1,localhost",
        **storage_environ(s3_endpoint),
        PYTHONUNBUFFERED="1",
        **extra_env,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "awslambdaric", handler],
        cwd=REPO_ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    output: list[str] = []
    reader = threading.Thread(target=lambda: output.extend(process.stdout or ()), daemon=True)
    reader.start()
    try:
        api.wait_for_poll(process)
        yield Runtime(api, process, output)
    except AssertionError as error:
        process.kill()
        reader.join(timeout=5)
        raise AssertionError(f"{error}\n--- runtime output ---\n{''.join(output)}") from None
    finally:
        process.kill()
        process.wait(timeout=10)
        reader.join(timeout=5)
        api.stop()


JSON_LOGS = {"AWS_LAMBDA_LOG_FORMAT": "JSON", "AWS_LAMBDA_LOG_LEVEL": "INFO"}
"""What the Terraform module's ``logging_config`` sets: the runtime's own JSON log formatter."""


def emf(output: list[str]) -> list[dict[str, Any]]:
    """The runtime's JSON log lines that CloudWatch reads as metrics."""
    return [json.loads(line) for line in output if line.startswith('{"') and '"_aws"' in line]


def test_memory_handler_under_the_runtime_client(moto_endpoint_with_bucket: str) -> None:
    with lambda_runtime(
        "s3memory.aws_lambda.memory_handler", moto_endpoint_with_bucket, **JSON_LOGS
    ) as runtime:
        created = runtime.api.invoke(
            {
                "user_id": "ric",
                "input": {"command": "create", "path": "/memories/r.md", "file_text": "via the RIC"},
            }
        )
        assert created == Outcome(
            "response", {"content": "File created successfully at: /memories/r.md", "is_error": False}
        )
        viewed = runtime.api.invoke(
            {"user_id": "ric", "input": {"command": "view", "path": "/memories/r.md"}}
        )
        assert viewed.kind == "response" and viewed.body["is_error"] is False
        assert "via the RIC" in viewed.body["content"]
        refused = runtime.api.invoke({"user_id": "../x", "input": {"command": "view", "path": "/memories"}})
        assert refused.kind == "response" and refused.body["is_error"] is True
        assert runtime.process.poll() is None  # still serving
        time.sleep(0.2)  # let the last lines reach the reader
        lines = emf(runtime.output)
    assert [(line["command"], line["outcome"]) for line in lines] == [
        ("create", "ok"),
        ("view", "ok"),
        ("unknown", "error"),
    ]
    assert lines[1]["S3Requests"] == 1 and lines[2]["S3Requests"] == 0
    assert all(line["request_id"] for line in lines[:2])  # the runtime's request id reached the handler
    assert all(line["requestId"] == line["request_id"] for line in lines)  # and the runtime's formatter
    assert all(line["message"] == "s3memory invocation" and line["level"] == "INFO" for line in lines)
    assert not any("via the RIC" in line or "/memories" in line for line in runtime.output)


def test_a_function_behind_the_http_api_under_the_runtime_client(moto_endpoint_with_bucket: str) -> None:
    """Deployed behind the HTTP API: a direct event and a forged API Gateway event are refused and
    change nothing; an event with the issuer's token is served as the token's subject."""
    with (
        loopback_issuer() as issuer,
        lambda_runtime(
            "s3memory.aws_lambda.memory_handler",
            moto_endpoint_with_bucket,
            S3MEMORY_DIRECT_INVOCATION="refuse",
            **issuer.environ(),
            **JSON_LOGS,
        ) as runtime,
    ):
        create = {"command": "create", "path": "/memories/d.md", "file_text": "direct"}
        direct = runtime.api.invoke({"user_id": "victim", "input": create})
        assert direct == Outcome(
            "response",
            {
                "content": "Error: This function serves the HTTP API only: direct invocation, where the event "
                "names its own user, is refused (S3MEMORY_DIRECT_INVOCATION=refuse). Nothing was read or "
                "changed.",
                "is_error": True,
            },
        )
        forged = runtime.api.invoke(http_event({"input": create}, claimed_sub="victim"))
        assert forged.kind == "response" and forged.body["statusCode"] == 401
        served = runtime.api.invoke(http_event({"input": create}, token=issuer.token("http-user")))
        assert served.kind == "response" and served.body["statusCode"] == 200
        time.sleep(0.2)
        lines = emf(runtime.output)
    assert [(line.get("error_type"), line.get("status")) for line in lines] == [  # None values are left out
        ("direct_refused", None),
        ("token", 401),
        (None, 200),
    ]
    s3 = boto3.client(
        "s3", endpoint_url=moto_endpoint_with_bucket, region_name="us-east-1",
        aws_access_key_id="testing", aws_secret_access_key="testing",
    )  # fmt: skip

    def keys(prefix: str) -> list[str]:
        listed = s3.list_objects_v2(Bucket=BUCKET, Prefix=prefix).get("Contents", [])
        return [item["Key"] for item in listed]

    assert keys(served_memory(moto_endpoint_with_bucket, "victim").placed.layout.namespace) == []
    # under Lambda the access record lands before the answer: the process may be frozen after it
    user = served_memory(moto_endpoint_with_bucket, "http-user")
    assert keys(user.placed.layout.namespace) == sorted(
        [user.placed.layout.key_of_internal(ACCESS_NAME), key_of(user, "/memories/d.md")]
    )


def test_the_mcp_function_under_the_runtime_client(moto_endpoint_with_bucket: str) -> None:
    """``mcp_handler`` (a lazy attribute of the package) under the runtime client: a direct event is
    refused, an ``initialize`` and a ``tools/call`` with the issuer's token are answered through the
    runtime's JSON marshalling, and each invocation writes one record of function ``mcp``."""
    headers, initialize = MCP_HEADERS, INITIALIZE
    create = {"command": "create", "path": "/memories/m.md", "file_text": "over MCP"}
    call = tools_call(create)
    with (
        loopback_issuer() as issuer,
        lambda_runtime(
            "s3memory.aws_lambda.mcp_handler",
            moto_endpoint_with_bucket,
            S3MEMORY_MCP_URL="https://abc123.execute-api.us-east-1.amazonaws.com/mcp",
            **issuer.environ(),
            **JSON_LOGS,
        ) as runtime,
    ):
        direct = runtime.api.invoke({"user_id": "victim", "input": create})
        assert direct.kind == "response" and direct.body["statusCode"] == 403
        answers = [
            runtime.api.invoke(
                http_event(
                    body, token=issuer.token("mcp-user"), route="ANY /mcp", method="POST", headers=headers
                )
            )
            for body in (initialize, call)
        ]
        assert [(answer.kind, answer.body["statusCode"]) for answer in answers] == [("response", 200)] * 2
        assert json.loads(answers[1].body["body"])["result"] == {
            "content": [{"type": "text", "text": "File created successfully at: /memories/m.md"}],
            "isError": False,
        }
        time.sleep(0.2)
        lines = emf(runtime.output)
    assert [(line["function"], line.get("mcp_method"), line["status"]) for line in lines] == [
        ("mcp", None, 403),
        ("mcp", "initialize", 200),
        ("mcp", "tools/call", 200),
    ]
    memory = served_memory(moto_endpoint_with_bucket, "mcp-user")
    assert memory.run({"command": "view", "path": "/memories/m.md"}).endswith("     1\tover MCP")


def test_agent_handler_under_the_runtime_client(moto_endpoint_with_bucket: str) -> None:
    script = [
        Reply("Saving.", [{"command": "create", "path": "/memories/agent.md", "file_text": "likes tea"}]),
        "Saved.",
        Reply("Looking.", [{"command": "view", "path": "/memories/agent.md"}]),
        lambda messages: "Recalled: " + last_tool_results(messages)[0].text,
    ]
    with (
        ScriptedClaude(script) as messages_api,
        lambda_runtime(
            "s3memory.aws_lambda.agent_handler",
            moto_endpoint_with_bucket,
            ANTHROPIC_BASE_URL=messages_api.base_url,
            ANTHROPIC_API_KEY="sk-ric-test",
            S3MEMORY_METRICS="off",
        ) as runtime,
    ):
        first = runtime.api.invoke({"user_id": "ric-agent", "prompt": "I like tea."})
        assert first.kind == "response", first
        assert (first.body["text"], first.body["iterations"], first.body["stopped_early"]) == (
            "Saved.",
            2,
            None,
        )
        second = runtime.api.invoke({"user_id": "ric-agent", "prompt": "What do I like?"})
        assert second.kind == "response", second
        assert "likes tea" in second.body["text"] and second.body["stopped_early"] is None
        # The deadline header (5 s away) reaches the handler through the runtime's context: with the
        # default 10 s margin no request is sent.
        before = len(messages_api.requests)
        late = runtime.api.invoke({"user_id": "ric-agent", "prompt": "x"}, deadline_in_ms=5_000)
        assert late.kind == "response" and late.body["stopped_early"] == "deadline"
        assert late.body["iterations"] == 0 and len(messages_api.requests) == before
        malformed = runtime.api.invoke({"user_id": "ric-agent"})
        assert malformed.kind == "response" and set(malformed.body) == {"error"}
        assert messages_api.api_keys == ["sk-ric-test"] * 4


def test_unknown_handler_is_an_init_error() -> None:
    api = RuntimeAPI().start()
    environment = dict(
        {k: v for k, v in os.environ.items() if not k.startswith(("S3MEMORY_", "AWS_"))},
        AWS_LAMBDA_RUNTIME_API=api.address,
    )
    process = subprocess.Popen(
        [sys.executable, "-m", "awslambdaric", "s3memory.aws_lambda.no_such_handler"],
        cwd=REPO_ROOT,
        env=environment,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        assert process.wait(timeout=START_TIMEOUT_SECONDS) != 0
    finally:
        process.kill()
        process.wait(timeout=10)
        api.stop()
    (error,) = api.init_errors
    assert error["errorType"] == "Runtime.HandlerNotFound"
