"""What lets only the operator in to ``s3memory local-s3``: a WSGI middleware in front of moto's server.

moto answers anyone: its CORS lets every web origin call it, it reads no Host header, and it takes
any signature. On the operator's computer, a web page in their browser reaches 127.0.0.1 too (by
the port, or by a name it rebinds to 127.0.0.1); another user of the computer does as well. So the
guard answers a request only when

- it carries no ``Origin`` header: a browser sends one with every request a page's script makes
  across origins (and with every CORS preflight), and no S3 client sends one;
- its ``Host`` is the server's own address and port, ``127.0.0.1:PORT``, the endpoint in the env
  file: a page on a name rebound to 127.0.0.1 sends its own name;
- it is signed with AWS Signature Version 4 in its ``Authorization`` header (no presigned URL) with
  the credentials made for this run (:meth:`Credentials.generate`), the signature recomputed
  (botocore's S3 signer, as moto's own IAM checks do) and compared in constant time, its
  ``X-Amz-Date`` within 15 minutes of this clock (as S3's), and its body the one whose SHA-256
  ``x-amz-content-sha256`` gives (or ``UNSIGNED-PAYLOAD``, as S3 allows; an ``aws-chunked`` upload,
  ``STREAMING-…``, is refused: botocore sends none over plain HTTP).

Anything else is refused before moto sees it, with S3's XML error (:data:`REFUSALS`) that names the
cause and the fix, and nothing is logged.
"""

from __future__ import annotations

import hashlib
import hmac
import io
import re
import secrets
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from http import HTTPStatus
from typing import TYPE_CHECKING
from xml.sax.saxutils import escape

if TYPE_CHECKING:
    from _typeshed.wsgi import StartResponse, WSGIApplication, WSGIEnvironment

ALGORITHM = "AWS4-HMAC-SHA256"
ALLOWED_SKEW = timedelta(minutes=15)
"""How far a request's ``X-Amz-Date`` may be from this clock: S3's own bound."""
AMZ_DATE = "%Y%m%dT%H%M%SZ"
UNSIGNED_PAYLOAD = "UNSIGNED-PAYLOAD"
SHA256_HEX = re.compile(r"[0-9a-f]{64}")
REQUIRED_SIGNED_HEADERS = frozenset({"host", "x-amz-date", "x-amz-content-sha256"})
"""What the signature must cover, as botocore's S3 signer always does."""


@dataclass(frozen=True)
class Credentials:
    """An access key id and its secret, made for one run; the secret is in no ``repr``."""

    access_key_id: str
    secret_access_key: str = field(repr=False)

    @classmethod
    def generate(cls) -> Credentials:
        """New random credentials: 20 characters of id (as AWS's), a 256-bit secret (43 characters,
        letters, digits, ``-`` and ``_``: safe unquoted in a shell)."""
        return cls(secrets.token_hex(10).upper(), secrets.token_urlsafe(32))

    def guard(self, application: WSGIApplication, host: str) -> WSGIApplication:
        """``application`` answering only requests signed with these credentials (``Guard``)."""
        return Guard(application, host=host, credentials=self)


@dataclass(frozen=True)
class Refusal:
    """An S3 error: the HTTP status, S3's code, and a message with the cause and the fix."""

    status: int
    code: str
    message: str

    def body(self) -> bytes:
        return (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            f"<Error><Code>{self.code}</Code><Message>{escape(self.message)}</Message></Error>"
        ).encode()


FROM_A_WEB_PAGE = Refusal(
    403,
    "AccessDenied",
    "local-s3 answers no web page (this request has an Origin header, which a browser sends): "
    "it serves the operator's S3 clients only",
)
ANOTHER_HOST = Refusal(
    403,
    "AccessDenied",
    "local-s3 answers only requests for its own address and port (the Host header): "
    "use the endpoint in its env file, S3MEMORY_ENDPOINT_URL",
)
UNSIGNED = Refusal(
    403,
    "AccessDenied",
    "local-s3 answers only requests signed with AWS Signature Version 4 in the Authorization header "
    "(no presigned URL), covering host, x-amz-date and x-amz-content-sha256, with the credentials "
    "in its env file: load the env file in the client's shell",
)
NOT_THIS_RUN = Refusal(
    403,
    "InvalidAccessKeyId",
    "the access key is not this local-s3's (each run makes new credentials): load its env file again",
)
TOO_SKEWED = Refusal(
    403,
    "RequestTimeTooSkewed",
    "the request's X-Amz-Date is more than 15 minutes from local-s3's clock (a replayed or delayed "
    "request): send it anew, and check the client's clock",
)
SIGNATURE_DOES_NOT_MATCH = Refusal(
    403,
    "SignatureDoesNotMatch",
    "the request's signature is not its signature with this local-s3's credentials: load its env file again",
)
PAYLOAD_NOT_VERIFIED = Refusal(
    403,
    "AccessDenied",
    "local-s3 takes x-amz-content-sha256 as the body's SHA-256 or UNSIGNED-PAYLOAD, not an "
    "aws-chunked upload (STREAMING-...): send the body whole",
)
BODY_CHANGED = Refusal(
    400,
    "XAmzContentSHA256Mismatch",
    "the body's SHA-256 is not the x-amz-content-sha256 the request was signed with (a changed "
    "body): nothing was done; send the request anew",
)
REFUSALS = (
    FROM_A_WEB_PAGE,
    ANOTHER_HOST,
    UNSIGNED,
    NOT_THIS_RUN,
    TOO_SKEWED,
    SIGNATURE_DOES_NOT_MATCH,
    PAYLOAD_NOT_VERIFIED,
    BODY_CHANGED,
)


@dataclass(frozen=True)
class Signed:
    """What a request's ``Authorization`` header says: who signed it, where, which headers, and how."""

    access_key_id: str
    region: str
    service: str
    signed_headers: tuple[str, ...]
    signature: str


def authorization(header: str) -> Signed | None:
    """The SigV4 ``Authorization`` header read, or None if it is not one."""
    algorithm, _, rest = header.partition(" ")
    if algorithm != ALGORITHM:
        return None
    fields = dict(part.strip().partition("=")[::2] for part in rest.split(","))
    scope = fields.get("Credential", "").split("/")
    signed_headers = tuple(fields.get("SignedHeaders", "").split(";"))
    if len(scope) != 5 or scope[4] != "aws4_request" or "Signature" not in fields:
        return None
    return Signed(scope[0], scope[2], scope[3], signed_headers, fields["Signature"])


def signature(environ: WSGIEnvironment, signed: Signed, credentials: Credentials, amz_date: str) -> str:
    """The request's SigV4 signature with ``credentials``, as botocore's S3 signer makes it: over the
    method, the path and query as sent, the headers it names and the payload hash it gives."""
    from botocore.auth import S3SigV4Auth
    from botocore.awsrequest import AWSRequest
    from botocore.credentials import Credentials as BotocoreCredentials

    headers = {name: environ_header(environ, name) or "" for name in signed.signed_headers}
    request = AWSRequest(
        method=environ["REQUEST_METHOD"], url=f"http://{headers['host']}{environ['RAW_URI']}", headers=headers
    )
    request.context["timestamp"] = amz_date
    signer = S3SigV4Auth(
        BotocoreCredentials(credentials.access_key_id, credentials.secret_access_key),
        signed.service,
        signed.region,
    )
    return str(signer.signature(signer.string_to_sign(request, signer.canonical_request(request)), request))


def environ_header(environ: WSGIEnvironment, name: str) -> str | None:
    """A request header's value by its name (``Content-Type`` and ``Content-Length`` are WSGI's own)."""
    key = name.upper().replace("-", "_")
    value = environ.get(key if key in ("CONTENT_TYPE", "CONTENT_LENGTH") else f"HTTP_{key}")
    return None if value is None else str(value)


def refusal(
    environ: WSGIEnvironment, *, host: str, credentials: Credentials, now: datetime
) -> Refusal | None:
    """Why the request is not answered (the module's rules, in that order), or None. The body of a
    request whose hash is checked is read here, and put back for moto as ``wsgi.input``."""
    if "HTTP_ORIGIN" in environ:
        return FROM_A_WEB_PAGE
    if environ.get("HTTP_HOST") != host:
        return ANOTHER_HOST
    signed = authorization(environ.get("HTTP_AUTHORIZATION", ""))
    amz_date = environ.get("HTTP_X_AMZ_DATE", "")
    payload = environ.get("HTTP_X_AMZ_CONTENT_SHA256", "")
    if signed is None or not REQUIRED_SIGNED_HEADERS.issubset(signed.signed_headers):
        return UNSIGNED
    if not hmac.compare_digest(signed.access_key_id.encode(), credentials.access_key_id.encode()):
        return NOT_THIS_RUN
    try:
        signed_at = datetime.strptime(amz_date, AMZ_DATE).replace(tzinfo=UTC)
    except ValueError:
        return UNSIGNED
    if abs(now - signed_at) > ALLOWED_SKEW:
        return TOO_SKEWED
    if payload != UNSIGNED_PAYLOAD and not SHA256_HEX.fullmatch(payload):
        return PAYLOAD_NOT_VERIFIED
    if not hmac.compare_digest(
        signature(environ, signed, credentials, amz_date).encode(), signed.signature.encode()
    ):
        return SIGNATURE_DOES_NOT_MATCH
    if payload != UNSIGNED_PAYLOAD:
        body = read_body(environ)
        if body is None or not hmac.compare_digest(hashlib.sha256(body).hexdigest(), payload):
            return BODY_CHANGED
        environ["wsgi.input"] = io.BytesIO(body)
    return None


def read_body(environ: WSGIEnvironment) -> bytes | None:
    """The request's body: to its end when chunked (werkzeug de-chunks it), else ``Content-Length``
    bytes; None if that is no length."""
    stream = environ["wsgi.input"]
    if environ.get("wsgi.input_terminated"):
        return bytes(stream.read())
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    return bytes(stream.read(length)) if length > 0 else b""


class Guard:
    """The WSGI application that passes to ``app`` only what :func:`refusal` lets through, for a
    server whose address is ``host`` (``127.0.0.1:PORT``) and whose clients sign with ``credentials``."""

    def __init__(self, app: WSGIApplication, *, host: str, credentials: Credentials) -> None:
        self.app = app
        self.host = host
        self.credentials = credentials

    def __call__(self, environ: WSGIEnvironment, start_response: StartResponse) -> Iterable[bytes]:
        refused = refusal(environ, host=self.host, credentials=self.credentials, now=datetime.now(UTC))
        if refused is None:
            return self.app(environ, start_response)
        body = refused.body()
        start_response(
            f"{refused.status} {HTTPStatus(refused.status).phrase}",
            [("Content-Type", "application/xml"), ("Content-Length", str(len(body)))],
        )
        return [] if environ["REQUEST_METHOD"] == "HEAD" else [body]
