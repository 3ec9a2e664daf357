"""``s3memory mcp --transport http``: the MCP server on the SDK's streamable HTTP transport, at ``/mcp``,
stateless and with JSON responses (no session, no SSE stream), served by uvicorn, for every user whose
bearer token verifies.

Each request's ``Authorization`` token is verified before the SDK sees the request, exactly as the memory
Lambda function verifies it (``s3memory/edge/tokens.py``: the issuer's signing keys, the signature, ``iss``,
``exp``, an audience, a required scope, from the ``S3MEMORY_JWT_*`` settings), and the user is the
token's subject checked as a ``UserId``, never a name in the request. Without a valid token the answer
is 401 with ``WWW-Authenticate: Bearer resource_metadata="<url>"`` (and ``error="invalid_token"`` when a
token was given but refused), 403 for a token without a required scope, 503 while the issuer's keys
cannot be fetched; no command runs. The refusal names the cause, never the token or the user. The OAuth
protected-resource metadata (RFC 9728) is served at ``/.well-known/oauth-protected-resource`` and its
form suffixed with ``/mcp``.

One ``S3Memory`` per user is shared by that user's requests, the least recently used dropped beyond
``memories.WARM_USERS``, as a warm Lambda container keeps them (``memories.Memories``). Unauthenticated serving (``--no-auth --user
ID``) serves that one user, and only on a loopback host.

The verified token is carried the SDK's way (its ``AccessToken``, read by ``get_access_token()``); the
gate is our own, because the SDK's verifier answers a token or nothing: its gate cannot answer 503 with
``Retry-After`` while the issuer's keys cannot be fetched, nor grant mounts per claim (docs/mcp.md,
"Why the gate is our own").
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

import anyio.to_thread
from mcp.server.auth.handlers.metadata import ProtectedResourceMetadataHandler
from mcp.server.auth.middleware.auth_context import AuthContextMiddleware, auth_context_var
from mcp.server.auth.middleware.bearer_auth import AuthenticatedUser
from mcp.server.auth.provider import AccessToken
from mcp.server.auth.routes import cors_middleware
from mcp.server.streamable_http_manager import StreamableHTTPASGIApp, StreamableHTTPSessionManager
from mcp.server.transport_security import DEFAULT_MAX_REQUEST_BODY_SIZE, TransportSecuritySettings
from mcp.shared.auth import ProtectedResourceMetadata
from starlette.applications import Starlette
from starlette.datastructures import Headers
from starlette.middleware import Middleware
from starlette.routing import Route

from s3memory.assembly import make_store
from s3memory.core.paths import UserId
from s3memory.edge.tokens import TokenVerifier, Verified
from s3memory.errors import KeysUnavailable, TokenRefused
from s3memory.mcp import DEFAULT_MCP_HOST, DEFAULT_MCP_PORT, EXIT_SERVED, EXIT_USAGE
from s3memory.mcp.limits import DEFAULT_LIMITS, Admission, EdgeGuard, EdgeLimits, body_bound
from s3memory.mcp.schema import MCP_ACTOR
from s3memory.mcp.server import build_server
from s3memory.memories import Memories
from s3memory.memory import S3Memory
from s3memory.mounts import Caller, Grant, UserMemory, granted, with_mounts
from s3memory.settings import JWT_ISSUER, Settings, SettingsError, secure_url

if TYPE_CHECKING:
    from starlette.types import ASGIApp, Receive, Scope, Send

    from s3memory.store import Store

MCP_PATH = "/mcp"
METADATA_PATH = "/.well-known/oauth-protected-resource"
LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
"""The hosts ``--no-auth`` may serve on (those ``settings.secure_url`` lets speak plain http)."""
KEYS_RETRY_AFTER_SECONDS = 60
"""The ``Retry-After`` of a 503: the verifier fetches the issuer's keys again at most once a minute."""

MemoryOf = Callable[[Caller], UserMemory]
"""The memory of a caller the gate let in: the user's, with the mounts its token was granted."""


class VerifiedUser(AuthenticatedUser):
    """The SDK's user of a request whose token verified: its ``AccessToken`` (the principal the SDK's
    transport compares, and the claims; no scopes: the verifier checked them), and the caller the
    token makes (its subject, its mounts)."""

    def __init__(self, authorization: str, verified: Verified, caller: Caller) -> None:
        claims = verified.claims
        client = str(claims.get("client_id", claims.get("azp", "")))
        token = authorization.split()[-1]  # verified: "Bearer <token>" or "<token>"
        super().__init__(
            AccessToken(token=token, client_id=client, scopes=[], subject=caller.user, claims=claims)
        )
        self.caller = caller


def request_caller() -> Caller:
    """Who the gate let in for the request being served (the SDK's authenticated user of it)."""
    user = auth_context_var.get()
    if not isinstance(user, VerifiedUser):  # pragma: no cover - every request to /mcp passes the gate
        raise LookupError("the request has no verified user")
    return user.caller


def memories_of(store: Store, settings: Settings) -> MemoryOf:
    """``memory_of`` for every user of ``store``: one ``S3Memory`` per user and per shared memory
    (``memories.Memories``), the caller's with its mounts mounted, its writes by ``mcp``."""
    options = settings.limits.memory_options()
    memories = Memories(lambda owner: S3Memory(store, owner, **options))
    return lambda caller: with_mounts(memories(caller.user).acting_as(MCP_ACTOR), caller.mounts, memories)


def metadata_url(resource: str) -> str:
    """Where the protected-resource metadata of ``resource`` is (RFC 9728 section 3.1)."""
    parts = urlsplit(resource)
    path = "" if parts.path in ("", "/") else parts.path
    return f"{parts.scheme}://{parts.netloc}{METADATA_PATH}{path}"


def _quoted(value: str) -> str:
    return value.replace("\\", "\\\\").replace('"', '\\"')


async def _refuse(
    send: Send, status: int, message: str, *, error: str | None = None, challenge: list[str] | None = None
) -> None:
    """Answer ``status`` with ``message`` (and the OAuth ``error``), and with ``challenge`` as the
    ``WWW-Authenticate: Bearer`` parameters."""
    body = json.dumps({**({"error": error} if error else {}), "error_description": message}).encode()
    headers = [(b"content-type", b"application/json"), (b"content-length", str(len(body)).encode())]
    if challenge is not None:
        headers.append((b"www-authenticate", ("Bearer " + ", ".join(challenge)).encode()))
    if status == 503:
        headers.append((b"retry-after", str(KEYS_RETRY_AFTER_SECONDS).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})


class TokenGate:
    """The ASGI app in front of ``/mcp``: lets a request through only with a verified bearer token,
    as the token's subject, with the mounts its claims are ``grants``ed (``request_caller``). Our own,
    not the SDK's ``RequireAuthMiddleware``: see the module's docstring."""

    def __init__(
        self, app: ASGIApp, verifier: TokenVerifier, resource: str, grants: tuple[Grant, ...] = ()
    ) -> None:
        self.app = app
        self.verifier = verifier
        self.grants = grants
        self.metadata = f'resource_metadata="{_quoted(metadata_url(resource))}"'

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        authorization = Headers(scope=scope).get("authorization")
        given = authorization is not None and authorization.strip() != ""
        try:
            # The first token fetches the issuer's keys (at most 5 s): off the event loop.
            verified = await anyio.to_thread.run_sync(self.verifier.verified, authorization)
        except TokenRefused as refusal:
            if refusal.status == 401:
                error = "invalid_token" if given else None
                challenge = [f'error="{error}"', self.metadata] if error else [self.metadata]
            else:
                error = "insufficient_scope"
                scopes = " ".join(self.verifier.check.scopes)
                challenge = [f'error="{error}"', f'scope="{_quoted(scopes)}"', self.metadata]
            await _refuse(send, refusal.status, refusal.message, error=error, challenge=challenge)
            return
        except KeysUnavailable as unavailable:
            message = f"Error: The request's token could not be checked: {unavailable}. Try again later."
            await _refuse(send, 503, message)
            return
        try:
            user = UserId(verified.subject)  # the request's one check of its user id
        except ValueError as refusal:
            message = f"Error: The token's subject is not a usable user id: {refusal}."
            await _refuse(send, 403, message)
            return
        caller = Caller(user, granted(self.grants, verified.claims, user, MCP_ACTOR))
        assert authorization is not None  # it verified
        # Where Starlette's AuthenticationMiddleware puts it; the SDK's AuthContextMiddleware, inside,
        # sets it for get_access_token() (the SDK serves the request in tasks that see it).
        scope["user"] = VerifiedUser(authorization, verified, caller)
        await self.app(scope, receive, send)


def default_resource(host: str, port: int) -> str:
    """The URL of ``/mcp`` as a client on this machine reaches it."""
    return f"http://{f'[{host}]' if ':' in host else host}:{port}{MCP_PATH}"


def http_app(
    memory_of: MemoryOf,
    *,
    host: str,
    resource: str,
    verifier: TokenVerifier | None = None,
    grants: tuple[Grant, ...] = (),
    user: UserId | None = None,
    limits: EdgeLimits | None = DEFAULT_LIMITS,
) -> Starlette:
    """The ASGI app: ``/mcp`` behind a ``TokenGate`` (``verifier``, the mounts of ``grants``) with the
    protected-resource metadata of ``resource``, or, with ``user`` instead, every request ``user``'s
    without authentication (and without mounts). Every request within ``limits`` (``limits.py``;
    None: none but the SDK's, for a caller that bounds requests itself, as API Gateway does)."""
    if (verifier is None) == (user is None):
        raise ValueError("http_app serves with a token verifier, or one user without authentication")
    one = None if user is None else Caller(user)

    def caller() -> Caller:
        return request_caller() if one is None else one

    security = None
    if host in LOOPBACK_HOSTS:
        # As the SDK's own apps on a loopback host: no page elsewhere may reach it (DNS rebinding).
        named = urlsplit(resource).netloc
        security = TransportSecuritySettings(
            allowed_hosts=["127.0.0.1:*", "localhost:*", "[::1]:*", named],
            allowed_origins=["http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*"],
        )
    manager = StreamableHTTPSessionManager(
        build_server(lambda: memory_of(caller())),
        json_response=True,
        stateless=True,
        security_settings=security,
        max_request_body_size=DEFAULT_MAX_REQUEST_BODY_SIZE if limits is None else limits.max_body_bytes,
    )
    endpoint: ASGIApp = StreamableHTTPASGIApp(manager)
    if limits is not None:
        endpoint = Admission(endpoint, limits, lambda: caller().user)
    routes = []
    if verifier is not None:
        endpoint = TokenGate(AuthContextMiddleware(endpoint), verifier, resource, grants)
        check = verifier.check
        metadata = ProtectedResourceMetadata.model_validate(
            {
                "resource": resource,
                "authorization_servers": [check.issuer],
                "scopes_supported": list(check.scopes) or None,
                "bearer_methods_supported": ["header"],
            }
        )
        document = cors_middleware(ProtectedResourceMetadataHandler(metadata).handle, ["GET", "OPTIONS"])
        paths = dict.fromkeys(
            [METADATA_PATH, METADATA_PATH + MCP_PATH, urlsplit(metadata_url(resource)).path]
        )
        routes += [Route(path, endpoint=document, methods=["GET", "OPTIONS"]) for path in paths]
    # Stateless and JSON: no stream to open with GET, no session to end with DELETE (405, as the
    # transport allows for both).
    routes.append(Route(MCP_PATH, endpoint=endpoint, methods=["POST"]))
    middleware = [] if limits is None else [Middleware(EdgeGuard, limits=limits)]
    return Starlette(routes=routes, middleware=middleware, lifespan=lambda app: manager.run())


def _refused(message: str) -> int:
    print(f"s3memory mcp --transport http: {message}", file=sys.stderr)
    return EXIT_USAGE


def http_main(
    *,
    host: str = DEFAULT_MCP_HOST,
    port: int = DEFAULT_MCP_PORT,
    url: str | None = None,
    no_auth: bool = False,
    user_id: str | None = None,
    check: bool = True,
) -> int:
    """``s3memory mcp --transport http``: serve until interrupted, once the bucket and the key answer
    (``startup.py``; not ``check``: at once); the exit status (2: refused before anything is served,
    with a message that names no key, token or user id)."""
    if no_auth and host not in LOOPBACK_HOSTS:
        return _refused(
            f"--no-auth serves only on a loopback --host ({', '.join(sorted(LOOPBACK_HOSTS))}): anyone who "
            f"reaches {host} would read and change the memory without a token"
        )
    if no_auth and user_id is None:
        return _refused("--no-auth needs --user ID: the one user whose memory is served without a token")
    if not no_auth and user_id is not None:
        return _refused(
            "--user is for --no-auth only: over HTTP each request's user is the subject of its verified token"
        )
    if not 0 < port < 65536:
        return _refused("--port must be between 1 and 65535")
    if url is None and host not in LOOPBACK_HOSTS:
        return _refused(
            f"--url is required with a non-loopback --host: the https:// URL clients reach /mcp at (TLS "
            f"ends in front of this server, which speaks plain http on {host})"
        )
    resource = default_resource(host, port) if url is None else url
    if not secure_url(resource):
        return _refused("--url must be an https:// URL (http:// only on a loopback address)")
    try:
        settings = Settings.from_env(os.environ)
    except SettingsError as error:
        return _refused(str(error))
    try:
        user = None if user_id is None else UserId(user_id)
    except ValueError as error:
        return _refused(f"the user id of --user is refused: {error}")
    tokens = settings.edge.tokens
    if not no_auth and tokens is None:
        return _refused(
            f"{JWT_ISSUER} is required: each request's bearer token is verified against that issuer "
            "(docs/mcp.md); without tokens, only --no-auth --user ID on a loopback --host"
        )
    import uvicorn

    from s3memory.mcp.connections import raise_open_file_limit, uvicorn_options, within_open_files
    from s3memory.mcp.startup import unusable

    limits = EdgeLimits(max_body_bytes=body_bound(settings.limits.max_file_bytes))
    limits = within_open_files(limits, raise_open_file_limit())
    verifier = None if tokens is None or no_auth else TokenVerifier(tokens)
    try:
        store = make_store(settings)
    except SettingsError as error:
        return _refused(str(error))
    reason = unusable(settings) if check else None
    if reason is not None:
        return _refused(reason)
    memories = memories_of(store, settings)
    grants = settings.edge.grants
    app = http_app(
        memories, host=host, resource=resource, verifier=verifier, grants=grants, user=user, limits=limits
    )
    print(f"s3memory mcp: serving {resource} on {host}:{port}", file=sys.stderr)
    uvicorn.run(app, host=host, port=port, **uvicorn_options(limits))
    return EXIT_SERVED
