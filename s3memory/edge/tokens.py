"""The HTTP edges' identity (the memory function, the MCP server over HTTP and on Lambda): the user
is the ``sub`` of a bearer token the edge verified itself.

API Gateway's JWT authorizer checks the token before the route invokes the function and copies its
claims into the event. But an event is only JSON: anyone allowed to invoke the function directly can
write one that names any subject. So the function never reads the claims of the event. It verifies
the token of the ``Authorization`` header as the authorizer does (the issuer's signing keys from its
OpenID discovery document, the signature, ``iss``, ``exp`` and ``nbf``, an audience in ``aud`` or
``client_id``, and a required scope in ``scope`` or ``scp``) and takes the user from that token.

Only asymmetric algorithms are accepted, and a key whose JWK names an algorithm verifies only that
one. The signing keys are fetched once per container and kept an hour; while the issuer cannot be reached
they serve for at most two hours, as API Gateway's. The keys are fetched again at most once a minute,
whatever arrives: a token signed by a key the set lacks, or an issuer that did not answer, costs the
issuer one fetch a minute, not one per request. A fetch (redirects only to https) ends within 5 s,
however slowly the issuer sends. PyJWT does the cryptography and the claim checks.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
import urllib.request
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from s3memory.errors import KeysUnavailable, TokenRefused
from s3memory.settings import JWT_ISSUER, TokenCheck, secure_url

logger = logging.getLogger("s3memory.tokens")
"""Named as before the module moved to ``edge/``: a log filter on it keeps working."""

FAMILIES = {"RSA": ("RS256", "RS384", "RS512", "PS256", "PS384", "PS512"), "EC": ("ES256", "ES384", "ES512")}
"""Accepted algorithms, by the key type (``kty``) that signs with them."""
MAX_TOKEN_CHARS = 16_384
MAX_DOCUMENT_BYTES = 1024 * 1024
FETCH_TIMEOUT_SECONDS = 5.0
LEEWAY_SECONDS = 30
KEYS_LIFETIME_SECONDS = 3600.0
REFETCH_AFTER_SECONDS = 60.0
KEYS_MAX_AGE_SECONDS = 7200.0
"""Keys not refreshed for this long are not used (API Gateway keeps an issuer's keys two hours)."""

Fetch = Callable[[str], bytes]


class _SecureRedirects(urllib.request.HTTPRedirectHandler):
    """Follows a redirect only to an https URL (http on loopback), as the issuer's own URLs must be."""

    def redirect_request(self, req: Any, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> Any:
        if not secure_url(newurl):
            raise KeysUnavailable("the issuer redirected to a URL that is not https")
        return super().redirect_request(req, fp, code, msg, headers, newurl)


_opener = urllib.request.build_opener(_SecureRedirects)


def _get(url: str) -> bytes:
    with _opener.open(url, timeout=FETCH_TIMEOUT_SECONDS) as response:
        body: bytes = response.read(MAX_DOCUMENT_BYTES + 1)
    if len(body) > MAX_DOCUMENT_BYTES:
        raise KeysUnavailable("the issuer's document is larger than 1 MiB")
    return body


def fetch_url(url: str) -> bytes:
    """GET ``url`` (at most ``MAX_DOCUMENT_BYTES``), all of it within ``FETCH_TIMEOUT_SECONDS``: a
    socket timeout bounds each read, not a server that sends a byte a second, so the GET runs on a
    daemon thread that is abandoned at the deadline. ``KeysUnavailable`` on any failure."""
    outcome: queue.Queue[bytes | BaseException] = queue.Queue(maxsize=1)

    def fetch() -> None:
        try:
            outcome.put(_get(url))
        except BaseException as error:
            outcome.put(error)

    threading.Thread(target=fetch, name="s3memory-token-keys", daemon=True).start()
    try:
        result = outcome.get(timeout=FETCH_TIMEOUT_SECONDS)
    except queue.Empty:
        raise KeysUnavailable(f"the issuer did not answer within {FETCH_TIMEOUT_SECONDS:g} s") from None
    if isinstance(result, KeysUnavailable):
        raise result
    if isinstance(result, BaseException):
        raise KeysUnavailable(f"{type(result).__name__} from the issuer") from None
    return result


def _invalid(reason: str) -> TokenRefused:
    return TokenRefused(401, f"Error: The request's token is not valid: {reason}.")


def _document(fetch: Fetch, url: str) -> dict[str, Any]:
    try:
        document = json.loads(fetch(url))
    except (ValueError, RecursionError):
        raise KeysUnavailable("the issuer answered with something that is not JSON") from None
    if not isinstance(document, dict):
        raise KeysUnavailable("the issuer answered with JSON that is not an object")
    return document


class Verified(NamedTuple):
    """A verified token: its subject, and every claim it carries (what grants mounts)."""

    subject: str
    claims: dict[str, Any]


class TokenVerifier:
    """Verifies bearer tokens for one ``TokenCheck``; holds the issuer's signing keys between calls."""

    def __init__(
        self, check: TokenCheck, fetch: Fetch = fetch_url, clock: Callable[[], float] = time.monotonic
    ) -> None:
        self.check = check
        self._fetch = fetch
        self._clock = clock
        self._lock = threading.Lock()
        self._jwks_uri: str | None = None
        self._keys: dict[str | None, dict[str, Any]] = {}
        self._fetched_at: float | None = None
        self._tried_at: float | None = None

    def subject(self, authorization: object) -> str:
        """The ``sub`` of the verified token in an ``Authorization`` header value."""
        return self.verified(authorization).subject

    def verified(self, authorization: object) -> Verified:
        """The subject and the claims of the verified token in an ``Authorization`` header value."""
        import jwt

        token = _bearer_token(authorization)
        try:
            header = jwt.get_unverified_header(token)
        except (jwt.PyJWTError, ValueError, RecursionError):
            raise _invalid("it is not a well-formed JWT") from None
        algorithm, key_id = header.get("alg"), header.get("kid")
        if not any(algorithm in family for family in FAMILIES.values()):
            raise _invalid("its signing algorithm is not accepted")
        key = self._signing_key(key_id if isinstance(key_id, str) else None)
        claims = _verified_claims(token, key, str(algorithm), self.check.issuer)
        self._check_audience(claims)
        self._check_scopes(claims)
        subject = claims.get("sub")
        if not isinstance(subject, str) or not subject:
            raise _invalid("it has no subject (sub)")
        return Verified(subject, claims)

    def _signing_key(self, key_id: str | None) -> dict[str, Any]:
        with self._lock:
            now = self._clock()
            may_fetch = self._tried_at is None or now - self._tried_at >= REFETCH_AFTER_SECONDS
            stale = self._fetched_at is None or now - self._fetched_at >= KEYS_LIFETIME_SECONDS
            if may_fetch and (stale or self._find(key_id) is None):
                self._tried_at = now
                try:
                    self._refresh()
                except KeysUnavailable:
                    if self._find(key_id) is None:
                        raise
            key = self._find(key_id)
            fetched_at = self._fetched_at
        if fetched_at is None or now - fetched_at >= KEYS_MAX_AGE_SECONDS:
            raise KeysUnavailable(
                "the issuer's keys could not be fetched lately; the next try is within a minute"
            )
        if key is None:
            raise _invalid("it is signed by a key its issuer does not publish")
        return key

    def _find(self, key_id: str | None) -> dict[str, Any] | None:
        if key_id is None and len(self._keys) == 1:
            return next(iter(self._keys.values()))
        return self._keys.get(key_id)

    def _refresh(self) -> None:
        """Fetch the issuer's keys; whatever goes wrong is ``KeysUnavailable``, logged (at most once
        a fetch, so once a minute) with the setting to check: every request answers 503 meanwhile."""
        try:
            try:
                self._fetch_keys()
            except KeysUnavailable:
                raise
            except Exception as error:
                raise KeysUnavailable(
                    f"the issuer's documents could not be read ({type(error).__name__})"
                ) from None
        except KeysUnavailable as unavailable:
            logger.warning(
                "s3memory: no request's token can be checked: %s. Check %s (%s): it must be the tokens' "
                "`iss` exactly (a trailing '/' included), reachable from here",
                unavailable,
                JWT_ISSUER,
                self.check.issuer,
            )
            raise

    def _fetch_keys(self) -> None:
        """Fetch the issuer's keys (and, the first time, its discovery document)."""
        if self._jwks_uri is None:
            issuer = self.check.issuer
            discovery = _document(self._fetch, issuer.rstrip("/") + "/.well-known/openid-configuration")
            if discovery.get("issuer") != issuer:
                raise KeysUnavailable("the issuer's discovery document names another issuer")
            jwks_uri = discovery.get("jwks_uri")
            if not secure_url(jwks_uri):
                raise KeysUnavailable("the issuer's discovery document has no https jwks_uri")
            self._jwks_uri = str(jwks_uri)
        listed = _document(self._fetch, self._jwks_uri).get("keys")
        if not isinstance(listed, list):
            raise KeysUnavailable("the issuer's key set has no list of keys")
        keys: dict[str | None, dict[str, Any]] = {}
        for key in listed:
            if not isinstance(key, dict):
                continue
            kind, use = key.get("kty"), key.get("use", "sig")
            if isinstance(kind, str) and kind in FAMILIES and use == "sig":
                key_id = key.get("kid")
                keys[key_id if isinstance(key_id, str) else None] = key
        self._keys = keys
        self._fetched_at = self._clock()

    def _check_audience(self, claims: Mapping[str, Any]) -> None:
        """As API Gateway reads it: ``aud`` when the token has one, else ``client_id``."""
        audience = claims.get("aud", claims.get("client_id"))
        named = audience if isinstance(audience, list) else [audience]
        if not any(isinstance(name, str) and name in self.check.audiences for name in named):
            raise _invalid("it is not meant for this API (audience)")

    def _check_scopes(self, claims: Mapping[str, Any]) -> None:
        required = self.check.scopes
        if not required:
            return
        held: set[str] = set()
        for name in ("scope", "scp"):
            value = claims.get(name)
            if isinstance(value, str):
                held.update(value.split())
            elif isinstance(value, list):
                held.update(item for item in value if isinstance(item, str))
        if not held.intersection(required):
            raise TokenRefused(
                403,
                f"Error: The request's token lacks the scope this API requires (one of: {' '.join(required)}).",
            )


def _bearer_token(authorization: object) -> str:
    if not isinstance(authorization, str) or not authorization.strip():
        raise TokenRefused(401, "Error: The request is not authenticated: it carries no bearer token.")
    if len(authorization) > MAX_TOKEN_CHARS:
        raise _invalid(f"it is longer than {MAX_TOKEN_CHARS:,} characters")
    scheme, _, rest = authorization.strip().partition(" ")
    return rest.strip() if scheme.lower() == "bearer" and rest.strip() else authorization.strip()


def _verified_claims(token: str, key: dict[str, Any], algorithm: str, issuer: str) -> dict[str, Any]:
    """The claims of ``token`` after its signature, ``iss``, ``exp`` and ``nbf`` checked out."""
    import jwt

    declared = key.get("alg")
    if algorithm not in FAMILIES[key["kty"]] or (declared is not None and declared != algorithm):
        raise _invalid("its signing algorithm does not match its key")
    try:
        claims: dict[str, Any] = jwt.decode(
            token,
            jwt.PyJWK(key, algorithm),
            algorithms=[algorithm],
            issuer=issuer,
            leeway=LEEWAY_SECONDS,
            options={"require": ["exp", "iss", "sub"], "verify_aud": False},
        )
    except jwt.ExpiredSignatureError:
        raise _invalid("it has expired") from None
    except jwt.ImmatureSignatureError:
        raise _invalid("it is not valid yet") from None
    except jwt.InvalidIssuerError:
        raise _invalid("it was issued by another issuer") from None
    except jwt.MissingRequiredClaimError as error:
        raise _invalid(f"it has no {error.claim} claim") from None
    except jwt.InvalidSignatureError:
        raise _invalid("its signature does not verify") from None
    except (jwt.PyJWTError, ValueError, TypeError, RecursionError):
        raise _invalid("it could not be verified") from None
    return claims
