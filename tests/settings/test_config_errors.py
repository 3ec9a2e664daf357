"""Errors of configuration name the cause and the fix (issue 25): no settings, a missing bucket, a dead
endpoint, no credentials, refused credentials, a role denied access (and the IAM action it needs), a
bucket in another region, a skewed clock, a wrong key, a KMS key that does not exist; through the
operator commands and through the library's answers; never a user id, a path or key material.

The S3 codes moto cannot make are raised by a ``before-send.s3`` handler, as botocore raises S3's
answer, and go through ``Bucket``'s public calls; refused credentials and a denied role go through
moto's IAM checks (``enable_iam_authentication``)."""

from __future__ import annotations

import http.server
import os
import socket
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.exceptions import ClientError
from moto.core.authorization import enable_iam_authentication

from s3memory import clients
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.edge.answers import answer
from s3memory.errors import RequestFailed
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket, Version
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY
from tests.support.console import audit, run

OTHER_KEY = bytes(range(100, 132))
VIEW = {"command": "view", "path": "/memories/secret-name.md"}


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def s3memory_alone(tmp_path: Path, *argv: str, **settings: str) -> subprocess.CompletedProcess[str]:
    """``s3memory *argv`` in a process with ``settings`` and no AWS configuration or credentials."""
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(tmp_path),
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
        "AWS_EC2_METADATA_DISABLED": "true",
        "AWS_DEFAULT_REGION": "us-east-1",
        **settings,
    }
    return subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", *argv],
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def settings_at(endpoint: str) -> dict[str, str]:
    """The settings of a store at ``endpoint``, with credentials that sign but grant nothing."""
    return {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }


def first_line(err: str) -> str:
    return err.splitlines()[0]


def test_with_no_settings_the_command_names_the_bucket_setting(tmp_path: Path) -> None:
    ran = s3memory_alone(tmp_path, "ls", "--user", "alice")
    assert (ran.returncode, ran.stdout) == (2, "")
    assert (
        first_line(ran.stderr)
        == "s3memory ls: S3MEMORY_BUCKET is required: the S3 bucket that holds the memory"
    )


def test_a_missing_bucket_is_named_with_its_endpoint_and_the_settings(s3: Any) -> None:
    operations = Operations(Bucket(s3, "no-such-bucket"), LocalKeyProvider(MASTER_KEY), storage_format=2)
    status, out, err = run(operations, "ls", "--user", "alice")
    assert (status, out) == (1, "")
    assert first_line(err).startswith(
        "s3memory ls: Error: S3 ListObjectsV2 failed (NoSuchBucket): bucket no-such-bucket does not exist at "
    )
    assert first_line(err).endswith(
        "Check S3MEMORY_BUCKET (--bucket) and S3MEMORY_ENDPOINT_URL (--endpoint-url), or create the bucket. "
        "Nothing was done."
    )
    memory = S3Memory(Bucket(s3, "no-such-bucket"), "alice", LocalKeyProvider(MASTER_KEY))
    text, is_error = answer(memory, VIEW)
    assert is_error and "bucket no-such-bucket does not exist" in text
    assert "alice" not in text and "secret-name" not in text


class _NotS3(http.server.BaseHTTPRequestHandler):
    """An HTTP server that is no S3 endpoint: 404 Not Found, empty, to every request."""

    def _not_found(self) -> None:
        self.send_response(404)
        self.send_header("Content-Length", "0")
        self.end_headers()

    do_GET = do_PUT = do_HEAD = do_POST = do_DELETE = _not_found

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


def test_an_endpoint_that_is_no_s3_server_is_named_with_the_settings() -> None:
    """A web server, a wrong port or a proxy path answers 404 to a listing of the bucket: named,
    not a traceback (helper-37), through the operator commands and the memory's answers."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _NotS3)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    endpoint = f"http://127.0.0.1:{server.server_address[1]}"
    environ = settings_at(endpoint)
    named = (
        f"Error: S3 ListObjectsV2 failed (404): {endpoint} answered 404 Not Found for bucket {BUCKET}: it is "
        "not an S3 endpoint, or not one that serves this bucket. Check S3MEMORY_ENDPOINT_URL (--endpoint-url: "
        "the S3 endpoint itself) and S3MEMORY_BUCKET (--bucket). Nothing was done."
    )
    try:
        for argv in (["users"], ["ls", "--user", "alice"]):
            status, out, err = run(None, *argv, **environ)
            assert (status, out, first_line(err)) == (1, "", f"s3memory {argv[0]}: {named}")
        memory = S3Memory(
            Bucket(clients.make_s3_client(endpoint_url=endpoint), BUCKET),
            "alice",
            LocalKeyProvider(MASTER_KEY),
        )
        assert answer(memory, {"command": "create", "path": "/memories/a.md", "file_text": "x"}) == (
            named,
            True,
        )
    finally:
        server.shutdown()


@pytest.mark.usefixtures("no_back_off")
def test_a_dead_endpoint_is_named_with_the_setting() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    environ = settings_at(endpoint)
    status, out, err = run(None, "users", **environ)
    assert (status, out) == (1, "")
    assert first_line(err) == (
        "s3memory users: Error: S3 ListObjectsV2 failed (EndpointConnectionError): "
        f"bucket {BUCKET} at {endpoint} could not be reached. Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the "
        "network, and that the server is running. Nothing was reported as done; try again."
    )


def test_no_credentials_are_named_with_where_to_set_them(tmp_path: Path) -> None:
    ran = s3memory_alone(tmp_path, "users", S3MEMORY_BUCKET=BUCKET, S3MEMORY_LOCAL_KEY=LOCAL_KEY_B64)
    assert (ran.returncode, ran.stdout) == (1, "")
    assert first_line(ran.stderr) == (
        "s3memory users: Error: S3 ListObjectsV2 failed (NoCredentialsError): no AWS credentials were found. "
        "Set AWS_PROFILE (--profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an IAM role. "
        "Nothing was done."
    )


def test_a_wrong_local_key_names_the_key_settings(s3: Any) -> None:
    S3Memory(Bucket(s3, BUCKET), "alice", LocalKeyProvider(MASTER_KEY)).run(
        {"command": "create", "path": "/memories/secret-name.md", "file_text": "x"}
    )
    wrong = Operations(Bucket(s3, BUCKET), LocalKeyProvider(OTHER_KEY), storage_format=2)
    status, out, err = run(wrong, "ls", "--user", "alice")
    assert (status, out) == (1, "")
    assert first_line(err) == (
        "s3memory ls: Error: The store key is not one s3memory wrapped for this store with this key; nothing "
        "was read. Check S3MEMORY_LOCAL_KEY (an earlier key goes in S3MEMORY_PREVIOUS_LOCAL_KEYS): the key "
        "the store was created with. Check that S3MEMORY_STORE_ID and S3MEMORY_PREFIX (--store-id, --prefix) "
        "are those the store's memory was written with."
    )
    text, is_error = answer(S3Memory(Bucket(s3, BUCKET), "alice", LocalKeyProvider(OTHER_KEY)), VIEW)
    assert is_error and "Check S3MEMORY_LOCAL_KEY" in text and "secret-name" not in text


def test_a_wrong_store_id_names_the_store_settings(s3: Any) -> None:
    """The store id is the bucket's name unless set: a store read under another (a copied bucket, a
    changed setting) is refused naming the store settings too, wherever it is read (helper-37)."""
    S3Memory(Bucket(s3, BUCKET), "alice", LocalKeyProvider(MASTER_KEY)).run(
        {"command": "create", "path": "/memories/secret-name.md", "file_text": "x"}
    )
    named = (
        "Error: The store key is not one s3memory wrapped for this store with this key; nothing was read. Check "
        "S3MEMORY_LOCAL_KEY (an earlier key goes in S3MEMORY_PREVIOUS_LOCAL_KEYS): the key the store was created "
        "with. Check that S3MEMORY_STORE_ID and S3MEMORY_PREFIX (--store-id, --prefix) are those the store's "
        "memory was written with."
    )
    other = S3Memory(Bucket(s3, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), store_id="other")
    assert answer(other, VIEW) == (named, True)
    operations = Operations(
        Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2, store_id="other"
    )
    for argv in (["users"], ["ls", "--user", "alice"]):
        status, out, err = run(operations, *argv)
        assert (status, out, first_line(err)) == (1, "", f"s3memory {argv[0]}: {named}")


def test_a_kms_key_that_does_not_exist_names_the_setting(s3: Any, kms: Any) -> None:
    memory = S3Memory(Bucket(s3, BUCKET), "alice", KMSKeyProvider("alias/no-such-key", kms))
    text, is_error = answer(memory, {"command": "create", "path": "/memories/a.md", "file_text": "x"})
    assert is_error
    assert text == (
        "Error: KMS GenerateDataKey failed (NotFoundException): the KMS key alias/no-such-key does not exist "
        "in this account and region, is disabled, or may not be used by these credentials; no data was "
        "changed. Check S3MEMORY_KMS_KEY_ID (--kms-key-id), the region (AWS_DEFAULT_REGION) and the key policy "
        "(docs/deploy.md)."
    )


def test_a_kms_client_with_no_region_names_the_setting(s3: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    """S3's client falls back to a region; KMS's has none to fall back to (helper-37)."""
    for variable in ("AWS_DEFAULT_REGION", "AWS_REGION", "AWS_PROFILE"):
        monkeypatch.delenv(variable, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    memory = S3Memory(Bucket(s3, BUCKET), "alice", KMSKeyProvider("alias/agent-memory"))
    assert answer(memory, {"command": "create", "path": "/memories/a.md", "file_text": "x"}) == (
        "Error: KMS GenerateDataKey failed (NoRegionError): no AWS region is set for KMS. Set AWS_DEFAULT_REGION "
        "(--region) to the KMS key's region; no data was changed.",
        True,
    )


# -- credentials and roles, through moto's IAM checks ----------------------------------------------

TEST_ACCESS_KEY = "AKIAS3MEMORYTESTKEY1"
TEST_SECRET = "s3memory-test-secret-never-shown"
SECRETS = [LOCAL_KEY_B64, TEST_ACCESS_KEY, TEST_SECRET, "FOOBARKEY", "FOOBARSECRET"]
"""Key material these tests configure (and moto's own): no message may show any of it."""
AWS_S3 = "https://s3.amazonaws.com"
"""The endpoint of a client of AWS S3 in us-east-1 (in-process moto answers for it)."""
CREDENTIAL_VARIABLES = (
    "AWS_ACCESS_KEY_ID",
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "AWS_SECURITY_TOKEN",
    "AWS_PROFILE",
    "AWS_DEFAULT_PROFILE",
    "AWS_ROLE_ARN",
    "AWS_WEB_IDENTITY_TOKEN_FILE",
    "AWS_CONTAINER_CREDENTIALS_RELATIVE_URI",
    "AWS_CONTAINER_CREDENTIALS_FULL_URI",
)
"""Every variable botocore finds credentials or a profile by."""


def clean(message: str, *secrets: str) -> str:
    """``message``, checked to show no user id, memory path or key material (``SECRETS``, ``secrets``)."""
    assert "alice" not in message and "secret-name" not in message and "/memories" not in message
    assert not any(secret in message for secret in [*SECRETS, *secrets])
    return message


@pytest.fixture
def credentials_of(aws: None, monkeypatch: pytest.MonkeyPatch) -> Callable[[str, str], None]:
    """Sets the environment's credentials (botocore's ``env``) to an access key and its secret, with
    no profile or config file and a fresh session for ``clients.make_s3_client``, restored after.
    moto (``aws``) is started first: it sets credentials of its own when it starts."""
    for name in CREDENTIAL_VARIABLES:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_CONFIG_FILE", os.devnull)
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", os.devnull)
    monkeypatch.setenv("AWS_EC2_METADATA_DISABLED", "true")
    monkeypatch.setenv("AWS_DEFAULT_REGION", "us-east-1")
    monkeypatch.setattr(clients, "_sessions", {})

    def use(access_key: str, secret: str) -> None:
        monkeypatch.setenv("AWS_ACCESS_KEY_ID", access_key)
        monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", secret)

    return use


def refused_by_the_library(client: Any, *secrets: str) -> str:
    """The answer text the memory tool gives ``view /memories`` through ``client``, an error."""
    memory = S3Memory(Bucket(client, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), storage_format=2)
    text, is_error = answer(memory, {"command": "view", "path": "/memories"})
    assert is_error
    return clean(text, *secrets)


def refused_by_the_command_line(*secrets: str) -> str:
    """``s3memory ls --user alice`` with this process's AWS environment: its one line of error."""
    status, out, err = run(
        None, "ls", "--user", "alice", S3MEMORY_BUCKET=BUCKET, S3MEMORY_LOCAL_KEY=LOCAL_KEY_B64
    )
    assert (status, out, audit(err)["status"]) == (1, "", 1)
    return clean(first_line(err), *secrets)


def refused_credentials(operation: str) -> str:
    return (
        f"Error: S3 {operation} failed (InvalidAccessKeyId): the AWS credentials (from env) were refused at "
        f"{AWS_S3}: they are wrong, expired or for another endpoint. Renew them, or choose others "
        "(AWS_PROFILE, --profile). Nothing was done."
    )


KMS_DECRYPT = " (and kms:Decrypt on the bucket's KMS key, if it encrypts with one)"
"""What a denied read names beside the S3 action where S3's message names no action."""


def denied(operation: str, action: str) -> str:
    return (
        f"Error: S3 {operation} failed (AccessDenied): the AWS credentials (from env) may not {operation} in "
        f"bucket {BUCKET} at {AWS_S3}. Grant {action} to the role (docs/deploy.md, docs/real-s3.md), or "
        "choose other credentials (AWS_PROFILE, --profile). Nothing was done."
    )


@pytest.mark.usefixtures("s3")
def test_refused_credentials_are_named_by_where_botocore_found_them(
    credentials_of: Callable[[str, str], None],
) -> None:
    credentials_of(TEST_ACCESS_KEY, TEST_SECRET)
    with enable_iam_authentication():  # moto checks each request's key: this one is unknown to it
        client = clients.make_s3_client()
        assert refused_by_the_library(client) == refused_credentials("GetObject")
        assert refused_by_the_command_line() == f"s3memory ls: {refused_credentials('ListObjectsV2')}"


@pytest.mark.usefixtures("s3")
def test_a_role_denied_access_is_named_with_the_iam_action_it_needs(
    credentials_of: Callable[[str, str], None],
) -> None:
    iam = boto3.client(  # moto's own credentials: the environment's are the test's
        "iam", region_name="us-east-1", aws_access_key_id="FOOBARKEY", aws_secret_access_key="FOOBARSECRET"
    )
    iam.create_user(UserName="no-policy")
    created = iam.create_access_key(UserName="no-policy")["AccessKey"]
    key, secret = created["AccessKeyId"], created["SecretAccessKey"]
    try:
        credentials_of(key, secret)
        with enable_iam_authentication():  # a user no policy allows anything
            client = clients.make_s3_client()
            assert refused_by_the_library(client, key, secret) == denied(
                "GetObject", "s3:GetObject" + KMS_DECRYPT
            )
            # ls lists above the store's prefix first; a role that may not is not refused for it (N4)
            assert (
                refused_by_the_command_line(key, secret)
                == f"s3memory ls: {denied('GetObject', 's3:GetObject' + KMS_DECRYPT)}"
            )
    finally:
        iam.delete_access_key(UserName="no-policy", AccessKeyId=key)
        iam.delete_user(UserName="no-policy")


# -- the codes moto does not make, one by one --------------------------------------------------------


def _refusal(
    code: str, status: int = 400, *, headers: dict[str, str] | None = None, **details: str
) -> ClientError:
    """S3's refusal with ``code`` as botocore raises it, with a message that must not be shown."""
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"quoted request data {TEST_SECRET}", **details},
            "ResponseMetadata": {"HTTPStatusCode": status, "HTTPHeaders": headers or {}},
        },
        "GetObject",
    )


def _refusing(error: ClientError) -> Bucket:
    """A ``Bucket`` of AWS S3 (us-east-1, explicit credentials) whose every request S3 refuses with ``error``."""
    client = boto3.client(
        "s3", region_name="us-east-1", aws_access_key_id=TEST_ACCESS_KEY, aws_secret_access_key=TEST_SECRET
    )

    def refuse(**_: Any) -> None:
        raise error

    client.meta.events.register_first("before-send.s3", refuse)  # before moto's, when moto is on
    return Bucket(client, BUCKET)


def _get(bucket: Bucket) -> object:
    return bucket.get("users/a", max_bytes=10)


def _get_version(bucket: Bucket) -> object:
    return bucket.get("users/a", max_bytes=10, version_id="v1")


def _put(bucket: Bucket) -> object:
    return bucket.put("users/a", b"x")


def _head(bucket: Bucket) -> object:
    return bucket.head("users/a")


def _list(bucket: Bucket) -> object:
    return list(bucket.pages("users/"))


def _copy(bucket: Bucket) -> object:
    return bucket.copy("users/a", "users/b")


def _delete_versions(bucket: Bucket) -> object:
    bucket.delete_versions([Version("users/a", "v1")])
    return None


DENIED_TAIL = (
    "Grant {} to the role (docs/deploy.md, docs/real-s3.md), or choose other credentials (AWS_PROFILE, "
    "--profile). Nothing was done."
)


def _denied(operation: str, action: str) -> str:
    return (
        f"Error: S3 {operation} failed (AccessDenied): the AWS credentials (from explicit) may not {operation} "
        f"in bucket {BUCKET} at {AWS_S3}. " + DENIED_TAIL.format(action)
    )


SEEN: list[tuple[str, ClientError, Callable[[Bucket], object], str]] = [
    (
        "PermanentRedirect",
        _refusal("PermanentRedirect", 301, headers={"x-amz-bucket-region": "eu-west-1"}),
        _get,
        f"Error: S3 GetObject failed (PermanentRedirect): bucket {BUCKET} is in region eu-west-1, not in region "
        "us-east-1. Set AWS_DEFAULT_REGION (--region) to eu-west-1. Nothing was done.",
    ),
    (
        "301-of-a-head",
        _refusal("301", 301, headers={"x-amz-bucket-region": "ap-southeast-2"}),
        _head,
        f"Error: S3 HeadObject failed (301): bucket {BUCKET} is in region ap-southeast-2, not in region "
        "us-east-1. Set AWS_DEFAULT_REGION (--region) to ap-southeast-2. Nothing was done.",
    ),
    (
        "AuthorizationHeaderMalformed",
        _refusal("AuthorizationHeaderMalformed", Region="ap-south-1"),
        _get,
        f"Error: S3 GetObject failed (AuthorizationHeaderMalformed): bucket {BUCKET} is in region ap-south-1, "
        "not in region us-east-1. Set AWS_DEFAULT_REGION (--region) to ap-south-1. Nothing was done.",
    ),
    (
        "IllegalLocationConstraintException",
        _refusal("IllegalLocationConstraintException"),
        _get,
        f"Error: S3 GetObject failed (IllegalLocationConstraintException): bucket {BUCKET} is in another region "
        "than the client's (us-east-1). Set AWS_DEFAULT_REGION (--region) to the bucket's region. Nothing was "
        "done.",
    ),
    (
        "a-region-that-is-no-region",
        _refusal("PermanentRedirect", 301, headers={"x-amz-bucket-region": "eu-west-1; rm -rf"}),
        _get,
        f"Error: S3 GetObject failed (PermanentRedirect): bucket {BUCKET} is in another region than the "
        "client's (us-east-1). Set AWS_DEFAULT_REGION (--region) to the bucket's region. Nothing was done.",
    ),
    (
        "ExpiredToken",
        _refusal("ExpiredToken"),
        _get,
        "Error: S3 GetObject failed (ExpiredToken): the AWS credentials (from explicit) were refused at "
        f"{AWS_S3}: they are wrong, expired or for another endpoint. Renew them, or choose others (AWS_PROFILE, "
        "--profile). Nothing was done.",
    ),
    (
        "RequestTimeTooSkewed",
        _refusal("RequestTimeTooSkewed", 403),
        _get,
        "Error: S3 GetObject failed (RequestTimeTooSkewed): the clock of this machine differs from the clock "
        f"of {AWS_S3} by more than 15 minutes. Set the system clock (NTP). Nothing was done.",
    ),
    (
        "AccessDenied-ListObjectsV2",
        _refusal("AccessDenied", 403),
        _list,
        _denied("ListObjectsV2", "s3:ListBucket"),
    ),
    (
        "AccessDenied-CopyObject",
        _refusal("AccessDenied", 403),
        _copy,
        _denied(
            "CopyObject",
            "s3:GetObject and s3:PutObject (and kms:Decrypt and kms:GenerateDataKey on the bucket's KMS key, "
            "if it encrypts with one)",
        ),
    ),
    (
        "AccessDenied-HeadObject",
        _refusal("403", 403),
        _head,
        _denied("HeadObject", "s3:GetObject").replace("(AccessDenied)", "(403)"),
    ),
    (
        "AccessDenied-GetObject-of-a-version",
        _refusal("AccessDenied", 403),
        _get_version,
        _denied("GetObject", "s3:GetObjectVersion" + KMS_DECRYPT),
    ),
    (
        "AccessDenied-GetObject-for-the-bucket-key",  # S3's message names the KMS action: only that
        _refusal("AccessDenied", 403, Message=f"{TEST_SECRET} is not authorized to perform: kms:Decrypt"),
        _get,
        _denied("GetObject", "kms:Decrypt on the bucket's KMS key"),
    ),
    (
        "AccessDenied-PutObject-for-the-bucket-key",
        _refusal("AccessDenied", 403, Message=f"{TEST_SECRET} not authorized to perform KMS:GenerateDataKey"),
        _put,
        _denied("PutObject", "kms:GenerateDataKey on the bucket's KMS key"),
    ),
    (
        "AccessDenied-PutObject",  # S3's message names the S3 action: only that
        _refusal("AccessDenied", 403, Message=f"{TEST_SECRET} is not authorized to perform: s3:PutObject"),
        _put,
        _denied("PutObject", "s3:PutObject"),
    ),
    (
        "AccessDenied-PutObject-unsaid",  # S3's message names no action: both
        _refusal("AccessDenied", 403),
        _put,
        _denied(
            "PutObject",
            "s3:PutObject (and kms:GenerateDataKey on the bucket's KMS key, if it encrypts with one)",
        ),
    ),
    (
        "AccessDenied-DeleteObjects-of-versions",
        _refusal("AccessDenied", 403),
        _delete_versions,
        _denied("DeleteObjects", "s3:DeleteObjectVersion"),
    ),
    (
        "SlowDown",
        _refusal("SlowDown", 503),
        _get,
        "Error: S3 GetObject failed (SlowDown). Nothing was reported as done; try again.",
    ),
    (
        "InternalError",
        _refusal("InternalError", 500),
        _get,
        "Error: S3 GetObject failed (InternalError). Nothing was reported as done; try again.",
    ),
]
"""Failures moto does not make: each as S3 sends it, the ``Bucket`` call it fails, and the message.
Throttling and server errors say nothing of the configuration: they keep the plain message."""


@pytest.mark.parametrize(
    ("error", "call", "message"), [case[1:] for case in SEEN], ids=[case[0] for case in SEEN]
)
def test_each_code_that_configuration_causes_names_its_fix(
    error: ClientError, call: Callable[[Bucket], object], message: str
) -> None:
    with pytest.raises(RequestFailed) as refused:
        call(_refusing(error))
    assert refused.value.message == clean(message)
    assert refused.value.code == error.response["Error"]["Code"]
    assert refused.value.explained == ("try again" not in message)


def test_the_documented_denial_is_what_a_listing_says() -> None:
    """``docs/real-s3.md``'s example of access denied, as ``Bucket`` words it."""
    document = (Path(__file__).resolve().parents[2] / "docs" / "real-s3.md").read_text(encoding="utf-8")
    example = document.split("for example\n\n```\n", 1)[1].split("\n```", 1)[0]
    with pytest.raises(RequestFailed) as refused:
        _list(_refusing(_refusal("AccessDenied", 403)))
    said = refused.value.message.replace("(from explicit)", "(from env)").replace(BUCKET, "my-bucket")
    assert example == said
