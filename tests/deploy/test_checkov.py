"""checkov over the Terraform module (by default, with every optional feature, and on storage format 1):
no failed check, and every skipped check justified in a comment."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest

pytestmark = [pytest.mark.slow, pytest.mark.terraform]

ROOT = Path(__file__).resolve().parents[2]
TERRAFORM = ROOT / "terraform"
SKIP = re.compile(r"#checkov:skip=(CKV2?_[A-Z0-9_]+):(.*)")
# Optional resources that the scan must reach (checkov renders every resource whatever its count):
# idle expiry's schedule, its role and policy. checkov does drop a resource whose count it resolves
# to 0, as the example's create_http_api = false makes the routes' by default: the MCP routes are
# required in the scan with every optional feature (ALL_FEATURES), where the API is on.
EXPIRY_RESOURCES = {
    "aws_scheduler_schedule.expiry",
    "aws_iam_role.expiry_scheduler",
    "aws_iam_role_policy.expiry_scheduler",
}
# The functions (the optional agent, expiry and MCP functions among them), their roles, policies and
# log groups: one resource each, with for_each over the functions (lambda.tf), which checkov scans as
# one block whatever the variables enable.
FUNCTION_RESOURCES = {
    "aws_lambda_function.this",
    "aws_iam_role.this",
    "aws_iam_role_policy.this",
    "aws_cloudwatch_log_group.this",
}
# The bucket and the key, now counted (create_bucket, create_kms_key, both true by default): checkov
# resolves their count to 1 and must keep scanning them. (It drops a resource whose count it resolves
# to 0, and it takes a variable whose default is null for set: a count of `var.x == null ? 1 : 0`
# would hide them from it, which is why the switches are booleans.)
BUCKET_AND_KEY_RESOURCES = {
    "aws_s3_bucket.memory",
    "aws_s3_bucket_public_access_block.memory",
    "aws_s3_bucket_policy.memory",
    "aws_s3_bucket_lifecycle_configuration.memory",
    "aws_kms_key.memory",
}
ALL_FEATURES = "tests/fixtures/checkov-all-features.tfvars"
MCP_ROUTES = {"aws_apigatewayv2_route.mcp", "aws_apigatewayv2_route.mcp_metadata"}


def _checkov() -> str:
    for candidate in (os.environ.get("S3MEMORY_CHECKOV"), str(ROOT / ".venv-checkov" / "bin" / "checkov")):
        if candidate and Path(candidate).is_file():
            return candidate
    found = shutil.which("checkov")
    if found:
        return found
    reason = "checkov is not installed (make test-all installs it in .venv-checkov)"
    if os.environ.get("CI"):
        pytest.fail(reason, pytrace=False)
    pytest.skip(reason)


# The defaults (storage format 2), every optional feature (format 2 while migrating from format 1),
# and storage format 1, whose KMS conditions differ (no store identity).
VAR_FILES = [
    None,
    ALL_FEATURES,
    "tests/fixtures/checkov-format-1.tfvars",
]


def test_var_files_scan_each_storage_format() -> None:
    formats = {
        var_file: re.findall(r"^storage_format\s*=\s*(\d+)", (TERRAFORM / var_file).read_text("utf-8"), re.M)
        for var_file in VAR_FILES
        if var_file
    }
    assert formats == {
        "tests/fixtures/checkov-all-features.tfvars": ["2"],
        "tests/fixtures/checkov-format-1.tfvars": ["1"],
    }
    default = re.search(
        r'variable "storage_format" \{.*?\n  default\s*=\s*(\d+)\n',
        (TERRAFORM / "variables.tf").read_text("utf-8"),
        re.S,
    )
    assert default is not None and default[1] == "2"


@pytest.mark.parametrize("var_file", VAR_FILES)
def test_checkov_finds_no_failed_check(var_file: str | None) -> None:
    command = [_checkov(), "-d", ".", "--framework", "terraform", "--skip-download", "-o", "json"]
    if var_file:
        command += ["--var-file", var_file]
    result = subprocess.run(command, cwd=TERRAFORM, capture_output=True, text=True, timeout=300)
    report = json.loads(result.stdout)
    reports = report if isinstance(report, list) else [report]
    summary = [item["summary"] for item in reports]
    failed = [
        (check["check_id"], check["resource"], check["check_name"])
        for item in reports
        for check in item["results"].get("failed_checks", [])
    ]
    assert all(item["failed"] == 0 for item in summary), failed
    assert all(item["parsing_errors"] == 0 for item in summary), summary  # e.g. a var file not found
    assert sum(item["passed"] for item in summary) > 40
    scanned = {
        check["resource"].split("module.s3memory.", 1)[-1]
        for item in reports
        for kind in ("passed_checks", "failed_checks", "skipped_checks")
        for check in item["results"].get(kind, [])
    }
    assert scanned >= EXPIRY_RESOURCES, sorted(EXPIRY_RESOURCES - scanned)
    # A resolved count names mcp[0], a resolved for_each this["mcp"].
    unindexed = {re.sub(r'\[(\d+|"[^"]*")\]$', "", name) for name in scanned}
    required = (
        FUNCTION_RESOURCES | BUCKET_AND_KEY_RESOURCES | (MCP_ROUTES if var_file == ALL_FEATURES else set())
    )
    assert unindexed >= required, sorted(required - unindexed)
    assert result.returncode == 0, result.stderr[-2000:]


def test_every_skipped_check_is_justified() -> None:
    skips = [
        (path.name, match.group(1), match.group(2).strip())
        for path in TERRAFORM.rglob("*.tf")
        if ".terraform" not in path.parts
        for match in SKIP.finditer(path.read_text("utf-8"))
    ]
    assert skips
    assert [skip for skip in skips if len(skip[2]) < 20] == []
