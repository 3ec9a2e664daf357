"""The token verifier's key cache, on a clock the test moves: how often the issuer is asked."""

from __future__ import annotations

import contextlib
import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import urlsplit

import pytest

from s3memory.edge import tokens as tokens_module
from s3memory.edge.tokens import (
    KEYS_LIFETIME_SECONDS,
    KEYS_MAX_AGE_SECONDS,
    REFETCH_AFTER_SECONDS,
    TokenVerifier,
    fetch_url,
)
from s3memory.errors import KeysUnavailable, TokenRefused
from s3memory.settings import TokenCheck
from tests.support.issuer import AUDIENCE, Issuer, new_rsa_key

ISSUER = "https://issuer.example"


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def verifier(issuer: Issuer, clock: Clock, fetched: list[str]) -> TokenVerifier:
    def fetch(url: str) -> bytes:
        fetched.append(urlsplit(url).path)
        document = issuer.documents(urlsplit(url).path) if issuer.available else None
        if document is None:
            raise KeysUnavailable("the issuer did not answer")
        return json.dumps(document).encode()

    return TokenVerifier(TokenCheck(ISSUER, (AUDIENCE,)), fetch, clock)


def test_keys_are_kept_an_hour_then_fetched_again() -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    assert tokens.subject(f"Bearer {issuer.token('alice')}") == "alice"
    assert fetched == ["/.well-known/openid-configuration", "/jwks.json"]
    clock.now += KEYS_LIFETIME_SECONDS - 1
    assert tokens.subject(issuer.token("bob")) == "bob"  # the Bearer prefix is optional, as for API Gateway
    assert fetched == ["/.well-known/openid-configuration", "/jwks.json"]
    clock.now += 1
    assert tokens.subject(issuer.token("carol")) == "carol"
    assert fetched[2:] == ["/jwks.json"]  # the discovery document is read once per container


def test_a_rotated_key_is_found_once_the_minute_has_passed() -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    assert tokens.subject(issuer.token()) == "alice"
    issuer.key, issuer.key_id = new_rsa_key(), "key-2"  # the issuer rotates its signing key
    rotated = issuer.token("dave")
    with pytest.raises(TokenRefused, match="signed by a key its issuer does not publish"):
        tokens.subject(rotated)
    assert fetched.count("/jwks.json") == 1  # fetched under a minute ago
    clock.now += REFETCH_AFTER_SECONDS
    assert tokens.subject(rotated) == "dave"
    assert fetched.count("/jwks.json") == 2


def test_while_the_issuer_is_down_known_keys_still_verify_and_it_is_asked_once_a_minute() -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    assert tokens.subject(issuer.token()) == "alice"
    issuer.available = False
    clock.now += KEYS_LIFETIME_SECONDS  # stale: a refresh is due, and fails
    for _ in range(3):
        assert tokens.subject(issuer.token()) == "alice"
    assert fetched.count("/jwks.json") == 2


def test_an_issuer_whose_discovery_names_another_issuer_is_not_trusted(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Refused, and logged once a fetch with the setting to check (helper-37: a trailing '/' in the
    setting answered every request 503, and nothing told the operator why)."""
    issuer, clock, fetched = Issuer("https://impostor.example"), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    with pytest.raises(KeysUnavailable, match="names another issuer"):
        tokens.subject(issuer.token())
    with pytest.raises(KeysUnavailable, match="next try is within a minute"):
        tokens.subject(issuer.token())
    assert fetched == ["/.well-known/openid-configuration"]
    assert [record.getMessage() for record in caplog.records if record.name == "s3memory.tokens"] == [
        "s3memory: no request's token can be checked: the issuer's discovery document names another issuer. "
        f"Check S3MEMORY_JWT_ISSUER ({ISSUER}): it must be the tokens' `iss` exactly (a trailing '/' included), "
        "reachable from here"
    ]


@pytest.mark.parametrize(
    ("authorization", "status", "message"),
    [
        (None, 401, "Error: The request is not authenticated: it carries no bearer token."),
        ("  ", 401, "Error: The request is not authenticated: it carries no bearer token."),
        (7, 401, "Error: The request is not authenticated: it carries no bearer token."),
        (
            "Bearer " + "a" * 20_000,
            401,
            "Error: The request's token is not valid: it is longer than 16,384 characters.",
        ),
    ],
)
def test_what_is_not_a_token(authorization: object, status: int, message: str) -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    with pytest.raises(TokenRefused) as refused:
        verifier(issuer, clock, fetched).subject(authorization)
    assert (refused.value.status, refused.value.message) == (status, message)
    assert fetched == []  # refused before the issuer is asked


def test_known_keys_serve_two_hours_at_most_while_the_issuer_is_down() -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    assert tokens.subject(issuer.token()) == "alice"
    issuer.available = False
    clock.now += KEYS_MAX_AGE_SECONDS - 1
    assert tokens.subject(issuer.token()) == "alice"
    clock.now += 1
    with pytest.raises(KeysUnavailable, match="could not be fetched lately"):
        tokens.subject(issuer.token())


def test_the_audience_is_aud_when_the_token_has_one_else_client_id() -> None:
    """As API Gateway reads it: a token for another API carries ``aud``, whatever its ``client_id``."""
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    for token in (
        issuer.token(aud="https://other-api.example", client_id=AUDIENCE),
        issuer.token(aud=["https://other-api.example"], client_id=AUDIENCE),
        issuer.token(aud=None, client_id="another-client"),
    ):
        with pytest.raises(TokenRefused, match=r"not meant for this API \(audience\)"):
            tokens.subject(token)
    assert tokens.subject(issuer.token(aud=["x", AUDIENCE])) == "alice"
    assert tokens.subject(issuer.token(aud=None, client_id=AUDIENCE)) == "alice"


def test_a_malformed_entry_of_the_key_set_is_skipped() -> None:
    issuer, clock, fetched = Issuer(ISSUER), Clock(), []
    served = issuer.documents

    def with_junk(path: str) -> dict[str, Any] | None:
        document = served(path)
        if path == "/jwks.json" and document is not None:
            junk: list[Any] = [{"kty": ["RSA"]}, {"kty": {"x": 1}}, "key", {"kty": "oct", "k": "c2VjcmV0"}]
            document["keys"] = junk + document["keys"]
        return document

    issuer.documents = with_junk  # type: ignore[method-assign]
    assert verifier(issuer, clock, fetched).subject(issuer.token()) == "alice"


@contextlib.contextmanager
def serving(handler: type[BaseHTTPRequestHandler]) -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_a_fetch_ends_at_its_deadline_however_slowly_the_issuer_sends(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each read has a socket timeout; an issuer that sends a byte at a time within it must not hold
    the invocation until the Lambda timeout."""
    monkeypatch.setattr(tokens_module, "FETCH_TIMEOUT_SECONDS", 1.0)

    class Dripping(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(200)
            self.send_header("content-length", "100")
            self.end_headers()
            with contextlib.suppress(OSError):
                for _ in range(100):
                    self.wfile.write(b" ")
                    self.wfile.flush()
                    time.sleep(0.1)

        def log_message(self, *_: Any) -> None:
            pass

    with serving(Dripping) as url:
        started = time.monotonic()
        with pytest.raises(KeysUnavailable, match="did not answer within 1 s"):
            fetch_url(url + "/jwks.json")
        assert time.monotonic() - started < 3  # the drip alone would take 10 s


def test_a_fetch_follows_no_redirect_away_from_https() -> None:
    class Redirecting(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.send_response(302)
            self.send_header("location", "http://issuer.example/jwks.json")
            self.send_header("content-length", "0")
            self.end_headers()

        def log_message(self, *_: Any) -> None:
            pass

    with (
        serving(Redirecting) as url,
        pytest.raises(KeysUnavailable, match="redirected to a URL that is not https"),
    ):
        fetch_url(url + "/jwks.json")
