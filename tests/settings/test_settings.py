"""The settings for limits, for the edge and for local master key versions: each one's good values, its
default, and bad values that name the variable (the other storage settings are tested in
test_lambda_memory.py)."""

from __future__ import annotations

import base64

import pytest

from s3memory.assembly import make_key_provider
from s3memory.core.guard import ContentGuard
from s3memory.core.quota import Quota
from s3memory.crypto import (
    KeyOwner,
    KeyProvider,
    LocalKeyProvider,
    ObjectCipher,
    sealed_version,
)
from s3memory.errors import IntegrityError
from s3memory.memory import DEFAULT_GUARD
from s3memory.settings import Edge, Limits, Settings, SettingsError, TokenCheck, secure_url
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY
from tests.support.ciphers import local_cipher

BASE = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}


def settings(**environ: str) -> Settings:
    return Settings.from_env({**BASE, **environ})


def refusal(**environ: str) -> str:
    with pytest.raises(SettingsError) as raised:
        settings(**environ)
    return str(raised.value)


def test_defaults_limit_nothing_but_file_size_and_secrets() -> None:
    defaults = settings()
    assert defaults.limits == Limits(quota=None, guard_mode="refuse", max_file_bytes=1024 * 1024)
    assert defaults.edge == Edge(direct_invocation=True, tokens=None)
    assert defaults.limits.memory_options() == {
        "quota": None,
        "content_guard": DEFAULT_GUARD,
        "max_file_bytes": 1024 * 1024,
    }


@pytest.mark.parametrize(
    ("environ", "quota"),
    [
        ({"S3MEMORY_QUOTA_BYTES": "1000"}, Quota(max_bytes=1000)),
        ({"S3MEMORY_QUOTA_FILES": "20"}, Quota(max_files=20)),
        ({"S3MEMORY_QUOTA_BYTES": " 5000 ", "S3MEMORY_QUOTA_FILES": "1"}, Quota(5000, 1)),
        ({"S3MEMORY_QUOTA_BYTES": "", "S3MEMORY_QUOTA_FILES": "  "}, None),
        ({"S3MEMORY_QUOTA_FILES": "1000000000000000"}, Quota(max_files=10**15)),
    ],
)
def test_quota(environ: dict[str, str], quota: Quota | None) -> None:
    assert settings(**environ).limits.quota == quota


@pytest.mark.parametrize(
    "variable", ["S3MEMORY_QUOTA_BYTES", "S3MEMORY_QUOTA_FILES", "S3MEMORY_MAX_FILE_BYTES"]
)
@pytest.mark.parametrize("value", ["0", "-1", "1.5", "ten", "1e6", "١٢", "9" * 5000])
def test_whole_numbers_refuse_anything_else_and_name_the_variable(variable: str, value: str) -> None:
    message = refusal(**{variable: value})
    assert message.startswith(f"{variable} must be a whole number from 1 to ")


def test_the_upper_bounds() -> None:
    assert refusal(S3MEMORY_QUOTA_BYTES="1000000000000001") == (
        "S3MEMORY_QUOTA_BYTES must be a whole number from 1 to 1,000,000,000,000,000"
    )
    assert refusal(S3MEMORY_MAX_FILE_BYTES="4194305") == (
        "S3MEMORY_MAX_FILE_BYTES must be a whole number from 1 to 4,194,304"
    )
    assert settings(S3MEMORY_MAX_FILE_BYTES="4194304").limits.max_file_bytes == 4194304


@pytest.mark.parametrize(("value", "mode"), [("refuse", "refuse"), ("REDACT", "redact"), (" off ", "off")])
def test_guard_modes(value: str, mode: str) -> None:
    limits = settings(S3MEMORY_GUARD=value).limits
    assert limits.guard_mode == mode
    guard = limits.memory_options()["content_guard"]
    if mode == "off":
        assert guard is None
    else:
        assert isinstance(guard, ContentGuard) and guard.mode == mode


@pytest.mark.parametrize("value", ["block", "none", "refuse,redact", "0"])
def test_a_bad_guard_mode_is_named(value: str) -> None:
    assert refusal(S3MEMORY_GUARD=value) == "S3MEMORY_GUARD must be one of refuse, redact, off"


@pytest.mark.parametrize(("value", "allowed"), [("allow", True), ("Refuse", False), ("", True)])
def test_direct_invocation(value: str, allowed: bool) -> None:
    assert settings(S3MEMORY_DIRECT_INVOCATION=value).edge.direct_invocation is allowed


def test_a_function_that_checks_tokens_refuses_direct_events_unless_told_otherwise() -> None:
    issuer = {"S3MEMORY_JWT_ISSUER": "https://issuer.example", "S3MEMORY_JWT_AUDIENCE": "api"}
    assert settings(**issuer).edge.direct_invocation is False
    assert settings(**issuer, S3MEMORY_DIRECT_INVOCATION="allow").edge.direct_invocation is True


@pytest.mark.parametrize("value", ["yes", "false", "deny"])
def test_a_bad_direct_invocation_is_named(value: str) -> None:
    assert (
        refusal(S3MEMORY_DIRECT_INVOCATION=value) == "S3MEMORY_DIRECT_INVOCATION must be one of allow, refuse"
    )


def test_token_check() -> None:
    edge = settings(
        S3MEMORY_JWT_ISSUER="https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
        S3MEMORY_JWT_AUDIENCE="client-a, client-b,client-a",
        S3MEMORY_JWT_SCOPES="memory/read  memory/write",
    ).edge
    assert edge.tokens == TokenCheck(
        "https://cognito-idp.eu-west-1.amazonaws.com/eu-west-1_abc",
        ("client-a", "client-b"),
        ("memory/read", "memory/write"),
    )
    trailing = settings(S3MEMORY_JWT_ISSUER="https://tenant.auth0.com/", S3MEMORY_JWT_AUDIENCE="api").edge
    assert trailing.tokens is not None and trailing.tokens.issuer == "https://tenant.auth0.com/"
    loopback = settings(S3MEMORY_JWT_ISSUER="http://127.0.0.1:8080", S3MEMORY_JWT_AUDIENCE="api").edge
    assert loopback.tokens is not None and loopback.tokens.scopes == ()


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        (
            {"S3MEMORY_JWT_ISSUER": "http://issuer.example", "S3MEMORY_JWT_AUDIENCE": "api"},
            "S3MEMORY_JWT_ISSUER must be an https:// URL (http:// only on a loopback address)",
        ),
        (
            {"S3MEMORY_JWT_ISSUER": "https://issuer.example?x=1", "S3MEMORY_JWT_AUDIENCE": "api"},
            "S3MEMORY_JWT_ISSUER must be an https:// URL (http:// only on a loopback address)",
        ),
        (
            {"S3MEMORY_JWT_ISSUER": "issuer.example", "S3MEMORY_JWT_AUDIENCE": "api"},
            "S3MEMORY_JWT_ISSUER must be an https:// URL (http:// only on a loopback address)",
        ),
        (
            {"S3MEMORY_JWT_ISSUER": "https://issuer.example"},
            "S3MEMORY_JWT_AUDIENCE is required with S3MEMORY_JWT_ISSUER: the audiences a token may name",
        ),
        (
            {"S3MEMORY_JWT_ISSUER": "https://issuer.example", "S3MEMORY_JWT_AUDIENCE": " , "},
            "S3MEMORY_JWT_AUDIENCE is required with S3MEMORY_JWT_ISSUER: the audiences a token may name",
        ),
        (
            {"S3MEMORY_JWT_ISSUER": "https://issuer.example", "S3MEMORY_JWT_AUDIENCE": "a b"},
            "S3MEMORY_JWT_AUDIENCE must be audiences separated by commas, without spaces",
        ),
        (
            {"S3MEMORY_JWT_AUDIENCE": "api"},
            "S3MEMORY_JWT_AUDIENCE and S3MEMORY_JWT_SCOPES need S3MEMORY_JWT_ISSUER",
        ),
        (
            {"S3MEMORY_JWT_SCOPES": "x"},
            "S3MEMORY_JWT_AUDIENCE and S3MEMORY_JWT_SCOPES need S3MEMORY_JWT_ISSUER",
        ),
    ],
)
def test_bad_token_settings_are_named(environ: dict[str, str], message: str) -> None:
    assert refusal(**environ) == message


@pytest.mark.parametrize(
    ("url", "secure"),
    [
        ("https://issuer.example/.well-known/jwks.json", True),
        ("http://localhost:9000/jwks", True),
        ("http://issuer.example/jwks", False),
        ("https://", False),
        ("ftp://issuer.example", False),
        ("https://issuer.example/a b", False),
        (None, False),
    ],
)
def test_secure_urls(url: object, secure: bool) -> None:
    assert secure_url(url) is secure


def test_changed_limits_are_changed_settings() -> None:
    """The container's runtime is rebuilt when its settings change: limits are part of them."""
    assert settings(S3MEMORY_QUOTA_FILES="5") != settings(S3MEMORY_QUOTA_FILES="6")
    assert settings(S3MEMORY_GUARD="off") != settings()
    assert settings(S3MEMORY_DIRECT_INVOCATION="refuse") != settings()


NEW_KEY = bytes(range(100, 132))
NEW_KEY_B64 = base64.b64encode(NEW_KEY).decode("ascii")
OTHER_B64 = base64.b64encode(bytes(range(200, 232))).decode("ascii")


def sealer(provider: KeyProvider) -> ObjectCipher:
    return local_cipher(provider, KeyOwner("alice"))


def test_a_new_local_master_key_seals_and_the_previous_ones_still_open() -> None:
    old = settings()
    assert (old.local_key_version, old.previous_local_keys) == (1, ())
    new = settings(
        S3MEMORY_LOCAL_KEY=NEW_KEY_B64,
        S3MEMORY_LOCAL_KEY_VERSION=" 3 ",
        S3MEMORY_PREVIOUS_LOCAL_KEYS=f"1:{LOCAL_KEY_B64}, 2:{OTHER_B64} ,",
    )
    assert (new.local_key, new.local_key_version) == (NEW_KEY, 3)
    assert [version for version, _ in new.previous_local_keys] == [1, 2]
    assert NEW_KEY_B64 not in repr(new) and LOCAL_KEY_B64 not in repr(new)
    provider = make_key_provider(new)
    assert isinstance(provider, LocalKeyProvider)
    assert (provider.version, provider.previous_versions) == (3, [1, 2])
    written_before = sealer(make_key_provider(old)).seal("/memories/a.md", b"kept")
    assert sealer(provider).open("/memories/a.md", written_before) == b"kept"
    written_after = sealer(provider).seal("/memories/a.md", b"new")
    assert sealed_version(written_after) == 3
    with pytest.raises(IntegrityError, match="names data key version 3"):
        sealer(LocalKeyProvider(MASTER_KEY)).open("/memories/a.md", written_after)


@pytest.mark.parametrize(
    ("environ", "message"),
    [
        ({"S3MEMORY_LOCAL_KEY_VERSION": "0"}, "S3MEMORY_LOCAL_KEY_VERSION must be a whole number from 1 to "),
        ({"S3MEMORY_LOCAL_KEY_VERSION": "1000000000"}, "S3MEMORY_LOCAL_KEY_VERSION must be a whole number"),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": OTHER_B64},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS (entry 1) must be VERSION:",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"2:{OTHER_B64},x:{OTHER_B64}"},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS (entry 2) must be VERSION:BASE64",
        ),
        ({"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"0:{OTHER_B64}"}, "(entry 1) must be VERSION:BASE64, VERSION a"),
        ({"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"{'9' * 5000}:{OTHER_B64}"}, "(entry 1) must be VERSION:BASE64"),
        ({"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"1:{OTHER_B64}"}, "(entry 1) repeats version 1 (the current"),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"2:{OTHER_B64},2:{NEW_KEY_B64}"},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS (entry 2) repeats version 2",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": "2:not-base64!"},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS (entry 1) is not valid",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": "2:" + base64.b64encode(bytes(31)).decode()},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS (entry 1) must be the base64 of exactly 32 bytes (it decodes to 31)",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"2:{LOCAL_KEY_B64}"},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS repeats a master",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": f"2:{OTHER_B64},3:{OTHER_B64}"},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS repeats a master key",
        ),
        (
            {"S3MEMORY_PREVIOUS_LOCAL_KEYS": " , "},
            "S3MEMORY_PREVIOUS_LOCAL_KEYS holds no VERSION:BASE64 entry",
        ),
    ],
)
def test_bad_local_key_versions_are_named_and_never_shown(environ: dict[str, str], message: str) -> None:
    text = refusal(**environ)
    assert message in text
    for key in (LOCAL_KEY_B64, OTHER_B64, NEW_KEY_B64):
        assert key not in text


@pytest.mark.parametrize("variable", ["S3MEMORY_LOCAL_KEY_VERSION", "S3MEMORY_PREVIOUS_LOCAL_KEYS"])
def test_the_local_key_versions_need_a_local_key(variable: str) -> None:
    value = "2" if variable == "S3MEMORY_LOCAL_KEY_VERSION" else f"1:{OTHER_B64}"
    with pytest.raises(SettingsError) as raised:
        Settings.from_env({"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_KMS_KEY_ID": "alias/k", variable: value})
    assert str(raised.value) == f"{variable} needs S3MEMORY_LOCAL_KEY: it belongs to a local master key"


def test_changed_local_key_versions_are_changed_settings() -> None:
    assert settings(S3MEMORY_LOCAL_KEY_VERSION="2") != settings()
    assert settings(S3MEMORY_PREVIOUS_LOCAL_KEYS=f"2:{OTHER_B64}") != settings()
