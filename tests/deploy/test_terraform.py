"""Checks of the Terraform module in terraform/: formatting, init + validate (the module and
each of terraform/examples, whose own `terraform test` suites run too), its `terraform test` suites, which run against a mocked AWS provider, and the
messages of plans it refuses (`REFUSALS`).

Nothing is written into the repository: the module is copied to a temporary directory and
TF_DATA_DIR points there too. Providers come from a local filesystem mirror (no registry access),
found by `find_provider_mirror()`. The tests skip, with the reason, where `terraform` is not on PATH
or no mirror of the AWS provider exists.
"""

from __future__ import annotations

import functools
import json
import os
import re
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.terraform]

REPO_ROOT = Path(__file__).resolve().parents[2]
MODULE_DIR = REPO_ROOT / "terraform"
EXAMPLES = sorted(path.name for path in (MODULE_DIR / "examples").iterdir() if path.is_dir())
TEST_FILES = sorted(path.name for path in (MODULE_DIR / "tests").glob("*.tftest.hcl"))

# Each invocation takes seconds on a quiet machine; `mounts.tftest.hcl`'s 43 runs took 130 s, and
# over 180 s, on two cores loaded by other suites. The limit only keeps a hung process from blocking
# the suite.
COMMAND_TIMEOUT_SECONDS = 600

REGISTRY_DIR_NAME = "registry.terraform.io"
MIRROR_SEARCH_DEPTH = 3
# Pseudo or huge trees that never hold a provider mirror.
_SKIPPED_SEARCH_ROOTS = frozenset({"/proc", "/sys", "/dev", "/run"})


@functools.cache
def find_provider_mirror(root: str = "/", max_depth: int = MIRROR_SEARCH_DEPTH) -> Path | None:
    """The plugin directory to pass to `terraform init -plugin-dir`, or None.

    `S3MEMORY_TF_PLUGIN_DIR` wins when set. Otherwise the first directory named
    `registry.terraform.io` found breadth-first at most `max_depth` levels below `root` (in name
    order) that holds the hashicorp/aws provider; its parent is the mirror. Cached per arguments.
    """
    override = os.environ.get("S3MEMORY_TF_PLUGIN_DIR")
    if override:
        candidate = Path(override)
        return candidate if _holds_aws_provider(candidate) else None

    level = [Path(root)]
    for _depth in range(max_depth):
        next_level: list[Path] = []
        for directory in level:
            try:
                entries = sorted(os.scandir(directory), key=lambda entry: entry.name)
            except OSError:
                continue
            for entry in entries:
                try:
                    if not entry.is_dir(follow_symlinks=False) or entry.path in _SKIPPED_SEARCH_ROOTS:
                        continue
                except OSError:
                    continue
                path = Path(entry.path)
                if entry.name == REGISTRY_DIR_NAME and _holds_aws_provider(path.parent):
                    return path.parent
                next_level.append(path)
        level = next_level
    return None


def _holds_aws_provider(plugin_dir: Path) -> bool:
    return (plugin_dir / REGISTRY_DIR_NAME / "hashicorp" / "aws").is_dir()


@dataclass(frozen=True)
class TerraformWorkspace:
    """A private copy of terraform/ and the environment to run terraform in it."""

    binary: str
    plugin_dir: Path
    module_dir: Path
    tmp_root: Path
    base_env: dict[str, str]

    def run(self, *args: str, cwd: Path, data_dir_name: str) -> subprocess.CompletedProcess[str]:
        env = dict(self.base_env, TF_DATA_DIR=str(self.tmp_root / data_dir_name))
        command = [self.binary, *args]
        try:
            return subprocess.run(
                command,
                cwd=cwd,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            pytest.fail(
                f"`{' '.join(command)}` in {cwd} timed out after {COMMAND_TIMEOUT_SECONDS} s\n"
                f"--- stdout ---\n{error.stdout!s}\n--- stderr ---\n{error.stderr!s}"
            )

    def init(self, cwd: Path, data_dir_name: str) -> None:
        result = self.run(
            "init",
            "-backend=false",
            "-input=false",
            "-no-color",
            f"-plugin-dir={self.plugin_dir}",
            cwd=cwd,
            data_dir_name=data_dir_name,
        )
        assert_ok(result, f"terraform init in {cwd.name}")


def assert_ok(result: subprocess.CompletedProcess[str], what: str) -> None:
    assert result.returncode == 0, (
        f"{what} failed with exit code {result.returncode}\n"
        f"--- stdout ---\n{result.stdout}\n--- stderr ---\n{result.stderr}"
    )


def run_generated_test(
    module: TerraformWorkspace, name: str, bucket: str, runs: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """``terraform test`` of a test file written for the call (``runs`` after the mocked provider
    and the module's required variables, the bucket ``bucket``) as ``tests/<name>.tftest.hcl``,
    with ``options`` (such as ``-json``)."""
    return run_generated_tests(module, {name: runs}, bucket, *options)


def run_generated_tests(
    module: TerraformWorkspace, files: dict[str, str], bucket: str, *options: str
) -> subprocess.CompletedProcess[str]:
    """``run_generated_test`` of several files in one ``terraform test``: each file's runs are its
    own (a failing run skips the rest of its file only)."""
    test_files = [module.module_dir / "tests" / f"{name}.tftest.hcl" for name in files]
    try:
        for test_file, runs in zip(test_files, files.values(), strict=True):
            test_file.write_text(
                'mock_provider "aws" {\n  source = "./tests/mocks"\n}\n\n'
                f'variables {{\n  bucket_name     = "{bucket}"\n'
                '  lambda_zip_path = "tests/fixtures/lambda.zip"\n}\n\n' + runs,
                encoding="utf-8",
            )
        return module.run(
            "test",
            "-no-color",
            *options,
            *(f"-filter=tests/{test_file.name}" for test_file in test_files),
            cwd=module.module_dir,
            data_dir_name="module-data",
        )
    finally:
        for test_file in test_files:
            test_file.unlink(missing_ok=True)


def _clean_environment(tmp_root: Path) -> dict[str, str]:
    """The caller's environment without variables that would change what terraform does."""
    env = {
        key: value
        for key, value in os.environ.items()
        if not (
            key.startswith(("TF_CLI_ARGS", "TF_VAR_")) or key in {"TF_WORKSPACE", "TF_LOG", "TF_LOG_PATH"}
        )
    }
    cli_config = tmp_root / "terraform.rc"
    cli_config.write_text("# isolated from the user's CLI configuration\n", encoding="utf-8")
    env.update(
        TF_CLI_CONFIG_FILE=str(cli_config),
        TF_IN_AUTOMATION="1",
        TF_INPUT="0",
        CHECKPOINT_DISABLE="1",
    )
    return env


@pytest.fixture(scope="module")
def workspace(tmp_path_factory: pytest.TempPathFactory) -> Iterator[TerraformWorkspace]:
    binary = shutil.which("terraform")
    if binary is None:
        pytest.skip("terraform is not on PATH")
    plugin_dir = find_provider_mirror()
    if plugin_dir is None:
        pytest.skip(
            f"no local provider mirror: no '{REGISTRY_DIR_NAME}' directory holding hashicorp/aws within "
            f"{MIRROR_SEARCH_DEPTH} levels of / (set S3MEMORY_TF_PLUGIN_DIR to its parent)"
        )
    tmp_root = tmp_path_factory.mktemp("terraform")
    module_copy = tmp_root / "terraform"
    shutil.copytree(
        MODULE_DIR,
        module_copy,
        ignore=shutil.ignore_patterns(".terraform", "*.tfstate", "*.tfstate.*", ".terraform.lock.hcl"),
    )
    yield TerraformWorkspace(
        binary=binary,
        plugin_dir=plugin_dir,
        module_dir=module_copy,
        tmp_root=tmp_root,
        base_env=_clean_environment(tmp_root),
    )


@pytest.fixture(scope="module")
def initialized_module(workspace: TerraformWorkspace) -> TerraformWorkspace:
    workspace.init(workspace.module_dir, "module-data")
    return workspace


def test_find_provider_mirror_locates_a_registry_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    mirror = tmp_path / "a" / "plugins"
    (mirror / REGISTRY_DIR_NAME / "hashicorp" / "aws").mkdir(parents=True)
    (tmp_path / "b" / REGISTRY_DIR_NAME).mkdir(parents=True)  # no aws provider inside: ignored
    monkeypatch.delenv("S3MEMORY_TF_PLUGIN_DIR", raising=False)
    find_provider_mirror.cache_clear()
    try:
        found = find_provider_mirror(str(tmp_path), 3)
        too_shallow = find_provider_mirror(str(tmp_path), 2)
    finally:
        find_provider_mirror.cache_clear()
    assert found == mirror
    assert too_shallow is None


def test_fmt(workspace: TerraformWorkspace) -> None:
    result = workspace.run(
        "fmt",
        "-check",
        "-recursive",
        "-diff",
        "-no-color",
        cwd=workspace.module_dir,
        data_dir_name="fmt-data",
    )
    assert_ok(result, "terraform fmt -check -recursive (run `terraform fmt -recursive terraform` to fix)")


def test_validate_module(initialized_module: TerraformWorkspace) -> None:
    result = initialized_module.run(
        "validate", "-no-color", cwd=initialized_module.module_dir, data_dir_name="module-data"
    )
    assert_ok(result, "terraform validate of the module")


@pytest.mark.parametrize("example", EXAMPLES)
def test_example_validates_and_passes_its_tests(workspace: TerraformWorkspace, example: str) -> None:
    example_dir = workspace.module_dir / "examples" / example
    data_dir = f"example-{example}-data"
    workspace.init(example_dir, data_dir)
    assert_ok(
        workspace.run("validate", "-no-color", cwd=example_dir, data_dir_name=data_dir),
        f"terraform validate of examples/{example}",
    )
    assert list((example_dir / "tests").glob("*.tftest.hcl")), f"examples/{example} has no tests"
    result = workspace.run("test", "-no-color", cwd=example_dir, data_dir_name=data_dir)
    assert_ok(result, f"terraform test of examples/{example}")
    assert "0 failed" in result.stdout, result.stdout


def test_module_has_terraform_tests() -> None:
    assert TEST_FILES, "terraform/tests/ has no *.tftest.hcl files"


@pytest.mark.parametrize("test_file", TEST_FILES)
def test_terraform_test(initialized_module: TerraformWorkspace, test_file: str) -> None:
    # One invocation per file keeps each run short and points a failure at its file.
    result = initialized_module.run(
        "test",
        "-no-color",
        f"-filter=tests/{test_file}",
        cwd=initialized_module.module_dir,
        data_dir_name="module-data",
    )
    assert_ok(result, f"terraform test -filter=tests/{test_file}")
    assert "0 failed" in result.stdout, result.stdout


def _hcl_string(text: str) -> str:
    out = []
    for char in text:
        if char in '"\\':
            out.append("\\" + char)
        elif " " <= char <= "~":
            out.append(char)
        else:
            out.append(f"\\u{ord(char):04x}" if ord(char) <= 0xFFFF else f"\\U{ord(char):08x}")
    return '"' + "".join(out).replace("${", "$${").replace("%{", "%%{") + '"'


# Shared memory mounts need the HTTP API (a verified token's claims grant them).
MOUNTS_BEHIND_THE_API = {
    "create_http_api": "true",
    "jwt_issuer": '"https://issuer.example.com"',
    "jwt_audience": '["s3memory-client"]',
}


def _grant(
    point: str = "/memories/team", memory: str = "team-acme", claim: str = "groups", value: str = "acme"
) -> str:
    """``shared_memory_mounts`` of one grant, in HCL."""
    return (
        f"[{{ claim = {_hcl_string(claim)}, value = {_hcl_string(value)}, point = {_hcl_string(point)}, "
        f"memory = {_hcl_string(memory)} }}]"
    )


# Plans the module must refuse, each with the message an operator reads: variables (HCL values)
# and the message's words. `terraform test` stops a file at its first failing run, so each case is
# a file of one run without expect_failures, and the run's failure is the point.
REFUSALS = {
    "operator_role_without_principals": (
        {"create_operator_role": "true"},
        "create_operator_role = true needs operator_trusted_principal_arns: the IAM role or user ARNs "
        "allowed to assume the operator role",
    ),
    "operator_principal_not_a_role_or_user": (
        {
            "create_operator_role": "true",
            "operator_trusted_principal_arns": '["arn:aws:iam::123456789012:root"]',
        },
        "operator_trusted_principal_arns must be a list of at most 20 IAM role or user ARNs",
    ),
    "operator_session_too_short": (
        {"operator_role_max_session_duration": "900"},
        "operator_role_max_session_duration must be a whole number of seconds between 3600 (1 hour) "
        "and 43200 (12 hours).",
    ),
    "object_expiration_days_removed": (
        {"object_expiration_days": "365"},
        "object_expiration_days was removed: its lifecycle rule also expired each user's wrapped data "
        "key, making their memory unreadable. Use expiry_idle_days (idle expiry by the s3memory expiry "
        "function, which never removes keys).",
    ),
    "expiry_idle_days_out_of_range": (
        {"expiry_idle_days": "3651"},
        "expiry_idle_days must be null (expiry off) or a whole number of days between 1 and 3650.",
    ),
    "expiry_schedule_one_time": (
        {"expiry_idle_days": "30", "expiry_schedule_expression": '"at(2030-01-01T00:00:00)"'},
        "expiry_schedule_expression must be an EventBridge Scheduler rate or cron expression, such as "
        '"rate(1 day)", "rate(12 hours)" or "cron(0 3 * * ? *)" (six fields); a one-time at(...) '
        "expression is refused.",
    ),
    "storage_format_unknown": (
        {"storage_format": "3"},
        "storage_format must be 2 (private names, docs/format-v2.md, the default) or 1 (plain names).",
    ),
    "mcp_endpoint_without_http_api": (
        {"create_mcp_endpoint": "true"},
        "create_mcp_endpoint = true needs create_http_api = true: the MCP endpoint is a route of the HTTP "
        "API, behind its JWT authorizer. Set create_http_api = true (with jwt_issuer and jwt_audience), or "
        "create_mcp_endpoint = false.",
    ),
    "mcp_url_not_https": (
        {"mcp_url": '"http://memory.example.com/mcp"'},
        "mcp_url must be null or an https:// URL without spaces, query or fragment, such as "
        '"https://memory.example.com/mcp".',
    ),
    "existing_key_without_its_arn": (
        {"create_kms_key": "false"},
        "create_kms_key = false needs kms_key_arn (the ARN of your key); with create_kms_key = true (the "
        "default) the module creates the key, so leave kms_key_arn unset.",
    ),
    "existing_key_as_an_alias": (
        {"create_kms_key": "false", "kms_key_arn": '"arn:aws:kms:eu-west-1:123456789012:alias/agent-memory"'},
        "kms_key_arn must be null or a KMS key ARN (arn:<partition>:kms:<region>:<account>:key/<key id>); "
        "aliases are not accepted (IAM policies name keys by key ARN).",
    ),
    "vpc_subnets_without_security_groups": (
        {"vpc_subnet_ids": '["subnet-0123456789abcdef0"]'},
        "Set both vpc_subnet_ids and vpc_security_group_ids (every function in those subnets, with those "
        "security groups) or neither (no VPC).",
    ),
    "dead_letter_target_fifo": (
        {"dead_letter_target_arn": '"arn:aws:sqs:eu-west-1:123456789012:s3memory-dlq.fifo"'},
        "dead_letter_target_arn must be null or the ARN of a standard SQS queue or SNS topic",
    ),
    "reserved_concurrency_minus_one": (
        {"memory_function_reserved_concurrency": "-1"},
        "memory_function_reserved_concurrency must be null (unreserved: the account's pool, no ceiling) or a "
        "whole number, 0 (disabled) or greater (reserved, and its ceiling).",
    ),
    "store_id_with_a_control_character": (
        {"storage_format": "2", "store_id": '"source\\nbucket"'},
        'store_id must be "" (the bucket\'s name) or at most 255 printable characters: no control, format '
        "or separator characters but the space, and no leading or trailing space.",
    ),
    "shared_memory_mounts_point_two_levels_down": (
        {**MOUNTS_BEHIND_THE_API, "shared_memory_mounts": _grant(point="/memories/team/notes")},
        "shared_memory_mounts: each point must be /memories/<name>, one directory just below /memories "
        "whose name is 1 to 64 characters without '/' (no trailing slash, no deeper level), such as "
        '"/memories/team".',
    ),
    "shared_memory_mounts_hidden_point": (
        {**MOUNTS_BEHIND_THE_API, "shared_memory_mounts": _grant(point="/memories/node_modules")},
        "shared_memory_mounts: a point must not be hidden: a name starting with '.', or node_modules, is "
        "hidden from `view /memories`, so the functions refuse it.",
    ),
    "shared_memory_mounts_encoded_slash": (
        {**MOUNTS_BEHIND_THE_API, "shared_memory_mounts": _grant(point="/memories/a%2Fb")},
        "shared_memory_mounts: a point must not hold a control character, an invisible format character "
        "(Unicode Cf, such as U+200B ZERO WIDTH SPACE), a backslash (or U+FE68, U+FF3C) or a "
        "percent-encoded '/' or '\\' (%2f, %5c)",
    ),
    "shared_memory_mounts_bad_memory": (
        {**MOUNTS_BEHIND_THE_API, "shared_memory_mounts": _grant(memory="Team")},
        "shared_memory_mounts: each memory must be a shared memory's name: 1 to 63 of a-z, 0-9, '.', '_' "
        "and '-', starting with a letter or digit",
    ),
    "shared_memory_mounts_two_memories_at_one_point": (
        {
            **MOUNTS_BEHIND_THE_API,
            "shared_memory_mounts": _grant()[:-1] + ", " + _grant(memory="team-beta")[1:],
        },
        "shared_memory_mounts: one point shows one shared memory, but these points are given more than "
        'one: ["/memories/team"]. Give each shared memory its own point.',
    ),
    "shared_memory_mounts_17_points": (
        {
            **MOUNTS_BEHIND_THE_API,
            "shared_memory_mounts": '[for i in range(17) : { claim = "groups", value = "acme", '
            'point = "/memories/p${i}", memory = "team" }]',
        },
        "shared_memory_mounts: at most 16 distinct points (the functions' MAX_MOUNTS: each mount costs "
        "`view /memories` one more listing), not 17. Mount fewer shared memories.",
    ),
    "shared_memory_mounts_without_the_http_api": (
        {"shared_memory_mounts": _grant()},
        "shared_memory_mounts needs create_http_api = true: a mount is granted only by the claims of a "
        "token the function verified itself (S3MEMORY_JWT_ISSUER), and only HTTP API events carry one. "
        "Set create_http_api = true (with jwt_issuer and jwt_audience), or shared_memory_mounts = [].",
    ),
    "shared_memory_mounts_on_format_1": (
        {**MOUNTS_BEHIND_THE_API, "storage_format": "1", "shared_memory_mounts": _grant()},
        "shared_memory_mounts needs storage_format = 2: shared memories exist only in format 2",
    ),
    "shared_memory_mounts_over_the_budget": (
        {
            **MOUNTS_BEHIND_THE_API,
            "shared_memory_mounts": '[for i in range(30) : { claim = "groups", value = "acme-${i}", '
            'point = "/memories/team", memory = "team-acme" }]',
        },
        "shared_memory_mounts encodes to 3051 bytes of S3MEMORY_MOUNTS, over the module's budget of 3000 "
        "bytes (Lambda allows 4 KB for all of a function's environment variables). Use fewer grants, or "
        "shorter claims, values, points and memory names.",
    ),
    "environment_over_4_kb": (
        {
            **MOUNTS_BEHIND_THE_API,
            "jwt_audience": '[for i in range(8) : "${i}${join("", [for j in range(199) : "a"])}"]',
            "shared_memory_mounts": '[for i in range(25) : { claim = "groups", value = "acme-${i}", '
            'point = "/memories/team", memory = "team-acme" }]',
        },
        "bytes, over Lambda's 4 KB (4,096 bytes) for all of them: shorten the longest settings "
        "(jwt_audience, jwt_authorization_scopes, shared_memory_mounts, store_id).",
    ),
}


@pytest.mark.parametrize("case", sorted(REFUSALS))
def test_refusal_messages(initialized_module: TerraformWorkspace, case: str) -> None:
    variables, message = REFUSALS[case]
    assignments = "\n".join(f"    {name} = {value}" for name, value in variables.items())
    result = run_generated_test(
        initialized_module,
        f"refusal_{case}",
        "s3memory-test-bucket",
        f'run "{case}" {{\n  command = plan\n\n  variables {{\n{assignments}\n  }}\n}}\n',
    )
    output = " ".join((result.stdout + result.stderr).split())  # terraform wraps long messages
    assert result.returncode != 0, output
    assert " ".join(message.split()) in output, output


# The store identity Terraform computes (store.tf) against s3memory's own (store_keys.py): store ids
# and prefixes around every length Terraform can and cannot frame (a length byte of 0x80 or more has
# no UTF-8 spelling), multi-byte and astral characters, ids NFC changes (Terraform normalises every
# string, and the functions receive the normalised one), ids beginning with a combining mark (which
# a length byte could compose with), and characters HCL would otherwise interpolate.
IDENTITY_CASES = [
    ("s3memory-test-bucket", "users/"),
    ("a", "a/"),
    ("x" * 127, "users/"),
    ("x" * 128, "users/"),
    ("x" * 255, "users/"),
    ("my-bucket", "p" * 126 + "/"),
    ("my-bucket", "p" * 127 + "/"),
    ("my-bucket", "pp/" * 84 + "ppp/"),
    ("é" * 63, "tenants/prod/"),
    ("é" * 64, "users/"),
    ("é" * 128, "users/"),
    ("日本語のストア", "users/"),
    ("🙂" * 31, "users/"),
    ("🙂" * 64, "users/"),
    ("\u212b-store", "users/"),
    ("caf\u0065\u0301", "users/"),
    ("\u0301abc", "users/"),
    ("\u0301" + "x" * 99, "users/"),
    ('id ${not} %{a} "quoted" \\ back', "users/"),
    ("prod store (eu-west-1)", "x/"),
]


def _expected_identity(store_id: str, prefix: str) -> str | None:
    """store_identity of what the functions receive, or None where store.tf says it cannot pin it."""
    import unicodedata

    from s3memory.formats.store_keys import store_identity

    received = unicodedata.normalize("NFC", store_id)
    sizes = [len(received.encode("utf-8")), len(prefix.encode("utf-8"))]
    if any(byte >= 0x80 for size in sizes for byte in size.to_bytes(4, "big")):
        return None
    if unicodedata.category(received[0]).startswith("M"):
        return None
    return store_identity(received, prefix)


def test_terraform_computes_the_store_identity_as_s3memory(initialized_module: TerraformWorkspace) -> None:
    runs = []
    for number, (store_id, prefix) in enumerate(IDENTITY_CASES):
        expected = _expected_identity(store_id, prefix)
        check = (
            f'  assert {{\n    condition     = output.store_identity == "{expected}"\n'
            f'    error_message = "case {number}: not store_identity\'s {expected}"\n  }}\n'
            if expected is not None
            else "  expect_failures = [check.store_identity_pinned]\n\n"
            f"  assert {{\n    condition     = output.store_identity == null\n"
            f'    error_message = "case {number}: Terraform must not pin what it cannot hash exactly"\n  }}\n'
        )
        runs.append(
            f'run "case_{number}" {{\n  command = plan\n\n  variables {{\n    storage_format = 2\n'
            f"    store_id       = {_hcl_string(store_id)}\n    memory_prefix  = {_hcl_string(prefix)}\n  }}\n\n"
            f"{check}}}\n"
        )
    assert sum(_expected_identity(*case) is not None for case in IDENTITY_CASES) >= 12
    result = run_generated_test(initialized_module, "identity_cases", "s3memory-test-bucket", "\n".join(runs))
    assert_ok(result, "terraform test of the store identities")
    assert f"{len(IDENTITY_CASES)} passed, 0 failed" in result.stdout, result.stdout


# What every function is told of the store, and what the KMS grants require, by default and with
# each explicit storage_format: the functions' environments in full and the envelope-key conditions
# of the key policy and the four roles' policies, exactly. The library's own default is "auto"
# (format 2 for a store with nothing below the prefix yet), so the module must name the format on
# format 1 too, or a new bucket would be served in format 2 under format 1's grants.
FORMAT_BUCKET = "s3memory-test-bucket"
FORMAT_KEY_ARN = "arn:aws:kms:eu-west-1:123456789012:key/11111111-2222-3333-4444-555555555555"  # the mocks'
ENVELOPE_SIDS = (
    "EnvelopeKeysWithS3memoryContext",
    "ExpiryDecryptWithS3memoryContext",
    "DecryptWithS3memoryContext",
)
FORMAT_CASES = {"default": None, "format_1": 1, "format_2": 2}
# The agent function exists by default only with an Anthropic API key secret.
SECRET_ARN = "arn:aws:secretsmanager:eu-west-1:123456789012:secret:anthropic-api-key-AbCdEf"


def _expected_environments(storage_format: int) -> dict[str, dict[str, str]]:
    store = {
        "S3MEMORY_BUCKET": FORMAT_BUCKET,
        "S3MEMORY_PREFIX": "users/",
        "S3MEMORY_KMS_KEY_ID": FORMAT_KEY_ARN,
        "S3MEMORY_STORAGE_FORMAT": str(storage_format),
    }
    if storage_format == 2:
        store["S3MEMORY_STORE_ID"] = FORMAT_BUCKET
    return {
        "memory": {**store, "S3MEMORY_DIRECT_INVOCATION": "allow"},
        "agent": {**store, "S3MEMORY_MODEL": "claude-sonnet-4-5", "ANTHROPIC_API_KEY_SECRET_ARN": SECRET_ARN},
        "expiry": {**store, "S3MEMORY_EXPIRE_IDLE_DAYS": "30"},
    }


def _expected_envelope_condition(storage_format: int) -> dict[str, dict[str, str]]:
    from s3memory.formats.store_keys import store_identity

    condition = {"Null": {"kms:EncryptionContext:s3memory:user": "false"}}
    if storage_format == 2:
        condition["StringEquals"] = {
            "kms:EncryptionContext:s3memory:store": store_identity(FORMAT_BUCKET, "users/")
        }
    return condition


def test_expected_environments_are_served_in_their_format() -> None:
    """The environments the next test requires make the functions' settings name the format
    itself, never the library's default."""
    from s3memory.settings import Settings

    for storage_format in (1, 2):
        for environment in _expected_environments(storage_format).values():
            settings = Settings.from_env(environment)
            assert settings.storage_format == storage_format
            assert settings.store_id == (FORMAT_BUCKET if storage_format == 2 else None)


@pytest.mark.parametrize("case", sorted(FORMAT_CASES))
def test_storage_format_reaches_every_function_and_the_grants(
    initialized_module: TerraformWorkspace, case: str
) -> None:
    storage_format = FORMAT_CASES[case] or 2  # the module's default is format 2
    assignment = "" if FORMAT_CASES[case] is None else f"    storage_format = {storage_format}\n"
    environments = _expected_environments(storage_format)
    condition = json.dumps(_expected_envelope_condition(storage_format), sort_keys=True)
    functions = {kind: f'aws_lambda_function.this["{kind}"]' for kind in ("memory", "agent", "expiry")}
    policies = [
        "aws_kms_key.memory[0].policy",
        *(f'aws_iam_role_policy.this["{kind}"].policy' for kind in ("memory", "agent", "expiry")),
        "aws_iam_role_policy.operator[0].policy",
    ]
    sids = "[" + ", ".join(f'"{sid}"' for sid in ENVELOPE_SIDS) + "]"
    asserts = [
        (
            f"{resource}.environment[0].variables == tomap(jsondecode({_hcl_string(json.dumps(environments[kind]))}))",
            f"the {kind} function's environment is not exactly {environments[kind]}",
        )
        for kind, resource in functions.items()
    ]
    # The key policy has two envelope-key statements (key users, expiry role), each role's policy one.
    asserts += [
        (
            f"[for statement in jsondecode({policy}).Statement : statement.Condition if contains({sids}, statement.Sid)]"
            f" == [for _ in range({2 if policy.startswith('aws_kms_key') else 1}) : jsondecode({_hcl_string(condition)})]",
            f"{policy}: an envelope-key condition is not exactly {condition}",
        )
        for policy in policies
    ]
    asserts.append(
        (
            f"output.storage_format == {storage_format}",
            f"the storage_format output is not {storage_format}",
        )
    )
    body = "".join(
        f"  assert {{\n    condition     = {check}\n    error_message = {_hcl_string(message)}\n  }}\n\n"
        for check, message in asserts
    )
    result = run_generated_test(
        initialized_module,
        f"storage_format_{case}",
        FORMAT_BUCKET,
        f'run "{case}" {{\n  command = apply\n\n  variables {{\n{assignment}'
        f'    expiry_idle_days                = 30\n    anthropic_api_key_secret_arn    = "{SECRET_ARN}"\n'
        "    create_operator_role            = true\n"
        '    operator_trusted_principal_arns = ["arn:aws:iam::123456789012:role/memory-admin"]\n'
        f"  }}\n\n{body}}}\n",
    )
    assert_ok(result, f"terraform test of storage format {case}")
    assert "1 passed, 0 failed" in result.stdout, result.stdout


# Provider 5 and 6 (versions.tf): the constraint, everywhere a configuration of the module states one,
# and nothing that provider 6 removed, renamed or deprecated among what the module's resources could
# use (the v6 upgrade guide and 6.x changelog). Only 5.100.0 installs here, so this is read, not run.
PROVIDER_CONSTRAINT = '">= 5.100, < 7.0"'
PROVIDER_6_CHANGES = {
    r"data\.aws_region\.\w+\.(name|id|region)\b": "aws_region: `name` deprecated in 6.0, `id` in 6.47, "
    "`region` absent from 5 (data.tf reads it by a computed key)",
    r"\baws_s3_bucket\.\w+(\[[^\]]*\])?\.region\b": "aws_s3_bucket: `region` is Enhanced Region Support in 6 "
    "(`bucket_region` is the bucket's)",
    r"\bs3_us_east_1_regional_endpoint\b": "provider: the global S3 endpoint is deprecated in 6",
    r"\b(stage_name|stage_description|canary_settings)\b": "aws_api_gateway_deployment: removed in 6",
    r"\breset_on_delete\b": "aws_api_gateway_account: removed in 6",
    r"\b(inline_policy|managed_policy_arns)\b": "aws_iam_role: deprecated exclusive-management arguments",
}


def _terraform_sources() -> dict[str, str]:
    return {
        str(path.relative_to(MODULE_DIR)): path.read_text("utf-8")
        for path in sorted(MODULE_DIR.rglob("*.tf"))
        if ".terraform" not in path.parts
    }


def test_provider_constraint_allows_5_and_6() -> None:
    sources = _terraform_sources()
    constraints = {
        name: re.findall(r'source\s*=\s*"hashicorp/aws"\s*\n(?:\s*#.*\n)*\s*version\s*=\s*(".*?")', text)
        for name, text in sources.items()
        if "required_providers" in text
    }
    apply_test = (REPO_ROOT / "tests" / "deploy" / "test_terraform_apply.py").read_text("utf-8")
    constraints["tests/deploy/test_terraform_apply.py"] = re.findall(r'version = (".*?")', apply_test)
    assert constraints == {name: [PROVIDER_CONSTRAINT] for name in constraints}, constraints
    assert {"versions.tf", *(f"examples/{example}/versions.tf" for example in EXAMPLES)} <= set(constraints)


def test_module_uses_nothing_provider_6_removed_or_deprecated() -> None:
    found = [
        (name, match.group(0), why)
        for name, text in _terraform_sources().items()
        for pattern, why in PROVIDER_6_CHANGES.items()
        for match in re.finditer(pattern, "\n".join(line.split("#", 1)[0] for line in text.splitlines()))
    ]
    assert found == []


# Shared memory mounts: what the module puts in S3MEMORY_MOUNTS, read from the plan `terraform test
# -json -verbose` reports, is what s3memory.mounts.grants_from_json reads back, grant for grant;
# and the variable's point rules say of each point what s3memory.mounts.Mount says. Terraform
# normalises every string to NFC, so the functions receive (and the package checks) the NFC form.
MOUNT_GRANTS = [
    {"claim": "groups", "value": "acme", "point": "/memories/team", "memory": "team-acme"},
    {
        "claim": "groups",
        "value": "acme-curators",
        "point": "/memories/team",
        "memory": "team-acme",
        "mode": "read_write",
    },
    {
        "claim": "https://example.com/claims/teams",
        "value": 'q<&>"\\ é 🙂 cafe\u0301',
        "point": "/memories/" + "é" * 64,
        "memory": "0" + "x" * 62,
        "mode": "read_only",
    },
    {"claim": "scope", "value": "memory/runbooks", "point": "/memories/100% done", "memory": "runbooks"},
]


MEMORY_FUNCTION = 'aws_lambda_function.this["memory"]'
MCP_FUNCTION = 'aws_lambda_function.this["mcp"]'


def _mount_functions_environment(result: subprocess.CompletedProcess[str]) -> dict[str, dict[str, str]]:
    """The known environment variables of the memory and MCP functions in the planned run's plan."""
    environments: dict[str, dict[str, str]] = {}
    for line in result.stdout.splitlines():
        if '"test_plan"' not in line[:400]:
            continue
        for change in json.loads(line)["test_plan"]["resource_changes"]:
            if change["address"] in (MEMORY_FUNCTION, MCP_FUNCTION):
                environments[change["address"]] = change["change"]["after"]["environment"][0]["variables"]
    return environments


def test_the_modules_mounts_setting_is_what_the_package_reads(initialized_module: TerraformWorkspace) -> None:
    import unicodedata

    from s3memory.mounts import Grant, Mount, grants_from_json

    grants = ", ".join(
        "{ " + ", ".join(f"{key} = {_hcl_string(value)}" for key, value in grant.items()) + " }"
        for grant in MOUNT_GRANTS
    )
    variables = {
        **MOUNTS_BEHIND_THE_API,
        "create_mcp_endpoint": "true",
        "shared_memory_mounts": f"[{grants}]",
    }
    assignments = "\n".join(f"    {name} = {value}" for name, value in variables.items())
    result = run_generated_test(
        initialized_module,
        "mounts_encoding",
        "s3memory-test-bucket",
        f'run "encoding" {{\n  command = plan\n\n  variables {{\n{assignments}\n  }}\n}}\n',
        "-json",
        "-verbose",
    )
    assert_ok(result, "terraform test of the mounts' encoding")
    environments = _mount_functions_environment(result)
    assert sorted(environments) == [MCP_FUNCTION, MEMORY_FUNCTION]
    settings = {address: environment.get("S3MEMORY_MOUNTS") for address, environment in environments.items()}
    text = settings[MEMORY_FUNCTION]
    assert text is not None and settings[MCP_FUNCTION] == text

    received = [
        {key: unicodedata.normalize("NFC", value) for key, value in {"mode": "read_only", **grant}.items()}
        for grant in MOUNT_GRANTS
    ]
    # Terraform's jsonencode: keys sorted, no spaces, <, > and & escaped, other characters as UTF-8.
    assert text == json.dumps(received, sort_keys=True, separators=(",", ":"), ensure_ascii=False).replace(
        "<", "\\u003c"
    ).replace(">", "\\u003e").replace("&", "\\u0026")
    assert grants_from_json(text) == tuple(
        Grant(grant["claim"], grant["value"], Mount(grant["point"], grant["memory"], grant["mode"]))  # type: ignore[arg-type]
        for grant in received
    )
    assert received[2]["value"].endswith("caf\u00e9")  # NFC: a token's claim must hold this form


# Points and whether the variable's rules accept them. Where the package (Mount, on the NFC form)
# disagrees, the point is in POINT_RULE_GAPS: spellings the variable cannot decode or normalise, which
# the functions refuse at start-up naming S3MEMORY_MOUNTS (the variable's description says so). The
# variable never refuses a point the package accepts.
MOUNT_POINTS = [
    "/memories/team",
    "/memories/" + "p" * 64,
    "/memories/" + "p" * 65,
    "/memories/" + "é" * 64,
    "/memories/" + "é" * 65,
    "/memories/" + "e\u0301" * 64,  # NFD: 128 code points, 64 once NFC
    "/memories/" + "🙂" * 64,
    "/memories/" + "🙂" * 65,
    "/memories/.team",
    "/memories/node_modules",
    "/memories/node_modules2",
    "/memories/\u2024x",
    "/memories/team..",
    "/memories/ team",
    "/memories/a\u200bb",
    "/memories/a\u2066b",
    "/memories/100%",
    "/memories/a%2",
    "/memories/x%2e",
    "/memories",
    "/memories/",
    "/memories/team/",
    "/memories/a/b",
    "/memoriesx/team",
    "memories/team",
    "/memories/a\\b",
    "/memories/a\uff3cb",
    "/memories/a\ufe68b",
    "/memories/a\tb",
    "/memories/a\x7fb",
    "/memories/a\x85b",
    "/memories/a%2Fb",
    "/memories/a%5cb",
    "/memories/a%25252fb",
    "/memories/%2e",
    "/memories/%2E%2e",
    "/memories/%252e.",
    "/memories/\u2025",
    "/memories/\uff0e\u2024",
    "/memories/\ufe52",
    # The gaps: other percent-encodings, and a look-alike of '/' that makes a '..' segment.
    "/memories/a%00b",
    "/memories/a%e2%80%8bb",
    "/memories/a%%32fb",
    "/memories/%e2%80%a5",
    "/memories/%c0%ae%c0%ae",
    "/memories/a\uff0f..",
]
POINT_RULE_GAPS = {
    "/memories/a%00b",
    "/memories/a%e2%80%8bb",
    "/memories/a%%32fb",
    "/memories/%e2%80%a5",
    "/memories/%c0%ae%c0%ae",
    "/memories/a\uff0f..",
}


def _package_accepts(point: str) -> bool:
    import unicodedata

    from s3memory.mounts import Mount

    try:
        Mount(unicodedata.normalize("NFC", point), "team")
    except ValueError:
        return False
    return True


def test_the_point_rules_say_what_the_package_says(initialized_module: TerraformWorkspace) -> None:
    files = {
        f"mount_point_{number}": (
            'run "point" {\n  command = plan\n\n  variables {\n'
            + "".join(f"    {name} = {value}\n" for name, value in MOUNTS_BEHIND_THE_API.items())
            + f"    shared_memory_mounts = {_grant(point=point)}\n  }}\n}}\n"
        )
        for number, point in enumerate(MOUNT_POINTS)
    }
    result = run_generated_tests(initialized_module, files, "s3memory-test-bucket", "-json")
    statuses: dict[str, str] = {}
    refused_by_validation: set[str] = set()
    for line in result.stdout.splitlines():
        message = json.loads(line)
        name = Path(message.get("@testfile", "")).name.removesuffix(".tftest.hcl")
        if message["type"] == "test_run" and message["test_run"].get("progress") == "complete":
            statuses[name] = message["test_run"]["status"]
        if (
            message["type"] == "diagnostic"
            and message["diagnostic"]["summary"] == "Invalid value for variable"
        ):
            detail = message["diagnostic"].get("detail", "")
            if detail.startswith("shared_memory_mounts: "):
                refused_by_validation.add(name)
    verdicts = {}
    for number, point in enumerate(MOUNT_POINTS):
        name = f"mount_point_{number}"
        assert statuses.get(name) == "pass" or name in refused_by_validation, (point, result.stdout[-3000:])
        verdicts[point] = statuses[name] == "pass"
    disagreements = {point for point in MOUNT_POINTS if verdicts[point] != _package_accepts(point)}
    assert disagreements == POINT_RULE_GAPS, sorted(disagreements ^ POINT_RULE_GAPS)
    assert all(verdicts[point] and not _package_accepts(point) for point in POINT_RULE_GAPS)
    assert sum(verdicts.values()) >= 12 and sum(not accepted for accepted in verdicts.values()) >= 20
