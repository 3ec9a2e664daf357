"""A loopback OpenID issuer: a discovery document and a JWK set over HTTP on 127.0.0.1, and tokens
signed with its RSA key (or with keys it does not publish, for attacks)."""

from __future__ import annotations

import base64
import json
import ssl
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import jwt
from cryptography.hazmat.primitives.asymmetric import rsa

AUDIENCE = "s3memory-api"
KEY_ID = "key-1"
REFUSED_TOKENS = {
    "expired": "it has expired",
    "wrong-audience": "it is not meant for this API (audience)",
    "another-issuer": "it was issued by another issuer",
}
"""Tokens a verifier refuses (``Issuer.refused_token``), each with the cause its refusal names."""


def new_rsa_key() -> rsa.RSAPrivateKey:
    return rsa.generate_private_key(public_exponent=65537, key_size=2048)


class Issuer:
    """The issuer at ``url``; ``fetches`` counts the GETs of its key set, ``gets`` all its GETs."""

    def __init__(self, url: str) -> None:
        self.url = url
        self.key = new_rsa_key()
        self.key_id = KEY_ID
        self.fetches = 0
        self.gets = 0
        self.available = True

    def documents(self, path: str) -> dict[str, Any] | None:
        if path == "/.well-known/openid-configuration":
            return {"issuer": self.url, "jwks_uri": f"{self.url}/jwks.json"}
        if path == "/jwks.json":
            self.fetches += 1
            public = json.loads(jwt.algorithms.RSAAlgorithm.to_jwk(self.key.public_key()))
            return {"keys": [{**public, "kid": self.key_id, "use": "sig", "alg": "RS256"}]}
        return None

    def token(
        self,
        sub: object = "alice",
        *,
        key: Any = None,
        algorithm: str = "RS256",
        headers: dict[str, Any] | None = None,
        **claims: Any,
    ) -> str:
        """A token with the usual claims (``claims`` override them; a None value removes one)."""
        now = int(time.time())
        body = {"iss": self.url, "aud": AUDIENCE, "sub": sub, "iat": now, "exp": now + 600, **claims}
        body = {name: value for name, value in body.items() if value is not None}
        return jwt.encode(
            body,
            self.key if key is None else key,
            algorithm=algorithm,
            headers={"kid": self.key_id, **(headers or {})},
        )

    def refused_token(self, refusal: str) -> str:
        """alice's token refused for ``refusal`` (a key of ``REFUSED_TOKENS``)."""
        now = int(time.time())
        claims: dict[str, Any] = {
            "expired": {"exp": now - 3600, "iat": now - 7200},
            "wrong-audience": {"aud": "another-api"},
            "another-issuer": {"iss": "https://elsewhere.example"},
        }[refusal]
        return self.token("alice", **claims)

    def environ(self, **more: str) -> dict[str, str]:
        """The settings that make the HTTP edge trust this issuer."""
        return {"S3MEMORY_JWT_ISSUER": self.url, "S3MEMORY_JWT_AUDIENCE": AUDIENCE, **more}


@contextmanager
def loopback_issuer(tls: ssl.SSLContext | None = None) -> Iterator[Issuer]:
    """An ``Issuer`` served on 127.0.0.1 while the block runs (over TLS with the server context ``tls``)."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    if tls is not None:
        server.socket = tls.wrap_socket(server.socket, server_side=True)
    scheme = "http" if tls is None else "https"
    issuer = Issuer(f"{scheme}://127.0.0.1:{server.server_address[1]}")

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            issuer.gets += 1
            document = issuer.documents(self.path) if issuer.available else None
            body = json.dumps(document).encode() if document is not None else b"{}"
            self.send_response(200 if document is not None else 503)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *_: Any) -> None:
            pass

    server.RequestHandlerClass = Handler
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()


def http_event(
    body: object = None,
    *,
    token: str | None = None,
    claimed_sub: object = "alice",
    raw_body: str | None = None,
    base64_body: bool = False,
    route: str = "POST /memory",
    method: str | None = None,
    headers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """An HTTP API event (payload 2.0, as API Gateway sends it on the ``$default`` stage) of ``route``,
    whose authorizer context claims ``claimed_sub`` (the functions ignore that) and whose
    Authorization header carries ``token``; ``method`` is the request's (the route's unless told: an
    ``ANY`` route needs it), ``headers`` add to or replace its headers."""
    text = raw_body if raw_body is not None else ("" if body is None else json.dumps(body))
    if base64_body:
        text = base64.b64encode(text.encode("utf-8")).decode("ascii")
    claims = {} if claimed_sub is None else {"sub": claimed_sub}
    route_method, _, path = route.partition(" ")
    domain = "abc123.execute-api.us-east-1.amazonaws.com"
    sent = {"content-type": "application/json", "host": domain, "x-forwarded-proto": "https"}
    if token is not None:
        sent["authorization"] = f"Bearer {token}"
    sent.update(headers or {})
    return {
        "version": "2.0",
        "routeKey": route,
        "rawPath": path,
        "rawQueryString": "",
        "headers": sent,
        "requestContext": {
            "accountId": "123456789012",
            "apiId": "abc123",
            "domainName": domain,
            "domainPrefix": "abc123",
            "requestId": "api-req",
            "routeKey": route,
            "stage": "$default",
            "authorizer": {"jwt": {"claims": claims, "scopes": None}},
            "http": {
                "method": method or route_method,
                "path": path,
                "protocol": "HTTP/1.1",
                "sourceIp": "192.0.2.1",
                "userAgent": "test",
            },
        },
        "body": text,
        "isBase64Encoded": base64_body,
    }
