"""``s3memory mcp`` at start-up (issue 38): settings the bucket or the KMS key do not answer to are
refused before anything is served, in one line on standard error with exit status 2, so an MCP client
shows the server failed and its log shows why; ``--no-check`` starts anyway. ``--env-file`` reads the
settings from a file only this user may read, as ``s3memory local-s3`` writes it.

The servers are processes of their own against moto's S3 server on 127.0.0.1 (which serves KMS too);
refused credentials are the guarded server's (``local-s3``'s), which checks signatures. Claude Code's
``claude mcp list`` (through npx) is ``slow``, like the MCP Inspector's test.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import boto3
import pytest
from botocore.stub import Stubber

from s3memory.assembly import make_store
from s3memory.clients import CHECK_SECONDS
from s3memory.crypto import KMSKeyProvider
from s3memory.demo.guarded_s3 import Credentials
from s3memory.demo.local_s3 import settings_text
from s3memory.errors import StorageError
from s3memory.mcp import env_file
from s3memory.mcp.env_file import EnvFileRefused
from s3memory.mcp.startup import unusable
from s3memory.settings import Settings
from s3memory.testing.embedded_s3 import moto_server
from tests.support.bucket import LOCAL_KEY_B64, MASTER_KEY
from tests.support.local_s3 import LocalS3
from tests.support.mcp_messages import INITIALIZE
from tests.support.mcp_servers import AWS_TEST_ENVIRONMENT, mcp_server, ok, server_command

pytestmark = [pytest.mark.slow, pytest.mark.processes]

BUCKET = "mcp-startup-memory"
MISSING_BUCKET = "mcp-startup-no-such-bucket"
REGION = "us-east-1"
PROCESS_TIMEOUT_SECONDS = 120
"""A guard against a hang, far beyond the check's bound: a server that never exits fails the test."""
CLAUDE_CODE = "@anthropic-ai/claude-code@2.1.197"
"""The Claude Code whose ``claude mcp list`` the slow test runs (pinned: its output is matched)."""
NPX_TIMEOUT_SECONDS = 300


@pytest.fixture(scope="module")
def kms_key(moto_endpoint_with_bucket: str) -> str:
    """A KMS key of moto's server (the one that serves the bucket)."""
    kms = boto3.client("kms", endpoint_url=moto_endpoint_with_bucket, region_name=REGION)
    return str(kms.create_key()["KeyMetadata"]["KeyId"])


def store(endpoint: str, bucket: str = BUCKET, **more: str) -> dict[str, str]:
    return {
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "S3MEMORY_PREFIX": "startup/",
        **more,
    }


def with_kms(endpoint: str, key_id: str) -> dict[str, str]:
    """The store's settings with a KMS key of moto's server instead of the local key."""
    settings = store(endpoint, S3MEMORY_KMS_KEY_ID=key_id, AWS_ENDPOINT_URL_KMS=endpoint)
    del settings["S3MEMORY_LOCAL_KEY"]
    return settings


def environment_of(settings: Mapping[str, str], *, credentials: bool = True) -> dict[str, str]:
    """This process's environment without its AWS and s3memory settings, with ``settings`` (and the
    tests' AWS credentials, unless not ``credentials``; never the instance metadata service)."""
    kept = {name: value for name, value in os.environ.items() if not name.startswith(("AWS_", "S3MEMORY_"))}
    aws = AWS_TEST_ENVIRONMENT if credentials else {"AWS_DEFAULT_REGION": REGION}
    return {**kept, **aws, "AWS_EC2_METADATA_DISABLED": "true", **settings}


def start(
    settings: Mapping[str, str], *options: str, credentials: bool = True, home: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """``s3memory mcp --user alice`` with ``settings`` and ``options``, sent one initialize request:
    its exit status and output (a server that starts answers it, then ends with its input)."""
    environment = environment_of(settings, credentials=credentials)
    if home is not None:
        environment["HOME"] = str(home)
    return subprocess.run(
        server_command("alice", options=options),
        input=json.dumps(INITIALIZE) + "\n",
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
        env=environment,
        check=False,
    )


def refused(settings: Mapping[str, str], *options: str, **keywords: Any) -> str:
    """The one line a start refused with exit status 2 prints, having served nothing."""
    ran = start(settings, *options, **keywords)
    assert (ran.returncode, ran.stdout) == (2, ""), ran
    (line,) = ran.stderr.splitlines()
    return line


def closed_port() -> int:
    """A port of 127.0.0.1 that nothing listens on."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


# -- the start-up check ------------------------------------------------------------------------------


def test_a_missing_bucket_is_refused_at_start_up(moto_endpoint_with_bucket: str) -> None:
    assert refused(store(moto_endpoint_with_bucket, MISSING_BUCKET)) == (
        f"s3memory mcp: Error: S3 ListObjectsV2 failed (NoSuchBucket): bucket {MISSING_BUCKET} does not "
        f"exist at {moto_endpoint_with_bucket}. Check S3MEMORY_BUCKET (--bucket) and S3MEMORY_ENDPOINT_URL "
        "(--endpoint-url), or create the bucket. Nothing was done."
    )


def test_an_endpoint_nothing_listens_on_is_refused_at_start_up() -> None:
    endpoint = f"http://127.0.0.1:{closed_port()}"
    assert refused(store(endpoint)) == (
        f"s3memory mcp: Error: S3 ListObjectsV2 failed (EndpointConnectionError): bucket {BUCKET} at "
        f"{endpoint} could not be reached. Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the network, and "
        "that the server is running. Nothing was reported as done; try again."
    )


def test_credentials_the_server_refuses_are_refused_at_start_up() -> None:
    with moto_server(BUCKET, credentials=Credentials.generate()) as guarded:  # local-s3's server
        assert refused(store(guarded)) == (
            "s3memory mcp: Error: S3 ListObjectsV2 failed (InvalidAccessKeyId): the AWS credentials (from "
            f"env) were refused at {guarded}: they are wrong, expired or for another endpoint. Renew them, "
            "or choose others (AWS_PROFILE, --profile). Nothing was done."
        )


def test_no_credentials_are_refused_at_start_up(moto_endpoint_with_bucket: str, tmp_path: Path) -> None:
    assert refused(store(moto_endpoint_with_bucket), credentials=False, home=tmp_path) == (
        "s3memory mcp: Error: S3 ListObjectsV2 failed (NoCredentialsError): no AWS credentials were found. "
        "Set AWS_PROFILE (--profile), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or run with an IAM "
        "role. Nothing was done."
    )


def test_a_missing_kms_key_is_refused_at_start_up(moto_endpoint_with_bucket: str) -> None:
    assert refused(with_kms(moto_endpoint_with_bucket, "alias/no-such-key")) == (
        "s3memory mcp: Error: KMS GenerateDataKey failed (NotFoundException): the KMS key alias/no-such-key "
        "does not exist in this account and region, is disabled, or may not be used by these credentials; "
        "no data was changed. Check S3MEMORY_KMS_KEY_ID (--kms-key-id), the region (AWS_DEFAULT_REGION) and "
        "the key policy (docs/deploy.md)."
    )


def test_the_http_transport_is_refused_at_start_up_too(moto_endpoint_with_bucket: str) -> None:
    http = ["--transport", "http", "--no-auth", "--user", "alice", "--port", str(closed_port())]
    ran = subprocess.run(
        [sys.executable, "-m", "s3memory.cli.main", "mcp", *http],
        capture_output=True,
        text=True,
        timeout=PROCESS_TIMEOUT_SECONDS,
        env=environment_of(store(moto_endpoint_with_bucket, MISSING_BUCKET)),
        check=False,
    )
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == (
        f"s3memory mcp --transport http: Error: S3 ListObjectsV2 failed (NoSuchBucket): bucket {MISSING_BUCKET} "
        f"does not exist at {moto_endpoint_with_bucket}. Check S3MEMORY_BUCKET (--bucket) and "
        "S3MEMORY_ENDPOINT_URL (--endpoint-url), or create the bucket. Nothing was done.\n"
    )


class Silent:
    """A TCP server on 127.0.0.1 that takes connections and never answers: ``connections`` counts them."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self.listener.getsockname()[1]}"
        self.connections = 0
        self.held: list[socket.socket] = []
        self.thread = threading.Thread(target=self._accept, daemon=True)
        self.thread.start()

    def _accept(self) -> None:
        with contextlib.suppress(OSError):
            while True:
                connection, _ = self.listener.accept()
                self.held.append(connection)
                self.connections += 1

    def close(self) -> None:
        self.listener.close()
        for connection in self.held:
            connection.close()


def test_a_server_that_never_answers_is_tried_once_and_refused() -> None:
    """The check's client makes one attempt (a retrying one would open five connections) and stops
    waiting for the answer (``CHECK_SECONDS``; without a bound the process would hang)."""
    silent = Silent()
    try:
        line = refused(store(silent.endpoint))
    finally:
        silent.close()
    assert line == (
        "s3memory mcp: Error: S3 ListObjectsV2 failed (ReadTimeoutError). Nothing was reported as done; "
        "try again."
    )
    assert silent.connections == 1
    assert CHECK_SECONDS == 2


def test_no_check_starts_without_asking_the_bucket(tmp_path: Path) -> None:
    """Offline: the endpoint is not there, the server starts and lists its tool all the same."""
    endpoint = f"http://127.0.0.1:{closed_port()}"
    with mcp_server(store(endpoint), "alice", tmp_path / "server.log", options=["--no-check"]) as client:
        assert [tool["name"] for tool in client.list_tools()] == ["memory"]


@pytest.mark.parametrize(
    "key", ["local", pytest.param("kms", marks=[pytest.mark.slow, pytest.mark.processes])]
)
def test_good_settings_start_and_serve(
    moto_endpoint_with_bucket: str, kms_key: str, tmp_path: Path, key: str
) -> None:
    settings = (
        store(moto_endpoint_with_bucket) if key == "local" else with_kms(moto_endpoint_with_bucket, kms_key)
    )
    settings["S3MEMORY_PREFIX"] = f"startup-{key}/"  # a store of each key's own
    path = f"/memories/{key}.md"
    with mcp_server(settings, "alice", tmp_path / "server.log") as client:
        assert (
            ok(client, command="create", path=path, file_text="started")
            == f"File created successfully at: {path}"
        )
        assert "started" in ok(client, command="view", path=path)


def test_the_check_reads_one_key_and_asks_kms_for_a_dry_run_and_writes_nothing(
    moto_endpoint_with_bucket: str, kms_key: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Exactly two requests, both read-only: a one-key listing of the prefix and a GenerateDataKey
    dry run with the store key's encryption context; the bucket holds nothing after it and KMS no
    new key."""
    from s3memory import clients

    sent: list[tuple[str, dict[str, Any]]] = []
    built = clients._client

    def recording(*arguments: Any, **keywords: Any) -> Any:
        client = built(*arguments, **keywords)
        client.meta.events.register(
            "before-parameter-build", lambda params, model, **_: sent.append((model.name, dict(params)))
        )
        return client

    monkeypatch.setattr(clients, "_client", recording)
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", moto_endpoint_with_bucket)
    settings = Settings.from_env(
        {**with_kms(moto_endpoint_with_bucket, kms_key), "S3MEMORY_PREFIX": "startup-untouched/"}
    )
    s3 = boto3.client("s3", endpoint_url=moto_endpoint_with_bucket, region_name=REGION)
    kms = boto3.client("kms", endpoint_url=moto_endpoint_with_bucket, region_name=REGION)
    keys_before = kms.list_keys()["Keys"]
    assert unusable(settings) is None
    store_identity = make_store(settings).identity
    assert sent == [
        (
            "ListObjectsV2",
            {"Bucket": BUCKET, "Prefix": "startup-untouched/", "MaxKeys": 1, "EncodingType": "url"},
        ),
        (
            "GenerateDataKey",
            {
                "KeyId": kms_key,
                "KeySpec": "AES_256",
                "EncryptionContext": {
                    "s3memory:store": store_identity,
                    "s3memory:user": "store-key",
                    "s3memory:key_version": "0",
                },
                "DryRun": True,
            },
        ),
    ]
    listed = s3.list_object_versions(Bucket=BUCKET, Prefix="startup-untouched/")
    assert listed.get("Versions", []) == [] and listed.get("DeleteMarkers", []) == []
    assert kms.list_keys()["Keys"] == keys_before


def dry_run_answer(code: str, status: int) -> Stubber:
    """A KMS client whose GenerateDataKey answers ``code``, expecting the check's dry run."""
    client = boto3.client("kms", region_name=REGION)
    stubber = Stubber(client)
    stubber.add_client_error(
        "generate_data_key",
        service_error_code=code,
        service_message="(not shown)",
        http_status_code=status,
        expected_params={
            "KeyId": "alias/memory",
            "KeySpec": "AES_256",
            "EncryptionContext": {
                "s3memory:store": "0" * 32,
                "s3memory:user": "store-key",
                "s3memory:key_version": "0",
            },
            "DryRun": True,
        },
    )
    stubber.activate()
    return stubber


def test_kms_saying_the_dry_run_would_succeed_passes_the_check() -> None:
    """AWS KMS answers a dry run that would succeed with ``DryRunOperationException`` (moto ignores
    ``DryRun``): that is the check passing."""
    stubber = dry_run_answer("DryRunOperationException", 412)
    KMSKeyProvider("alias/memory", stubber.client).check("0" * 32)
    stubber.assert_no_pending_responses()


@pytest.mark.parametrize(
    "code", ["AccessDeniedException", "DisabledException", "KMSInvalidStateException", "NotFoundException"]
)
def test_kms_refusing_the_dry_run_names_the_key_and_the_fix(code: str) -> None:
    """A key denied, disabled or pending deletion (which moto does not refuse), or missing."""
    stubber = dry_run_answer(code, 400)
    with pytest.raises(StorageError) as raised:
        KMSKeyProvider("alias/memory", stubber.client).check("0" * 32)
    assert raised.value.message == (
        f"Error: KMS GenerateDataKey failed ({code}): the KMS key alias/memory does not exist "
        "in this account and region, is disabled, or may not be used by these credentials; no data was "
        "changed. Check S3MEMORY_KMS_KEY_ID (--kms-key-id), the region (AWS_DEFAULT_REGION) and the key "
        "policy (docs/deploy.md)."
    )


# -- --env-file: parsing -----------------------------------------------------------------------------


def test_the_file_local_s3_writes_is_read_back_whole() -> None:
    credentials = Credentials.generate()
    text = settings_text("http://127.0.0.1:9000", "s3memory-local", MASTER_KEY, credentials)
    assert env_file.parse(text) == {
        "S3MEMORY_ENDPOINT_URL": "http://127.0.0.1:9000",
        "S3MEMORY_BUCKET": "s3memory-local",
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "AWS_ACCESS_KEY_ID": credentials.access_key_id,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_access_key,
        "AWS_DEFAULT_REGION": "us-east-1",
    }


def test_comments_blank_lines_and_shell_quoting_are_read_as_a_shell_reads_them() -> None:
    text = (
        "# s3memory, local\n"
        "\n"
        "   export S3MEMORY_BUCKET='team memory'  \r\n"
        'S3MEMORY_PREFIX="acme/"\n'
        "AWS_PROFILE=it\\'s\n"
        "export\tS3MEMORY_STORE_ID='a$b `c` ~d;e'\n"
        "S3MEMORY_GUARD=\n"
        "AWS_REGION=''\n"
    )
    assert env_file.parse(text) == {
        "S3MEMORY_BUCKET": "team memory",
        "S3MEMORY_PREFIX": "acme/",
        "AWS_PROFILE": "it's",
        "S3MEMORY_STORE_ID": "a$b `c` ~d;e",
        "S3MEMORY_GUARD": "",
        "AWS_REGION": "",
    }


VALUE_REFUSED = (
    "line 2: the value of {} is not one shell word that expands nothing (put it in single quotes: "
    "spaces, $, `, ;, &, |, <, >, (, ) and ~ only inside them)"
)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("S3MEMORY_LOCAL_KEY=$(cat secret-key)", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ('S3MEMORY_LOCAL_KEY="$SECRET_KEY"', VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=`secret`", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ('S3MEMORY_LOCAL_KEY="secret\\$key"', VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=secret\\`key", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=secret-key rm -rf x", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=secret-key;id", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY='secret-key", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=secret-key\\", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=~/secret-key", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("S3MEMORY_LOCAL_KEY=secret-key # the key", VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY")),
        ("secret-key", "line 2 is not NAME=VALUE or export NAME=VALUE, a comment or a blank line"),
        (
            "S3MEMORY_LOCAL_KEY = secret-key",
            "line 2 is not NAME=VALUE or export NAME=VALUE, a comment or a blank line",
        ),
        (
            ". ./other-secret-key.env",
            "line 2 is not NAME=VALUE or export NAME=VALUE, a comment or a blank line",
        ),
        ("PYTHONPATH=secret-key", "line 2 sets a variable whose name begins neither S3MEMORY_ nor AWS_"),
        ("secret_key=x", "line 2 sets a variable whose name begins neither S3MEMORY_ nor AWS_"),
        (
            "s3memory_local_key=secret-key",
            "line 2 sets a variable whose name begins neither S3MEMORY_ nor AWS_",
        ),
        ("S3MEMORY_LOCAL_KEY=secret\x00key", "line 2 holds a control character"),
        ("S3MEMORY_BUCKET=other-secret-key", "line 2 sets S3MEMORY_BUCKET again (line 1 set it first)"),
    ],
)
def test_a_line_a_shell_would_read_otherwise_is_refused_naming_its_number_not_its_value(
    line: str, message: str
) -> None:
    with pytest.raises(EnvFileRefused) as raised:
        env_file.parse(f"export S3MEMORY_BUCKET=b\n{line}\nS3MEMORY_PREFIX=p/\n")
    assert str(raised.value) == message
    assert "secret" not in str(raised.value)


# -- --env-file: the file ----------------------------------------------------------------------------


def written(path: Path, text: str, mode: int = 0o600) -> Path:
    path.write_text(text)
    path.chmod(mode)
    return path


@pytest.mark.parametrize("mode", [0o644, 0o640, 0o604, 0o620, 0o602])
def test_a_file_others_may_read_or_write_is_refused_with_the_fix(tmp_path: Path, mode: int) -> None:
    path = written(tmp_path / "s3memory.env", "S3MEMORY_BUCKET=b\n", mode)
    with pytest.raises(EnvFileRefused) as raised:
        env_file.read(path)
    assert str(raised.value) == f"may be read or written by others (mode {mode:03o}): chmod 600 {path}"


def test_a_symbolic_link_is_refused_not_followed(tmp_path: Path) -> None:
    target = written(tmp_path / "real.env", "S3MEMORY_BUCKET=b\n")
    link = tmp_path / "s3memory.env"
    link.symlink_to(target)
    with pytest.raises(EnvFileRefused) as raised:
        env_file.read(link)
    assert str(raised.value) == "is a symbolic link: name the file itself (a link can be pointed elsewhere)"
    assert env_file.read(target) == {"S3MEMORY_BUCKET": "b"}


def test_another_users_file_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = written(tmp_path / "s3memory.env", "S3MEMORY_BUCKET=b\n")
    monkeypatch.setattr(env_file.os, "geteuid", lambda: path.stat().st_uid + 1)
    with pytest.raises(EnvFileRefused) as raised:
        env_file.read(path)
    assert (
        str(raised.value) == "belongs to another user: use a file of your own (s3memory local-s3 writes one)"
    )


def test_a_fifo_a_directory_a_large_file_and_no_file_are_refused(tmp_path: Path) -> None:
    """A FIFO would block a reader for ever: it is opened without waiting, and refused."""
    fifo = tmp_path / "fifo.env"
    os.mkfifo(fifo, 0o600)
    large = written(tmp_path / "large.env", "#" * env_file.MAX_BYTES + "\n")
    cases = {
        fifo: "is not a regular file",
        tmp_path: "is not a regular file",
        large: "is larger than 65,536 bytes: an env file holds a few settings",
        tmp_path / "gone.env": (
            "no such file (s3memory local-s3 writes its env file while it runs and removes it when it stops)"
        ),
    }
    for path, message in cases.items():
        with pytest.raises(EnvFileRefused) as raised:
            env_file.read(path)
        assert str(raised.value) == message, path


# -- --env-file: the command -------------------------------------------------------------------------


@pytest.mark.slow
@pytest.mark.processes
def test_the_command_serves_with_the_env_file_local_s3_writes(tmp_path: Path) -> None:
    """The settings come from the file alone (the environment's AWS credentials, the tests', are not
    local-s3's: the file's win), and the server starts after its check and serves."""
    with (
        LocalS3() as server,
        mcp_server(
            {}, "alice", tmp_path / "server.log", options=["--env-file", str(server.env_file)]
        ) as client,
    ):
        assert ok(client, command="create", path="/memories/a.md", file_text="from the env file") == (
            "File created successfully at: /memories/a.md"
        )


def test_the_files_settings_win_over_the_environments(moto_endpoint_with_bucket: str, tmp_path: Path) -> None:
    """The environment names a bucket that is not there, the file the store's: the call is served
    from the file's (started without the check, which would otherwise refuse the environment's)."""
    path = written(tmp_path / "s3memory.env", settings_text_of(store(moto_endpoint_with_bucket)))
    environment = store(moto_endpoint_with_bucket, MISSING_BUCKET)
    options = ["--env-file", str(path), "--no-check"]
    with mcp_server(environment, "alice", tmp_path / "server.log", options=options) as client:
        assert ok(client, command="create", path="/memories/won.md", file_text="x") == (
            "File created successfully at: /memories/won.md"
        )


def settings_text_of(settings: Mapping[str, str]) -> str:
    return "".join(f"export {name}={value}\n" for name, value in settings.items())


@pytest.mark.parametrize(
    ("text", "mode", "reason"),
    [
        (
            f"S3MEMORY_LOCAL_KEY={LOCAL_KEY_B64}\n",
            0o644,
            "may be read or written by others (mode 644): chmod 600 {}",
        ),
        (
            f"S3MEMORY_BUCKET=b\nS3MEMORY_LOCAL_KEY={LOCAL_KEY_B64};\n",
            0o600,
            VALUE_REFUSED.format("S3MEMORY_LOCAL_KEY"),
        ),
        (
            f"S3MEMORY_BUCKET=b\nLOCAL_KEY={LOCAL_KEY_B64}\n",
            0o600,
            "line 2 sets a variable whose name begins neither S3MEMORY_ nor AWS_",
        ),
    ],
)
def test_the_command_refuses_a_bad_env_file_in_one_line_without_the_key(
    tmp_path: Path, text: str, mode: int, reason: str
) -> None:
    path = written(tmp_path / "s3memory.env", text, mode)
    ran = start({}, "--env-file", str(path))
    assert (ran.returncode, ran.stdout) == (2, "")
    assert ran.stderr == f"s3memory mcp: --env-file {path}: {reason.format(path)}\n"
    assert LOCAL_KEY_B64 not in ran.stderr


# -- Claude Code -------------------------------------------------------------------------------------


def claude(home: Path, *arguments: str) -> str:
    """``claude *arguments`` (Claude Code through npx) with ``home`` as its home, without a login
    (``claude mcp`` needs none): its standard output. Skipped where npx or Claude Code cannot run."""
    npx = shutil.which("npx")
    if npx is None:
        pytest.skip("npx is not installed (Node.js), so Claude Code cannot run")
    environment = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "HOME": str(home),
        "NPM_CONFIG_CACHE": os.environ.get("NPM_CONFIG_CACHE", str(Path.home() / ".npm")),
        "DISABLE_TELEMETRY": "1",
        "DISABLE_AUTOUPDATER": "1",
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
    }
    ran = subprocess.run(
        [npx, "-y", CLAUDE_CODE, *arguments],
        cwd=home,
        env=environment,
        capture_output=True,
        text=True,
        timeout=NPX_TIMEOUT_SECONDS,
        check=False,
    )
    if arguments == ("--version",) and ran.returncode != 0:
        pytest.skip(f"Claude Code could not be run through npx: {ran.stderr[-500:]}")
    assert ran.returncode == 0, ran
    return ran.stdout


@pytest.mark.slow
@pytest.mark.mcp
def test_claude_code_lists_the_server_failed_for_a_missing_bucket_and_connected_for_a_good_one() -> None:
    """The recipe of ``docs/mcp.md``: ``claude mcp add`` with ``--env-file``, the key left out of
    Claude Code's configuration. ``claude mcp list`` starts each server and reports it; the failed
    one's log holds the reason the server printed."""
    with LocalS3() as server, tempfile.TemporaryDirectory(prefix="s3memory-claude-") as scratch:
        home = Path(scratch)
        claude(home, "--version")
        good = server.env_file
        settings = {**server.settings(), "S3MEMORY_BUCKET": MISSING_BUCKET}
        missing = written(home / "missing.env", settings_text_of(settings))
        command = [sys.executable, "-m", "s3memory.cli.main", "mcp"]
        checkout = str(Path(__file__).resolve().parents[2])
        for name, path in (("missing", missing), ("good", good)):
            claude(
                home,
                "mcp",
                "add",
                "--scope",
                "user",
                name,
                "--env",
                f"PYTHONPATH={checkout}",
                "--",
                *command,
                "--env-file",
                str(path),
                "--user",
                "alice",
            )
        listed = claude(home, "mcp", "list")
        lines = {line.split(":", 1)[0]: line for line in listed.splitlines() if ":" in line}
        assert lines["missing"].endswith("✘ Failed to connect"), listed
        assert lines["good"].endswith("✔ Connected"), listed
        reason = (
            f"s3memory mcp: Error: S3 ListObjectsV2 failed (NoSuchBucket): bucket {MISSING_BUCKET} does not "
            f"exist at {server.endpoint}."
        )
        logs = "".join(
            path.read_text() for path in home.glob(".cache/claude-cli-nodejs/*/mcp-logs-missing/*")
        )
        assert reason in logs
        assert LOCAL_KEY_B64 not in (home / ".claude.json").read_text()
        assert server.settings()["S3MEMORY_LOCAL_KEY"] not in (home / ".claude.json").read_text()
