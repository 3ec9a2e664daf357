"""Settings from the environment: the one place that reads the ``S3MEMORY_*`` variables every process
shares (storage, keys, limits, who may name the user) and turns them into a validated, typed
``Settings``. Parsing only: ``assembly`` builds the clients, the key provider, the store and the
memories from the ``Settings``, so that importing this module loads neither botocore nor the crypto
library (the command line's help and completion import it). Each Lambda function's own variables are
read by that function (``aws_lambda/agent/config.py``, ``aws_lambda/expiry.py``,
``aws_lambda/metrics.py``), with ``whole_number`` and ``SettingsError`` from here.

| variable | meaning |
| --- | --- |
| ``S3MEMORY_BUCKET`` | the bucket (required) |
| ``S3MEMORY_PREFIX`` | the key prefix of the user namespaces (default ``users/``) |
| ``S3MEMORY_STORAGE_FORMAT`` | ``auto`` (default: ``2`` for a new store, else the store's own), ``1`` (plain names) or ``2`` (private names, ``docs/format-v2.md``) |
| ``S3MEMORY_WEAK_SERVER`` | on an S3 server that ignores PutObject or DeleteObject conditions: ``refuse`` (default) or ``single-writer`` (serve one writer at a time, looking before each write: ``docs/servers.md``) |
| ``S3MEMORY_STORE_ID`` | format 2: the store's id, bound into every object (default: the bucket's name; a replica's readers set the source's) |
| ``S3MEMORY_KMS_KEY_ID`` | KMS key id, ARN or alias for envelope keys |
| ``S3MEMORY_LOCAL_KEY`` | base64 of exactly 32 bytes: a local master key, for local use and tests only |
| ``S3MEMORY_LOCAL_KEY_VERSION`` | the local master key's version, 1 to 999,999,999 (default 1) |
| ``S3MEMORY_PREVIOUS_LOCAL_KEYS`` | earlier local master keys that still open what they sealed: ``version:base64`` pairs separated by commas (``docs/rotation.md``) |
| ``S3MEMORY_ENDPOINT_URL`` | an S3 endpoint (local S3, tests); optional |
| ``S3MEMORY_QUOTA_BYTES`` | per-user limit on the memory's plaintext bytes (unset: none) |
| ``S3MEMORY_QUOTA_FILES`` | per-user limit on the number of files (unset: none) |
| ``S3MEMORY_GUARD`` | the content guard: ``refuse`` (default), ``redact`` or ``off`` |
| ``S3MEMORY_MAX_FILE_BYTES`` | the largest file, 1 to 4,194,304 (default 1,048,576) |
| ``S3MEMORY_DIRECT_INVOCATION`` | ``allow`` or ``refuse`` events that name their own user (default: ``refuse`` with an issuer, else ``allow``) |
| ``S3MEMORY_JWT_ISSUER`` | the issuer whose tokens the HTTP edge verifies (https; http on loopback) |
| ``S3MEMORY_JWT_AUDIENCE`` | comma-separated audiences; required with the issuer |
| ``S3MEMORY_JWT_SCOPES`` | space-separated scopes; when set, a token needs at least one |
| ``S3MEMORY_MOUNTS`` | the shared memories a verified token's claims mount (``mounts.grants_from_json``) |
| ``S3MEMORY_MCP_URL`` | the public URL of the MCP function's ``/mcp`` route |

Exactly one of ``S3MEMORY_KMS_KEY_ID`` and ``S3MEMORY_LOCAL_KEY`` must be set; the other two local key
variables need ``S3MEMORY_LOCAL_KEY``. Empty values count
as unset, except ``S3MEMORY_PREFIX``, where an empty value means no prefix. Every error names the
variable, never the value of a key.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Literal, TypeVar
from urllib.parse import urlsplit

from s3memory.core.paths import DEFAULT_PREFIX, check_prefix
from s3memory.core.quota import DEFAULT_MAX_FILE_BYTES, MAX_FILE_BYTES_LIMIT, Quota
from s3memory.storage.conditions import REFUSE, SINGLE_WRITER, WeakServer, checked_weak_server

if TYPE_CHECKING:
    from s3memory.formats.choice import StorageFormat
    from s3memory.memory import MemoryOptions
    from s3memory.mounts import Grant

BUCKET = "S3MEMORY_BUCKET"
PREFIX = "S3MEMORY_PREFIX"
STORAGE_FORMAT = "S3MEMORY_STORAGE_FORMAT"
STORE_ID = "S3MEMORY_STORE_ID"
STORAGE_FORMATS = ("auto", "1", "2")
WEAK_SERVER = "S3MEMORY_WEAK_SERVER"
KMS_KEY_ID = "S3MEMORY_KMS_KEY_ID"
LOCAL_KEY = "S3MEMORY_LOCAL_KEY"
LOCAL_KEY_VERSION = "S3MEMORY_LOCAL_KEY_VERSION"
PREVIOUS_LOCAL_KEYS = "S3MEMORY_PREVIOUS_LOCAL_KEYS"
LOCAL_KEY_VARIABLES = (LOCAL_KEY, LOCAL_KEY_VERSION, PREVIOUS_LOCAL_KEYS)
"""The variables of a local master key: a command told to use KMS drops them all."""
ENDPOINT_URL = "S3MEMORY_ENDPOINT_URL"
QUOTA_BYTES = "S3MEMORY_QUOTA_BYTES"
QUOTA_FILES = "S3MEMORY_QUOTA_FILES"
GUARD = "S3MEMORY_GUARD"
MAX_FILE_BYTES = "S3MEMORY_MAX_FILE_BYTES"
DIRECT_INVOCATION = "S3MEMORY_DIRECT_INVOCATION"
JWT_ISSUER = "S3MEMORY_JWT_ISSUER"
JWT_AUDIENCE = "S3MEMORY_JWT_AUDIENCE"
JWT_SCOPES = "S3MEMORY_JWT_SCOPES"
MCP_URL = "S3MEMORY_MCP_URL"
MOUNTS = "S3MEMORY_MOUNTS"
DEFAULT_MODEL = "claude-sonnet-4-5"
"""The model used when none is named: by the agent Lambda (``S3MEMORY_MODEL``) and ``s3memory demo --live``."""
QUOTA_LIMIT = 10**15
GuardMode = Literal["refuse", "redact", "off"]
GUARD_MODES: tuple[GuardMode, ...] = ("refuse", "redact", "off")
_LOOPBACK_HOSTS = frozenset({"127.0.0.1", "localhost", "::1"})
_Choice = TypeVar("_Choice", bound=str)


class SettingsError(ValueError):
    """A missing or invalid setting; the message names the variable and never a key's value."""


def _get(environ: Mapping[str, str], name: str) -> str | None:
    value = environ.get(name)
    if value is None:
        return None
    if not isinstance(value, str):
        raise SettingsError(f"{name} must be a string")
    return value if value.strip() else None


def _has_space_or_control(value: str) -> bool:
    return any(character.isspace() or not character.isprintable() for character in value)


def _local_keys(environ: Mapping[str, str]) -> tuple[bytes | None, int, tuple[tuple[int, bytes], ...]]:
    """The local master key (None without one), its version (default 1) and the earlier keys by
    version, from the variables of a local master key; the crypto package's bounds are loaded only
    where one of them is set."""
    raw_key, raw_previous = _get(environ, LOCAL_KEY), _get(environ, PREVIOUS_LOCAL_KEYS)
    if raw_key is None and raw_previous is None and _get(environ, LOCAL_KEY_VERSION) is None:
        return None, 1, ()
    from s3memory.crypto import DATA_KEY_BYTES, MAX_KEY_VERSION

    local_key = None if raw_key is None else _decode_local_key(raw_key, LOCAL_KEY, DATA_KEY_BYTES)
    version = whole_number(environ, LOCAL_KEY_VERSION, MAX_KEY_VERSION)
    for name, value in ((LOCAL_KEY_VERSION, version), (PREVIOUS_LOCAL_KEYS, raw_previous)):
        if value is not None and local_key is None:
            raise SettingsError(f"{name} needs {LOCAL_KEY}: it belongs to a local master key")
    version = version or 1
    previous = (
        ()
        if raw_previous is None
        else _previous_local_keys(raw_previous, version, MAX_KEY_VERSION, DATA_KEY_BYTES)
    )
    masters = [local_key, *(key for _, key in previous)]
    if len(set(masters)) != len(masters):
        raise SettingsError(f"{PREVIOUS_LOCAL_KEYS} repeats a master key: each version needs its own")
    return local_key, version, previous


def _previous_local_keys(
    text: str, current: int, max_version: int, key_bytes: int
) -> tuple[tuple[int, bytes], ...]:
    """``version:base64`` pairs separated by commas, each version once and none the current one."""
    pairs: dict[int, bytes] = {}
    for index, entry in enumerate((part.strip() for part in text.split(",") if part.strip()), start=1):
        where = f"{PREVIOUS_LOCAL_KEYS} (entry {index})"
        version_text, colon, encoded = entry.partition(":")
        version_text = version_text.strip()
        if not (
            colon
            and version_text.isascii()
            and version_text.isdigit()
            and len(version_text) <= len(str(max_version))
            and 1 <= int(version_text) <= max_version
        ):
            raise SettingsError(
                f"{where} must be VERSION:BASE64, VERSION a whole number from 1 to {max_version:,}"
            )
        version = int(version_text)
        if version == current or version in pairs:
            raise SettingsError(f"{where} repeats version {version} (the current key's version is {current})")
        pairs[version] = _decode_local_key(encoded, where, key_bytes)
    if not pairs:
        raise SettingsError(f"{PREVIOUS_LOCAL_KEYS} holds no VERSION:BASE64 entry")
    return tuple(sorted(pairs.items()))


def _decode_local_key(value: str, name: str, size: int) -> bytes:
    """The ``size`` bytes of a base64 master key; ``SettingsError`` naming where it was (``name``),
    never its value."""
    try:
        key = base64.b64decode(value.strip(), validate=True)
    except (binascii.Error, ValueError):
        raise SettingsError(f"{name} is not valid base64") from None
    if len(key) != size:
        raise SettingsError(f"{name} must be the base64 of exactly {size} bytes (it decodes to {len(key)})")
    return key


def whole_number(environ: Mapping[str, str], name: str, high: int) -> int | None:
    """The variable as a whole number from 1 to ``high`` (its length checked before it is read), or
    None when unset; ``SettingsError`` naming it otherwise."""
    text = _get(environ, name)
    if text is None:
        return None
    text = text.strip()
    if not (text.isascii() and text.isdigit() and len(text) <= len(str(high)) and 1 <= int(text) <= high):
        raise SettingsError(f"{name} must be a whole number from 1 to {high:,}")
    return int(text)


def _choice(
    environ: Mapping[str, str], name: str, choices: tuple[_Choice, ...], default: _Choice | None = None
) -> _Choice:
    """One of ``choices`` (any case); ``default`` (else the first) when unset."""
    text = _get(environ, name)
    if text is None:
        return choices[0] if default is None else default
    for choice in choices:
        if text.strip().lower() == choice:
            return choice
    raise SettingsError(f"{name} must be one of {', '.join(choices)}")


def secure_url(url: object) -> bool:
    """An https URL, or an http URL on a loopback address (local tests)."""
    if not isinstance(url, str) or _has_space_or_control(url):
        return False
    parts = urlsplit(url)
    return bool(parts.hostname) and (
        parts.scheme == "https" or (parts.scheme == "http" and parts.hostname in _LOOPBACK_HOSTS)
    )


def _words(text: str, separator: str | None) -> tuple[str, ...]:
    return tuple(dict.fromkeys(word.strip() for word in text.split(separator) if word.strip()))


@dataclass(frozen=True)
class Limits:
    """What a user may store: the quota, the content guard's mode and the largest file."""

    quota: Quota | None = None
    guard_mode: GuardMode = "refuse"
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Limits:
        max_bytes = whole_number(environ, QUOTA_BYTES, QUOTA_LIMIT)
        max_files = whole_number(environ, QUOTA_FILES, QUOTA_LIMIT)
        quota = None if max_bytes is None and max_files is None else Quota(max_bytes, max_files)
        guard_mode = _choice(environ, GUARD, GUARD_MODES)
        max_file_bytes = whole_number(environ, MAX_FILE_BYTES, MAX_FILE_BYTES_LIMIT) or DEFAULT_MAX_FILE_BYTES
        return cls(quota, guard_mode, max_file_bytes)

    def memory_options(self) -> MemoryOptions:
        """The options of ``S3Memory`` (and the SDK adapters) these limits set; the memory's default
        guard is loaded when this is called, by what builds a memory."""
        from s3memory.core.guard import ContentGuard
        from s3memory.memory import DEFAULT_GUARD

        guard = {"refuse": DEFAULT_GUARD, "redact": ContentGuard(mode="redact"), "off": None}[self.guard_mode]
        return {"quota": self.quota, "content_guard": guard, "max_file_bytes": self.max_file_bytes}


@dataclass(frozen=True)
class TokenCheck:
    """Whose JSON Web Tokens the HTTP edge accepts: the issuer, its audiences and the scopes."""

    issuer: str
    audiences: tuple[str, ...]
    scopes: tuple[str, ...] = ()

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> TokenCheck | None:
        issuer = _get(environ, JWT_ISSUER)
        audience = _get(environ, JWT_AUDIENCE)
        scopes = _get(environ, JWT_SCOPES)
        if issuer is None:
            if audience is not None or scopes is not None:
                raise SettingsError(f"{JWT_AUDIENCE} and {JWT_SCOPES} need {JWT_ISSUER}")
            return None
        issuer = issuer.strip()
        parts = urlsplit(issuer)
        if not secure_url(issuer) or parts.query or parts.fragment:
            raise SettingsError(f"{JWT_ISSUER} must be an https:// URL (http:// only on a loopback address)")
        audiences = () if audience is None else _words(audience, ",")
        if not audiences:
            raise SettingsError(
                f"{JWT_AUDIENCE} is required with {JWT_ISSUER}: the audiences a token may name"
            )
        if any(_has_space_or_control(word) for word in audiences):
            raise SettingsError(f"{JWT_AUDIENCE} must be audiences separated by commas, without spaces")
        return cls(issuer, audiences, () if scopes is None else _words(scopes, None))


@dataclass(frozen=True)
class Edge:
    """Who may name the user: direct events (the caller's word), and the tokens of HTTP API events."""

    direct_invocation: bool = True
    tokens: TokenCheck | None = None
    mcp_url: str | None = None
    """The public URL of the MCP function's ``/mcp`` route: the resource its tokens are for."""
    grants: tuple[Grant, ...] = ()
    """The shared memories a verified token's claims mount (``mounts.Grant``; none for a direct event)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str]) -> Edge:
        tokens = TokenCheck.from_env(environ)
        # A function that checks tokens serves the HTTP API: unless told otherwise, only the API.
        default = "allow" if tokens is None else "refuse"
        direct = _choice(environ, DIRECT_INVOCATION, ("allow", "refuse"), default) == "allow"
        mcp_url = _get(environ, MCP_URL)
        if mcp_url is not None:
            mcp_url = mcp_url.strip()
            parts = urlsplit(mcp_url)
            if not secure_url(mcp_url) or parts.query or parts.fragment:
                raise SettingsError(
                    f"{MCP_URL} must be the https:// URL clients reach the MCP route at, without a query "
                    "(http:// only on a loopback address)"
                )
        text = _get(environ, MOUNTS)
        grants: tuple[Grant, ...] = ()
        if text is not None:
            from s3memory.mounts import grants_from_json

            try:
                grants = grants_from_json(text)
            except ValueError as error:
                raise SettingsError(f"{MOUNTS} is refused: {error}") from None
        if grants and tokens is None:
            raise SettingsError(f"{MOUNTS} needs {JWT_ISSUER}: only a verified token's claims grant a mount")
        return cls(direct, tokens, mcp_url, grants)


@dataclass(frozen=True)
class Settings:
    """Validated settings; equal settings build equal providers, clients and stores (``assembly``: a
    usable cache key)."""

    bucket: str
    prefix: str = DEFAULT_PREFIX
    kms_key_id: str | None = None
    local_key: bytes | None = field(default=None, repr=False)
    local_key_version: int = field(default=1, repr=False)
    previous_local_keys: tuple[tuple[int, bytes], ...] = field(default=(), repr=False)
    """Earlier local master keys by version: they open what they sealed, and never seal."""
    endpoint_url: str | None = None
    limits: Limits = field(default_factory=Limits)
    edge: Edge = field(default_factory=Edge)
    storage_format: StorageFormat = "auto"
    store_id: str | None = None
    weak_server: WeakServer = REFUSE
    """On a server that ignores PutObject or DeleteObject conditions: refuse, or serve one writer
    at a time (``conditions.py``)."""

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None) -> Settings:
        """Read and validate the ``S3MEMORY_*`` variables of ``environ`` (this process's when not
        given), as the command line and the Lambda functions read them (``docs/settings.md``)."""
        if environ is None:
            import os

            environ = os.environ
        bucket = _get(environ, BUCKET)
        if bucket is None:
            raise SettingsError(f"{BUCKET} is required: the S3 bucket that holds the memory")
        if "/" in bucket or _has_space_or_control(bucket):
            raise SettingsError(f"{BUCKET} must be a bucket name, without '/', spaces or control characters")

        raw_prefix = environ.get(PREFIX)
        prefix = DEFAULT_PREFIX if raw_prefix is None else raw_prefix
        try:
            check_prefix(prefix)
        except ValueError:
            raise SettingsError(
                f"{PREFIX} must be empty or plain segments each ending in '/', like 'users/'"
            ) from None

        kms_key_id = _get(environ, KMS_KEY_ID)
        raw_local_key = _get(environ, LOCAL_KEY)
        if kms_key_id is not None and raw_local_key is not None:
            raise SettingsError(
                f"{KMS_KEY_ID} and {LOCAL_KEY} are both set; set exactly one "
                f"({KMS_KEY_ID} in AWS, {LOCAL_KEY} for local use only)"
            )
        if kms_key_id is None and raw_local_key is None:
            raise SettingsError(
                f"{KMS_KEY_ID} or {LOCAL_KEY} must be set "
                f"({KMS_KEY_ID} in AWS, {LOCAL_KEY} for local use only)"
            )
        if kms_key_id is not None and _has_space_or_control(kms_key_id):
            raise SettingsError(f"{KMS_KEY_ID} must be a KMS key id, ARN or alias, without spaces")
        local_key, local_key_version, previous = _local_keys(environ)

        chosen = _choice(environ, STORAGE_FORMAT, STORAGE_FORMATS)
        storage_format: StorageFormat = "auto"
        if chosen != "auto":  # a number, which formats.choice checks (loaded with the store, only here)
            from s3memory.formats.choice import checked_format

            storage_format = checked_format(int(chosen))
        store_id = _get(environ, STORE_ID)
        if store_id is not None and (len(store_id) > 255 or not store_id.isprintable()):
            raise SettingsError(f"{STORE_ID} must be at most 255 printable characters")

        weak_server = checked_weak_server(_choice(environ, WEAK_SERVER, (REFUSE, SINGLE_WRITER), REFUSE))

        endpoint_url = _get(environ, ENDPOINT_URL)
        if endpoint_url is not None and (
            not endpoint_url.startswith(("http://", "https://")) or _has_space_or_control(endpoint_url)
        ):
            raise SettingsError(f"{ENDPOINT_URL} must be an http:// or https:// URL")

        return cls(
            bucket=bucket,
            prefix=prefix,
            kms_key_id=kms_key_id,
            local_key=local_key,
            local_key_version=local_key_version,
            previous_local_keys=previous,
            endpoint_url=endpoint_url,
            limits=Limits.from_env(environ),
            edge=Edge.from_env(environ),
            storage_format=storage_format,
            store_id=store_id,
            weak_server=weak_server,
        )
