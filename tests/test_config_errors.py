"""Errors of configuration name the cause and the fix (issue 25): no settings, a missing bucket, a dead
endpoint, no credentials, a wrong key, a KMS key that does not exist; through the operator commands
and through the library's answers; never a user id, a path or key material."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from s3memory.answers import answer
from s3memory.crypto import KMSKeyProvider, LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket

from .support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY
from .support.console import run

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


@pytest.mark.usefixtures("no_back_off")
def test_a_dead_endpoint_is_named_with_the_setting() -> None:
    endpoint = f"http://127.0.0.1:{free_port()}"
    environ = {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
    }
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
