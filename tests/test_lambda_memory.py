"""The memory Lambda: direct and API Gateway (HTTP API v2) events, settings, reuse, logs, no anthropic."""

from __future__ import annotations

import base64
import json
import logging
import textwrap
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from s3memory.aws_lambda import memory as lambda_memory
from s3memory.aws_lambda import memory_handler
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.settings import Settings, SettingsError

from .support.bucket import BUCKET, LOCAL_KEY_B64, snapshot, stored_keys
from .support.processes import run_python_json

SETTINGS_VARIABLES = (
    "S3MEMORY_BUCKET",
    "S3MEMORY_PREFIX",
    "S3MEMORY_KMS_KEY_ID",
    "S3MEMORY_LOCAL_KEY",
    "S3MEMORY_ENDPOINT_URL",
)
CONTEXT = SimpleNamespace(aws_request_id="req-123")
SECRET = "the secret plan: meet at dawn"


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    lambda_memory._reset_for_tests()
    yield
    lambda_memory._reset_for_tests()


def direct(user_id: object, tool_input: object) -> dict[str, Any]:
    return memory_handler({"user_id": user_id, "input": tool_input}, CONTEXT)


def http_event(
    body: object = None, *, sub: object = "alice", raw_body: str | None = None, base64_body: bool = False
) -> dict[str, Any]:
    text = raw_body if raw_body is not None else json.dumps(body)
    if base64_body:
        text = base64.b64encode(text.encode("utf-8")).decode("ascii")
    claims = {} if sub is None else {"sub": sub}
    return {
        "version": "2.0",
        "routeKey": "POST /memory",
        "rawPath": "/memory",
        "headers": {"content-type": "application/json"},
        "requestContext": {
            "requestId": "api-req",
            "authorizer": {"jwt": {"claims": claims, "scopes": None}},
            "http": {"method": "POST", "path": "/memory"},
        },
        "body": text,
        "isBase64Encoded": base64_body,
    }


def http_answer(response: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    assert response["headers"] == {"content-type": "application/json"}
    return response["statusCode"], json.loads(response["body"])


# -- direct invocation ------------------------------------------------------------------------


def test_direct_create_then_view_round_trip(local_env: Any) -> None:
    created = direct("alice", {"command": "create", "path": "/memories/a.txt", "file_text": "hello\nworld\n"})
    assert created == {"content": "File created successfully at: /memories/a.txt", "is_error": False}
    viewed = direct("alice", {"command": "view", "path": "/memories/a.txt"})
    assert viewed["is_error"] is False
    assert "hello" in viewed["content"] and "world" in viewed["content"]
    assert stored_keys(local_env) == ["users/alice/memories/a.txt"]
    stored = local_env.get_object(Bucket=BUCKET, Key="users/alice/memories/a.txt")["Body"].read()
    assert b"hello" not in stored  # encrypted on the client


def test_direct_tool_error_is_the_contract_string(local_env: Any) -> None:
    command = {"command": "create", "path": "/memories/a.txt", "file_text": "x"}
    assert direct("alice", command)["is_error"] is False
    assert direct("alice", command) == {
        "content": "Error: File /memories/a.txt already exists",
        "is_error": True,
    }


def test_direct_users_are_isolated(local_env: Any) -> None:
    direct("alice", {"command": "create", "path": "/memories/a.txt", "file_text": SECRET})
    answer = direct("bob", {"command": "view", "path": "/memories/a.txt"})
    assert answer["is_error"] is True
    assert SECRET not in answer["content"]


MALFORMED_EVENTS: list[tuple[str, object]] = [
    ("none", None),
    ("list", []),
    ("string", "x"),
    ("empty", {}),
    ("no user", {"input": {"command": "view", "path": "/memories"}}),
    ("int user", {"user_id": 5, "input": {"command": "view", "path": "/memories"}}),
    ("none user", {"user_id": None, "input": {"command": "view", "path": "/memories"}}),
    ("empty user", {"user_id": "", "input": {"command": "view", "path": "/memories"}}),
    (
        "dotdot user",
        {"user_id": "..", "input": {"command": "create", "path": "/memories/x", "file_text": "x"}},
    ),
    ("dot user", {"user_id": ".", "input": {"command": "create", "path": "/memories/x", "file_text": "x"}}),
    (
        "slash user",
        {"user_id": "a/b", "input": {"command": "create", "path": "/memories/x", "file_text": "x"}},
    ),
    ("backslash user", {"user_id": "a\\b", "input": {"command": "create", "path": "/memories/x"}}),
    ("control user", {"user_id": "a\nb", "input": {"command": "create", "path": "/memories/x"}}),
    ("long user", {"user_id": "u" * 300, "input": {"command": "create", "path": "/memories/x"}}),
    ("no input", {"user_id": "alice"}),
    ("string input", {"user_id": "alice", "input": "view /memories"}),
    ("list input", {"user_id": "alice", "input": [{"command": "view"}]}),
    ("none input", {"user_id": "alice", "input": None}),
    ("unknown command", {"user_id": "alice", "input": {"command": "format_disk"}}),
    (
        "escaping path",
        {"user_id": "alice", "input": {"command": "create", "path": "/memories/../x", "file_text": "x"}},
    ),
]


@pytest.mark.parametrize(
    "event", [event for _, event in MALFORMED_EVENTS], ids=[n for n, _ in MALFORMED_EVENTS]
)
def test_malformed_direct_events_answer_errors_and_write_nothing(local_env: Any, event: object) -> None:
    answer = memory_handler(event, CONTEXT)
    assert set(answer) == {"content", "is_error"}
    assert answer["is_error"] is True
    assert answer["content"].startswith("Error: ")
    assert stored_keys(local_env) == []


def test_hostile_user_id_message_is_clear(local_env: Any) -> None:
    answer = direct("..", {"command": "view", "path": "/memories"})
    assert answer["is_error"] is True
    assert "user id" in answer["content"]
    answer = direct(5, {"command": "view", "path": "/memories"})
    assert answer == {"content": "Error: `user_id` must be a non-empty string, got int.", "is_error": True}


def test_malformed_events_never_raise_even_without_settings() -> None:
    for _, event in MALFORMED_EVENTS:
        answer = memory_handler(event, None)
        assert answer["is_error"] is True


def test_context_without_request_id_is_fine(local_env: Any) -> None:
    assert (
        memory_handler({"user_id": "alice", "input": {"command": "view", "path": "/memories"}}, object())[
            "is_error"
        ]
        is False
    )


# -- API Gateway HTTP API (payload 2.0) -------------------------------------------------------


def test_http_happy_path(local_env: Any) -> None:
    create = {"input": {"command": "create", "path": "/memories/n.txt", "file_text": "note"}}
    status, body = http_answer(memory_handler(http_event(create), CONTEXT))
    assert (status, body) == (
        200,
        {"content": "File created successfully at: /memories/n.txt", "is_error": False},
    )
    status, body = http_answer(
        memory_handler(http_event({"input": {"command": "view", "path": "/memories/n.txt"}}), CONTEXT)
    )
    assert status == 200 and body["is_error"] is False and "note" in body["content"]
    assert stored_keys(local_env) == ["users/alice/memories/n.txt"]


def test_http_base64_body(local_env: Any) -> None:
    event = http_event({"input": {"command": "view", "path": "/memories"}}, base64_body=True)
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 200 and body["is_error"] is False


def test_http_tool_error_is_200_with_is_error(local_env: Any) -> None:
    event = http_event({"input": {"command": "view", "path": "/memories/missing.txt"}})
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert (status, body) == (
        200,
        {
            "content": "The path /memories/missing.txt does not exist. Please provide a valid path.",
            "is_error": True,
        },
    )


@pytest.mark.parametrize("sub", [None, "", 7])
def test_http_without_subject_is_401(local_env: Any, sub: object) -> None:
    event = http_event({"input": {"command": "create", "path": "/memories/x", "file_text": "x"}}, sub=sub)
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 401 and body["is_error"] is True
    assert stored_keys(local_env) == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda e: e.pop("requestContext") and e.update(requestContext=None),
        lambda e: e["requestContext"].pop("authorizer"),
        lambda e: e["requestContext"]["authorizer"].update(jwt="nope"),
    ],
    ids=["no context", "no authorizer", "jwt not an object"],
)
def test_http_missing_authorizer_is_401(local_env: Any, mutate: Any) -> None:
    event = http_event({"input": {"command": "view", "path": "/memories"}})
    mutate(event)
    status, _ = http_answer(memory_handler(event, CONTEXT))
    assert status == 401


def test_http_hostile_subject_is_refused(local_env: Any) -> None:
    event = http_event(
        {"input": {"command": "create", "path": "/memories/x", "file_text": "x"}}, sub="../bob"
    )
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 403 and body["is_error"] is True
    assert stored_keys(local_env) == []


@pytest.mark.parametrize(
    "event",
    [
        http_event(raw_body="{not json"),
        http_event(raw_body=""),
        http_event([{"input": {"command": "view", "path": "/memories"}}]),
        http_event("just a string"),
        http_event({"command": "view", "path": "/memories"}),
        http_event({"input": "view /memories"}),
        http_event(raw_body="{not json", base64_body=True),
        {
            **http_event({"input": {"command": "view", "path": "/memories"}}),
            "body": "%%%",
            "isBase64Encoded": True,
        },
        {**http_event({"input": {"command": "view", "path": "/memories"}}), "body": None},
        {**http_event({"input": {"command": "view", "path": "/memories"}}), "version": "1.0"},
    ],
    ids=[
        "bad json",
        "empty body",
        "array body",
        "string body",
        "missing input",
        "input not object",
        "bad json base64",
        "bad base64",
        "no body",
        "payload 1.0",
    ],
)
def test_http_malformed_requests_are_400(local_env: Any, event: dict[str, Any]) -> None:
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 400
    assert body["is_error"] is True and body["content"].startswith("Error: ")
    assert stored_keys(local_env) == []


def test_http_body_user_id_is_ignored_for_the_jwt_subject(local_env: Any) -> None:
    direct("bob", {"command": "create", "path": "/memories/secret.txt", "file_text": SECRET})
    before = snapshot(local_env)
    attack = {"user_id": "bob", "input": {"command": "view", "path": "/memories/secret.txt"}}
    status, body = http_answer(memory_handler(http_event(attack, sub="mallory"), CONTEXT))
    assert status == 200 and body["is_error"] is True
    assert SECRET not in body["content"]
    write = {"user_id": "bob", "input": {"command": "create", "path": "/memories/m.txt", "file_text": "x"}}
    status, body = http_answer(memory_handler(http_event(write, sub="mallory"), CONTEXT))
    assert status == 200 and body["is_error"] is False
    assert set(snapshot(local_env)) - set(before) == {"users/mallory/memories/m.txt"}


# -- configuration ------------------------------------------------------------------------------


def _settings_error(environ: Mapping[str, str]) -> str:
    with pytest.raises(SettingsError) as raised:
        Settings.from_env(environ)
    return str(raised.value)


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}, "S3MEMORY_BUCKET"),
        ({"S3MEMORY_BUCKET": "", "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}, "S3MEMORY_BUCKET"),
        ({"S3MEMORY_BUCKET": "a/b", "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}, "S3MEMORY_BUCKET"),
        ({"S3MEMORY_BUCKET": BUCKET}, "S3MEMORY_KMS_KEY_ID"),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_KMS_KEY_ID": "k"},
            "S3MEMORY_KMS_KEY_ID",
        ),
        ({"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": "not base64!!"}, "S3MEMORY_LOCAL_KEY"),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": base64.b64encode(bytes(31)).decode()},
            "S3MEMORY_LOCAL_KEY",
        ),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": base64.b64encode(bytes(33)).decode()},
            "S3MEMORY_LOCAL_KEY",
        ),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_PREFIX": "../"},
            "S3MEMORY_PREFIX",
        ),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_PREFIX": "users"},
            "S3MEMORY_PREFIX",
        ),
        (
            {
                "S3MEMORY_BUCKET": BUCKET,
                "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
                "S3MEMORY_ENDPOINT_URL": "ftp://x",
            },
            "S3MEMORY_ENDPOINT_URL",
        ),
    ],
    ids=[
        "no bucket",
        "empty bucket",
        "bucket with slash",
        "no key",
        "both keys",
        "bad base64",
        "31-byte key",
        "33-byte key",
        "escaping prefix",
        "prefix without slash",
        "bad endpoint",
    ],
)
def test_settings_errors_name_the_variable(environ: dict[str, str], variable: str) -> None:
    message = _settings_error(environ)
    assert variable in message
    local_key = environ.get("S3MEMORY_LOCAL_KEY")
    if local_key:
        assert local_key not in message


def test_both_keys_names_both_variables() -> None:
    message = _settings_error(
        {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_KMS_KEY_ID": "k"}
    )
    assert "S3MEMORY_KMS_KEY_ID" in message and "S3MEMORY_LOCAL_KEY" in message
    assert LOCAL_KEY_B64 not in message


def test_settings_defaults_and_providers() -> None:
    local = Settings.from_env({"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64})
    assert (local.bucket, local.prefix, local.endpoint_url, local.key_source) == (
        BUCKET,
        "users/",
        None,
        "local",
    )
    assert LOCAL_KEY_B64 not in repr(local) and "local_key" not in repr(local)
    assert isinstance(local.make_key_provider(), LocalKeyProvider)
    kms = Settings.from_env(
        {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_KMS_KEY_ID": "alias/m", "S3MEMORY_PREFIX": "tenants/prod/"}
    )
    provider = kms.make_key_provider()
    assert isinstance(provider, KMSKeyProvider) and provider.key_id == "alias/m"
    assert kms.prefix == "tenants/prod/" and kms.key_source == "kms"


def test_endpoint_url_reaches_the_s3_client() -> None:
    settings = Settings.from_env(
        {
            "S3MEMORY_BUCKET": BUCKET,
            "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
            "S3MEMORY_ENDPOINT_URL": "http://127.0.0.1:9",
        }
    )
    assert settings.make_s3_client().meta.endpoint_url == "http://127.0.0.1:9"


@pytest.mark.parametrize(
    ("environ", "variable"),
    [
        ({"S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}, "S3MEMORY_BUCKET"),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64, "S3MEMORY_KMS_KEY_ID": "k"},
            "S3MEMORY_LOCAL_KEY",
        ),
        ({"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": "@@@"}, "S3MEMORY_LOCAL_KEY"),
        (
            {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": base64.b64encode(bytes(31)).decode()},
            "S3MEMORY_LOCAL_KEY",
        ),
    ],
    ids=["no bucket", "both keys", "bad base64", "31-byte key"],
)
def test_handler_config_errors_name_the_variable(
    monkeypatch: pytest.MonkeyPatch, s3: Any, environ: dict[str, str], variable: str
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    answer = direct("alice", {"command": "create", "path": "/memories/a.txt", "file_text": "x"})
    assert answer["is_error"] is True and answer["content"].startswith("Error: ")
    assert variable in answer["content"]
    assert environ["S3MEMORY_LOCAL_KEY"] not in answer["content"]
    status, body = http_answer(
        memory_handler(http_event({"input": {"command": "view", "path": "/memories"}}), CONTEXT)
    )
    assert status == 500 and variable in body["content"]
    assert stored_keys(s3) == []


# -- warm containers ----------------------------------------------------------------------------


def test_warm_invocations_reuse_client_and_provider(local_env: Any) -> None:
    direct("alice", {"command": "view", "path": "/memories"})
    first = lambda_memory.get_runtime()
    direct("bob", {"command": "view", "path": "/memories"})
    second = lambda_memory.get_runtime()
    assert second is first
    assert second.s3_client is first.s3_client and second.key_provider is first.key_provider


def test_changed_settings_rebuild_the_runtime(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first = lambda_memory.get_runtime()
    monkeypatch.setenv("S3MEMORY_PREFIX", "tenants/")
    second = lambda_memory.get_runtime()
    assert second is not first and second.settings.prefix == "tenants/"
    lambda_memory._reset_for_tests()
    monkeypatch.setenv("S3MEMORY_PREFIX", "tenants/")
    assert lambda_memory.get_runtime() is not second


def test_kms_settings_share_one_provider_and_its_key_cache(monkeypatch: pytest.MonkeyPatch, s3: Any) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(Description="s3memory lambda test")["KeyMetadata"]["KeyId"]
    monkeypatch.setenv("S3MEMORY_BUCKET", BUCKET)
    monkeypatch.setenv("S3MEMORY_KMS_KEY_ID", key_id)

    created = direct("alice", {"command": "create", "path": "/memories/k.txt", "file_text": SECRET})
    assert created["is_error"] is False
    runtime = lambda_memory.get_runtime()
    provider = runtime.key_provider
    assert isinstance(provider, KMSKeyProvider) and provider.key_id == key_id

    kms_calls: list[str] = []
    provider.client.meta.events.register(
        "request-created", lambda operation_name, **_: kms_calls.append(operation_name)
    )
    viewed = direct("alice", {"command": "view", "path": "/memories/k.txt"})
    assert viewed["is_error"] is False and SECRET in viewed["content"]
    assert lambda_memory.get_runtime().key_provider is provider
    assert kms_calls == []  # warm: the shared provider's cache answered
    assert sorted(stored_keys(s3)) == ["users/alice/internal/keys/v1", "users/alice/memories/k.txt"]


# -- logs ---------------------------------------------------------------------------------------


def _invocation_lines(caplog: pytest.LogCaptureFixture) -> list[dict[str, Any]]:
    return [json.loads(r.getMessage()) for r in caplog.records if r.name == "s3memory"]


def test_log_line_is_json_without_content_or_paths(local_env: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="s3memory")
    direct("alice", {"command": "create", "path": "/memories/private-name.txt", "file_text": SECRET})
    direct("alice", {"command": "view", "path": "/memories/private-name.txt"})
    direct("alice", {"command": "create", "path": "/memories/private-name.txt", "file_text": SECRET})
    lines = _invocation_lines(caplog)
    assert len(lines) == 3
    for line in lines:
        assert {"request_id", "command", "user_id", "outcome", "latency_ms"} <= set(line)
        assert line["request_id"] == "req-123" and line["user_id"] == "alice"
        assert isinstance(line["latency_ms"], int | float)
    assert [line["command"] for line in lines] == ["create", "view", "create"]
    assert [line["outcome"] for line in lines] == ["ok", "ok", "error"]
    text = caplog.text
    assert SECRET not in text and "private-name" not in text and "/memories" not in text
    assert LOCAL_KEY_B64 not in text


def test_log_line_for_http_and_malformed(local_env: Any, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="s3memory")
    memory_handler(http_event({"input": {"command": "view", "path": "/memories"}}, sub="carol"), None)
    memory_handler({"user_id": "a/b", "input": {"command": "delete", "path": "/memories/x"}}, CONTEXT)
    memory_handler({"user_id": "alice", "input": {"command": "not-a-command " + SECRET}}, CONTEXT)
    http, hostile, unknown = _invocation_lines(caplog)
    assert http["source"] == "http" and http["status"] == 200 and http["user_id"] == "carol"
    assert http["request_id"] is None and http["outcome"] == "ok"
    assert hostile["outcome"] == "error" and hostile["user_id"] is None
    assert unknown["command"] is None and unknown["outcome"] == "error"
    assert SECRET not in caplog.text


# -- no anthropic --------------------------------------------------------------------------------


def test_serving_does_not_import_anthropic() -> None:
    script = textwrap.dedent(
        f"""
        import json, os, sys
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
            S3MEMORY_BUCKET={BUCKET!r}, S3MEMORY_LOCAL_KEY={LOCAL_KEY_B64!r},
        )
        import s3memory.aws_lambda
        assert "anthropic" not in sys.modules, "import pulled anthropic"
        from moto import mock_aws
        import boto3
        with mock_aws():
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket={BUCKET!r})
            handler = s3memory.aws_lambda.memory_handler
            created = handler({{"user_id": "alice", "input": {{"command": "create", "path": "/memories/a.txt", "file_text": "hi"}}}}, None)
            viewed = handler({{"user_id": "alice", "input": {{"command": "view", "path": "/memories/a.txt"}}}}, None)
        print(json.dumps({{"created": created, "viewed": viewed, "anthropic": "anthropic" in sys.modules}}))
        """
    )
    outcome = run_python_json(script)
    assert outcome["anthropic"] is False
    assert outcome["created"] == {
        "content": "File created successfully at: /memories/a.txt",
        "is_error": False,
    }
    assert outcome["viewed"]["is_error"] is False and "hi" in outcome["viewed"]["content"]
