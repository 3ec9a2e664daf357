"""The MCP function (``s3memory.aws_lambda.mcp_handler``) through the events API Gateway's HTTP API sends:
the official ``mcp`` client talks to it through an in-process gateway (``support/api_gateway.py``), and
raw events check what the client does not show (refusals, records, odd events). The store is moto in
process; the issuer is the loopback one of the other HTTP edges' tests."""

from __future__ import annotations

import json
import logging
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from mcp.shared.exceptions import MCPError

from s3memory.assembly import make_store
from s3memory.aws_lambda import mcp_handler, runtime
from s3memory.core.paths import memory_path
from s3memory.mcp.schema import INSTRUCTIONS, MCP_ACTOR
from s3memory.mcp.server import memory_tool
from s3memory.memory import S3Memory
from s3memory.settings import Settings
from tests.support.api_gateway import MCP_URL, client_through
from tests.support.bucket import LOCAL_KEY_B64, stored_keys
from tests.support.issuer import REFUSED_TOKENS, Issuer, http_event, loopback_issuer
from tests.support.mcp_messages import INITIALIZE, MCP_HEADERS
from tests.support.mcp_messages import tools_call as call
from tests.support.mcp_servers import McpClient, ok
from tests.support.records import diagnoses, invocation_records

CONTEXT = SimpleNamespace(aws_request_id="req-mcp")
SECRET = "the vault code is 4-8-15"
METADATA_URL = "https://abc123.execute-api.us-east-1.amazonaws.com/.well-known/oauth-protected-resource/mcp"


@pytest.fixture
def issuer(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    """A loopback issuer that the function trusts, and the function's other settings."""
    monkeypatch.setenv("S3MEMORY_MCP_URL", MCP_URL)
    runtime.reset()
    with loopback_issuer() as served:
        for name, value in served.environ().items():
            monkeypatch.setenv(name, value)
        yield served
    runtime.reset()


@pytest.fixture
def alice(issuer: Issuer) -> Iterator[McpClient]:
    with client_through(mcp_handler, issuer.token("alice")) as client:
        yield client


def library(user: str) -> S3Memory:
    """``user``'s memory through the library, from the function's own settings."""
    import os

    settings = Settings.from_env(os.environ)
    return S3Memory(make_store(settings), user, **settings.limits.memory_options())


def mcp_event(body: object, token: str | None, **more: Any) -> dict[str, Any]:
    return http_event(
        body, token=token, claimed_sub=None, route="ANY /mcp", method="POST", headers=MCP_HEADERS, **more
    )


def served(event: dict[str, Any]) -> tuple[int, dict[str, str], Any]:
    """The function's answer: status, headers and the JSON body."""
    answer = mcp_handler(event, CONTEXT)
    assert answer["isBase64Encoded"] is False
    return answer["statusCode"], answer["headers"], json.loads(answer["body"])


# -- the official client, through API Gateway's events ---------------------------------------------


def test_the_official_client_initializes_lists_the_tool_and_reads_the_instructions(alice: McpClient) -> None:
    assert alice.server_info().name == "s3memory"
    assert alice.instructions == INSTRUCTIONS
    assert alice.list_tools() == [memory_tool().model_dump(by_alias=True, exclude_none=True)]


def test_every_command_runs_through_the_function_and_a_refusal_is_an_error_result(alice: McpClient) -> None:
    assert ok(alice, command="create", path="/memories/a.txt", file_text="one\ntwo\n") == (
        "File created successfully at: /memories/a.txt"
    )
    assert ok(alice, command="str_replace", path="/memories/a.txt", old_str="two", new_str="2") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tone\n     2\t2"
    )
    assert ok(alice, command="insert", path="/memories/a.txt", insert_line=0, insert_text="zero") == (
        "The file /memories/a.txt has been edited."
    )
    assert ok(alice, command="view", path="/memories/a.txt", view_range=[1, 2]) == (
        "Here's the content of /memories/a.txt with line numbers:\n     1\tzero\n     2\tone"
    )
    assert ok(alice, command="rename", old_path="/memories/a.txt", new_path="/memories/b.txt") == (
        "Successfully renamed /memories/a.txt to /memories/b.txt"
    )
    assert alice.call(command="create", path="/memories/b.txt", file_text="again") == (
        "Error: File /memories/b.txt already exists",
        True,
    )
    assert ok(alice, command="delete", path="/memories/b.txt") == "Successfully deleted /memories/b.txt"
    assert alice.call(command="view", path="/memories/b.txt") == (
        "The path /memories/b.txt does not exist. Please provide a valid path.",
        True,
    )


def test_what_the_function_writes_the_library_reads_by_mcp_and_the_reverse(alice: McpClient) -> None:
    ok(alice, command="create", path="/memories/served.txt", file_text="from Lambda")
    mirror = library("alice")
    assert mirror.run({"command": "view", "path": "/memories/served.txt"}).endswith("     1\tfrom Lambda")
    found = mirror.placed.files.read(memory_path("/memories/served.txt"))
    assert found is not None and found.author == MCP_ACTOR
    mirror.run({"command": "create", "path": "/memories/library.txt", "file_text": "from the library"})
    assert ok(alice, command="view", path="/memories/library.txt").endswith("     1\tfrom the library")


def test_a_token_for_bob_never_reads_alices_memory(alice: McpClient, issuer: Issuer) -> None:
    ok(alice, command="create", path="/memories/alice.txt", file_text=SECRET)
    with client_through(mcp_handler, issuer.token("bob")) as bob:
        assert bob.call(command="view", path="/memories/alice.txt") == (
            "The path /memories/alice.txt does not exist. Please provide a valid path.",
            True,
        )
        assert "alice.txt" not in ok(bob, command="view", path="/memories")


def test_the_official_client_without_a_token_does_not_connect(issuer: Issuer) -> None:
    with pytest.raises(ExceptionGroup) as caught, client_through(mcp_handler, None):
        pass  # pragma: no cover - the connection is refused
    assert caught.group_contains(MCPError, match=r"^Server returned an error response$")


# -- tokens: the user is the verified subject, and nothing runs without one -------------------------


def test_without_a_token_the_answer_is_401_with_the_metadata_url_and_nothing_runs(
    issuer: Issuer, local_env: Any
) -> None:
    status, headers, body = served(
        mcp_event(call({"command": "create", "path": "/memories/x", "file_text": "x"}), None)
    )
    assert status == 401
    assert headers["www-authenticate"] == f'Bearer resource_metadata="{METADATA_URL}"'
    assert body == {
        "error_description": "Error: The request is not authenticated: it carries no bearer token."
    }
    assert stored_keys(local_env) == []


@pytest.mark.parametrize("refusal", REFUSED_TOKENS)
def test_a_refused_token_is_401_invalid_token_and_nothing_runs(
    issuer: Issuer, local_env: Any, refusal: str
) -> None:
    token, cause = issuer.refused_token(refusal), REFUSED_TOKENS[refusal]
    status, headers, body = served(
        mcp_event(call({"command": "create", "path": "/memories/x", "file_text": "x"}), token)
    )
    assert status == 401
    assert headers["www-authenticate"] == f'Bearer error="invalid_token", resource_metadata="{METADATA_URL}"'
    assert body == {
        "error": "invalid_token",
        "error_description": f"Error: The request's token is not valid: {cause}.",
    }
    assert stored_keys(local_env) == []


def test_the_user_is_the_tokens_subject_never_the_events_claims(issuer: Issuer) -> None:
    event = mcp_event(
        call({"command": "create", "path": "/memories/bob.txt", "file_text": "b"}), issuer.token("bob")
    )
    event["requestContext"]["authorizer"]["jwt"]["claims"]["sub"] = "alice"
    assert served(event)[0] == 200
    assert library("bob").run({"command": "view", "path": "/memories/bob.txt"}).endswith("     1\tb")
    assert "bob.txt" not in library("alice").run({"command": "view", "path": "/memories"})


def test_a_token_without_a_required_scope_is_403(issuer: Issuer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("S3MEMORY_JWT_SCOPES", "memory")
    status, headers, body = served(mcp_event(INITIALIZE, issuer.token("alice", scope="profile")))
    assert status == 403
    assert headers["www-authenticate"] == (
        f'Bearer error="insufficient_scope", scope="memory", resource_metadata="{METADATA_URL}"'
    )
    assert body["error"] == "insufficient_scope"
    assert served(mcp_event(INITIALIZE, issuer.token("alice", scope="memory")))[0] == 200


def test_the_metadata_is_served_without_a_token_on_both_routes(issuer: Issuer) -> None:
    expected = {
        "resource": MCP_URL,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
    }
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        status, _, body = served(http_event(None, claimed_sub=None, route=f"GET {path}"))
        assert (status, body) == (200, expected)


# -- odd requests and events ------------------------------------------------------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_only_post_is_served_on_mcp(issuer: Issuer, method: str) -> None:
    event = http_event(None, token=issuer.token(), claimed_sub=None, route="ANY /mcp", method=method)
    answer = mcp_handler(event, CONTEXT)
    assert (answer["statusCode"], answer["headers"]["allow"], answer["body"]) == (
        405,
        "POST",
        "Method Not Allowed",
    )


def test_a_base64_body_is_served_as_api_gateway_sends_it(issuer: Issuer) -> None:
    status, _, body = served(
        mcp_event(call({"command": "view", "path": "/memories"}), issuer.token(), base64_body=True)
    )
    assert status == 200 and body["result"]["isError"] is False


def test_a_direct_event_is_refused_and_writes_nothing(issuer: Issuer, local_env: Any) -> None:
    event = {"user_id": "alice", "input": {"command": "create", "path": "/memories/x", "file_text": "x"}}
    answer = mcp_handler(event, CONTEXT)
    assert answer["statusCode"] == 403
    assert json.loads(answer["body"]) == {
        "error_description": "Error: The MCP function serves API Gateway HTTP API events only: an event "
        "that names its own user is refused. Nothing was read or changed."
    }
    assert stored_keys(local_env) == []


@pytest.mark.parametrize(
    "change",
    [
        {"version": "1.0"},
        {"headers": ["not", "a", "map"]},
        {"routeKey": "$default", "rawPath": "mcp"},
        {"requestContext": {"http": {}}},
        {"body": 7},
        {"body": "%%%", "isBase64Encoded": True},
        {"headers": {"x-name": "caf\u00e9\u2603"}},
    ],
    ids=["v1", "headers", "path", "method", "body-type", "base64", "latin-1"],
)
def test_a_malformed_event_is_400_and_writes_nothing(
    issuer: Issuer, local_env: Any, change: dict[str, Any]
) -> None:
    event = {
        **mcp_event(call({"command": "create", "path": "/memories/x", "file_text": "x"}), issuer.token()),
        **change,
    }
    status, _, body = served(event)
    assert status == 400 and body["error_description"].startswith("Error: ")
    assert stored_keys(local_env) == []


@pytest.mark.parametrize(
    ("environ", "named"),
    [
        ({"S3MEMORY_JWT_ISSUER": None, "S3MEMORY_JWT_AUDIENCE": None}, "S3MEMORY_JWT_ISSUER"),
        ({"S3MEMORY_MCP_URL": None}, "S3MEMORY_MCP_URL"),
        ({"S3MEMORY_MCP_URL": "http://memory.example.com/mcp"}, "S3MEMORY_MCP_URL"),
        ({"S3MEMORY_MCP_URL": "https://memory.example.com/mcp?x=1"}, "S3MEMORY_MCP_URL"),
    ],
    ids=["no-issuer", "no-url", "plain-http", "query"],
)
def test_a_misconfigured_function_answers_500_naming_the_setting_in_the_log(
    issuer: Issuer,
    monkeypatch: pytest.MonkeyPatch,
    local_env: Any,
    caplog: pytest.LogCaptureFixture,
    environ: dict[str, str | None],
    named: str,
) -> None:
    for name, value in environ.items():
        if value is None:
            monkeypatch.delenv(name)
        else:
            monkeypatch.setenv(name, value)
    status, _, body = served(mcp_event(INITIALIZE, issuer.token()))
    assert (status, body) == (
        500,
        {
            "error_description": "Error: The memory store is unavailable; nothing was changed. (request id req-mcp)"
        },
    )
    (diagnosis,) = diagnoses(caplog, "req-mcp")
    assert diagnosis.startswith("s3memory: request req-mcp failed (SettingsError): ") and named in diagnosis
    assert stored_keys(local_env) == []


# -- the record ---------------------------------------------------------------------------------------


def test_one_record_per_invocation_without_content_paths_users_or_tokens(
    issuer: Issuer, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("S3MEMORY_METRICS", "off")
    caplog.set_level(logging.INFO, logger="s3memory")
    token = issuer.token("carol")
    create = {"command": "create", "path": "/memories/private-name.txt", "file_text": SECRET}
    served(mcp_event(INITIALIZE, token))
    served(mcp_event(call(create), token))
    served(mcp_event(call(create), token))
    served(mcp_event(call(create), "forged"))
    served(mcp_event({"jsonrpc": "2.0", "id": 3, "method": "resources/read " + SECRET}, token))
    records = invocation_records(caplog, "mcp")
    assert [(r["mcp_method"], r["command"], r["outcome"], r["error_type"], r["status"]) for r in records] == [
        ("initialize", "unknown", "ok", None, 200),
        ("tools/call", "create", "ok", None, 200),
        ("tools/call", "create", "error", "tool", 200),
        ("tools/call", "create", "error", "request", 401),
        ("other", "unknown", "error", "jsonrpc", 200),
    ]
    for entry in records:
        assert entry["request_id"] == "req-mcp" and entry["source"] == "http"
        assert entry["job_records_set_aside"] == 0 and isinstance(entry["latency_ms"], float)
    assert records[1]["s3_requests"] >= 1
    text = json.dumps(records) + caplog.text
    for private in (SECRET, "private-name", "/memories", "carol", token, LOCAL_KEY_B64):
        assert private not in text
