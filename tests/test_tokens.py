"""The token verifier's key cache, on a clock the test moves: how often the issuer is asked."""

from __future__ import annotations

import json
from urllib.parse import urlsplit

import pytest

from s3memory.aws_lambda.tokens import (
    KEYS_LIFETIME_SECONDS,
    REFETCH_AFTER_SECONDS,
    KeysUnavailable,
    TokenRefused,
    TokenVerifier,
)
from s3memory.settings import TokenCheck

from .support.issuer import AUDIENCE, Issuer, new_rsa_key

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


def test_an_issuer_whose_discovery_names_another_issuer_is_not_trusted() -> None:
    issuer, clock, fetched = Issuer("https://impostor.example"), Clock(), []
    tokens = verifier(issuer, clock, fetched)
    with pytest.raises(KeysUnavailable, match="names another issuer"):
        tokens.subject(issuer.token())
    with pytest.raises(KeysUnavailable, match="next try is within a minute"):
        tokens.subject(issuer.token())
    assert fetched == ["/.well-known/openid-configuration"]


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
