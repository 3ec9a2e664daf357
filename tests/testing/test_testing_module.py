"""``s3memory.testing``, for applications' tests: a plugin whose fixtures start moto and a scripted
Claude for a test, changing the environment for that test alone; importable without pytest, moto or
``anthropic`` (the demo's embedded S3 and the benchmark import it).

Each application module runs in its own pytest process, as an application's suite would, from a
directory whose ``conftest.py`` names the plugin and nothing else."""

from __future__ import annotations

import os
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any, cast

import pytest

from s3memory.testing.offline import MotoBucket
from tests.support.applications import DEVELOPERS_SHELL, PLUGIN_CONFTEST, run_application_tests

ROOT = Path(__file__).resolve().parents[2]


def run_module(directory: Path, source: str, environment: dict[str, str]) -> str:
    """``source`` as an application's one test module under the plugin; pytest's output."""
    files = {"conftest.py": PLUGIN_CONFTEST, "test_application.py": textwrap.dedent(source)}
    return run_application_tests(directory, files, environment)


ISOLATION_TESTS = """
import os

import anthropic
import boto3

from s3memory import assembly
from s3memory.clients import make_s3_client
from s3memory.settings import Settings

USERS_KEY = "AKIAUSERSOWNKEY00000"


def access_key(request):
    '''The access key a signed request names.'''
    return str(request.headers["Authorization"]).split("Credential=")[1].split("/")[0]


def signed_with(client, call):
    '''The access key each request of ``call(client)`` was signed with.'''
    keys = []

    def record(request, **_):
        keys.append(access_key(request))

    client.meta.events.register_last("request-created.s3", record)
    call(client)
    return keys


class Sent(Exception):
    pass


def signed_without_sending(client):
    def stop(request, **_):
        raise Sent(access_key(request))

    client.meta.events.register_last("request-created.s3", stop)
    try:
        client.list_buckets()
    except Sent as sent:
        return str(sent)


def test_1_before_a_client_of_the_users_own_credentials_is_cached():
    assert signed_without_sending(make_s3_client()) == USERS_KEY


def test_2_every_client_in_the_test_signs_with_dummy_keys_and_reaches_moto(s3memory_bucket):
    listed = lambda client: client.list_objects_v2(Bucket=s3memory_bucket.name)
    keys = (
        signed_with(s3memory_bucket.client, listed)
        + signed_with(make_s3_client(), listed)
        + signed_with(assembly.make_s3_client(Settings.from_env()), listed)
        + signed_with(boto3.client("s3"), listed)
    )
    assert len(keys) == 4 and USERS_KEY not in keys
    settings = Settings.from_env()
    assert (settings.bucket, settings.kms_key_id, settings.endpoint_url) == (s3memory_bucket.name, None, None)
    assert settings.local_key == s3memory_bucket.master_key


def test_3_a_default_client_reaches_the_stand_in_with_a_dummy_key(scripted_claude):
    scripted_claude.play("hello")
    message = anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-5", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
    )
    assert message.content[0].text == "hello"
    assert scripted_claude.api_keys == ["scripted-claude"]
    assert not [value for value in scripted_claude.headers[0].values() if "users-own" in value]


def test_4_after_the_environment_and_the_users_client_are_back():
    assert os.environ["AWS_ACCESS_KEY_ID"] == USERS_KEY
    assert os.environ["S3MEMORY_ENDPOINT_URL"] == "http://127.0.0.1:9"
    assert os.environ["ANTHROPIC_API_KEY"] == "sk-ant-users-own-key"
    assert "S3MEMORY_LOCAL_KEY" not in os.environ and "ANTHROPIC_BASE_URL" not in os.environ
    assert signed_without_sending(make_s3_client()) == USERS_KEY
"""


@pytest.mark.slow
@pytest.mark.processes
def test_a_test_with_the_fixtures_never_sends_the_users_own_credentials(tmp_path: Path) -> None:
    """In a developer's shell (their keys, endpoint, settings, API key and proxy), every AWS client
    the test builds signs with dummy keys and reaches moto, ``Settings.from_env()`` names the test's
    bucket and key alone, a default ``anthropic.Anthropic()`` reaches the stand-in with a dummy key;
    and after the test the shell's environment and a client of the user's own keys are back."""
    output = run_module(tmp_path, ISOLATION_TESTS, DEVELOPERS_SHELL)
    assert "4 passed" in output


APPLICATION_TESTS = """
import boto3
import pytest
from botocore.exceptions import ClientError
from moto import mock_aws

from s3memory.testing import conditions_honoured


def copy_over_taken(s3, bucket):
    s3.put_object(Bucket=bucket, Key="taken", Body=b"taken")
    s3.put_object(Bucket=bucket, Key="source", Body=b"source")
    s3.copy_object(Bucket=bucket, Key="taken", CopySource={"Bucket": bucket, "Key": "source"}, IfNoneMatch="*")
    return s3.get_object(Bucket=bucket, Key="taken")["Body"].read()


def test_s3memory_bucket_refuses_a_copy_onto_a_taken_key(s3memory_bucket):
    with pytest.raises(ClientError) as refused:
        copy_over_taken(s3memory_bucket.client, s3memory_bucket.name)
    assert refused.value.response["Error"]["Code"] == "PreconditionFailed"
    assert s3memory_bucket.client.get_object(Bucket=s3memory_bucket.name, Key="taken")["Body"].read() == b"taken"


def test_s3memory_bucket_as_shipped_copies_over_it(s3memory_bucket_as_shipped):
    assert copy_over_taken(s3memory_bucket_as_shipped.client, s3memory_bucket_as_shipped.name) == b"source"


def test_the_old_fixture_still_refuses_inside_the_tests_own_moto(moto_honouring_conditions):
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="app")
        with pytest.raises(ClientError) as refused:
            copy_over_taken(s3, "app")
        assert refused.value.response["Error"]["Code"] == "PreconditionFailed"


def test_conditions_honoured_inside_the_tests_own_moto():
    with mock_aws(), conditions_honoured():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="app")
        with pytest.raises(ClientError):
            copy_over_taken(s3, "app")


def test_without_either_moto_is_as_shipped():
    with mock_aws():
        s3 = boto3.client("s3", region_name="us-east-1")
        s3.create_bucket(Bucket="app")
        assert copy_over_taken(s3, "app") == b"source"
"""


@pytest.mark.slow
@pytest.mark.processes
def test_the_plugins_moto_refuses_what_s3_refuses_and_the_old_fixture_is_deprecated(tmp_path: Path) -> None:
    """``s3memory_bucket`` starts moto and refuses a copy onto a taken key, as S3 does;
    ``s3memory_bucket_as_shipped`` and a test with neither get moto as shipped. The old
    ``moto_honouring_conditions`` still works inside a test's own ``mock_aws``, with a warning that
    names what to use instead (used alone it started no moto: ``NoCredentialsError``)."""
    output = run_module(
        tmp_path,
        APPLICATION_TESTS,
        {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_CONFIG_FILE": os.devnull},
    )
    assert "5 passed, 1 warning" in output
    assert (
        "DeprecationWarning: the fixture moto_honouring_conditions starts no moto: use s3memory_bucket "
        "(moto started, dummy credentials, a bucket made), or conditions_honoured() inside your own mock_aws()"
    ) in output


def test_importing_it_needs_neither_pytest_nor_moto_nor_anthropic() -> None:
    code = (
        "import sys, s3memory.testing; "
        "print(','.join(sorted(m for m in sys.modules "
        "if m.split('.')[0] in ('pytest', 'moto', '_pytest', 'anthropic'))))"
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


def test_a_failing_tests_report_shows_no_master_key() -> None:
    """The review of issue 38: pytest shows a failing test's fixture values, and ``MotoBucket``'s repr
    printed its master key into CI logs."""
    key = bytes(range(32))
    shown = repr(MotoBucket(name="memory", client=cast("Any", None), master_key=key))
    assert shown == "MotoBucket(name='memory', client=None)"
    assert repr(key) not in shown and key.hex() not in shown
