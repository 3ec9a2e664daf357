"""``s3memory mcp --transport http``: the memory tool over MCP's streamable HTTP transport, each request's
user the subject of its verified bearer token, to the official ``mcp`` client.

The servers run in this process (uvicorn on a thread, on a socket bound to a free port of 127.0.0.1)
with the ``S3MEMORY_*`` settings pointed at moto's S3 server, trusting the loopback issuer
(``support/issuer.py``) the Lambda tests use; the library reads and writes the same store. The command
itself, served by a process of its own, is ``slow`` (marked there, kind ``mcp``).
"""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
import uvicorn
from anyio.from_thread import start_blocking_portal
from mcp import Client
from mcp.client.streamable_http import streamable_http_client
from mcp.server.auth.middleware.auth_context import get_access_token
from mcp.server.auth.provider import AccessToken, principal_components
from mcp.shared.exceptions import MCPError
from starlette.applications import Starlette

from s3memory.assembly import make_store
from s3memory.cli import main as cli
from s3memory.core.paths import UserId, memory_path
from s3memory.edge.answers import answer
from s3memory.edge.tokens import TokenVerifier
from s3memory.mcp.connections import uvicorn_options
from s3memory.mcp.http import http_app, memories_of, metadata_url
from s3memory.mcp.limits import DEFAULT_LIMITS, EdgeLimits
from s3memory.mcp.schema import MCP_ACTOR
from s3memory.mounts import Caller, UserMemory
from s3memory.settings import Settings
from tests.support.issuer import REFUSED_TOKENS, Issuer, loopback_issuer
from tests.support.mcp_messages import INITIALIZE, tools_call
from tests.support.mcp_servers import (
    AWS_TEST_ENVIRONMENT,
    CALL_TIMEOUT_SECONDS,
    McpClient,
    directory,
    http_command,
    library,
    ok,
    store_environment_named,
)

BUCKET = "mcp-http-test-memory"
START_TIMEOUT_SECONDS = 30


# -- the store, the issuer and the servers ---------------------------------------------------------


@pytest.fixture(scope="module")
def store_environment(moto_endpoint_with_bucket: str) -> dict[str, str]:
    """The ``S3MEMORY_*`` settings of a store of this module's own (a prefix no other module uses)."""
    return store_environment_named(moto_endpoint_with_bucket, BUCKET, "mcp-http")


@pytest.fixture(scope="module")
def issuer() -> Iterator[Issuer]:
    with loopback_issuer() as served:
        yield served


def settings_of(environment: dict[str, str]) -> Settings:
    return Settings.from_env({**AWS_TEST_ENVIRONMENT, **environment})


def authenticated_app(
    environment: dict[str, str], limits: EdgeLimits = DEFAULT_LIMITS
) -> Callable[[str], Starlette]:
    """The app ``s3memory mcp --transport http`` serves with these settings (and ``limits``), for its
    resource URL."""
    settings = settings_of(environment)
    assert settings.edge.tokens is not None
    verifier = TokenVerifier(settings.edge.tokens)
    memories = memories_of(make_store(settings), settings)
    return lambda resource: http_app(
        memories, host="127.0.0.1", resource=resource, verifier=verifier, limits=limits
    )


@contextlib.contextmanager
def served(app_of: Callable[[str], Starlette], limits: EdgeLimits = DEFAULT_LIMITS) -> Iterator[str]:
    """The app served by uvicorn on a free port of 127.0.0.1 while the block runs, as the command
    serves it (its connections within ``limits``): its ``/mcp`` URL. uvicorn runs on a daemon thread,
    so the server ends with the test run however it ends."""
    listening = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listening.bind(("127.0.0.1", 0))
    url = f"http://127.0.0.1:{listening.getsockname()[1]}/mcp"
    config = uvicorn.Config(app_of(url), **uvicorn_options(limits))
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [listening]}, daemon=True)
    thread.start()
    try:
        deadline = time.monotonic() + START_TIMEOUT_SECONDS
        while not server.started:
            assert thread.is_alive() and time.monotonic() < deadline, "the server did not start"
            time.sleep(0.02)
        yield url
    finally:
        server.should_exit = True
        thread.join(START_TIMEOUT_SECONDS)
        listening.close()


@pytest.fixture(scope="module")
def server(store_environment: dict[str, str], issuer: Issuer) -> Iterator[str]:
    """The module's server, trusting the issuer: its ``/mcp`` URL."""
    with served(authenticated_app({**store_environment, **issuer.environ()})) as url:
        yield url


@contextlib.contextmanager
def connected(url: str, token: str | None) -> Iterator[McpClient]:
    """The official client over streamable HTTP, sending ``Authorization: Bearer <token>``."""
    headers = {} if token is None else {"Authorization": f"Bearer {token}"}
    with start_blocking_portal() as portal:
        http = httpx2.AsyncClient(headers=headers, timeout=CALL_TIMEOUT_SECONDS)
        with portal.wrap_async_context_manager(http):
            client = Client(
                streamable_http_client(url, http_client=http), read_timeout_seconds=CALL_TIMEOUT_SECONDS
            )
            with portal.wrap_async_context_manager(client):
                yield McpClient(portal, client, None)


@pytest.fixture(scope="module")
def alice(server: str, issuer: Issuer) -> Iterator[McpClient]:
    with connected(server, issuer.token("alice")) as client:
        yield client


@pytest.fixture(scope="module")
def bob(server: str, issuer: Issuer) -> Iterator[McpClient]:
    with connected(server, issuer.token("bob")) as client:
        yield client


def post(url: str, body: object, token: str | None = None) -> tuple[int, dict[str, str], dict[str, Any]]:
    """A raw POST of a JSON-RPC message: the status, the headers (lower-cased) and the JSON body."""
    headers = {"content-type": "application/json", "accept": "application/json, text/event-stream"}
    if token is not None:
        headers["authorization"] = f"Bearer {token}"
    request = urllib.request.Request(url, json.dumps(body).encode(), headers, method="POST")
    try:
        with urllib.request.urlopen(request, timeout=CALL_TIMEOUT_SECONDS) as response:
            status, got, raw = response.status, response.headers, response.read()
    except urllib.error.HTTPError as refused:
        status, got, raw = refused.code, refused.headers, refused.read()
    return status, {name.lower(): value for name, value in got.items()}, json.loads(raw)


def get(url: str) -> tuple[int, dict[str, Any]]:
    with urllib.request.urlopen(url, timeout=CALL_TIMEOUT_SECONDS) as response:
        return response.status, json.loads(response.read())


def create_call(path: str) -> dict[str, Any]:
    return tools_call({"command": "create", "path": path, "file_text": "x"})


def origin(url: str) -> str:
    return url.removesuffix("/mcp")


# -- every command, over HTTP ----------------------------------------------------------------------


def test_every_command_runs_over_http_and_a_refusal_is_an_error_result(
    alice: McpClient, store_environment: dict[str, str]
) -> None:
    (tool,) = alice.list_tools()
    assert tool["name"] == "memory"
    home = directory()
    mirror = library(store_environment, "alice")
    assert ok(alice, command="create", path=f"{home}/a.txt", file_text="one\ntwo\n") == (
        f"File created successfully at: {home}/a.txt"
    )
    assert ok(alice, command="str_replace", path=f"{home}/a.txt", old_str="two", new_str="2") == (
        "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n"
        "     1\tone\n     2\t2"
    )
    assert ok(alice, command="insert", path=f"{home}/a.txt", insert_line=0, insert_text="zero") == (
        f"The file {home}/a.txt has been edited."
    )
    assert ok(alice, command="view", path=f"{home}/a.txt", view_range=[1, 2]) == (
        f"Here's the content of {home}/a.txt with line numbers:\n     1\tzero\n     2\tone"
    )
    assert ok(alice, command="rename", old_path=f"{home}/a.txt", new_path=f"{home}/b.txt") == (
        f"Successfully renamed {home}/a.txt to {home}/b.txt"
    )
    assert mirror.run({"command": "view", "path": f"{home}/b.txt"}).endswith(
        "     1\tzero\n     2\tone\n     3\t2"
    )
    assert ok(alice, command="delete", path=f"{home}/b.txt") == f"Successfully deleted {home}/b.txt"
    text, is_error = alice.call(command="view", path=f"{home}/b.txt")
    assert (text, is_error) == (answer(mirror, {"command": "view", "path": f"{home}/b.txt"}).text, True)
    assert text == f"The path {home}/b.txt does not exist. Please provide a valid path."


# -- the token: who the user is, and no command without one ----------------------------------------


def test_a_token_for_bob_never_reads_alices_memory_nor_alices_bobs(alice: McpClient, bob: McpClient) -> None:
    home = directory()
    ok(alice, command="create", path=f"{home}/alice.txt", file_text="alice's")
    ok(bob, command="create", path=f"{home}/bob.txt", file_text="bob's")
    for client, other in ((bob, "alice"), (alice, "bob")):
        assert client.call(command="view", path=f"{home}/{other}.txt") == (
            f"The path {home}/{other}.txt does not exist. Please provide a valid path.",
            True,
        )
    assert "bob.txt" not in ok(alice, command="view", path=home)
    assert "alice.txt" not in ok(bob, command="view", path=home)


def test_the_sdks_get_access_token_is_the_verified_token_while_a_command_runs(
    store_environment: dict[str, str], issuer: Issuer
) -> None:
    """The gate hands the SDK the token it verified, where the SDK's own middleware would:
    ``get_access_token()`` in the served call is that token, of its subject and issuer."""
    settings = settings_of({**store_environment, **issuer.environ()})
    assert settings.edge.tokens is not None
    verifier = TokenVerifier(settings.edge.tokens)
    memories = memories_of(make_store(settings), settings)
    seen: list[AccessToken | None] = []

    def memory_of(caller: Caller) -> UserMemory:
        seen.append(get_access_token())
        return memories(caller)

    def app_of(resource: str) -> Starlette:
        return http_app(memory_of, host="127.0.0.1", resource=resource, verifier=verifier)

    token = issuer.token("alice", client_id="claude")
    with served(app_of) as url, connected(url, token) as client:
        ok(client, command="view", path="/memories")
    assert len(seen) == 1 and seen[0] is not None
    assert (seen[0].token, principal_components(seen[0])) == (token, ("claude", issuer.url, "alice"))
    assert get_access_token() is None  # only while the request is served


def test_what_the_http_server_writes_the_library_reads_and_the_reverse(
    alice: McpClient, store_environment: dict[str, str]
) -> None:
    home = directory()
    mirror = library(store_environment, "alice")
    ok(alice, command="create", path=f"{home}/served.txt", file_text="from HTTP")
    assert mirror.run({"command": "view", "path": f"{home}/served.txt"}).endswith("     1\tfrom HTTP")
    found = mirror.placed.files.read(memory_path(f"{home}/served.txt"))
    assert found is not None and found.author == MCP_ACTOR
    mirror.run({"command": "create", "path": f"{home}/library.txt", "file_text": "from the library"})
    assert ok(alice, command="view", path=f"{home}/library.txt").endswith("     1\tfrom the library")


def test_without_a_token_the_answer_is_401_with_the_metadata_url_and_nothing_runs(
    server: str, store_environment: dict[str, str]
) -> None:
    path = f"{directory()}/never.txt"
    status, headers, body = post(server, create_call(path))
    assert status == 401
    assert headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url(server)}"'
    assert metadata_url(server) == f"{origin(server)}/.well-known/oauth-protected-resource/mcp"
    assert body == {
        "error_description": "Error: The request is not authenticated: it carries no bearer token."
    }
    text, is_error = answer(library(store_environment, "alice"), {"command": "view", "path": path})
    assert is_error and "does not exist" in text


@pytest.mark.parametrize("method", ["GET", "DELETE"])
def test_only_post_is_served_on_mcp(server: str, issuer: Issuer, method: str) -> None:
    """Stateless and JSON: no stream to open with GET, no session to end with DELETE."""
    headers = {"authorization": f"Bearer {issuer.token('alice')}", "accept": "text/event-stream"}
    request = urllib.request.Request(server, headers=headers, method=method)
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(request, timeout=CALL_TIMEOUT_SECONDS)
    assert (refused.value.code, refused.value.headers["allow"]) == (405, "POST")


def test_the_protected_resource_metadata_names_the_resource_the_issuer_and_the_header(
    server: str, issuer: Issuer
) -> None:
    expected = {
        "resource": server,
        "authorization_servers": [issuer.url],
        "bearer_methods_supported": ["header"],
    }
    for path in ("/.well-known/oauth-protected-resource/mcp", "/.well-known/oauth-protected-resource"):
        assert get(origin(server) + path) == (200, expected)


def test_behind_a_proxy_the_metadata_and_the_challenge_name_the_public_url(
    store_environment: dict[str, str], issuer: Issuer
) -> None:
    """``--url``: the URL clients reach ``/mcp`` at, where TLS ends in front of the server."""
    public = "https://memory.example.com/mcp"
    app = authenticated_app({**store_environment, **issuer.environ()})
    with served(lambda resource: app(public)) as url:
        assert get(f"{origin(url)}/.well-known/oauth-protected-resource/mcp") == (
            200,
            {
                "resource": public,
                "authorization_servers": [issuer.url],
                "bearer_methods_supported": ["header"],
            },
        )
        status, headers, _ = post(url, INITIALIZE)
    assert status == 401
    assert headers["www-authenticate"] == (
        'Bearer resource_metadata="https://memory.example.com/.well-known/oauth-protected-resource/mcp"'
    )


@pytest.mark.parametrize("refusal", REFUSED_TOKENS)
def test_a_refused_token_is_401_invalid_token_naming_the_cause_and_nothing_runs(
    server: str, issuer: Issuer, store_environment: dict[str, str], refusal: str
) -> None:
    token, cause = issuer.refused_token(refusal), REFUSED_TOKENS[refusal]
    path = f"{directory()}/never.txt"
    status, headers, body = post(server, create_call(path), token)
    assert status == 401
    assert headers["www-authenticate"] == (
        f'Bearer error="invalid_token", resource_metadata="{metadata_url(server)}"'
    )
    message = f"Error: The request's token is not valid: {cause}."
    assert body == {"error": "invalid_token", "error_description": message}
    assert token not in json.dumps(body) and "alice" not in json.dumps(body)
    text, is_error = answer(library(store_environment, "alice"), {"command": "view", "path": path})
    assert is_error and "does not exist" in text


def test_the_official_client_without_a_token_does_not_connect(server: str) -> None:
    with pytest.raises(ExceptionGroup) as caught, connected(server, None):
        pass  # pragma: no cover - the connection is refused
    assert caught.group_contains(MCPError, match=r"^Server returned an error response$")


def test_a_token_without_a_required_scope_is_403_and_the_metadata_lists_the_scopes(
    store_environment: dict[str, str], issuer: Issuer
) -> None:
    environment = {**store_environment, **issuer.environ(S3MEMORY_JWT_SCOPES="memory.write memory")}
    with served(authenticated_app(environment)) as url:
        status, document = get(f"{origin(url)}/.well-known/oauth-protected-resource/mcp")
        assert (status, document["scopes_supported"]) == (200, ["memory.write", "memory"])
        status, headers, body = post(url, INITIALIZE, issuer.token("alice", scope="profile"))
        assert status == 403
        assert headers["www-authenticate"] == (
            f'Bearer error="insufficient_scope", scope="memory.write memory", '
            f'resource_metadata="{metadata_url(url)}"'
        )
        assert body == {
            "error": "insufficient_scope",
            "error_description": "Error: The request's token lacks the scope this API requires "
            "(one of: memory.write memory).",
        }
        with connected(url, issuer.token("alice", scope="memory")) as client:
            assert client.call(command="view", path="/memories")[1] is False


def test_a_token_whose_subject_is_no_usable_user_id_is_403(server: str, issuer: Issuer) -> None:
    status, headers, body = post(server, INITIALIZE, issuer.token("../bob"))
    assert status == 403 and "www-authenticate" not in headers
    assert body["error_description"].startswith("Error: The token's subject is not a usable user id: ")
    assert "../bob" not in body["error_description"]


def test_a_token_whose_subject_is_a_reserved_user_id_is_403(server: str, issuer: Issuer) -> None:
    """Issue 37, S2: user ids beginning with ``s3memory.`` are reserved; a token's subject is too."""
    status, _, body = post(server, INITIALIZE, issuer.token("s3memory.notes"))
    assert (status, body["error_description"]) == (
        403,
        "Error: The token's subject is not a usable user id: user_id must not begin with 's3memory.', "
        "which names the store's own objects; choose another user id.",
    )


# -- without authentication: one user, on loopback only --------------------------------------------


def test_no_auth_serves_one_user_on_loopback_without_a_token(store_environment: dict[str, str]) -> None:
    settings = settings_of(store_environment)
    memories = memories_of(make_store(settings), settings)
    home = directory()

    def app_of(resource: str) -> Starlette:
        return http_app(memories, host="127.0.0.1", resource=resource, user=UserId("carol"))

    with served(app_of) as url, connected(url, None) as client:
        ok(client, command="create", path=f"{home}/carol.txt", file_text="carol's")
        with pytest.raises(urllib.error.HTTPError) as caught:
            get(f"{origin(url)}/.well-known/oauth-protected-resource")
        assert caught.value.code == 404  # no issuer to name
    assert (
        library(store_environment, "carol")
        .run({"command": "view", "path": f"{home}/carol.txt"})
        .endswith("     1\tcarol's")
    )


def test_on_loopback_a_web_pages_request_or_a_rebound_host_is_refused_and_runs_nothing(
    store_environment: dict[str, str],
) -> None:
    """A page in the operator's browser reaches a loopback port: its script's POST carries its
    ``Origin``, and a name it rebinds to 127.0.0.1 arrives as the ``Host``. On a loopback host the
    server takes only loopback ones (the MCP SDK's DNS-rebinding protection), before any command."""
    settings = settings_of(store_environment)
    memories = memories_of(make_store(settings), settings)
    home = directory()

    def app_of(resource: str) -> Starlette:
        return http_app(memories, host="127.0.0.1", resource=resource, user=UserId("dora"))

    def sent(url: str, headers: dict[str, str], path: str) -> tuple[int, bytes]:
        parts = urllib.parse.urlsplit(url)
        connection = http.client.HTTPConnection(
            parts.hostname or "", parts.port, timeout=CALL_TIMEOUT_SECONDS
        )
        try:
            body = json.dumps(create_call(path)).encode()
            connection.putrequest("POST", parts.path, skip_host=True)
            for name, value in {
                "content-type": "application/json",
                "accept": "application/json, text/event-stream",
                "content-length": str(len(body)),
                **headers,
            }.items():
                connection.putheader(name, value)
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, response.read()
        finally:
            connection.close()

    with served(app_of) as url:
        own = urllib.parse.urlsplit(url).netloc
        port = urllib.parse.urlsplit(url).port
        assert sent(url, {"host": own, "origin": "http://evil.example"}, f"{home}/page.txt") == (
            403,
            b"Invalid Origin header",
        )
        assert sent(url, {"host": f"evil.example:{port}"}, f"{home}/rebound.txt") == (
            421,
            b"Invalid Host header",
        )
        assert sent(url, {"host": own, "origin": f"http://{own}"}, f"{home}/own.txt")[0] == 200
    listing = library(store_environment, "dora").run({"command": "view", "path": home})
    assert "own.txt" in listing
    assert "page.txt" not in listing and "rebound.txt" not in listing


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (
            ["--no-auth", "--user", "alice", "--host", "0.0.0.0"],
            "--no-auth serves only on a loopback --host (127.0.0.1, ::1, localhost): anyone who reaches "
            "0.0.0.0 would read and change the memory without a token",
        ),
        (
            ["--no-auth", "--user", "alice", "--host", "192.168.1.10"],
            "--no-auth serves only on a loopback --host (127.0.0.1, ::1, localhost): anyone who reaches "
            "192.168.1.10 would read and change the memory without a token",
        ),
        (["--no-auth"], "--no-auth needs --user ID: the one user whose memory is served without a token"),
        (
            ["--user", "alice"],
            "--user is for --no-auth only: over HTTP each request's user is the subject of its verified token",
        ),
        (
            [],
            "S3MEMORY_JWT_ISSUER is required: each request's bearer token is verified against that issuer "
            "(docs/mcp.md); without tokens, only --no-auth --user ID on a loopback --host",
        ),
        (
            ["--url", "http://memory.example.com/mcp"],
            "--url must be an https:// URL (http:// only on a loopback address)",
        ),
        (["--port", "70000"], "--port must be between 1 and 65535"),
        (
            ["--host", "0.0.0.0"],
            "--url is required with a non-loopback --host: the https:// URL clients reach /mcp at (TLS "
            "ends in front of this server, which speaks plain http on 0.0.0.0)",
        ),
    ],
    ids=[
        "no-auth-on-any-address",
        "no-auth-on-a-lan-address",
        "no-auth-without-user",
        "user-with-tokens",
        "no-issuer",
        "plain-http-url",
        "bad-port",
        "lan-without-url",
    ],
)
def test_serving_is_refused_before_anything_is_served(
    store_environment: dict[str, str],
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    arguments: list[str],
    message: str,
) -> None:
    for name, value in {**AWS_TEST_ENVIRONMENT, **store_environment}.items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("S3MEMORY_JWT_ISSUER", raising=False)
    assert cli.main(["mcp", "--transport", "http", *arguments]) == 2
    assert capsys.readouterr().err == f"s3memory mcp --transport http: {message}\n"


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        (["--host", "0.0.0.0", "--user", "alice"], "--host only with --transport http"),
        (["--no-auth", "--user", "alice"], "--no-auth only with --transport http"),
        ([], "--user ID is required on stdio"),
    ],
)
def test_http_options_on_stdio_are_refused(
    capsys: pytest.CaptureFixture[str], arguments: list[str], message: str
) -> None:
    assert cli.main(["mcp", *arguments]) == 2
    assert capsys.readouterr().err == f"s3memory mcp: {message}\n"


# -- the command, in a process of its own (slow) ---------------------------------------------------


@pytest.mark.slow
@pytest.mark.mcp
def test_the_command_serves_over_http_until_stopped(
    store_environment: dict[str, str], issuer: Issuer, tmp_path: Path
) -> None:
    log = tmp_path / "server.log"
    environment = {**AWS_TEST_ENVIRONMENT, **store_environment, **issuer.environ(), "PATH": ""}
    with http_command(environment, log) as (url, _):
        home = directory()
        with connected(url, issuer.token("dave")) as client:
            ok(client, command="create", path=f"{home}/dave.txt", file_text="dave's")
        assert post(url, INITIALIZE)[0] == 401
    assert (
        library(store_environment, "dave")
        .run({"command": "view", "path": f"{home}/dave.txt"})
        .endswith("     1\tdave's")
    )
    listening = urllib.parse.urlsplit(url).netloc
    assert log.read_text() == f"s3memory mcp: serving {url} on {listening}\n"
