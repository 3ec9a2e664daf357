"""The memory Lambda: direct and API Gateway (HTTP API v2) events, the caller's identity, settings,
warm reuse, the invocation record, no anthropic."""

from __future__ import annotations

import base64
import gc
import json
import logging
import textwrap
import time
from collections.abc import Iterator, Mapping
from types import SimpleNamespace
from typing import Any

import boto3
import pytest

from s3memory import memories
from s3memory.assembly import make_key_provider, make_s3_client
from s3memory.aws_lambda import memory_handler, runtime
from s3memory.core.job_records import JOB_PREFIX
from s3memory.core.keyvault import KEYS_PREFIX
from s3memory.core.paths import memory_path
from s3memory.crypto import AUTHOR_METADATA, HEADER_METADATA, PLACE_METADATA, KMSKeyProvider, LocalKeyProvider
from s3memory.settings import Settings, SettingsError
from tests.conftest import STORAGE_FORMAT, key_of
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, snapshot, stored_keys
from tests.support.issuer import AUDIENCE, Issuer, http_event, loopback_issuer, new_rsa_key
from tests.support.lambda_keys import new_store_keys, served, user_keys
from tests.support.processes import run_python_json
from tests.support.records import diagnoses, invocation_records

pytestmark = [pytest.mark.takes_format]

SETTINGS_VARIABLES = (
    "S3MEMORY_BUCKET",
    "S3MEMORY_PREFIX",
    "S3MEMORY_KMS_KEY_ID",
    "S3MEMORY_LOCAL_KEY",
    "S3MEMORY_ENDPOINT_URL",
    "S3MEMORY_DIRECT_INVOCATION",
    "S3MEMORY_JWT_ISSUER",
    "S3MEMORY_JWT_AUDIENCE",
    "S3MEMORY_JWT_SCOPES",
    "S3MEMORY_QUOTA_BYTES",
    "S3MEMORY_QUOTA_FILES",
    "S3MEMORY_GUARD",
    "S3MEMORY_MAX_FILE_BYTES",
)
CONTEXT = SimpleNamespace(aws_request_id="req-123")
UNAVAILABLE = "Error: The memory store is unavailable; nothing was changed. (request id req-123)"
SECRET = "the secret plan: meet at dawn"


@pytest.fixture(autouse=True)
def clean_runtime(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for name in SETTINGS_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def issuer(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    """A loopback issuer that the memory function trusts."""
    with loopback_issuer() as served:
        for name, value in served.environ(S3MEMORY_DIRECT_INVOCATION="allow").items():
            monkeypatch.setenv(name, value)  # direct events seed other users' data
        yield served


def direct(user_id: object, tool_input: object) -> dict[str, Any]:
    """The memory function's answer to a direct event."""
    return memory_handler({"user_id": user_id, "input": tool_input}, CONTEXT)


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
    assert stored_keys(local_env) == new_store_keys("alice", ["/memories/a.txt"])
    key = key_of(served("alice"), "/memories/a.txt")
    stored = local_env.get_object(Bucket=BUCKET, Key=key)["Body"].read()
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


@pytest.mark.parametrize(("name", "event"), MALFORMED_EVENTS, ids=[n for n, _ in MALFORMED_EVENTS])
def test_malformed_direct_events_answer_errors_and_write_nothing(
    local_env: Any, name: str, event: object
) -> None:
    answer = memory_handler(event, CONTEXT)
    assert set(answer) == {"content", "is_error"}
    assert answer["is_error"] is True
    assert answer["content"].startswith("Error: ")
    assert stored_keys(local_env) == []  # the command is read before the memory is opened


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

VIEW = {"input": {"command": "view", "path": "/memories"}}
CREATE_X = {"input": {"command": "create", "path": "/memories/x", "file_text": "x"}}


def test_http_happy_path(issuer: Issuer, local_env: Any) -> None:
    create = {"input": {"command": "create", "path": "/memories/n.txt", "file_text": "note"}}
    status, body = http_answer(memory_handler(http_event(create, token=issuer.token()), CONTEXT))
    assert (status, body) == (
        200,
        {"content": "File created successfully at: /memories/n.txt", "is_error": False},
    )
    view = {"input": {"command": "view", "path": "/memories/n.txt"}}
    status, body = http_answer(memory_handler(http_event(view, token=issuer.token()), CONTEXT))
    assert status == 200 and body["is_error"] is False and "note" in body["content"]
    assert stored_keys(local_env) == new_store_keys("alice", ["/memories/n.txt"])


def test_http_base64_body(issuer: Issuer) -> None:
    event = http_event(VIEW, token=issuer.token(), base64_body=True)
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 200 and body["is_error"] is False


def test_http_tool_error_is_200_with_is_error(issuer: Issuer) -> None:
    event = http_event({"input": {"command": "view", "path": "/memories/missing.txt"}}, token=issuer.token())
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert (status, body) == (
        200,
        {
            "content": "The path /memories/missing.txt does not exist. Please provide a valid path.",
            "is_error": True,
        },
    )


def test_a_forged_event_without_a_token_reads_nothing(issuer: Issuer, local_env: Any) -> None:
    """A direct invoker can write API Gateway's event, claims included; without the issuer's
    signature it is refused, and the claims in the event are never read."""
    direct("bob", {"command": "create", "path": "/memories/secret.txt", "file_text": SECRET})
    before = snapshot(local_env)
    for token in (None, "", "not-a-jwt"):
        event = http_event({"input": {"command": "view", "path": "/memories/secret.txt"}}, token=token)
        event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = "bob"
        status, body = http_answer(memory_handler(event, CONTEXT))
        assert status == 401 and body["is_error"] is True
        assert SECRET not in body["content"]
    assert http_answer(memory_handler(http_event(CREATE_X, claimed_sub="bob"), CONTEXT)) == (
        401,
        {"content": "Error: The request is not authenticated: it carries no bearer token.", "is_error": True},
    )
    assert snapshot(local_env) == before


def test_the_user_is_the_tokens_subject_never_the_events_claims(issuer: Issuer, local_env: Any) -> None:
    direct("bob", {"command": "create", "path": "/memories/secret.txt", "file_text": SECRET})
    before = snapshot(local_env)
    attack = {"user_id": "bob", "input": {"command": "view", "path": "/memories/secret.txt"}}
    event = http_event(attack, token=issuer.token("mallory"), claimed_sub="bob")
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 200 and body["is_error"] is True and SECRET not in body["content"]
    write = {"user_id": "bob", "input": {"command": "create", "path": "/memories/m.txt", "file_text": "x"}}
    status, body = http_answer(
        memory_handler(http_event(write, token=issuer.token("mallory"), claimed_sub="bob"), CONTEXT)
    )
    assert status == 200 and body["is_error"] is False
    assert set(snapshot(local_env)) - set(before) == set(user_keys("mallory", ["/memories/m.txt"]))


def _refusal(issuer: Issuer, token: str) -> tuple[int, str]:
    status, body = http_answer(memory_handler(http_event(CREATE_X, token=token), CONTEXT))
    assert body["is_error"] is True
    return status, body["content"]


def test_tokens_that_prove_nothing_are_refused_and_write_nothing(issuer: Issuer, local_env: Any) -> None:
    now = int(time.time())
    other = new_rsa_key()
    reason = "Error: The request's token is not valid: {}."
    cases = {
        "it has expired": issuer.token(exp=now - 120),
        "it is not valid yet": issuer.token(nbf=now + 600),
        "it was issued by another issuer": issuer.token(iss="https://issuer.example"),
        "it is not meant for this API (audience)": issuer.token(aud="another-api"),
        "its signature does not verify": issuer.token(key=other),
        "it is signed by a key its issuer does not publish": issuer.token(key=other, headers={"kid": "k9"}),
        "its signing algorithm is not accepted": issuer.token(
            key="a-shared-secret-of-32-bytes-or-more", algorithm="HS256"
        ),
        "its signing algorithm does not match its key": issuer.token(algorithm="RS512"),
        "it has no exp claim": issuer.token(exp=None),
        "it has no sub claim": issuer.token(sub=None),
        "it is not a well-formed JWT": "a.b.c",
    }
    for expected, token in cases.items():
        assert _refusal(issuer, token) == (401, reason.format(expected)), expected
    unsigned = jwt_none(issuer)
    assert _refusal(issuer, unsigned) == (401, reason.format("its signing algorithm is not accepted"))
    assert stored_keys(local_env) == []


def jwt_none(issuer: Issuer) -> str:
    """The token with ``alg: none`` and no signature."""
    _, payload, _ = issuer.token().split(".")
    none = base64.urlsafe_b64encode(json.dumps({"alg": "none", "typ": "JWT"}).encode()).rstrip(b"=").decode()
    return f"{none}.{payload}."


def test_client_id_stands_for_the_audience_as_api_gateway_reads_it(issuer: Issuer) -> None:
    token = issuer.token(aud=None, client_id=AUDIENCE)
    status, body = http_answer(memory_handler(http_event(VIEW, token=token), CONTEXT))
    assert status == 200 and body["is_error"] is False


def test_required_scopes(issuer: Issuer, monkeypatch: pytest.MonkeyPatch, local_env: Any) -> None:
    monkeypatch.setenv("S3MEMORY_JWT_SCOPES", "memory/read memory/write")
    assert _refusal(issuer, issuer.token(scope="profile email")) == (
        403,
        "Error: The request's token lacks the scope this API requires (one of: memory/read memory/write).",
    )
    assert _refusal(issuer, issuer.token())[0] == 403
    assert stored_keys(local_env) == []
    for token in (issuer.token(scope="openid memory/write"), issuer.token(scp=["memory/read"])):
        status, body = http_answer(memory_handler(http_event(VIEW, token=token), CONTEXT))
        assert status == 200 and body["is_error"] is False


def test_unknown_key_ids_refetch_the_key_set_at_most_once_a_minute(issuer: Issuer) -> None:
    other = new_rsa_key()
    assert http_answer(memory_handler(http_event(VIEW, token=issuer.token()), CONTEXT))[0] == 200
    assert issuer.fetches == 1
    for number in range(20):
        token = issuer.token(key=other, headers={"kid": f"made-up-{number}"})
        assert _refusal(issuer, token)[0] == 401
    assert issuer.fetches == 1  # fetched under a minute ago: no refetch for made-up key ids


def test_an_unreachable_issuer_is_503_tried_once_a_minute_and_writes_nothing(
    issuer: Issuer, local_env: Any
) -> None:
    issuer.available = False
    for _ in range(5):
        status, content = _refusal(issuer, issuer.token())
        assert status == 503
        assert content.startswith("Error: The request's token could not be checked: ")
        assert content.endswith(". Try again later.")
    assert issuer.gets == 1  # the discovery document, once: no fetch per request while it is down
    assert stored_keys(local_env) == []


def test_http_events_need_an_issuer_to_check_tokens_against(
    local_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    status, body = http_answer(memory_handler(http_event(VIEW, token="x.y.z"), CONTEXT))
    assert status == 500 and body == {"content": UNAVAILABLE, "is_error": True}
    assert diagnoses(caplog, "req-123") == [
        "s3memory: request req-123 failed (SettingsError): S3MEMORY_JWT_ISSUER is required to serve HTTP "
        "API events (the function verifies each request's token itself)"
    ]


def test_http_hostile_subject_is_refused(issuer: Issuer, local_env: Any) -> None:
    status, body = http_answer(memory_handler(http_event(CREATE_X, token=issuer.token("../bob")), CONTEXT))
    assert status == 403 and body["is_error"] is True
    assert body["content"].startswith("Error: The token's subject is not a usable user id: ")
    assert stored_keys(local_env) == []


MALFORMED_HTTP: list[tuple[str, dict[str, Any]]] = [
    ("bad json", {"raw_body": "{not json"}),
    ("empty body", {"raw_body": ""}),
    ("array body", {"body": [VIEW]}),
    ("string body", {"body": "just a string"}),
    ("missing input", {"body": {"command": "view", "path": "/memories"}}),
    ("input not object", {"body": {"input": "view /memories"}}),
    ("bad json base64", {"raw_body": "{not json", "base64_body": True}),
]


@pytest.mark.parametrize("shape", [shape for _, shape in MALFORMED_HTTP], ids=[n for n, _ in MALFORMED_HTTP])
def test_http_malformed_requests_are_400(issuer: Issuer, local_env: Any, shape: dict[str, Any]) -> None:
    event = http_event(shape.pop("body", None), token=issuer.token(), **shape)
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 400
    assert body["is_error"] is True and body["content"].startswith("Error: ")
    assert stored_keys(local_env) == []


@pytest.mark.parametrize(
    "change",
    [{"body": "%%%", "isBase64Encoded": True}, {"body": None}, {"version": "1.0"}],
    ids=["bad base64", "no body", "payload 1.0"],
)
def test_http_malformed_events_are_400(issuer: Issuer, local_env: Any, change: dict[str, Any]) -> None:
    event = {**http_event(VIEW, token=issuer.token()), **change}
    status, body = http_answer(memory_handler(event, CONTEXT))
    assert status == 400 and body["content"].startswith("Error: ")
    assert stored_keys(local_env) == []


# -- direct invocation refused -----------------------------------------------------------------


def test_a_function_behind_the_http_api_refuses_direct_events(
    issuer: Issuer, local_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    direct("bob", {"command": "create", "path": "/memories/secret.txt", "file_text": SECRET})
    monkeypatch.setenv("S3MEMORY_DIRECT_INVOCATION", "refuse")
    before = snapshot(local_env)
    for command in (
        {"command": "view", "path": "/memories/secret.txt"},
        {"command": "create", "path": "/memories/new.txt", "file_text": "x"},
        {"command": "delete", "path": "/memories/secret.txt"},
    ):
        assert direct("bob", command) == {
            "content": "Error: This function serves the HTTP API only: direct invocation, where the event "
            "names its own user, is refused (S3MEMORY_DIRECT_INVOCATION=refuse). Nothing was read or changed.",
            "is_error": True,
        }
    assert memory_handler(None, CONTEXT)["is_error"] is True
    assert snapshot(local_env) == before
    status, body = http_answer(memory_handler(http_event(VIEW, token=issuer.token("bob")), CONTEXT))
    assert status == 200 and "secret.txt" in body["content"]


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
    assert (local.bucket, local.prefix, local.endpoint_url) == (BUCKET, "users/", None)
    assert LOCAL_KEY_B64 not in repr(local) and "local_key" not in repr(local)
    assert isinstance(make_key_provider(local), LocalKeyProvider)
    kms = Settings.from_env(
        {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_KMS_KEY_ID": "alias/m", "S3MEMORY_PREFIX": "tenants/prod/"}
    )
    provider = make_key_provider(kms)
    assert isinstance(provider, KMSKeyProvider) and provider.key_id == "alias/m"
    assert kms.prefix == "tenants/prod/"


def test_endpoint_url_reaches_the_s3_client() -> None:
    settings = Settings.from_env(
        {
            "S3MEMORY_BUCKET": BUCKET,
            "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
            "S3MEMORY_ENDPOINT_URL": "http://127.0.0.1:9",
        }
    )
    assert make_s3_client(settings).meta.endpoint_url == "http://127.0.0.1:9"


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
def test_handler_config_errors_name_the_variable_in_the_log(
    monkeypatch: pytest.MonkeyPatch,
    s3: Any,
    caplog: pytest.LogCaptureFixture,
    environ: dict[str, str],
    variable: str,
) -> None:
    for name, value in environ.items():
        monkeypatch.setenv(name, value)
    answer = direct("alice", {"command": "create", "path": "/memories/a.txt", "file_text": "x"})
    assert answer == {"content": UNAVAILABLE, "is_error": True}
    status, body = http_answer(
        memory_handler(http_event({"input": {"command": "view", "path": "/memories"}}), CONTEXT)
    )
    assert status == 500 and body["content"] == UNAVAILABLE
    logged = diagnoses(caplog, "req-123")
    assert len(logged) == 2 and all(variable in diagnosis for diagnosis in logged)
    assert environ["S3MEMORY_LOCAL_KEY"] not in caplog.text
    assert stored_keys(s3) == []


# -- warm containers ----------------------------------------------------------------------------


def test_warm_invocations_reuse_client_and_provider(local_env: Any) -> None:
    direct("alice", {"command": "view", "path": "/memories"})
    first = runtime.get_runtime()
    direct("bob", {"command": "view", "path": "/memories"})
    second = runtime.get_runtime()
    assert second is first
    assert second.s3_client is first.s3_client and second.key_provider is first.key_provider


def test_changed_settings_rebuild_the_runtime(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    first = runtime.get_runtime()
    monkeypatch.setenv("S3MEMORY_PREFIX", "tenants/")
    second = runtime.get_runtime()
    assert second is not first and second.settings.prefix == "tenants/"
    runtime.reset()
    monkeypatch.setenv("S3MEMORY_PREFIX", "tenants/")
    assert runtime.get_runtime() is not second


def test_the_first_runtime_is_built_with_the_collector_paused_then_frozen_once(
    local_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    runtime.reset()
    monkeypatch.setattr(runtime, "_initialized", False)  # a new container
    collecting: list[bool] = []
    monkeypatch.setattr(gc, "freeze", lambda: collecting.append(gc.isenabled()))
    first = runtime.get_runtime()
    assert collecting == [False] and gc.isenabled()  # frozen before the collector resumed
    monkeypatch.setenv("S3MEMORY_PREFIX", "tenants/")
    assert runtime.get_runtime() is not first
    assert collecting == [False]  # once per process
    assert "File created successfully" in direct("alice", CREATE_X["input"])["content"]


def test_kms_settings_share_one_provider_and_its_key_cache(monkeypatch: pytest.MonkeyPatch, s3: Any) -> None:
    kms = boto3.client("kms", region_name="us-east-1")
    key_id = kms.create_key(Description="s3memory lambda test")["KeyMetadata"]["KeyId"]
    monkeypatch.setenv("S3MEMORY_BUCKET", BUCKET)
    monkeypatch.setenv("S3MEMORY_KMS_KEY_ID", key_id)
    monkeypatch.setenv("S3MEMORY_STORAGE_FORMAT", str(STORAGE_FORMAT))

    created = direct("alice", {"command": "create", "path": "/memories/k.txt", "file_text": SECRET})
    assert created["is_error"] is False
    provider = runtime.get_runtime().key_provider
    assert isinstance(provider, KMSKeyProvider) and provider.key_id == key_id

    kms_calls: list[str] = []
    provider.client.meta.events.register(
        "request-created", lambda operation_name, **_: kms_calls.append(operation_name)
    )
    viewed = direct("alice", {"command": "view", "path": "/memories/k.txt"})
    assert viewed["is_error"] is False and SECRET in viewed["content"]
    assert runtime.get_runtime().key_provider is provider
    assert kms_calls == []  # warm: the shared provider's cache answered
    wrapped_key = served("alice").placed.layout.key_of_internal(f"{KEYS_PREFIX}v1")
    assert stored_keys(s3) == sorted([*new_store_keys("alice", ["/memories/k.txt"]), wrapped_key])


# -- warm memories -------------------------------------------------------------------------------


def _s3_requests(client: Any) -> list[tuple[str, str]]:
    """(operation, listed prefix) of each S3 request the client sends from now on."""
    sent: list[tuple[str, str]] = []

    def record(model: Any, params: dict[str, Any], **_: Any) -> None:
        query = params.get("query_string") or {}
        prefix = query.get("prefix", "") if isinstance(query, dict) else ""
        sent.append((model.name, prefix))

    client.meta.events.register("before-call.s3", record)
    return sent


@pytest.mark.parametrize("warm", [True, False], ids=["warm", "cold"])
def test_a_warm_container_lists_nothing_the_last_invocation_listed(
    local_env: Any, monkeypatch: pytest.MonkeyPatch, warm: bool
) -> None:
    """A quota is measured by listing the user's memory; a warm container remembers the usage (and the
    directories it saw) from one invocation to the next. Cold, every invocation lists again."""
    monkeypatch.setenv("S3MEMORY_QUOTA_FILES", "10")
    direct("alice", {"command": "create", "path": "/memories/notes/a.md", "file_text": "a"})
    runtime.reset()

    def listings(path: str) -> list[str]:
        if not warm:
            runtime.reset()
        sent = _s3_requests(runtime.get_runtime().s3_client)
        assert direct("alice", {"command": "create", "path": path, "file_text": "x"})["is_error"] is False
        return [prefix for operation, prefix in sent if operation == "ListObjectsV2"]

    first = listings("/memories/notes/b.md")
    measured = served("alice").placed.layout.memories_prefix  # the quota's measure
    assert measured in first
    second = listings("/memories/notes/c.md")
    if warm:
        assert not set(first) & set(second)
    else:
        assert measured in second


def test_warm_memories_are_per_user_and_bounded(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(memories, "WARM_USERS", 3)
    warm = runtime.get_runtime()
    alice = warm.memory("alice")
    assert warm.memory("alice") is alice and warm.memory("bob") is not alice
    for user in ("carol", "dave"):
        warm.memory(user)
    assert warm.memory("bob") is warm.memory("bob")
    assert warm.memory("alice") is not alice  # the least recently used was dropped


def test_limits_from_the_environment_reach_every_memory(
    local_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3MEMORY_MAX_FILE_BYTES", "64")
    monkeypatch.setenv("S3MEMORY_GUARD", "redact")
    big = direct("alice", {"command": "create", "path": "/memories/big.md", "file_text": "x" * 65})
    assert big["is_error"] is True and "64" in big["content"]
    key = "AKIA" + "Q" * 16
    assert (
        direct("alice", {"command": "create", "path": "/memories/k.md", "file_text": key})["is_error"]
        is False
    )
    viewed = direct("alice", {"command": "view", "path": "/memories/k.md"})["content"]
    assert key not in viewed and "[REDACTED" in viewed
    assert stored_keys(local_env) == new_store_keys("alice", ["/memories/k.md"])


# -- the invocation record -----------------------------------------------------------------------


def test_one_record_per_invocation_without_content_paths_or_users(
    local_env: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    caplog.set_level(logging.INFO, logger="s3memory")
    direct("alice", {"command": "create", "path": "/memories/private-name.txt", "file_text": SECRET})
    direct("alice", {"command": "view", "path": "/memories/private-name.txt"})
    direct("alice", {"command": "create", "path": "/memories/private-name.txt", "file_text": SECRET})
    records = invocation_records(caplog)
    assert len(records) == 3
    for record in records:
        assert set(record) == {
            "function", "request_id", "command", "outcome", "error_type", "latency_ms",
            "s3_requests", "kms_requests", "source", "job_records_set_aside",
        }  # fmt: skip
        assert record["function"] == "memory" and record["request_id"] == "req-123"
        assert isinstance(record["latency_ms"], float) and record["s3_requests"] >= 1
    assert [(r["command"], r["outcome"], r["error_type"]) for r in records] == [
        ("create", "ok", None),
        ("view", "ok", None),
        ("create", "error", "Unsettled"),
    ]
    text = json.dumps(records) + caplog.text
    for private in (SECRET, "private-name", "/memories", "alice", LOCAL_KEY_B64):
        assert private not in text


def test_the_record_counts_job_records_set_aside(
    local_env: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket writer's planted job records are quarantined; operators see how many, per invocation."""
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    caplog.set_level(logging.INFO, logger="s3memory")
    direct("alice", {"command": "create", "path": "/memories/a.md", "file_text": "a"})
    layout = served("alice").placed.layout
    for name in ("junk-1", "junk-2"):
        local_env.put_object(Bucket=BUCKET, Key=layout.key_of_internal(JOB_PREFIX + name), Body=b"planted")
    direct("alice", {"command": "view", "path": "/memories"})
    direct("alice", {"command": "view", "path": "/memories"})
    assert [r["job_records_set_aside"] for r in invocation_records(caplog)] == [0, 2, 0]
    assert stored_keys(local_env, layout.key_of_internal(JOB_PREFIX)) == []


def test_records_for_http_and_malformed_events(
    issuer: Issuer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    caplog.set_level(logging.INFO, logger="s3memory")
    memory_handler(http_event(VIEW, token=issuer.token("carol")), None)
    memory_handler(http_event(VIEW, token="forged"), None)
    memory_handler({"user_id": "a/b", "input": {"command": "delete", "path": "/memories/x"}}, CONTEXT)
    memory_handler({"user_id": "alice", "input": {"command": "not-a-command " + SECRET}}, CONTEXT)
    http, forged, hostile, unknown = invocation_records(caplog)
    assert (http["source"], http["status"], http["outcome"], http["request_id"]) == ("http", 200, "ok", None)
    assert (forged["status"], forged["error_type"], forged["command"]) == (401, "token", "unknown")
    assert (hostile["outcome"], hostile["error_type"], hostile["source"]) == ("error", "request", "direct")
    assert (unknown["command"], unknown["outcome"]) == ("unknown", "error")
    assert SECRET not in caplog.text and "carol" not in json.dumps(invocation_records(caplog))


def test_a_misconfigured_function_logs_at_error(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="s3memory")
    direct("alice", {"command": "view", "path": "/memories"})
    (record,) = [r for r in caplog.records if r.getMessage() == "s3memory invocation"]
    assert record.levelno == logging.ERROR and vars(record)["error_type"] == "configuration"


def test_lambdas_json_log_format_writes_one_line_that_cloudwatch_reads_as_metrics(
    local_env: Any, caplog: pytest.LogCaptureFixture
) -> None:
    """The record through the Lambda runtime's own JSON formatter: the fields and the EMF block are
    top-level keys of one JSON line, and each metric the block names has its value beside it."""
    from awslambdaric.lambda_runtime_log_utils import JsonFormatter

    caplog.set_level(logging.INFO, logger="s3memory")
    direct("alice", {"command": "create", "path": "/memories/a.md", "file_text": SECRET})
    (record,) = [r for r in caplog.records if r.getMessage() == "s3memory invocation"]
    line = JsonFormatter().format(record)
    assert line.endswith("\n") and line.count("\n") == 1
    document = json.loads(line)
    assert document["message"] == "s3memory invocation" and document["level"] == "INFO"
    (directive,) = document["_aws"]["CloudWatchMetrics"]
    assert directive["Namespace"] == "s3memory" and directive["Dimensions"] == [["command", "outcome"]]
    assert isinstance(document["_aws"]["Timestamp"], int)
    names = [metric["Name"] for metric in directive["Metrics"]]
    assert names == ["Latency", "S3Requests", "KMSRequests"]
    assert all(isinstance(document[name], int | float) for name in names)
    assert (document["command"], document["outcome"]) == ("create", "ok")
    assert document["S3Requests"] == document["s3_requests"] >= 1
    assert SECRET not in line and "/memories" not in line and "alice" not in line


# -- no anthropic --------------------------------------------------------------------------------


def test_serving_imports_neither_anthropic_nor_the_mcp_sdk() -> None:
    script = textwrap.dedent(
        f"""
        import json, os, sys
        os.environ.update(
            AWS_ACCESS_KEY_ID="testing", AWS_SECRET_ACCESS_KEY="testing", AWS_DEFAULT_REGION="us-east-1",
            S3MEMORY_BUCKET={BUCKET!r}, S3MEMORY_LOCAL_KEY={LOCAL_KEY_B64!r},
        )
        import s3memory.aws_lambda
        assert "anthropic" not in sys.modules, "import pulled anthropic"
        assert "mcp" not in sys.modules, "import pulled the MCP SDK"
        from moto import mock_aws
        import boto3
        with mock_aws():
            boto3.client("s3", region_name="us-east-1").create_bucket(Bucket={BUCKET!r})
            handler = s3memory.aws_lambda.memory_handler
            created = handler({{"user_id": "alice", "input": {{"command": "create", "path": "/memories/a.txt", "file_text": "hi"}}}}, None)
            viewed = handler({{"user_id": "alice", "input": {{"command": "view", "path": "/memories/a.txt"}}}}, None)
        print(json.dumps({{"created": created, "viewed": viewed, "anthropic": "anthropic" in sys.modules,
                          "mcp": sorted({{m.split(".")[0] for m in sys.modules}} & {{"mcp", "starlette", "pydantic"}})}}))
        """
    )
    outcome = run_python_json(script)
    assert outcome["anthropic"] is False and outcome["mcp"] == []
    assert outcome["created"] == {
        "content": "File created successfully at: /memories/a.txt",
        "is_error": False,
    }
    assert outcome["viewed"]["is_error"] is False and "hi" in outcome["viewed"]["content"]


# -- who writes ---------------------------------------------------------------------------------


def author_of(s3: Any, user_id: str, path: str) -> str | None:
    """Who wrote ``user_id``'s file at ``path``, as the handlers' memory opens it, and checked where
    its object keeps the author: format 1 names it in the metadata (bound into the content's
    authentication), format 2 seals it in the place record, so the metadata shows none."""
    memory = served(user_id)
    metadata = s3.head_object(Bucket=BUCKET, Key=key_of(memory, path))["Metadata"]
    found = memory.placed.files.read(memory_path(path))
    assert found is not None
    if STORAGE_FORMAT == 1:
        assert metadata == ({} if found.author is None else {AUTHOR_METADATA: found.author})
    else:
        assert set(metadata) == {HEADER_METADATA, PLACE_METADATA}
    return found.author


def test_the_memory_function_records_the_events_actor(local_env: Any) -> None:
    create = {"command": "create", "path": "/memories/notes.md", "file_text": "one\n"}
    answer = memory_handler({"user_id": "alice", "actor": "session-9", "input": create}, CONTEXT)
    assert answer == {"content": "File created successfully at: /memories/notes.md", "is_error": False}
    assert author_of(local_env, "alice", "/memories/notes.md") == "session-9"
    edit = {"command": "str_replace", "path": "/memories/notes.md", "old_str": "one", "new_str": "two"}
    assert memory_handler({"user_id": "alice", "input": edit}, CONTEXT)["is_error"] is False
    assert author_of(local_env, "alice", "/memories/notes.md") is None
    before = snapshot(local_env)
    impostor = memory_handler({"user_id": "alice", "actor": "operator:root", "input": create}, CONTEXT)
    assert impostor["is_error"] is True and "kept for the operator commands" in impostor["content"]
    refused = memory_handler({"user_id": "alice", "actor": "two words", "input": create}, CONTEXT)
    assert refused == {
        "content": "Error: `actor` is not usable: an author may hold only ASCII letters, digits and "
        ". _ : @ / + = -. Nothing was read or changed.",
        "is_error": True,
    }
    assert snapshot(local_env) == before


def test_an_http_request_names_its_actor_in_the_body(issuer: Issuer, local_env: Any) -> None:
    body = {"input": {"command": "create", "path": "/memories/web.md", "file_text": "x\n"}, "actor": "web-1"}
    status, _ = http_answer(memory_handler(http_event(body, token=issuer.token("alice")), CONTEXT))
    assert (status, author_of(local_env, "alice", "/memories/web.md")) == (200, "web-1")


def test_the_access_record_lands_before_the_function_answers(local_env: Any) -> None:
    """Lambda may freeze or end the process once the handler returns: the record's write, however
    slow, has ended by then."""
    warm = runtime.get_runtime()

    def slow_access_record(request: Any, **_: Any) -> None:
        if str(request.url).split("?")[0].endswith("/internal/access"):
            time.sleep(0.5)

    warm.s3_client.meta.events.register("request-created.s3.PutObject", slow_access_record)
    answer = memory_handler({"user_id": "alice", "input": {"command": "view", "path": "/memories"}}, CONTEXT)
    assert answer["is_error"] is False
    assert stored_keys(local_env) == new_store_keys("alice", [])
