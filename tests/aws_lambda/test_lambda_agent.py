"""The agent Lambda: the real Anthropic SDK tool runner, driven by the scripted Messages API stand-in,
runs S3MemoryTool through ``agent_handler`` against moto; bounds, secrets, malformed events, logs and
metrics (EMF) of both handlers."""

from __future__ import annotations

import json
import logging
import os
import textwrap
import threading
import time
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from bench.metrics import RequestCounter
from s3memory.aws_lambda import agent as lambda_agent
from s3memory.aws_lambda import memory_function, memory_handler, metrics
from s3memory.aws_lambda import runtime as lambda_runtime
from s3memory.aws_lambda.agent import conversation, credentials
from s3memory.aws_lambda.agent import deadline as agent_deadline
from s3memory.storage.concurrency import parallel, side
from s3memory.testing.script import Reply, Turn, last_tool_results
from s3memory.testing.scripted_claude import ScriptedClaude, ScriptError
from tests.conftest import STORAGE_FORMAT, key_of
from tests.formats.test_store_format import FIRST_USE
from tests.support.access import AccessRecordWrites
from tests.support.bucket import BUCKET, stored_keys
from tests.support.lambda_keys import new_store_keys, served
from tests.support.processes import run_python_json
from tests.support.records import diagnoses, invocation_records

pytestmark = [pytest.mark.takes_format]

API_KEY = "sk-ant-test-agent-key-0123456789"
MISCONFIGURED = "Error: s3memory's agent is misconfigured; nothing was run. (request id req-agent-1)"
PREFS_PATH = "/memories/preferences.md"
PREFS_TEXT = "# Preferences\n- Alice prefers metric units.\n"
SECRET_NOTE = "the launch code is 0000"
CLEARED_VARIABLES = (
    "S3MEMORY_BUCKET",
    "S3MEMORY_PREFIX",
    "S3MEMORY_KMS_KEY_ID",
    "S3MEMORY_LOCAL_KEY",
    "S3MEMORY_ENDPOINT_URL",
    "S3MEMORY_MODEL",
    "S3MEMORY_MAX_TOKENS",
    "S3MEMORY_MAX_ITERATIONS",
    "S3MEMORY_DEADLINE_MARGIN_SECONDS",
    "S3MEMORY_AGENT_PARAMS",
    "S3MEMORY_METRICS",
    "ANTHROPIC_API_KEY",
    "ANTHROPIC_AUTH_TOKEN",
    "ANTHROPIC_API_KEY_SECRET_ARN",
    "ANTHROPIC_BASE_URL",
)


class FakeContext:
    """A Lambda context whose remaining time follows ``clock`` (real time when None)."""

    def __init__(self, remaining_ms: float = 60_000, request_id: str = "req-agent-1") -> None:
        self.aws_request_id = request_id
        self._remaining_ms = remaining_ms

    def get_remaining_time_in_millis(self) -> int:
        return int(self._remaining_ms)


class FakeClock:
    """Stands in for the deadline module's ``time``: a monotonic clock that scripted turns move forward."""

    def __init__(self) -> None:
        self.offset = 0.0

    def advance(self, seconds: float) -> None:
        self.offset += seconds

    def monotonic(self) -> float:
        return time.monotonic() + self.offset


@pytest.fixture(autouse=True)
def clean(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in CLEARED_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    for name in ("NO_PROXY", "no_proxy"):
        monkeypatch.setenv(name, "127.0.0.1,localhost")
    lambda_runtime.reset()
    # a cold container: no API key read and no client built yet (the module's own restored after)
    monkeypatch.setattr(credentials, "_secret_keys", {})
    monkeypatch.setattr(credentials, "_cached_client", None)
    yield
    lambda_runtime.reset()


@pytest.fixture
def env(monkeypatch: pytest.MonkeyPatch, local_env: Any, api: ScriptedClaude) -> Any:
    """Local-key storage settings, the stand-in's URL and an API key; returns the test's S3 client."""
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    return local_env


def run(event: object, context: object = None) -> dict[str, Any]:
    return lambda_agent.agent_handler(event, FakeContext() if context is None else context)


def store_turns() -> list[Turn]:
    """Conversation one: look, store the preferences, confirm."""
    return [
        Reply("Checking my memory.", [{"command": "view", "path": "/memories"}]),
        Reply("Saving that.", [{"command": "create", "path": PREFS_PATH, "file_text": PREFS_TEXT}]),
        lambda messages: "Saved: " + last_tool_results(messages)[0].text,
    ]


def recall_turns() -> list[Turn]:
    """Conversation two (empty context): list, read the file, answer only from the tool_result."""

    def answer(messages: list[dict[str, Any]]) -> Turn:
        viewed = last_tool_results(messages)[0]
        return f"From memory: {viewed.text}"

    return [
        Reply("Let me look.", [{"command": "view", "path": "/memories"}]),
        Reply(None, [{"command": "view", "path": PREFS_PATH}]),
        answer,
    ]


# -- end to end -----------------------------------------------------------------------------------


def test_second_conversation_recalls_what_the_first_stored(env: Any, api: ScriptedClaude) -> None:
    api.play(*store_turns())
    first = run({"user_id": "alice", "prompt": "I prefer metric units. Remember that."})
    assert first == {
        "content": [{"type": "text", "text": "Saved: File created successfully at: " + PREFS_PATH}],
        "text": "Saved: File created successfully at: " + PREFS_PATH,
        "stop_reason": "end_turn",
        "usage": first["usage"],
        "iterations": 3,
        "stopped_early": None,
    }
    assert first["usage"]["input_tokens"] > 0 and first["usage"]["output_tokens"] > 0
    assert set(first["usage"]) == {"input_tokens", "output_tokens"}
    assert stored_keys(env) == new_store_keys("alice", [PREFS_PATH])
    stored = env.get_object(Bucket=BUCKET, Key=key_of(served("alice"), PREFS_PATH))["Body"].read()
    assert b"metric" not in stored  # ciphertext only

    api.play(*recall_turns())
    second = run({"user_id": "alice", "messages": [{"role": "user", "content": "What units do I like?"}]})
    assert second["stopped_early"] is None and second["iterations"] == 3
    assert "Alice prefers metric units." in second["text"]
    assert second["content"][0]["text"] == second["text"]
    # Conversation two started from the prompt alone: what it recalled came from S3, via a tool_result.
    start = len(api.histories) - 3
    assert api.histories[start] == [{"role": "user", "content": "What units do I like?"}]
    recalled = [
        result.text for result in last_tool_results(api.histories[start + 2]) if "metric units" in result.text
    ]
    assert recalled and not recalled[0].startswith("Error")
    assert api.remaining == 0


def test_requests_carry_the_memory_tool_beta_and_the_key(env: Any, api: ScriptedClaude) -> None:
    api.play("Hello.")
    answer = run({"user_id": "alice", "prompt": "hi", "model": "claude-test-model", "max_tokens": 321})
    assert answer["text"] == "Hello." and answer["iterations"] == 1
    body, headers = api.requests[0], api.headers[0]
    assert body["model"] == "claude-test-model" and body["max_tokens"] == 321
    assert body["tools"] == [{"type": "memory_20250818", "name": "memory"}]
    assert conversation.MEMORY_BETA in headers.get("anthropic-beta", "")
    assert api.api_keys == [API_KEY]


def test_users_are_isolated(env: Any, api: ScriptedClaude) -> None:
    api.play(
        [{"command": "create", "path": "/memories/secret.md", "file_text": SECRET_NOTE}],
        "stored",
        [{"command": "view", "path": "/memories/secret.md"}],
        lambda messages: last_tool_results(messages)[0].text,
    )
    run({"user_id": "alice", "prompt": "store it"})
    answer = run({"user_id": "bob", "prompt": "read alice's"})
    assert SECRET_NOTE not in answer["text"]
    assert "does not exist" in answer["text"]


def test_parameters_pass_through_from_env_and_event(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    context_management = {"edits": [{"type": "clear_tool_uses_20250919"}]}
    monkeypatch.setenv(
        "S3MEMORY_AGENT_PARAMS",
        json.dumps({"system": "env system", "temperature": 0.2, "context_management": context_management}),
    )
    api.play([{"command": "view", "path": "/memories"}], "done")
    answer = run(
        {
            "user_id": "alice",
            "prompt": "hi",
            "system": "You are terse.",
            "betas": ["another-beta-2099-01-01"],
            "stop_sequences": ["END"],
        }
    )
    assert answer["text"] == "done" and answer["iterations"] == 2
    first = api.requests[0]
    assert first["system"] == "You are terse."  # the event's value replaces the variable's
    assert first["temperature"] == 0.2  # from the variable (sent in the body if the SDK has no keyword)
    assert first["context_management"] == context_management
    assert first["stop_sequences"] == ["END"]
    betas = api.headers[0]["anthropic-beta"]
    assert conversation.MEMORY_BETA in betas and "another-beta-2099-01-01" in betas


def test_whole_history_without_server_threads(env: Any, api: ScriptedClaude) -> None:
    api.play([{"command": "view", "path": "/memories"}], "ok")
    history = [
        {"role": "user", "content": "earlier question"},
        {"role": "assistant", "content": [{"type": "text", "text": "earlier answer"}]},
        {"role": "user", "content": [{"type": "text", "text": "and now?"}]},
    ]
    answer = run({"user_id": "alice", "messages": history, "thread": False})
    assert answer["text"] == "ok"
    assert "thread" not in api.requests[0] and "thread" not in api.requests[1]
    assert api.requests[1]["messages"][:3] == history  # the whole history, every turn


# -- bounds -----------------------------------------------------------------------------------------


def test_max_iterations_from_the_event(env: Any, api: ScriptedClaude) -> None:
    api.play(
        [{"command": "view", "path": "/memories"}],
        [{"command": "create", "path": "/memories/a.md", "file_text": "a"}],
        [{"command": "create", "path": "/memories/b.md", "file_text": "b"}],
        "never reached",
    )
    answer = run({"user_id": "alice", "prompt": "loop", "max_iterations": 2})
    assert answer["iterations"] == 2
    assert answer["stopped_early"] == "max_iterations"
    assert answer["stop_reason"] == "tool_use"
    assert answer["content"][0]["type"] == "tool_use"
    assert answer["text"] == ""
    # As the SDK does at max_iterations: the last turn's tool calls ran, no further request was sent.
    assert stored_keys(env) == new_store_keys("alice", ["/memories/a.md"])
    assert api.remaining == 2


def test_max_iterations_from_the_environment(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3MEMORY_MAX_ITERATIONS", "1")
    api.play([{"command": "view", "path": "/memories"}], "never reached")
    answer = run({"user_id": "alice", "prompt": "loop"})
    assert (answer["iterations"], answer["stopped_early"]) == (1, "max_iterations")


def test_finishing_on_the_last_allowed_turn_is_not_an_early_stop(env: Any, api: ScriptedClaude) -> None:
    api.play([{"command": "view", "path": "/memories"}], "finished")
    answer = run({"user_id": "alice", "prompt": "x", "max_iterations": 2})
    assert (answer["iterations"], answer["stopped_early"], answer["text"]) == (2, None, "finished")


def test_deadline_already_too_close_sends_nothing(env: Any, api: ScriptedClaude) -> None:
    api.play("never reached")
    answer = run({"user_id": "alice", "prompt": "x"}, FakeContext(remaining_ms=9_000))  # margin 10 s
    assert answer == {
        "content": [],
        "text": "",
        "stop_reason": None,
        "usage": {"input_tokens": 0, "output_tokens": 0},
        "iterations": 0,
        "stopped_early": "deadline",
    }
    assert api.requests == []


def test_deadline_stops_before_the_next_request(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(agent_deadline, "time", clock)

    def slow_turn(messages: list[dict[str, Any]]) -> Turn:
        clock.advance(45)  # this turn "took" 45 of the 60 seconds: 15 left, then the tool runs
        return Reply("Saving.", [{"command": "create", "path": "/memories/late.md", "file_text": "late"}])

    def advance_past_margin(messages: list[dict[str, Any]]) -> Turn:
        raise AssertionError("no request may start with less than the margin left")

    api.play([{"command": "view", "path": "/memories"}], slow_turn, advance_past_margin)
    monkeypatch.setenv("S3MEMORY_DEADLINE_MARGIN_SECONDS", "16")
    answer = run({"user_id": "alice", "prompt": "x"}, FakeContext(remaining_ms=60_000))
    assert answer["stopped_early"] == "deadline"
    assert answer["iterations"] == 2 and answer["stop_reason"] == "tool_use"
    assert answer["content"][-1]["input"]["path"] == "/memories/late.md"
    assert stored_keys(env) == new_store_keys("alice", ["/memories/late.md"])  # the tool calls ran
    assert len(api.requests) == 2 and api.remaining == 1 and api.errors == []


def test_request_timeout_is_bounded_by_the_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    from anthropic import APIRequest
    from anthropic._models import FinalRequestOptions

    seen: list[object] = []

    def call_next(request: APIRequest) -> Any:
        seen.append(request.timeout)
        return SimpleNamespace(http_response=SimpleNamespace(status_code=200, headers={}))

    guard = agent_deadline.DeadlineGuard()
    request = APIRequest(
        options=FinalRequestOptions.construct(method="post", url="/v1/messages", json_data={}, timeout=600.0),
        cast_to=object,
    )
    token = agent_deadline.current_deadline.set(agent_deadline.Deadline(time.monotonic() + 30, 10))
    try:
        guard.handle(request, call_next)
        short = APIRequest(
            options=FinalRequestOptions.construct(
                method="post", url="/v1/messages", json_data={}, timeout=5.0
            ),
            cast_to=object,
        )
        guard.handle(short, call_next)
    finally:
        agent_deadline.current_deadline.reset(token)
    assert isinstance(seen[0], float) and 27.5 < seen[0] <= 29.0  # 30 s left, less the 1 s reserve
    assert seen[1] == 5.0  # a shorter timeout is kept
    guard.handle(request, call_next)  # no deadline (not in Lambda): untouched
    assert seen[2] == 600.0


def test_retryable_error_without_time_to_retry_is_a_clear_error(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    clock = FakeClock()
    monkeypatch.setattr(agent_deadline, "time", clock)

    def overloaded(messages: list[dict[str, Any]]) -> Turn:
        clock.advance(49.8)  # about 10.2 s of 60 left: the SDK's 0.5 s backoff would end inside the margin
        raise ScriptError("Overloaded", status=529, error_type="overloaded_error")

    api.play(overloaded, "never reached")
    answer = run({"user_id": "alice", "prompt": "x"}, FakeContext(remaining_ms=60_000))
    assert set(answer) == {"error"}
    assert "529" in answer["error"] and "overloaded_error" in answer["error"]
    assert "deadline" in answer["error"]
    assert len(api.requests) == 1  # not retried


def test_retryable_error_with_time_left_is_retried(env: Any, api: ScriptedClaude) -> None:
    def overloaded(messages: list[dict[str, Any]]) -> Turn:
        raise ScriptError("Overloaded", status=529, error_type="overloaded_error")

    api.play(overloaded, "second try")
    answer = run({"user_id": "alice", "prompt": "x"}, FakeContext(remaining_ms=60_000))
    assert answer["text"] == "second try" and len(api.requests) == 2


# -- API failures -------------------------------------------------------------------------------


def test_api_client_error_is_a_clear_answer(env: Any, api: ScriptedClaude) -> None:
    def refused(messages: list[dict[str, Any]]) -> Turn:
        raise ScriptError("max_tokens: too large for this model")

    api.play(refused)
    answer = run({"user_id": "alice", "prompt": "x"})
    assert set(answer) == {"error"}
    assert answer["error"].startswith("Error: The Messages API answered 400 (invalid_request_error)")
    assert "max_tokens: too large" in answer["error"]


def test_api_server_error_after_retries_is_a_clear_answer(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(credentials, "API_MAX_RETRIES", 0)

    def broken(messages: list[dict[str, Any]]) -> Turn:
        raise ScriptError("boom", status=500, error_type="api_error")

    api.play(broken)
    answer = run({"user_id": "alice", "prompt": "x"}, object())  # no deadline
    assert answer == {"error": answer["error"]}
    assert "500 (api_error)" in answer["error"]


def test_unreachable_api_is_a_clear_answer(env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    import socket

    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv("ANTHROPIC_BASE_URL", f"http://127.0.0.1:{port}")
    monkeypatch.setattr(credentials, "API_MAX_RETRIES", 0)
    answer = run({"user_id": "alice", "prompt": "x"})
    assert set(answer) == {"error"}
    assert answer["error"].startswith("Error: The Messages API could not be reached")


# -- the API key ---------------------------------------------------------------------------------


@pytest.fixture
def secrets(aws: None) -> Any:
    return boto3.client("secretsmanager", region_name="us-east-1")


@pytest.mark.parametrize("form", ["plain", "json"])
def test_api_key_from_secrets_manager_is_read_once(
    env: Any, api: ScriptedClaude, secrets: Any, monkeypatch: pytest.MonkeyPatch, form: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    value = "sk-from-secret-1" if form == "plain" else json.dumps({"ANTHROPIC_API_KEY": "sk-from-secret-1"})
    arn = secrets.create_secret(Name=f"anthropic-key-{form}", SecretString=value)["ARN"]
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY_SECRET_ARN", arn)
        api.play("one", "two")
        assert run({"user_id": "alice", "prompt": "x"})["text"] == "one"
        secrets.put_secret_value(SecretId=arn, SecretString="sk-rotated")
        assert run({"user_id": "alice", "prompt": "x"})["text"] == "two"
        assert api.api_keys == ["sk-from-secret-1", "sk-from-secret-1"]  # read once per container
    finally:
        secrets.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)


def test_unreadable_secret_is_a_clear_error_and_is_retried(
    env: Any,
    api: ScriptedClaude,
    secrets: Any,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    monkeypatch.setenv("ANTHROPIC_API_KEY_SECRET_ARN", "anthropic-key-missing")
    answer = run({"user_id": "alice", "prompt": "x"})
    assert answer == {"error": MISCONFIGURED}
    (diagnosis,) = diagnoses(caplog, "req-agent-1")
    assert "ANTHROPIC_API_KEY_SECRET_ARN" in diagnosis and "ResourceNotFound" in diagnosis
    secrets.create_secret(Name="anthropic-key-missing", SecretString="sk-late")
    try:
        api.play("now it works")
        assert run({"user_id": "alice", "prompt": "x"})["text"] == "now it works"
        assert api.api_keys == ["sk-late"]
    finally:
        secrets.delete_secret(SecretId="anthropic-key-missing", ForceDeleteWithoutRecovery=True)


@pytest.mark.parametrize(
    "secret",
    [json.dumps({"api_key": "sk-hidden-value"}), json.dumps({"ANTHROPIC_API_KEY": ""}), "   "],
    ids=["json without the key", "json with an empty key", "blank"],
)
def test_unusable_secret_is_refused_without_showing_it(
    env: Any, secrets: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture, secret: str
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    arn = secrets.create_secret(Name="anthropic-key-bad", SecretString=secret)["ARN"]
    try:
        monkeypatch.setenv("ANTHROPIC_API_KEY_SECRET_ARN", arn)
        answer = run({"user_id": "alice", "prompt": "x"})
    finally:
        secrets.delete_secret(SecretId=arn, ForceDeleteWithoutRecovery=True)
    assert answer == {"error": MISCONFIGURED}
    (diagnosis,) = diagnoses(caplog, "req-agent-1")
    assert "ANTHROPIC_API_KEY_SECRET_ARN" in diagnosis and "sk-hidden-value" not in caplog.text


# -- malformed events and settings ---------------------------------------------------------------

MALFORMED: list[tuple[str, object]] = [
    ("none", None),
    ("list", [{"user_id": "alice", "prompt": "x"}]),
    ("string", "hello"),
    ("empty", {}),
    ("no user", {"prompt": "x"}),
    ("int user", {"user_id": 7, "prompt": "x"}),
    ("empty user", {"user_id": "", "prompt": "x"}),
    ("dotdot user", {"user_id": "..", "prompt": "x"}),
    ("slash user", {"user_id": "a/b", "prompt": "x"}),
    ("control user", {"user_id": "a\nb", "prompt": "x"}),
    ("long user", {"user_id": "u" * 300, "prompt": "x"}),
    ("neither", {"user_id": "alice"}),
    ("both", {"user_id": "alice", "prompt": "x", "messages": [{"role": "user", "content": "x"}]}),
    ("empty prompt", {"user_id": "alice", "prompt": "  "}),
    ("prompt not string", {"user_id": "alice", "prompt": ["x"]}),
    ("messages not list", {"user_id": "alice", "messages": "x"}),
    ("empty messages", {"user_id": "alice", "messages": []}),
    ("message not object", {"user_id": "alice", "messages": ["x"]}),
    ("bad role", {"user_id": "alice", "messages": [{"role": "system", "content": "x"}]}),
    ("no content", {"user_id": "alice", "messages": [{"role": "user"}]}),
    ("content number", {"user_id": "alice", "messages": [{"role": "user", "content": 5}]}),
    ("ends with assistant", {"user_id": "alice", "messages": [{"role": "assistant", "content": "x"}]}),
    ("model not string", {"user_id": "alice", "prompt": "x", "model": 4}),
    ("max_tokens string", {"user_id": "alice", "prompt": "x", "max_tokens": "100"}),
    ("max_tokens zero", {"user_id": "alice", "prompt": "x", "max_tokens": 0}),
    ("max_tokens bool", {"user_id": "alice", "prompt": "x", "max_tokens": True}),
    ("max_iterations zero", {"user_id": "alice", "prompt": "x", "max_iterations": 0}),
    ("max_iterations huge", {"user_id": "alice", "prompt": "x", "max_iterations": 10_000}),
    ("max_iterations float", {"user_id": "alice", "prompt": "x", "max_iterations": 2.5}),
    ("unknown key", {"user_id": "alice", "prompt": "x", "tools": []}),
    ("system not text", {"user_id": "alice", "prompt": "x", "system": 5}),
    ("betas not list", {"user_id": "alice", "prompt": "x", "betas": "a-beta"}),
    ("temperature string", {"user_id": "alice", "prompt": "x", "temperature": "hot"}),
    ("temperature nan", {"user_id": "alice", "prompt": "x", "temperature": float("nan")}),
    ("context_management list", {"user_id": "alice", "prompt": "x", "context_management": []}),
    ("thread true", {"user_id": "alice", "prompt": "x", "thread": True}),
]


@pytest.mark.parametrize("event", [e for _, e in MALFORMED], ids=[n for n, _ in MALFORMED])
def test_malformed_events_answer_a_clear_error(env: Any, api: ScriptedClaude, event: object) -> None:
    answer = run(event)
    assert set(answer) == {"error"}
    assert answer["error"].startswith("Error: ") and len(answer["error"]) < 600
    assert api.requests == []
    assert stored_keys(env) == []


def test_malformed_events_never_raise_even_without_settings() -> None:
    for _, event in MALFORMED:
        assert set(lambda_agent.agent_handler(event, None)) == {"error"}


def test_error_messages_name_the_problem(env: Any) -> None:
    assert run({"user_id": 7, "prompt": "x"}) == {
        "error": "Error: `user_id` must be a non-empty string, got int."
    }
    assert "user id" in run({"user_id": "..", "prompt": "x"})["error"]
    assert "exactly one of `prompt`" in run({"user_id": "alice"})["error"]
    assert "unknown keys: tools" in run({"user_id": "alice", "prompt": "x", "tools": []})["error"]
    assert (
        "`temperature` must be a number"
        in run({"user_id": "alice", "prompt": "x", "temperature": "hot"})["error"]
    )
    assert (
        "`messages[0].role`"
        in run({"user_id": "alice", "messages": [{"role": "x", "content": "y"}]})["error"]
    )


@pytest.mark.parametrize(
    ("variable", "value", "named"),
    [
        ("S3MEMORY_MAX_ITERATIONS", "0", "S3MEMORY_MAX_ITERATIONS"),
        ("S3MEMORY_MAX_ITERATIONS", "ten", "S3MEMORY_MAX_ITERATIONS"),
        ("S3MEMORY_MAX_TOKENS", "-5", "S3MEMORY_MAX_TOKENS"),
        ("S3MEMORY_MAX_TOKENS", "9" * 5000, "S3MEMORY_MAX_TOKENS"),
        ("S3MEMORY_DEADLINE_MARGIN_SECONDS", "soon", "S3MEMORY_DEADLINE_MARGIN_SECONDS"),
        ("S3MEMORY_AGENT_PARAMS", "{not json", "S3MEMORY_AGENT_PARAMS"),
        ("S3MEMORY_AGENT_PARAMS", "[1]", "S3MEMORY_AGENT_PARAMS"),
        ("S3MEMORY_AGENT_PARAMS", '{"tools": []}', "S3MEMORY_AGENT_PARAMS"),
        ("S3MEMORY_AGENT_PARAMS", '{"temperature": "hot"}', "temperature"),
        ("S3MEMORY_BUCKET", "", "S3MEMORY_BUCKET"),
    ],
)
def test_bad_settings_are_named_in_the_log_not_to_the_caller(
    env: Any,
    api: ScriptedClaude,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    variable: str,
    value: str,
    named: str,
) -> None:
    monkeypatch.setenv(variable, value)
    answer = run({"user_id": "alice", "prompt": "x"})
    assert answer == {"error": MISCONFIGURED}
    (diagnosis,) = diagnoses(caplog, "req-agent-1")
    assert diagnosis.startswith("s3memory: request req-agent-1 failed (") and named in diagnosis
    assert api.requests == []


def test_missing_api_key_names_both_variables_in_the_log(
    env: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.delenv("ANTHROPIC_API_KEY")
    assert run({"user_id": "alice", "prompt": "x"}) == {"error": MISCONFIGURED}
    (diagnosis,) = diagnoses(caplog, "req-agent-1")
    assert "ANTHROPIC_API_KEY_SECRET_ARN" in diagnosis and "ANTHROPIC_API_KEY" in diagnosis


# -- shared runtime, logs, metrics --------------------------------------------------------------


def test_agent_and_memory_handler_share_the_runtime_and_the_kms_key_cache(
    monkeypatch: pytest.MonkeyPatch, s3: Any, api: ScriptedClaude, caplog: pytest.LogCaptureFixture
) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(Description="s3memory agent test")["KeyMetadata"]["KeyId"]
    monkeypatch.setenv("S3MEMORY_BUCKET", BUCKET)
    monkeypatch.setenv("S3MEMORY_KMS_KEY_ID", key_id)
    monkeypatch.setenv("S3MEMORY_STORAGE_FORMAT", str(STORAGE_FORMAT))
    monkeypatch.setenv("ANTHROPIC_BASE_URL", api.base_url)
    monkeypatch.setenv("ANTHROPIC_API_KEY", API_KEY)
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    created = memory_handler(
        {"user_id": "alice", "input": {"command": "create", "path": PREFS_PATH, "file_text": PREFS_TEXT}},
        None,
    )
    assert created["is_error"] is False
    runtime = lambda_runtime.get_runtime()

    caplog.set_level(logging.INFO, logger="s3memory")
    api.play([{"command": "view", "path": PREFS_PATH}], lambda messages: last_tool_results(messages)[0].text)
    answer = run({"user_id": "alice", "prompt": "what do I prefer?"})
    assert "metric units" in answer["text"]
    assert lambda_runtime.get_runtime() is runtime  # one runtime, one key provider for both handlers
    line = invocation_records(caplog, "agent")[-1]
    assert line["kms_requests"] == 0  # warm: the shared provider's cache answered
    assert line["s3_requests"] == 1


def test_log_line_is_json_without_content_or_keys(
    env: Any, api: ScriptedClaude, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="s3memory")
    api.play(
        [{"command": "create", "path": "/memories/private-name.md", "file_text": SECRET_NOTE}],
        "Stored " + SECRET_NOTE,
    )
    run({"user_id": "alice", "prompt": "remember " + SECRET_NOTE})
    run({"user_id": "a/b", "prompt": "x"})
    ok, refused = invocation_records(caplog, "agent")
    assert ok["request_id"] == "req-agent-1" and ok["command"] == "agent"
    assert (ok["iterations"], ok["tool_calls"], ok["outcome"], ok["stopped_early"]) == (2, 1, "ok", None)
    assert ok["input_tokens"] > 0 and ok["output_tokens"] > 0 and ok["s3_requests"] >= 1
    assert ok["job_records_set_aside"] == 0 and "job_records_set_aside" not in refused

    assert isinstance(ok["latency_ms"], float) and ok["model"] == "claude-sonnet-4-5"
    assert refused["outcome"] == "error" and refused["error_type"] == "request"
    text = caplog.text + json.dumps([ok, refused])
    for private in (SECRET_NOTE, "private-name", API_KEY, "alice"):
        assert private not in text


def test_the_record_names_a_model_only_when_it_looks_like_a_model_id(
    env: Any, api: ScriptedClaude, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.INFO, logger="s3memory")
    api.play([], "ok")
    api.play([], "ok")
    run({"user_id": "alice", "prompt": "x", "model": "claude-opus-4-1"})
    run({"user_id": "alice", "prompt": "x", "model": "bob@example.com: " + SECRET_NOTE})
    assert [record["model"] for record in invocation_records(caplog, "agent")] == ["claude-opus-4-1", "other"]
    assert SECRET_NOTE not in caplog.text


def emf_records(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    """The invocation records that carry metrics, and forget them."""
    records = [record for record in invocation_records(caplog) if "_aws" in record]
    caplog.clear()
    return records


def check_emf(document: dict[str, Any], command: str, outcome: str, metric_names: set[str]) -> None:
    directive = document["_aws"]
    assert isinstance(directive["Timestamp"], int) and directive["Timestamp"] > 1_600_000_000_000
    (block,) = directive["CloudWatchMetrics"]
    assert block["Namespace"] == "s3memory"
    assert block["Dimensions"] == [["command", "outcome"]]
    units = {metric["Name"]: metric["Unit"] for metric in block["Metrics"]}
    assert set(units) == metric_names
    assert units["Latency"] == "Milliseconds" and units["S3Requests"] == "Count"
    for name in metric_names:
        assert isinstance(document[name], int | float)  # every metric has its value at the top level
    assert (document["command"], document["outcome"]) == (command, outcome)


def test_the_agents_record_carries_its_metrics(
    env: Any, api: ScriptedClaude, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("S3MEMORY_METRICS", "emf")
    caplog.set_level(logging.INFO, logger="s3memory")
    api.play([{"command": "view", "path": "/memories"}], "done")
    run({"user_id": "alice", "prompt": "x"})
    (document,) = emf_records(caplog)
    check_emf(
        document,
        "agent",
        "ok",
        {"Latency", "S3Requests", "KMSRequests", "Iterations", "InputTokens", "OutputTokens"},
    )
    assert document["Iterations"] == 2 and document["S3Requests"] >= 1 and document["KMSRequests"] == 0
    assert document["request_id"] == "req-agent-1" and "user_id" not in document
    run({"user_id": "alice"})
    (refused,) = emf_records(caplog)
    assert (refused["outcome"], refused["S3Requests"]) == ("error", 0)


@pytest.fixture
def memory_env(monkeypatch: pytest.MonkeyPatch, local_env: Any, caplog: pytest.LogCaptureFixture) -> Any:
    monkeypatch.setenv("S3MEMORY_METRICS", "emf")
    caplog.set_level(logging.INFO, logger="s3memory")
    return local_env


def independent() -> RequestCounter:
    """Counts the runtime client's requests with a hook of its own, to check the EMF counts."""
    return RequestCounter(lambda_runtime.get_runtime().s3_client)


def test_the_memory_handlers_record_counts_its_exact_s3_requests(
    memory_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    counter = independent()
    records = AccessRecordWrites(lambda_runtime.get_runtime().s3_client)
    commands = [
        {"command": "create", "path": "/memories/d/a.md", "file_text": "a"},
        {"command": "create", "path": "/memories/d/b.md", "file_text": "b"},
        {"command": "create", "path": "/memories/d/c.md", "file_text": "c"},
        {"command": "view", "path": "/memories/d/a.md"},
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"},  # parallel copies
        {"command": "view", "path": "/memories/missing.md"},
    ]
    caplog.clear()
    for index, command in enumerate(commands):
        memory_handler({"user_id": "alice", "input": command}, SimpleNamespace(aws_request_id="r1"))
        (document,) = emf_records(caplog)
        check_emf(
            document, str(command["command"]), document["outcome"], {"Latency", "S3Requests", "KMSRequests"}
        )
        # the first answer's access record is written before it, and counted to its invocation
        assert (document["S3Requests"], records.count) == (counter.total, 1 if index == 0 else 0)
        assert counter.total > 0
        counter.reset()
        records.reset()
        assert document["KMSRequests"] == 0 and document["request_id"] == "r1"
    memory_handler({"user_id": "a/b", "input": {"command": "view", "path": "/memories"}}, None)
    (refused,) = emf_records(caplog)
    check_emf(refused, "unknown", "error", {"Latency", "S3Requests", "KMSRequests"})
    assert refused["S3Requests"] == 0


def test_concurrent_invocations_count_their_own_requests(
    memory_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    for index in range(8):
        memory_handler(
            {
                "user_id": f"u{index}",
                "input": {"command": "create", "path": "/memories/f.md", "file_text": "x"},
            },
            None,
        )
    counter = independent()
    caplog.clear()
    caplog.set_level(logging.INFO, logger="s3memory")
    barrier = threading.Barrier(8)
    quiet = {**os.environ, "S3MEMORY_METRICS": "off"}

    def view(index: int) -> None:
        barrier.wait()
        request = {"user_id": f"u{index}", "input": {"command": "view", "path": "/memories/f.md"}}
        memory_function.handle(request, None, quiet)

    threads = [threading.Thread(target=view, args=(index,)) for index in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    lines = invocation_records(caplog, "memory")
    # each invocation counted its own GetObject and none of the others', while all ran at once
    assert [(line["command"], line["outcome"], line["s3_requests"]) for line in lines] == [
        ("view", "ok", 1)
    ] * 8
    assert counter.total == 8


def test_the_cores_workers_count_to_the_invocation_that_started_them(memory_env: Any) -> None:
    """Requests the core overlaps on its worker pool run in the invocation's context and are counted
    to it; a thread that carries no invocation's context is counted to none."""
    counter = independent()
    client = lambda_runtime.get_runtime().s3_client
    with metrics.tally() as tally:
        side(lambda: client.list_objects_v2(Bucket=BUCKET)).result()
        parallel(lambda _item: client.list_objects_v2(Bucket=BUCKET), [1, 2])
        client.list_objects_v2(Bucket=BUCKET)
        stranger = threading.Thread(target=lambda: client.list_objects_v2(Bucket=BUCKET))
        stranger.start()
        stranger.join(timeout=30)
    assert tally.count("s3") == 4
    assert counter.total == 5


def test_metrics_can_be_turned_off(
    memory_env: Any, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    caplog.clear()
    memory_handler({"user_id": "alice", "input": {"command": "view", "path": "/memories"}}, None)
    (record,) = invocation_records(caplog)
    # the view's listing; on format 2 the first memory of a new store also makes its key (GetObject
    # finds none, HeadObject of the mark: none was lost, PutObject) and marks the store born in format 2
    # (ListObjectsV2 of the namespaces, PutObject; the mark was just found missing), its key's write
    # being the store's first use (FIRST_USE: the server checked); then the access record's
    # PutObject, before the answer
    assert "_aws" not in record and "S3Requests" not in record
    first_use = sum(FIRST_USE.values())
    assert record["s3_requests"] == (1 if STORAGE_FORMAT == 1 else 1 + 5 + first_use) + 1


# -- imports ----------------------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
def test_agent_and_mcp_handlers_are_lazy_and_the_memory_handler_imports_neither() -> None:
    script = textwrap.dedent(
        """
        import json, sys
        import s3memory.aws_lambda.memory_function
        import s3memory.aws_lambda as package
        def loaded():
            named = ("anthropic", "s3memory.aws_lambda.agent", "mcp", "s3memory.aws_lambda.mcp_function")
            return sorted(name for name in named if name in sys.modules)
        before = loaded()
        handler = package.memory_handler
        answer = handler({"user_id": "a/b", "input": {}}, None)
        after_memory = loaded()
        agent = package.agent_handler
        after_agent = loaded()
        mcp = package.mcp_handler
        print(json.dumps({
            "before": before, "after_memory": after_memory, "after_agent": after_agent, "after_mcp": loaded(),
            "mcp": mcp.__module__,
            "agent": agent.__module__, "all": sorted(package.__all__),
            "error": answer["is_error"],
        }))
        """
    )
    outcome = run_python_json(script, S3MEMORY_METRICS="off")
    assert outcome == {
        "before": [],
        "after_memory": [],
        "after_agent": ["anthropic", "s3memory.aws_lambda.agent"],
        "after_mcp": ["anthropic", "mcp", "s3memory.aws_lambda.agent", "s3memory.aws_lambda.mcp_function"],
        "agent": "s3memory.aws_lambda.agent.handler",
        "mcp": "s3memory.aws_lambda.mcp_function",
        "all": ["agent_handler", "mcp_handler", "memory_handler"],
        "error": True,
    }
