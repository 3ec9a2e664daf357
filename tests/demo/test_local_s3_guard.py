"""``s3memory local-s3`` is the operator's alone: what a web page in their browser sends (from the
port, or from a name rebound to 127.0.0.1), what another local user sends unsigned or signed with
moto's dummy credentials, a replayed request and a changed body are refused with S3's error and
change nothing; a client with the env file's credentials does all it needs (``docs/operator.md``)."""

from __future__ import annotations

import http.client
import re
import stat
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any
from unittest import mock
from urllib.parse import urlsplit

import boto3
import pytest
from botocore.auth import S3SigV4Auth, S3SigV4QueryAuth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import ClientError

from tests.support.local_s3 import LocalS3

BUCKET = "s3memory-local"
KEY = "users/alice/notes.md"


@dataclass(frozen=True)
class Served:
    server: LocalS3
    settings: dict[str, str]
    versions: list[str]
    """The versions of ``KEY``, newest first."""

    @property
    def address(self) -> str:
        return urlsplit(self.settings["S3MEMORY_ENDPOINT_URL"]).netloc

    def credentials(self) -> Credentials:
        return Credentials(self.settings["AWS_ACCESS_KEY_ID"], self.settings["AWS_SECRET_ACCESS_KEY"])

    def client(self) -> Any:
        return boto3.client(
            "s3",
            endpoint_url=self.settings["S3MEMORY_ENDPOINT_URL"],
            region_name=self.settings["AWS_DEFAULT_REGION"],
            aws_access_key_id=self.settings["AWS_ACCESS_KEY_ID"],
            aws_secret_access_key=self.settings["AWS_SECRET_ACCESS_KEY"],
        )


@pytest.fixture(scope="module")
def served() -> Iterator[Served]:
    """local-s3 as the README runs it, with two versions of ``KEY`` put by the operator."""
    with LocalS3() as server:
        settings = server.settings()
        client = Served(server, settings, []).client()
        versions = [
            client.put_object(Bucket=BUCKET, Key=KEY, Body=body)["VersionId"] for body in (b"one", b"two")
        ]
        yield Served(server, settings, versions[::-1])


def bucket_state(served: Served) -> tuple[list[tuple[str, str, bool]], bytes]:
    """Every version in the bucket (key, id, latest), and what ``KEY`` reads."""
    client = served.client()
    listed = client.list_object_versions(Bucket=BUCKET)
    versions = [
        (entry["Key"], entry["VersionId"], entry["IsLatest"])
        for entry in listed.get("Versions", []) + listed.get("DeleteMarkers", [])
    ]
    return versions, client.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()


@dataclass(frozen=True)
class Request:
    method: str
    path: str
    headers: dict[str, str]
    body: bytes = b""


def signed(
    served: Served,
    method: str,
    path: str,
    *,
    credentials: Credentials | None = None,
    body: bytes = b"",
    at: datetime | None = None,
    host: str | None = None,
    trailer: bool = False,
) -> Request:
    """The request as botocore's S3 signer signs it (with the env file's credentials unless told),
    now or ``at``, for ``host`` (the server's own address unless told); with its checksum in a
    trailer if told (as botocore uploads aws-chunked over HTTPS: STREAMING-UNSIGNED-PAYLOAD-TRAILER)."""
    request = AWSRequest(method=method, url=f"http://{host or served.address}{path}", data=body)
    if trailer:
        request.context["checksum"] = {"request_algorithm": {"in": "trailer", "name": "x-amz-checksum-crc32"}}
    with mock.patch("botocore.auth.get_current_datetime", return_value=at or datetime.now(UTC)):
        S3SigV4Auth(credentials or served.credentials(), "s3", "us-east-1").add_auth(request)
    headers = dict(request.headers.items())
    if host is not None:
        headers["Host"] = host
    return Request(method, path, headers, body)


def send(served: Served, request: Request) -> tuple[int, dict[str, str], str]:
    """The request sent as it is (no client that signs or fixes it): the status, headers and body."""
    connection = http.client.HTTPConnection(served.address, timeout=30)
    try:
        connection.request(request.method, request.path, body=request.body or None, headers=request.headers)
        response = connection.getresponse()
        return (
            response.status,
            {name.lower(): value for name, value in response.getheaders()},
            response.read().decode(),
        )
    finally:
        connection.close()


def s3_error(body: str) -> tuple[str, str]:
    """The code and the message of S3's XML error."""
    code = re.search(r"<Code>(.*?)</Code>", body)
    message = re.search(r"<Message>(.*?)</Message>", body)
    assert code is not None and message is not None, body
    return code.group(1), message.group(1).replace("&amp;", "&")


DELETE_VERSION = "/{bucket}/{key}?versionId={version}"
ORIGIN = {"Origin": "http://evil.example"}

FROM_A_WEB_PAGE = (
    403,
    "AccessDenied",
    "local-s3 answers no web page (this request has an Origin header, which a browser sends): "
    "it serves the operator's S3 clients only",
)
ANOTHER_HOST = (
    403,
    "AccessDenied",
    "local-s3 answers only requests for its own address and port (the Host header): "
    "use the endpoint in its env file, S3MEMORY_ENDPOINT_URL",
)
UNSIGNED = (
    403,
    "AccessDenied",
    "local-s3 answers only requests signed with AWS Signature Version 4 in the Authorization header "
    "(no presigned URL), covering host, x-amz-date and x-amz-content-sha256, with the credentials "
    "in its env file: load the env file in the client's shell",
)
NOT_THIS_RUN = (
    403,
    "InvalidAccessKeyId",
    "the access key is not this local-s3's (each run makes new credentials): load its env file again",
)
SIGNATURE_DOES_NOT_MATCH = (
    403,
    "SignatureDoesNotMatch",
    "the request's signature is not its signature with this local-s3's credentials: load its env file again",
)
TOO_SKEWED = (
    403,
    "RequestTimeTooSkewed",
    "the request's X-Amz-Date is more than 15 minutes from local-s3's clock (a replayed or delayed "
    "request): send it anew, and check the client's clock",
)
BODY_CHANGED = (
    400,
    "XAmzContentSHA256Mismatch",
    "the body's SHA-256 is not the x-amz-content-sha256 the request was signed with (a changed "
    "body): nothing was done; send the request anew",
)
PAYLOAD_NOT_VERIFIED = (
    403,
    "AccessDenied",
    "local-s3 takes x-amz-content-sha256 as the body's SHA-256 or UNSIGNED-PAYLOAD, not an "
    "aws-chunked upload (STREAMING-...): send the body whole",
)

HOSTILE: dict[str, tuple[Callable[[Served], Request], tuple[int, str, str]]] = {
    "a page's simple GET, listing the bucket": (
        lambda served: Request("GET", f"/{BUCKET}?list-type=2", ORIGIN),
        FROM_A_WEB_PAGE,
    ),
    "a page's preflight before deleting a version": (
        lambda served: Request(
            "OPTIONS",
            delete_path(served),
            {
                **ORIGIN,
                "Access-Control-Request-Method": "DELETE",
                "Access-Control-Request-Headers": "authorization",
            },
        ),
        FROM_A_WEB_PAGE,
    ),
    "a page's delete, signed with the env file's credentials but with its Origin": (
        lambda served: with_headers(signed(served, "DELETE", delete_path(served)), ORIGIN),
        FROM_A_WEB_PAGE,
    ),
    "a rebound name's delete (Host evil.example:PORT)": (
        lambda served: with_headers(
            Request("DELETE", delete_path(served), {}),
            {"Host": f"evil.example:{port(served)}"},
        ),
        ANOTHER_HOST,
    ),
    "a rebound name's delete, signed for it with the env file's credentials": (
        lambda served: signed(served, "DELETE", delete_path(served), host=f"evil.example:{port(served)}"),
        ANOTHER_HOST,
    ),
    "localhost for 127.0.0.1": (
        lambda served: signed(served, "DELETE", delete_path(served), host=f"localhost:{port(served)}"),
        ANOTHER_HOST,
    ),
    "an unsigned delete": (lambda served: Request("DELETE", delete_path(served), {}), UNSIGNED),
    "a delete signed with moto's dummy credentials": (
        lambda served: signed(
            served, "DELETE", delete_path(served), credentials=Credentials("testing", "testing")
        ),
        NOT_THIS_RUN,
    ),
    "a delete signed with the env file's access key and another secret": (
        lambda served: signed(
            served,
            "DELETE",
            delete_path(served),
            credentials=Credentials(served.settings["AWS_ACCESS_KEY_ID"], "testing"),
        ),
        SIGNATURE_DOES_NOT_MATCH,
    ),
    "a signed read of the older version, sent as a delete of it": (
        lambda served: Request(
            "DELETE", delete_path(served), signed(served, "GET", delete_path(served)).headers
        ),
        SIGNATURE_DOES_NOT_MATCH,
    ),
    "a signed delete replayed 16 minutes later": (
        lambda served: signed(
            served, "DELETE", delete_path(served), at=datetime.now(UTC) - timedelta(minutes=16)
        ),
        TOO_SKEWED,
    ),
    "a signed put whose body was changed": (
        lambda served: with_body(signed(served, "PUT", f"/{BUCKET}/{KEY}", body=b"mine"), b"evil"),
        BODY_CHANGED,
    ),
    "a signed aws-chunked put, whose body the signature does not cover": (
        lambda served: signed(served, "PUT", f"/{BUCKET}/{KEY}", body=b"evil", trailer=True),
        PAYLOAD_NOT_VERIFIED,
    ),
    "a presigned delete URL": (
        lambda served: Request("DELETE", presigned_path(served, "DELETE", delete_path(served)), {}),
        UNSIGNED,
    ),
}


def port(served: Served) -> str:
    return served.address.rsplit(":", 1)[1]


def delete_path(served: Served) -> str:
    """A delete of ``KEY``'s older version: what a page would do to erase a memory for good."""
    return DELETE_VERSION.format(bucket=BUCKET, key=KEY, version=served.versions[1])


def with_headers(request: Request, headers: dict[str, str]) -> Request:
    return Request(request.method, request.path, {**request.headers, **headers}, request.body)


def with_body(request: Request, body: bytes) -> Request:
    return Request(request.method, request.path, request.headers, body)


def presigned_path(served: Served, method: str, path: str) -> str:
    request = AWSRequest(method=method, url=f"http://{served.address}{path}")
    S3SigV4QueryAuth(served.credentials(), "s3", "us-east-1", expires=300).add_auth(request)
    split = urlsplit(request.url)
    return f"{split.path}?{split.query}"


@pytest.mark.parametrize("name", HOSTILE)
def test_what_a_web_page_or_another_user_sends_is_refused_and_changes_nothing(
    served: Served, name: str
) -> None:
    hostile, (status, code, message) = HOSTILE[name]
    before, log = bucket_state(served), served.server.log_path.read_text()
    answered, headers, body = send(served, hostile(served))
    assert (answered, s3_error(body)) == (status, (code, message))
    assert not [header for header in headers if header.startswith("access-control-")]  # no CORS
    assert bucket_state(served) == before
    assert served.server.log_path.read_text() == log  # nothing of the request logged


def test_a_refusal_reaches_boto3_as_s3s_error(served: Served) -> None:
    dummy = boto3.client(
        "s3",
        endpoint_url=served.settings["S3MEMORY_ENDPOINT_URL"],
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    with pytest.raises(ClientError) as refused:
        dummy.list_objects_v2(Bucket=BUCKET)
    assert str(refused.value) == (
        f"An error occurred (InvalidAccessKeyId) when calling the ListObjectsV2 operation: {NOT_THIS_RUN[2]}"
    )


def test_a_client_with_the_env_files_credentials_does_all_it_needs(served: Served) -> None:
    settings = served.settings
    assert stat.S_IMODE(served.server.env_file.stat().st_mode) == 0o600
    assert (settings["AWS_ACCESS_KEY_ID"], settings["AWS_SECRET_ACCESS_KEY"]) != ("testing", "testing")
    assert re.fullmatch(r"[0-9A-F]{20}", settings["AWS_ACCESS_KEY_ID"])
    assert re.fullmatch(r"[A-Za-z0-9_-]{43}", settings["AWS_SECRET_ACCESS_KEY"])
    client = served.client()
    key = "users/bob/a file+name%.md"
    first = client.put_object(Bucket=BUCKET, Key=key, Body=b"first")["VersionId"]
    second = client.put_object(Bucket=BUCKET, Key=key, Body=b"second")["VersionId"]
    assert client.get_object(Bucket=BUCKET, Key=key, VersionId=first)["Body"].read() == b"first"
    listed = client.list_objects_v2(Bucket=BUCKET, Prefix="users/bob/", Delimiter="/")
    assert [entry["Key"] for entry in listed["Contents"]] == [key]
    versions = client.list_object_versions(Bucket=BUCKET, Prefix="users/bob/")["Versions"]
    assert [entry["VersionId"] for entry in versions] == [second, first]
    client.delete_objects(
        Bucket=BUCKET, Delete={"Objects": [{"Key": key, "VersionId": version} for version in (first, second)]}
    )
    assert "Versions" not in client.list_object_versions(Bucket=BUCKET, Prefix="users/bob/")
    assert key not in served.server.log_path.read_text()  # werkzeug's request log stays silenced
