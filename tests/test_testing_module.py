"""``s3memory.testing``, for applications' tests: a plugin whose fixture makes moto refuse what S3
refuses, importable without pytest or moto (the demo's embedded S3 and the benchmark import it)."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

APPLICATION_TESTS = """
import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws


def copy_over_taken(s3):
    s3.create_bucket(Bucket="app")
    s3.put_object(Bucket="app", Key="taken", Body=b"taken")
    s3.put_object(Bucket="app", Key="source", Body=b"source")
    s3.copy_object(Bucket="app", Key="taken", CopySource={"Bucket": "app", "Key": "source"}, IfNoneMatch="*")
    return s3.get_object(Bucket="app", Key="taken")["Body"].read()


def test_the_fixture_refuses_a_copy_onto_a_taken_key(moto_honouring_conditions):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        with pytest.raises(ClientError) as refused:
            copy_over_taken(s3)
        assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
        assert s3.get_object(Bucket="app", Key="taken")["Body"].read() == b"taken"


def test_without_the_fixture_moto_is_as_shipped():
    with mock_aws():
        assert copy_over_taken(boto3.client("s3", region_name="us-east-1")) == b"source"
"""


def test_the_plugin_gives_applications_the_fixture(tmp_path: Path) -> None:
    """An application's conftest names ``s3memory.testing`` as a plugin, as the docs say; its tests
    get ``moto_honouring_conditions``, and moto is as shipped in the others."""
    (tmp_path / "conftest.py").write_text('pytest_plugins = ["s3memory.testing"]\n')
    (tmp_path / "test_application.py").write_text(textwrap.dedent(APPLICATION_TESTS))
    environment = {
        **os.environ,
        "PYTHONPATH": str(ROOT),
        "AWS_ACCESS_KEY_ID": "testing",
        "AWS_SECRET_ACCESS_KEY": "testing",
        "AWS_CONFIG_FILE": os.devnull,
        "AWS_SHARED_CREDENTIALS_FILE": os.devnull,
    }
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(tmp_path)],
        cwd=tmp_path,
        env=environment,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stdout + result.stderr
    assert "2 passed" in result.stdout


def test_importing_it_needs_neither_pytest_nor_moto() -> None:
    code = (
        "import sys, s3memory.testing; "
        "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in ('pytest', 'moto', '_pytest'))))"
    )
    result = subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == ""
