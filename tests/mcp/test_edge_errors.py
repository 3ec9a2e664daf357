"""Errors at the network edges name nothing of the operator's (issue 37, E3).

Each edge a remote caller reaches (the MCP server over HTTP, the MCP Lambda function, the memory
function over HTTP and invoked directly, the agent function: its answer and the model's tool results)
is driven with the bucket missing, the endpoint dead and the credentials refused. Its answer is a
fixed text naming a request id, and names none of the bucket, the endpoint, the region or where the
credentials came from; the log line with that request id names all of them. ``s3memory mcp`` on
stdio and the library keep telling the operator everything.

The store is moto in process (a client of AWS S3 in us-east-1, credentials from the environment);
refused credentials are an access key moto's IAM checks do not know.
"""

from __future__ import annotations

import json
import os
import re
import socket
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from botocore.exceptions import ClientError
from moto.core.authorization import enable_iam_authentication
from starlette.applications import Starlette

from s3memory import clients
from s3memory.assembly import make_store
from s3memory.aws_lambda import agent_handler, mcp_handler, memory_handler, runtime
from s3memory.core.paths import UserId
from s3memory.crypto import LocalKeyProvider
from s3memory.edge.answers import answer, answered, remote
from s3memory.errors import (
    AccessDenied,
    CommandError,
    IntegrityError,
    NestedStore,
    ObjectRefused,
    RequestFailed,
    StorageError,
    StorageRefusal,
    StoreMisconfigured,
    operators,
)
from s3memory.mcp.http import http_app, memories_of
from s3memory.mcp.server import build_server
from s3memory.memory import S3Memory
from s3memory.settings import Settings, SettingsError
from s3memory.storage.bucket import Bucket
from s3memory.storage.nesting import check_no_store_at
from s3memory.testing.script import Reply, Turn, last_tool_results
from s3memory.testing.scripted_claude import ScriptedClaude
from tests.mcp.test_mcp_http import connected, served
from tests.support.api_gateway import MCP_URL
from tests.support.bucket import BUCKET as SHARED_BUCKET
from tests.support.bucket import LOCAL_KEY_B64, MASTER_KEY
from tests.support.issuer import Issuer, http_event, loopback_issuer
from tests.support.mcp_messages import MCP_HEADERS, tools_call
from tests.support.mcp_servers import in_process, mcp_server
from tests.support.records import diagnoses

BUCKET = "edge-errors-test-memory"
"""The bucket of this module's moto server (``moto_endpoint_with_bucket``: the stdio test)."""
MISSING_BUCKET = "acme-internal-memory-prod"
"""The operator's bucket: never created, so missing where the scenario wants it so."""
AWS_S3 = "https://s3.amazonaws.com"
REGION = "us-east-1"
CREDENTIALS = "from env"
KNOWN_KEY, REFUSED_KEY = "AKIAEDGETESTKNOWN001", "AKIAEDGETESTREFUSED1"
VIEW = {"command": "view", "path": "/memories"}
CREATE = {"command": "create", "path": "/memories/notes.md", "file_text": "the plan"}
UNAVAILABLE = "Error: The memory store is unavailable; nothing was changed. (request id {})"
INTERRUPTED = (
    "Error: The memory store failed during the command; part of it may have been applied. View the "
    "memory before trying again. (request id {})"
)
REQUEST_ID = re.compile(r"\(request id ([0-9a-f]{32})\)$")


@dataclass(frozen=True)
class Failing:
    """A store that fails as ``name`` says: what the operator's diagnosis names (``named``), which no
    remote answer may."""

    name: str
    named: tuple[str, ...]

    def told_nothing(self, text: str) -> None:
        """``text`` names nothing of ``named`` (nor the user or the path asked about)."""
        for secret in (*self.named, "alice", "notes.md"):
            assert secret not in text, (secret, text)

    def diagnosed(self, caplog: pytest.LogCaptureFixture, request_id: str) -> None:
        """The one log line under ``request_id`` names all of ``named``, and neither user nor path."""
        (line,) = diagnoses(caplog, request_id)
        assert line.startswith(f"s3memory: request {request_id} failed (RequestFailed): Error: S3 "), line
        for named in self.named:
            assert named in line, (named, line)
        assert "alice" not in line and "notes.md" not in line


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


@pytest.fixture(params=["missing bucket", "dead endpoint", "refused credentials"])
def failing(
    request: pytest.FixtureRequest, aws: None, monkeypatch: pytest.MonkeyPatch, no_back_off: None
) -> Iterator[Failing]:
    """The settings (``S3MEMORY_*`` and the AWS environment) of a store that fails as the parameter
    says, for the Lambda functions (their runtime reset) and ``Settings.from_env``."""
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_SESSION_TOKEN", "AWS_SECURITY_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", "/dev/null")
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", "/dev/null")
    monkeypatch.setenv("AWS_DEFAULT_REGION", REGION)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", KNOWN_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "edge-test-secret")
    monkeypatch.setattr(clients, "_sessions", {})  # credentials found afresh: from the environment
    monkeypatch.setenv("S3MEMORY_BUCKET", MISSING_BUCKET)
    monkeypatch.setenv("S3MEMORY_LOCAL_KEY", LOCAL_KEY_B64)
    monkeypatch.setenv("S3MEMORY_DIRECT_INVOCATION", "allow")
    monkeypatch.delenv("S3MEMORY_ENDPOINT_URL", raising=False)
    runtime.reset()
    endpoint = AWS_S3
    try:
        if request.param == "dead endpoint":
            endpoint = f"http://127.0.0.1:{free_port()}"
            monkeypatch.setenv("S3MEMORY_ENDPOINT_URL", endpoint)
        if request.param == "refused credentials":
            monkeypatch.setenv("AWS_ACCESS_KEY_ID", REFUSED_KEY)
            with enable_iam_authentication():  # moto checks each request's key: this one it does not know
                yield Failing(request.param, (MISSING_BUCKET, endpoint, REGION, CREDENTIALS))
        else:
            yield Failing(request.param, (MISSING_BUCKET, endpoint, REGION, CREDENTIALS))
    finally:
        runtime.reset()


# -- the MCP server over HTTP ------------------------------------------------------------------------


def test_the_mcp_server_over_http_tells_a_fixed_text_and_logs_the_diagnosis(
    failing: Failing, caplog: pytest.LogCaptureFixture
) -> None:
    """``s3memory mcp --transport http``'s app as ``http_main`` builds it (without a token: one user on
    loopback), served by uvicorn, called by the official client: a fresh request id per call."""
    settings = Settings.from_env(os.environ)
    memories = memories_of(make_store(settings), settings)

    def app(url: str) -> Starlette:
        return http_app(memories, host="127.0.0.1", resource=url, user=UserId("alice"))

    with served(app) as url, connected(url, None) as client:
        first, second = client.call(**VIEW), client.call(**CREATE)
    ids = []
    for text, is_error in (first, second):
        found = REQUEST_ID.search(text)
        assert found is not None and is_error, text
        ids.append(found.group(1))
        assert text == UNAVAILABLE.format(ids[-1])
        failing.told_nothing(text)
        failing.diagnosed(caplog, ids[-1])
    assert ids[0] != ids[1]


# -- the MCP Lambda function -----------------------------------------------------------------------


@pytest.fixture
def issuer(monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    """A loopback issuer the functions trust (set after ``failing``: the runtime is rebuilt)."""
    with loopback_issuer() as trusted:
        for name, value in trusted.environ(S3MEMORY_MCP_URL=MCP_URL).items():
            monkeypatch.setenv(name, value)
        yield trusted


def test_the_mcp_function_tells_a_fixed_text_under_lambdas_request_id(
    failing: Failing, issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    event = http_event(
        tools_call(CREATE),
        token=issuer.token("alice"),
        claimed_sub=None,
        route="ANY /mcp",
        method="POST",
        headers=MCP_HEADERS,
    )
    answer = mcp_handler(event, SimpleNamespace(aws_request_id="req-edge-mcp"))
    assert answer["statusCode"] == 200
    result = json.loads(answer["body"])["result"]
    assert result["isError"] is True
    ((block,),) = [result["content"]]
    assert block["text"] == UNAVAILABLE.format("req-edge-mcp")
    failing.told_nothing(answer["body"])
    failing.diagnosed(caplog, "req-edge-mcp")


# -- the memory function -----------------------------------------------------------------------------


def test_the_memory_function_tells_a_fixed_text_over_http_and_to_a_direct_invoker(
    failing: Failing, issuer: Issuer, caplog: pytest.LogCaptureFixture
) -> None:
    """A direct invoker's answer is a tool result too (for a model): remote like the HTTP API's."""
    over_http = memory_handler(
        http_event({"input": CREATE}, token=issuer.token("alice")),
        SimpleNamespace(aws_request_id="req-edge-http"),
    )
    assert over_http["statusCode"] == 200
    assert json.loads(over_http["body"]) == {"content": UNAVAILABLE.format("req-edge-http"), "is_error": True}
    failing.told_nothing(over_http["body"])
    failing.diagnosed(caplog, "req-edge-http")
    direct = memory_handler(
        {"user_id": "alice", "input": VIEW}, SimpleNamespace(aws_request_id="req-edge-direct")
    )
    assert direct == {"content": UNAVAILABLE.format("req-edge-direct"), "is_error": True}
    failing.diagnosed(caplog, "req-edge-direct")


@pytest.mark.parametrize("handler", [memory_handler, mcp_handler], ids=["memory", "mcp"])
def test_a_region_botocore_cannot_take_is_a_setting_that_changed_nothing(
    handler: Any, issuer: Issuer, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    """The attacker review of issue 37: a region botocore refuses escaped the functions' check of their
    settings, so the caller was told the command "may have been applied" (no request had been sent)
    and the log said only "unexpected", never which setting."""
    monkeypatch.setenv("AWS_DEFAULT_REGION", "eu west 1!")
    monkeypatch.setenv("S3MEMORY_BUCKET", MISSING_BUCKET)
    monkeypatch.setenv("S3MEMORY_LOCAL_KEY", LOCAL_KEY_B64)
    monkeypatch.setenv("S3MEMORY_MCP_URL", MCP_URL)
    for name, value in issuer.environ().items():
        monkeypatch.setenv(name, value)
    monkeypatch.setattr(clients, "_sessions", {})
    runtime.reset()
    try:
        event = http_event({"input": VIEW}, token=issuer.token("alice"))
        answered = handler(event, SimpleNamespace(aws_request_id="req-edge-region"))
    finally:
        runtime.reset()
    assert answered["statusCode"] == 500
    body = json.loads(answered["body"])
    told = body.get("content", body.get("error_description"))
    assert told == UNAVAILABLE.format("req-edge-region")
    (line,) = diagnoses(caplog, "req-edge-region")
    assert line.startswith(
        "s3memory: request req-edge-region failed (SettingsError): the S3 client could not be built ("
    )
    assert "eu west 1!" in line and "AWS_DEFAULT_REGION" in line and "S3MEMORY_ENDPOINT_URL" in line


# -- the agent function ------------------------------------------------------------------------------


@pytest.fixture
def agent_settings(monkeypatch: pytest.MonkeyPatch, api: ScriptedClaude) -> ScriptedClaude:
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", "sk-ant-edge-test-key")
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    return api


class AgentContext:
    aws_request_id = "req-edge-agent"

    def get_remaining_time_in_millis(self) -> int:
        return 60_000


def test_the_agent_function_tells_its_caller_a_fixed_text(
    failing: Failing, agent_settings: ScriptedClaude, caplog: pytest.LogCaptureFixture
) -> None:
    """The store fails as the user's memory is opened, before the conversation: no model call."""
    answer = agent_handler({"user_id": "alice", "prompt": "remember the plan"}, AgentContext())
    assert answer == {"error": UNAVAILABLE.format("req-edge-agent")}
    assert agent_settings.requests == []
    failing.diagnosed(caplog, "req-edge-agent")


def test_the_agents_model_is_told_a_fixed_text_when_the_store_fails_mid_conversation(
    local_env: Any, agent_settings: ScriptedClaude, caplog: pytest.LogCaptureFixture
) -> None:
    """The bucket goes missing after the first tool call: the model's next tool result is the fixed
    text, its diagnosis in the log under the invocation's request id."""
    runtime.reset()
    missing = ClientError(
        {
            "Error": {"Code": "NoSuchBucket", "Message": f"{SHARED_BUCKET} is gone"},
            "ResponseMetadata": {"HTTPStatusCode": 404, "HTTPHeaders": {}},
        },
        "GetObject",
    )

    def refuse(**_: Any) -> None:
        raise missing

    def bucket_removed(messages: list[dict[str, Any]]) -> Turn:
        runtime.get_runtime().s3_client.meta.events.register_first("before-send.s3", refuse)
        return Reply("Saving it.", [CREATE])

    agent_settings.play(Reply("Looking.", [VIEW]), bucket_removed, lambda messages: "done")
    try:
        answer = agent_handler({"user_id": "alice", "prompt": "remember the plan"}, AgentContext())
    finally:
        runtime.reset()
    assert answer["text"] == "done"
    (result,) = last_tool_results(agent_settings.requests[-1]["messages"])
    assert (result.text, result.is_error) == (UNAVAILABLE.format("req-edge-agent"), True)
    (line,) = diagnoses(caplog, "req-edge-agent")
    assert f"bucket {SHARED_BUCKET} does not exist at {AWS_S3}" in line and f"region {REGION}" in line
    assert "alice" not in line and "notes.md" not in line


# -- what changed: the second wording ----------------------------------------------------------------


def test_a_failure_after_a_write_landed_says_part_may_have_been_applied(
    s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """A rename whose copy landed and whose delete S3 then denies: the remote caller is told part of
    it may have been applied; the operator (the library) is told S3's refusal in full."""
    memory = S3Memory(Bucket(s3, SHARED_BUCKET), "alice", LocalKeyProvider(MASTER_KEY))
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "x"})

    def deny(**_: Any) -> None:
        raise ClientError(
            {
                "Error": {"Code": "AccessDenied", "Message": "s3:DeleteObject denied"},
                "ResponseMetadata": {"HTTPStatusCode": 403, "HTTPHeaders": {}},
            },
            "DeleteObject",
        )

    for operation in ("DeleteObject", "DeleteObjects"):
        s3.meta.events.register_first(f"before-call.s3.{operation}", deny)
    rename = {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/b.md"}
    with remote("req-partial"):
        text, is_error = answer(memory, rename)
    assert (text, is_error) == (INTERRUPTED.format("req-partial"), True)
    (line,) = diagnoses(caplog, "req-partial")
    assert "(AccessDenied)" in line and f"bucket {SHARED_BUCKET}" in line
    operators_text, _ = answer(
        memory, {"command": "rename", "old_path": "/memories/a.md", "new_path": "/memories/c.md"}
    )
    assert operators_text.startswith("Error: S3 DeleteObject") and f"bucket {SHARED_BUCKET}" in operators_text


# -- the operator's own edges keep every detail ------------------------------------------------------


def test_stdio_and_the_library_keep_telling_the_operator_everything(
    moto_endpoint_with_bucket: str, tmp_path: Path, s3: Any
) -> None:
    told = (
        f"Error: S3 GetObject failed (NoSuchBucket): bucket {MISSING_BUCKET} does not exist at "
        f"{moto_endpoint_with_bucket}. Check S3MEMORY_BUCKET (--bucket) and S3MEMORY_ENDPOINT_URL "
        "(--endpoint-url), or create the bucket. Nothing was done."
    )
    environment = {
        "S3MEMORY_BUCKET": MISSING_BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_ENDPOINT_URL": moto_endpoint_with_bucket,
    }
    # --no-check: started anyway, the first call meets the missing bucket (without it, start-up would)
    with mcp_server(environment, "alice", tmp_path / "stdio.log", options=["--no-check"]) as stdio:
        assert stdio.call(**VIEW) == (told, True)
    library = S3Memory(Bucket(s3, MISSING_BUCKET), "alice", LocalKeyProvider(MASTER_KEY))
    assert answer(library, VIEW) == (told.replace(moto_endpoint_with_bucket, AWS_S3), True)


def test_an_mcp_server_built_for_stdio_answers_in_full_and_a_default_one_as_remote(
    s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """``build_server`` is remote unless told: the server ``http_app`` builds (and so the MCP function)
    is; stdio's passes ``remote=False``."""
    memory = S3Memory(Bucket(s3, MISSING_BUCKET), "alice", LocalKeyProvider(MASTER_KEY))
    with in_process(build_server(lambda: memory, remote=False)) as operators_own:
        text, is_error = operators_own.call(**VIEW)
    assert is_error and f"bucket {MISSING_BUCKET} does not exist" in text
    with in_process(build_server(lambda: memory)) as anyones:
        text, is_error = anyones.call(**VIEW)
    found = REQUEST_ID.search(text)
    assert found is not None and (text, is_error) == (UNAVAILABLE.format(found.group(1)), True)
    (line,) = diagnoses(caplog, found.group(1))
    assert f"bucket {MISSING_BUCKET} does not exist" in line


# -- which failures are the operator's ---------------------------------------------------------------


def test_the_contracts_refusals_are_told_verbatim_at_a_remote_edge(
    s3: Any, caplog: pytest.LogCaptureFixture
) -> None:
    memory = S3Memory(Bucket(s3, SHARED_BUCKET), "alice", LocalKeyProvider(MASTER_KEY))
    with remote("req-refusals"):
        assert answer(memory, {"command": "view", "path": "/memories/none.md"}) == (
            "The path /memories/none.md does not exist. Please provide a valid path.",
            True,
        )
        assert answer(memory, {"command": "view", "path": "/etc/passwd"})[0].startswith(
            "Error: Path must start with /memories"
        )
        assert answered(lambda: memory.run(CREATE)) == (
            "File created successfully at: /memories/notes.md",
            False,
        )
        assert answer(memory, CREATE) == ("Error: File /memories/notes.md already exists", True)
    assert diagnoses(caplog, "req-refusals") == []


def test_the_operators_failures_are_classified_in_one_place() -> None:
    failed = RequestFailed(
        "Error: S3 GetObject failed (NoSuchBucket): bucket b does not exist", "NoSuchBucket"
    )
    for operators_own in (
        failed,
        AccessDenied("Error: S3 GetObject failed (AccessDenied)", "AccessDenied"),
        StorageError("Error: KMS Decrypt failed (NotFoundException): the KMS key k ..."),
        IntegrityError("Error: The store key is missing from a store that has one"),
        StoreMisconfigured("Error: A shared memory cannot be opened in this store"),
        NestedStore("Error: This store's prefix ...", "Error: This store's prefix ..."),
        SettingsError("S3MEMORY_BUCKET is required"),
        RuntimeError("a fault"),
    ):
        assert operators(operators_own), operators_own
    for callers in (
        CommandError("Error: File /memories/a.md already exists"),
        StorageRefusal(
            "Error: /memories/a.md kept changing under concurrent edits; the edit was not applied."
        ),
        ObjectRefused("Error: The stored object for /memories/a.md failed its integrity check"),
    ):
        assert not operators(callers), callers
    assert CommandError("Error: File /memories/a.md already exists").diagnosis is None
    assert ObjectRefused("Error: The stored object for /memories/a.md failed").diagnosis is None


def test_a_store_inside_a_users_namespace_is_diagnosed_without_the_user_or_the_key(s3: Any) -> None:
    """On format 1 a namespace and a key name the user: the caller and the operator's terminal see the
    key, the log never does."""
    s3.put_object(Bucket=SHARED_BUCKET, Key="users/alice/s3memory.store-key", Body=b"x")
    with pytest.raises(NestedStore) as nested:
        check_no_store_at(Bucket(s3, SHARED_BUCKET), "users/alice/")
    assert "users/alice/s3memory.store-key" in nested.value.message
    assert nested.value.diagnosis == (
        "Error: Another store lies in a user's namespace: it is not the user's, and nothing was read, written "
        "or erased there. Move that store to a prefix outside this one's (its S3MEMORY_PREFIX). Nothing was "
        "changed."
    )
