"""`terraform apply` of the module in terraform/ against moto's threaded server on 127.0.0.1, the memory
handler (and, with the MCP endpoint on, the MCP handler) against the bucket and KMS key that apply
created, then `terraform destroy`: two applies, by default and with the HTTP API and the MCP endpoint.

The root module is written to a temporary directory and calls a private copy of terraform/, with a
provider whose every endpoint (S3, KMS, IAM, Lambda, CloudWatch Logs, STS, Secrets Manager, API
Gateway v2, EventBridge Scheduler) is the moto server; TF_DATA_DIR and the CLI configuration are
temporary too, and providers come from the local mirror (`find_provider_mirror` in
test_terraform.py). Names carry a random suffix, so runs never collide. It skips, with the reason, where terraform or the mirror is
missing. The lambda functions are created from the tiny placeholder zip in terraform/tests/fixtures.

Where moto differs from AWS, the test adapts and says why:

- **Bucket policy.** moto evaluates a bucket policy statement whose condition does not match as an
  explicit deny (`IAMPolicyStatement._check_conditions` answers DENIED), so the module's four
  conditional Deny statements (no TLS, old TLS, non-KMS SSE, SSE-C) would refuse every object request
  over moto's plain HTTP. The test checks that apply put exactly those statements on the bucket, then
  deletes the policy before it uses the bucket (destroy runs without refresh and deletes it again,
  which S3 and moto accept).
- **Lifecycle configuration.** After writing the rules the provider polls until it reads them back
  equal three times in a row; against moto that takes about 55 s, the longest wait of the apply.
  Nothing is changed for it. With terraform's own planning (about 20 s per command for the AWS
  provider's schema on two cores), each apply test takes about two minutes.
- **KMS endpoint.** `s3memory.settings` has no KMS endpoint setting; botocore's
  `AWS_ENDPOINT_URL_KMS` points the key provider's KMS client at moto.
- **Key policy.** moto neither evaluates key policies nor runs AWS's lockout safety check, and its
  caller is `arn:aws:sts::<account>:user/moto` (no assumed role): the test checks the policy apply
  set (account root read-only, the caller as the administrator with PutKeyPolicy, no CreateGrant),
  not its enforcement; `terraform test` covers the policy's rules.
- **Logging config.** moto (5.2) accepts `LoggingConfig` but neither keeps nor returns it, so the
  JSON log format and levels cannot be read back through the Lambda API (nor from the state, which
  the provider fills from what it reads back): the test checks them in the plan that apply printed
  (and would check the API's answer if moto returned it); `terraform test` checks the plan too.
- **Reserved concurrency.** moto stores it and returns it with `GetFunction` (`Concurrency`), so the
  defaults (none reserved for the memory and agent functions, 1 for the expiry function) and the MCP
  apply's explicit 10 are read back through the Lambda API.
- **Versions at destroy.** moto (5.2.5) fails `DeleteObjects` on a key whose versions include a
  delete marker once the bucket's versioning is suspended (`'FakeDeleteMarker' object has no
  attribute 'dispose'`, a 500), and destroy suspends it (it removes `aws_s3_bucket_versioning`)
  before it empties and deletes the bucket: the provider retries until destroy times out. The
  store's first use leaves delete markers (the server probe writes and deletes objects of its own:
  docs/servers.md), so the test removes every version and delete marker, with versioning still
  on, before destroy. S3 has no such failure.
- **HTTP API.** moto (5.2) stores the API, its routes (route keys, authorization types, the
  authorizer's id and the routes' authorization scopes), the integrations and the `$default`
  stage with its access log settings, and returns them, so those are read back; it has no
  `GetAuthorizers`, so the routes' authorizer is read by its id (`GetAuthorizer`). It never
  serves the API: no request goes through API Gateway, no JWT authorizer runs, and the Lambda
  permissions are read back as `GetPolicy` returns them, not exercised. The MCP handler is
  therefore invoked in process with the payload-2.0 events API Gateway sends for the route keys
  read back, and what refuses a request without a valid token is the function's own check.
- **The token issuer.** The module accepts only an https `jwt_issuer`, and the test issuer of
  `tests/support/issuer.py` serves plain http: the test serves the same `Issuer` over TLS on
  127.0.0.1 with a self-signed certificate, which the handler trusts through `SSL_CERT_FILE`, so
  that the handler runs with exactly the applied `S3MEMORY_JWT_ISSUER`.
- **EventBridge Scheduler.** moto (5.2) stores a schedule and returns it with `GetSchedule`
  (expression, flexible time window, state, target ARN, role and input), so those are read back. It
  never runs a schedule, nor assumes its role: that the schedule's role may invoke the function, and
  only it, is checked on the policies apply set, not by an invocation.

The module is applied with `memory_quota_files = 1`, idle expiry on (`expiry_idle_days = 30`) and
the operator role on, trusted to a role that the root module creates. The expiry function, its
role, policy and log group, its Decrypt-only statements in the key policy, the schedule and the
schedule's role are read back through Lambda, IAM, CloudWatch Logs, KMS and Scheduler (the function
is created from the placeholder zip and never runs). The operator role, its trust policy (that
role, with MFA) and its inline policy are read back through IAM, and the key policy names it as a
key user (moto evaluates neither trust nor key policies: these check what apply set, `terraform
test` covers the rest). The memory handler then runs in process with exactly the environment that the applied memory function
has (read back through the Lambda API), plus the endpoint variables for moto: its first create is
stored, a second create is refused with the quota's answer and writes nothing.

A second apply (`test_apply_mcp_endpoint_use_destroy`) turns the HTTP API and the MCP endpoint on
(`create_http_api`, `jwt_issuer` the TLS loopback issuer, `jwt_audience`, one required scope,
`create_mcp_endpoint`): the four routes (`POST /memory`, `ANY /mcp` with the JWT authorizer and the
scope, the two protected-resource metadata routes without authorization), the one integration of
the MCP routes and its target, the MCP function (handler, memory size, reserved concurrency, the
environment with `S3MEMORY_MCP_URL` = `<api_endpoint>/mcp` and without
`S3MEMORY_DIRECT_INVOCATION`), its three permissions, role, policy, log group and key grants are
read back. The MCP handler then runs in process with exactly the applied MCP function's
environment: the metadata on both routes without a token, 401 and 403 without a token or without the
scope, then an MCP `initialize` and a `tools/call` of the memory tool (a create, then a view) with
the issuer's token; nothing readable in the keys or the objects.

After each apply, an upgrade: the same state with the functions, their roles, policies and log
groups (and the API's log group) at their former addresses, one resource per function
(`aws_lambda_function.memory`, `aws_iam_role.agent[0]`, ...), plans exactly what the applied
deployment plans, each of them moved by moved.tf to its for_each key, none destroyed or created.

The module's default storage format is 2 (private names), and it tells every function so
explicitly: the test reads `S3MEMORY_STORAGE_FORMAT = "2"` and `S3MEMORY_STORE_ID` (the bucket's
name) back from all three functions, and the envelope-key statements of the key policy and of the
roles' policies pinned to the store identity (`s3memory.formats.store_keys.store_identity` of the bucket and
the prefix). The handler, run with that environment, leaves no user id or path in any object key.
"""

from __future__ import annotations

import datetime
import ipaddress
import json
import logging
import os
import re
import shutil
import ssl
import subprocess
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit

import boto3
import pytest
from botocore.exceptions import ClientError

from s3memory.aws_lambda import mcp_handler, memory_handler, runtime
from s3memory.formats.store_keys import store_identity
from tests.deploy.test_terraform import MODULE_DIR, _clean_environment, assert_ok, find_provider_mirror
from tests.support.issuer import AUDIENCE, Issuer, http_event, loopback_issuer, new_rsa_key
from tests.support.mcp_messages import INITIALIZE, MCP_HEADERS
from tests.support.mcp_messages import tools_call as mcp_call

pytestmark = [pytest.mark.slow, pytest.mark.terraform]

FIXTURE_ZIP = MODULE_DIR / "tests" / "fixtures" / "lambda.zip"
COMMAND_TIMEOUT_SECONDS = 300
SERVICES = (
    "s3",
    "kms",
    "iam",
    "lambda",
    "cloudwatchlogs",
    "sts",
    "secretsmanager",
    "apigatewayv2",
    "scheduler",
)
SECRET = "meet at the old mill at dawn"
QUOTA_REFUSAL = (
    "Error: Cannot write /memories/second.md: the memory quota allows 1 files and 1 exist. "
    "Delete or merge files first; nothing was changed."
)
EXPIRY_IDLE_DAYS = 30
# A private name of format 2: unpadded base32 (docs/format-v2.md, "Private names").
TOKEN = "[a-z2-7]+"
BUCKET_POLICY_SIDS = {
    "DenyInsecureTransport",
    "DenyOutdatedTls",
    "DenyNonKmsServerSideEncryption",
    "DenyCustomerProvidedKeys",
}


def bucket_name(suffix: str) -> str:
    return f"s3memory-apply-{suffix}"


def provider_block(endpoint: str) -> str:
    """The AWS provider, every endpoint the moto server."""
    endpoints = "\n".join(f'    {service:<14} = "{endpoint}"' for service in SERVICES)
    return f"""
terraform {{
  required_providers {{
    aws = {{
      source  = "hashicorp/aws"
      version = ">= 5.100, < 7.0"
    }}
  }}
}}

provider "aws" {{
  region                      = "us-east-1"
  access_key                  = "testing"
  secret_key                  = "testing"
  skip_credentials_validation = true
  skip_metadata_api_check     = true
  skip_region_validation      = true
  s3_use_path_style           = true

  endpoints {{
{endpoints}
  }}
}}
"""


def root_module(endpoint: str, module_dir: Path, suffix: str) -> str:
    return f"""{provider_block(endpoint)}
data "aws_caller_identity" "current" {{}}

# The principal that operators sign in as; the module's operator role trusts it.
resource "aws_iam_role" "memory_admin" {{
  name = "s3m-{suffix}-memory-admin"
  assume_role_policy = jsonencode({{
    Version = "2012-10-17"
    Statement = [{{
      Effect    = "Allow"
      Principal = {{ AWS = "arn:aws:iam::${{data.aws_caller_identity.current.account_id}}:root" }}
      Action    = "sts:AssumeRole"
    }}]
  }})
}}

module "s3memory" {{
  source = "{module_dir.as_posix()}"

  bucket_name                     = "{bucket_name(suffix)}"
  name_prefix                     = "s3m-{suffix}"
  kms_key_alias                   = "alias/s3memory-apply-{suffix}"
  kms_key_deletion_window_in_days = 7
  force_destroy                   = true
  lambda_zip_path                 = "{FIXTURE_ZIP.as_posix()}"
  memory_quota_files              = 1
  create_operator_role            = true
  operator_trusted_principal_arns = [aws_iam_role.memory_admin.arn]
  expiry_idle_days                = {EXPIRY_IDLE_DAYS}
  # No Anthropic API key secret here (the function never runs): created on request, with the
  # module's warning that it has no key.
  create_agent_function           = true
}}

output "module" {{
  value = module.s3memory
}}

output "memory_admin_role_arn" {{
  value = aws_iam_role.memory_admin.arn
}}
"""


def client(service: str, endpoint: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def check_applied(outputs: dict[str, Any], endpoint: str) -> dict[str, str]:
    """What apply created, read back through the AWS APIs; the memory function's environment."""
    s3, kms, lam, iam, logs = (client(name, endpoint) for name in ("s3", "kms", "lambda", "iam", "logs"))
    bucket, key_arn = outputs["bucket_name"], outputs["kms_key_arn"]
    assert s3.get_bucket_versioning(Bucket=bucket)["Status"] == "Enabled"
    block = s3.get_public_access_block(Bucket=bucket)["PublicAccessBlockConfiguration"]
    assert all(block.values()) and len(block) == 4
    (rule,) = s3.get_bucket_encryption(Bucket=bucket)["ServerSideEncryptionConfiguration"]["Rules"]
    assert rule["ApplyServerSideEncryptionByDefault"] == {
        "SSEAlgorithm": "aws:kms",
        "KMSMasterKeyID": key_arn,
    }
    assert rule["BucketKeyEnabled"] is True
    policy = json.loads(s3.get_bucket_policy(Bucket=bucket)["Policy"])
    assert {statement["Sid"] for statement in policy["Statement"]} == BUCKET_POLICY_SIDS
    assert all(statement["Effect"] == "Deny" for statement in policy["Statement"])
    lifecycle = s3.get_bucket_lifecycle_configuration(Bucket=bucket)["Rules"]
    assert {rule["ID"] for rule in lifecycle} == {
        "expire-noncurrent-versions",
        "abort-incomplete-multipart-uploads",
    }

    assert kms.get_key_rotation_status(KeyId=key_arn)["KeyRotationEnabled"] is True
    caller = client("sts", endpoint).get_caller_identity()
    key_policy = json.loads(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"])
    by_sid = {statement["Sid"]: statement for statement in key_policy["Statement"]}
    assert by_sid["ReadOnlyByAccount"]["Principal"]["AWS"] == f"arn:aws:iam::{caller['Account']}:root"
    assert sorted(by_sid["ReadOnlyByAccount"]["Action"]) == ["kms:Describe*", "kms:Get*", "kms:List*"]
    for sid in ("KeyAdministration", "KeyPolicyChangeBreakGlass"):
        assert by_sid[sid]["Principal"]["AWS"] in (caller["Arn"], [caller["Arn"]])  # no assumed role on moto
    assert by_sid["KeyPolicyChangeBreakGlass"]["Action"] in ("kms:PutKeyPolicy", ["kms:PutKeyPolicy"])
    actions = [action for statement in key_policy["Statement"] for action in _listed(statement["Action"])]
    assert "kms:CreateGrant" not in actions and not {"kms:*", "kms:Create*", "kms:Put*"} & set(actions)
    aliases = {alias["AliasName"]: alias.get("TargetKeyId") for alias in kms.list_aliases()["Aliases"]}
    assert aliases[outputs["kms_key_alias"]] == outputs["kms_key_id"]

    # Storage format 2 by default: the envelope-key grants are pinned to this store's identity.
    identity = store_identity(bucket, "users/")
    assert (outputs["storage_format"], outputs["store_id"], outputs["store_identity"]) == (
        2,
        bucket,
        identity,
    )
    pinned = {
        "Null": {"kms:EncryptionContext:s3memory:user": "false"},
        "StringEquals": {"kms:EncryptionContext:s3memory:store": identity},
    }
    assert by_sid["EnvelopeKeysWithS3memoryContext"]["Condition"] == pinned
    assert by_sid["ExpiryDecryptWithS3memoryContext"]["Condition"] == pinned
    assert not [sid for sid in by_sid if sid.endswith("Format1Migration")]
    sid = "EnvelopeKeysWithS3memoryContext"
    for kind in ("memory", "agent"):
        role_name = outputs[f"{kind}_role_arn"].rsplit("/", 1)[1]
        (policy_name,) = iam.list_role_policies(RoleName=role_name)["PolicyNames"]
        document = _document(
            iam.get_role_policy(RoleName=role_name, PolicyName=policy_name)["PolicyDocument"]
        )
        (statement,) = [statement for statement in document["Statement"] if statement["Sid"] == sid]
        assert statement["Condition"] == pinned, kind

    environments: dict[str, dict[str, str]] = {}
    for kind in ("memory", "agent"):
        function = lam.get_function(FunctionName=outputs[f"{kind}_function_name"])
        configuration = function["Configuration"]
        assert configuration["Handler"] == f"s3memory.aws_lambda.{kind}_handler"
        assert configuration["Runtime"] == "python3.11"
        assert configuration["Role"] == outputs[f"{kind}_role_arn"]
        assert "ReservedConcurrentExecutions" not in function.get("Concurrency", {})  # unreserved by default
        # moto does not keep LoggingConfig (see the docstring): when it one day returns it, it must be right.
        if "LoggingConfig" in configuration:
            assert configuration["LoggingConfig"]["LogFormat"] == "JSON"
            assert configuration["LoggingConfig"]["ApplicationLogLevel"] == "INFO"
            assert configuration["LoggingConfig"]["SystemLogLevel"] == "WARN"
        variables = environments[kind] = configuration["Environment"]["Variables"]
        assert variables["S3MEMORY_BUCKET"] == bucket and variables["S3MEMORY_KMS_KEY_ID"] == key_arn
        assert variables["S3MEMORY_PREFIX"] == "users/"
        assert variables["S3MEMORY_QUOTA_FILES"] == "1"
        role_name = outputs[f"{kind}_role_arn"].rsplit("/", 1)[1]
        assert iam.list_role_policies(RoleName=role_name)["PolicyNames"]
        (group,) = logs.describe_log_groups(logGroupNamePrefix=outputs["log_group_names"][kind])["logGroups"]
        assert group["retentionInDays"] == 30
    assert outputs["api_endpoint"] is None
    # Only what differs from the functions' defaults is set, except the storage format, always set
    # (format 2 by default; the functions' own default is auto) with the store's id; the memory
    # function always says whether it serves direct events (allowed: no HTTP API fronts it).
    store = {
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_PREFIX": "users/",
        "S3MEMORY_KMS_KEY_ID": key_arn,
        "S3MEMORY_STORAGE_FORMAT": "2",
        "S3MEMORY_STORE_ID": bucket,
        "S3MEMORY_QUOTA_FILES": "1",
    }
    assert environments["memory"] == {**store, "S3MEMORY_DIRECT_INVOCATION": "allow"}
    assert environments["agent"] == {**store, "S3MEMORY_MODEL": "claude-sonnet-4-5"}
    return environments["memory"]


OPERATOR_ACTIONS = {
    "ListMemoryPrefixAndVersions": {"s3:ListBucket", "s3:ListBucketVersions"},
    "BucketVersioningStatus": {"s3:GetBucketVersioning"},
    "MemoryObjectsAndVersions": {
        "s3:GetObject",
        "s3:GetObjectVersion",
        "s3:PutObject",
        "s3:DeleteObject",
        "s3:DeleteObjectVersion",
    },
    "EnvelopeKeysWithS3memoryContext": {"kms:GenerateDataKey", "kms:Decrypt"},
    "BucketSseViaS3": {"kms:GenerateDataKey", "kms:Decrypt"},
}
VERSION_ACTIONS = {
    "s3:ListBucketVersions",
    "s3:GetObjectVersion",
    "s3:DeleteObjectVersion",
    "s3:GetBucketVersioning",
}


def check_operator_role(outputs: dict[str, Any], admin_arn: str, endpoint: str) -> None:
    """The operator role as IAM has it: trusted to the admin role only, with MFA; exactly the
    operator's actions on the bucket, the prefix and the key; a key user in the key policy; and the
    serving roles still without any version permission."""
    iam, kms = client("iam", endpoint), client("kms", endpoint)
    operator_arn = outputs["operator_role_arn"]
    role_name = operator_arn.rsplit("/", 1)[1]
    assert role_name == f"{outputs['memory_function_name'].removesuffix('-memory')}-operator"
    role = iam.get_role(RoleName=role_name)["Role"]
    assert role["Arn"] == operator_arn and role["Path"] == "/"
    assert role["MaxSessionDuration"] == 3600
    (trust,) = _document(role["AssumeRolePolicyDocument"])["Statement"]
    assert _listed(trust["Principal"]["AWS"]) == [admin_arn]
    assert (trust["Effect"], trust["Action"]) == ("Allow", "sts:AssumeRole")
    assert trust["Condition"] == {"Bool": {"aws:MultiFactorAuthPresent": "true"}}

    assert iam.list_role_policies(RoleName=role_name)["PolicyNames"] == ["s3memory-operator"]
    document = _document(
        iam.get_role_policy(RoleName=role_name, PolicyName="s3memory-operator")["PolicyDocument"]
    )
    by_sid = {statement["Sid"]: statement for statement in document["Statement"]}
    assert {sid: set(_listed(statement["Action"])) for sid, statement in by_sid.items()} == OPERATOR_ACTIONS
    bucket_arn, key_arn = outputs["bucket_arn"], outputs["kms_key_arn"]
    assert by_sid["ListMemoryPrefixAndVersions"]["Resource"] == bucket_arn
    assert by_sid["ListMemoryPrefixAndVersions"]["Condition"] == {
        "StringLike": {"s3:prefix": ["users/", "users/*"]}
    }
    assert by_sid["BucketVersioningStatus"]["Resource"] == bucket_arn
    assert "Condition" not in by_sid["BucketVersioningStatus"]
    assert by_sid["MemoryObjectsAndVersions"]["Resource"] == f"{bucket_arn}/users/*"
    assert "Condition" not in by_sid["MemoryObjectsAndVersions"]
    assert by_sid["EnvelopeKeysWithS3memoryContext"]["Resource"] == key_arn
    assert by_sid["BucketSseViaS3"]["Resource"] == key_arn

    key_policy = json.loads(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"])
    users = {
        statement["Sid"]: set(_listed(statement["Principal"]["AWS"]))
        for statement in key_policy["Statement"]
        if statement["Sid"] in ("EnvelopeKeysWithS3memoryContext", "BucketSseViaS3")
    }
    serving = {outputs["memory_role_arn"], outputs["agent_role_arn"]}
    assert users == {
        "EnvelopeKeysWithS3memoryContext": serving | {operator_arn},
        "BucketSseViaS3": serving | {operator_arn},
    }
    for kind in ("memory", "agent"):
        name = outputs[f"{kind}_role_arn"].rsplit("/", 1)[1]
        (policy_name,) = iam.list_role_policies(RoleName=name)["PolicyNames"]
        statements = _document(iam.get_role_policy(RoleName=name, PolicyName=policy_name)["PolicyDocument"])
        actions = {action for statement in statements["Statement"] for action in _listed(statement["Action"])}
        assert not actions & VERSION_ACTIONS, (kind, actions)


EXPIRY_ACTIONS = {
    "ListMemoryPrefix": {"s3:ListBucket"},
    "ReadAndDeleteMemoryObjects": {"s3:GetObject", "s3:DeleteObject"},
    "DecryptWithS3memoryContext": {"kms:Decrypt"},
    "DecryptViaS3": {"kms:Decrypt"},
    "OwnLogGroup": {"logs:CreateLogStream", "logs:PutLogEvents"},
}


def check_expiry(outputs: dict[str, Any], endpoint: str) -> None:
    """Idle expiry as the AWS APIs have it: the function (handler, environment, one run at a time),
    its role and inline policy, its log group, the key policy's Decrypt-only statements for it, and
    the EventBridge Scheduler schedule that invokes it with its own role (moto evaluates none of
    these policies, nor runs the schedule: `terraform test` covers the rules)."""
    lam, iam, kms, logs, scheduler = (
        client(name, endpoint) for name in ("lambda", "iam", "kms", "logs", "scheduler")
    )
    name = outputs["expiry_function_name"]
    prefix = outputs["memory_function_name"].removesuffix("-memory")
    assert name == f"{prefix}-expiry"
    function = lam.get_function(FunctionName=name)
    configuration = function["Configuration"]
    role_arn = iam.get_role(RoleName=f"{name}-lambda")["Role"]["Arn"]
    assert configuration["Handler"] == "s3memory.aws_lambda.expiry.handler"
    assert configuration["Runtime"] == "python3.11"
    assert configuration["Role"] == role_arn
    assert configuration["Timeout"] == 900
    assert function["Concurrency"] == {"ReservedConcurrentExecutions": 1}
    if "LoggingConfig" in configuration:  # moto does not keep it (see the docstring)
        assert configuration["LoggingConfig"]["LogFormat"] == "JSON"
    assert configuration["Environment"]["Variables"] == {
        "S3MEMORY_BUCKET": outputs["bucket_name"],
        "S3MEMORY_PREFIX": "users/",
        "S3MEMORY_KMS_KEY_ID": outputs["kms_key_arn"],
        "S3MEMORY_STORAGE_FORMAT": "2",
        "S3MEMORY_STORE_ID": outputs["bucket_name"],
        "S3MEMORY_EXPIRE_IDLE_DAYS": str(EXPIRY_IDLE_DAYS),
    }
    assert outputs["log_group_names"]["expiry"] == f"/aws/lambda/{name}"
    (group,) = logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{name}")["logGroups"]
    assert group["retentionInDays"] == 30

    role = iam.get_role(RoleName=f"{name}-lambda")["Role"]
    (trust,) = _document(role["AssumeRolePolicyDocument"])["Statement"]
    assert (trust["Principal"], trust["Action"]) == ({"Service": "lambda.amazonaws.com"}, "sts:AssumeRole")
    assert iam.list_role_policies(RoleName=f"{name}-lambda")["PolicyNames"] == ["s3memory-expiry-function"]
    document = _document(
        iam.get_role_policy(RoleName=f"{name}-lambda", PolicyName="s3memory-expiry-function")[
            "PolicyDocument"
        ]
    )
    by_sid = {statement["Sid"]: statement for statement in document["Statement"]}
    assert {sid: set(_listed(statement["Action"])) for sid, statement in by_sid.items()} == EXPIRY_ACTIONS
    bucket_arn, key_arn = outputs["bucket_arn"], outputs["kms_key_arn"]
    assert by_sid["ListMemoryPrefix"]["Resource"] == bucket_arn
    assert by_sid["ListMemoryPrefix"]["Condition"] == {"StringLike": {"s3:prefix": "users/*"}}
    assert by_sid["ReadAndDeleteMemoryObjects"]["Resource"] == f"{bucket_arn}/users/*"
    assert by_sid["DecryptWithS3memoryContext"]["Resource"] == key_arn
    assert by_sid["DecryptViaS3"]["Resource"] == key_arn

    key_policy = json.loads(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"])
    expiry_statements = {
        statement["Sid"]: statement
        for statement in key_policy["Statement"]
        if role_arn in _listed(statement.get("Principal", {}).get("AWS", []))
    }
    assert set(expiry_statements) == {"ExpiryDecryptWithS3memoryContext", "ExpiryDecryptViaS3"}
    assert all(_listed(statement["Action"]) == ["kms:Decrypt"] for statement in expiry_statements.values())

    schedule = scheduler.get_schedule(Name=name)
    scheduler_role = iam.get_role(RoleName=f"{name}-scheduler")["Role"]
    assert schedule["ScheduleExpression"] == "rate(1 day)"
    assert schedule["FlexibleTimeWindow"] == {"Mode": "OFF"}
    assert schedule["State"] == "ENABLED"
    assert schedule["Target"]["Arn"] == configuration["FunctionArn"]
    assert schedule["Target"]["RoleArn"] == scheduler_role["Arn"]
    assert json.loads(schedule["Target"]["Input"]) == {}
    (scheduler_trust,) = _document(scheduler_role["AssumeRolePolicyDocument"])["Statement"]
    account = client("sts", endpoint).get_caller_identity()["Account"]
    assert scheduler_trust["Principal"] == {"Service": "scheduler.amazonaws.com"}
    assert scheduler_trust["Action"] == "sts:AssumeRole"
    assert scheduler_trust["Condition"] == {"StringEquals": {"aws:SourceAccount": account}}
    (invoke,) = _document(
        iam.get_role_policy(RoleName=f"{name}-scheduler", PolicyName="s3memory-expiry-schedule")[
            "PolicyDocument"
        ]
    )["Statement"]
    assert (invoke["Action"], invoke["Resource"]) == ("lambda:InvokeFunction", configuration["FunctionArn"])


def _document(value: str | dict[str, Any]) -> dict[str, Any]:
    """A policy document as IAM returns it (boto3 decodes it; a string is URL-encoded JSON)."""
    if isinstance(value, dict):
        return value
    return dict(json.loads(unquote(value)))


def remove_every_version(endpoint: str, bucket: str) -> None:
    """Every version and delete marker in ``bucket`` removed, while its versioning is still on (a
    bucket not there is left alone): moto's workaround before destroy (see the docstring)."""
    s3 = client("s3", endpoint)
    try:
        pages = list(s3.get_paginator("list_object_versions").paginate(Bucket=bucket))
    except ClientError as error:
        if error.response["Error"]["Code"] == "NoSuchBucket":
            return
        raise
    for page in pages:
        found = page.get("Versions", []) + page.get("DeleteMarkers", [])
        objects = [{"Key": item["Key"], "VersionId": item["VersionId"]} for item in found]
        if objects:
            answer = s3.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})
            assert not answer.get("Errors"), answer["Errors"]


def new_container() -> None:
    """Forget the warm container's clients, key cache and memories, as a cold start does."""
    runtime.reset()


def _listed(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else value


def check_logging_config_planned(apply_output: str, functions: int) -> None:
    """The functions' logging_config as the plan that apply printed has it: moto accepts
    LoggingConfig but neither keeps nor returns it, so neither the Lambda API nor the state (which
    the provider fills from what it reads back) has it."""
    blocks = re.findall(r"\+ logging_config \{(.*?)\}", apply_output, flags=re.DOTALL)
    assert len(blocks) == functions, apply_output
    for block in blocks:
        settings = dict(re.findall(r'\+ (\w+)\s+= "([^"]*)"', block))
        assert settings == {"application_log_level": "INFO", "log_format": "JSON", "system_log_level": "WARN"}


# The resources that are one for_each over the functions (lambda.tf, iam.tf, logs.tf) and were one
# resource per function before: the memory function's single, the others counted.
FOR_EACH = {
    (kind, "this")
    for kind in ("aws_lambda_function", "aws_iam_role", "aws_iam_role_policy", "aws_cloudwatch_log_group")
}


def with_former_addresses(state: dict[str, Any]) -> tuple[dict[str, Any], set[str]]:
    """``state`` as a deployment made before the for_each keeps it (``aws_lambda_function.memory``,
    ``aws_lambda_function.agent[0]``, ...), and the instance addresses it moved away from."""
    resources: list[dict[str, Any]] = []
    former: set[str] = set()
    for resource in state["resources"]:
        if (
            resource.get("module") != "module.s3memory"
            or (resource["type"], resource["name"]) not in FOR_EACH
        ):
            resources.append(resource)
            continue
        for instance in resource["instances"]:
            key = instance.pop("index_key")
            single = {name: value for name, value in resource.items() if name not in ("each", "instances")}
            if key == "memory":
                resources.append({**single, "name": key, "instances": [instance]})
                former.add(f"module.s3memory.{resource['type']}.{key}")
            else:
                resources.append(
                    {**single, "name": key, "each": "list", "instances": [{"index_key": 0, **instance}]}
                )
                former.add(f"module.s3memory.{resource['type']}.{key}[0]")
    return {**state, "serial": state["serial"] + 1, "resources": resources}, former


def planned_changes(terraform: Terraform, root: Path) -> dict[str, dict[str, Any]]:
    """Each resource's planned change (without refresh: against the state as it is), by address."""
    assert_ok(terraform("plan", "-refresh=false", "-input=false", "-out=upgrade.tfplan"), "terraform plan")
    shown = terraform("show", "-json", "upgrade.tfplan")
    assert_ok(shown, "terraform show")
    return {change["address"]: change for change in json.loads(shown.stdout)["resource_changes"]}


def check_upgrade_only_moves(terraform: Terraform, root: Path, moved: int) -> None:
    """A deployment made before the functions, roles, policies and log groups became one for_each
    each plans what this one plans, each of those resources moved from its former address by
    moved.tf (never destroyed and created again). moto leaves no logging_config in the state (see
    the docstring), so both plans update the functions' logging_config: compared, not required empty."""
    path = root / "terraform.tfstate"
    current = path.read_text(encoding="utf-8")
    expected = planned_changes(terraform, root)
    state, former = with_former_addresses(json.loads(current))
    assert len(former) == moved, sorted(former)
    path.write_text(json.dumps(state), encoding="utf-8")
    try:
        upgrade = planned_changes(terraform, root)
    finally:
        path.write_text(current, encoding="utf-8")
    assert {address: change["change"]["actions"] for address, change in upgrade.items()} == {
        address: change["change"]["actions"] for address, change in expected.items()
    }
    assert all(change["change"]["actions"] in (["no-op"], ["update"]) for change in upgrade.values())
    assert {change.get("previous_address") for change in upgrade.values()} - {None} == former
    for address, change in upgrade.items():
        assert change["change"]["after"] == expected[address]["change"]["after"], address


def last_metrics(records: list[logging.LogRecord]) -> dict[str, Any]:
    """The fields of the invocation's record: its `extra` fields, which Lambda's JSON formatter writes
    top level, with the EMF block (`_aws`) and the metric values among them."""
    found = [dict(record.__dict__) for record in records if hasattr(record, "_aws")]
    assert found, "the invocation logged no record with metrics"
    return found[-1]


def use_memory(
    outputs: dict[str, Any],
    environment: dict[str, str],
    endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The memory handler, in process, on the applied bucket and key, with exactly the applied memory
    function's environment (plus moto's endpoints)."""
    bucket, key_arn = outputs["bucket_name"], outputs["kms_key_arn"]
    s3 = client("s3", endpoint)
    # moto reads the module's conditional Deny statements as unconditional (see the docstring).
    s3.delete_bucket_policy(Bucket=bucket)
    for name in list(os.environ):
        if name.startswith("S3MEMORY_"):
            monkeypatch.delenv(name)
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("S3MEMORY_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    caplog.set_level(logging.INFO)

    def invoke(tool_input: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
        caplog.clear()
        answer = memory_handler({"user_id": "tf-user", "input": tool_input}, None)
        return answer, last_metrics(caplog.records)

    def stored_keys() -> list[str]:
        return sorted(item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", []))

    new_container()
    try:
        created, created_metrics = invoke(
            {"command": "create", "path": "/memories/plan.md", "file_text": SECRET}
        )
        assert created == {"content": "File created successfully at: /memories/plan.md", "is_error": False}
        # Format 2: GenerateDataKey for the store key, for the key of the server's record (the
        # store's first use probes the server: docs/servers.md), then for the user's data key.
        assert created_metrics["KMSRequests"] == 3
        viewed, viewed_metrics = invoke({"command": "view", "path": "/memories/plan.md"})
        assert viewed["is_error"] is False and SECRET in viewed["content"]
        assert viewed_metrics["KMSRequests"] == 0  # warm: the key provider's cache
        new_container()  # a new container: the store key and the data key are unwrapped by KMS Decrypt
        cold, cold_metrics = invoke({"command": "view", "path": "/memories/plan.md"})
        assert cold["is_error"] is False and SECRET in cold["content"]
        assert cold_metrics["KMSRequests"] == 2

        # memory_quota_files = 1, as the function's environment says: a second file is refused.
        before = stored_keys()
        refused, refused_record = invoke(
            {"command": "create", "path": "/memories/second.md", "file_text": "more\n"}
        )
        assert refused == {"content": QUOTA_REFUSAL, "is_error": True}
        assert (refused_record["command"], refused_record["outcome"]) == ("create", "error")
        assert stored_keys() == before
    finally:
        new_container()

    # Format 2: the store key, the mark of a store with no format-1 user, the record of the server
    # it was probed on (the probe's own objects are gone), and the user's namespace and file under
    # private names; neither the user id nor the path is in any key.
    # (Sorted, the store's three keys may come before or after the namespace's: a token is random.)
    keys = stored_keys()
    store_keys = ["users/s3memory.migrated", "users/s3memory.server", "users/s3memory.storage.bucket-key"]
    assert [key for key in keys if key in store_keys] == store_keys, keys
    user_keys = [key for key in keys if key not in store_keys]
    assert len(user_keys) == 3, keys
    namespace = re.fullmatch(f"users/({TOKEN})/internal/access", user_keys[0])
    assert namespace is not None, keys
    assert user_keys[1] == f"users/{namespace[1]}/internal/keys/v1", keys
    assert re.fullmatch(f"users/{namespace[1]}/memories/{TOKEN}", user_keys[2]), keys
    assert not [key for key in keys if "tf-user" in key or "plan.md" in key], keys
    stored = s3.get_object(Bucket=bucket, Key=user_keys[2])
    body = stored["Body"].read()
    assert body.startswith(b"S3ME") and SECRET.encode() not in body and b"old mill" not in body
    assert stored["ServerSideEncryption"] == "aws:kms" and stored["SSEKMSKeyId"] == key_arn  # bucket default


Terraform = Callable[..., "subprocess.CompletedProcess[str]"]


def terraform_root(tmp_path: Path, main_tf: Callable[[Path], str]) -> tuple[Path, Terraform]:
    """A private copy of the module, a root module of ``main_tf(<the copy>)`` initialised in
    ``tmp_path``, and a runner of terraform there; skips, with the reason, where terraform or the
    provider mirror is missing."""
    binary = shutil.which("terraform")
    if binary is None:
        pytest.skip("terraform is not on PATH")
    plugin_dir = find_provider_mirror()
    if plugin_dir is None:
        pytest.skip(
            "no local provider mirror: no 'registry.terraform.io' directory holding hashicorp/aws "
            "(set S3MEMORY_TF_PLUGIN_DIR to its parent)"
        )
    module_dir = tmp_path / "terraform"
    shutil.copytree(
        MODULE_DIR,
        module_dir,
        ignore=shutil.ignore_patterns(
            ".terraform", "*.tfstate", "*.tfstate.*", ".terraform.lock.hcl", "tests"
        ),
    )
    root = tmp_path / "root"
    root.mkdir()
    (root / "main.tf").write_text(main_tf(module_dir), encoding="utf-8")
    env = dict(_clean_environment(tmp_path), TF_DATA_DIR=str(tmp_path / "data"))
    for name in ("AWS_PROFILE", "AWS_DEFAULT_PROFILE", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE"):
        env.pop(name, None)

    def terraform(*args: str) -> subprocess.CompletedProcess[str]:
        try:
            return subprocess.run(
                [binary, *args, "-no-color"],
                cwd=root,
                env=env,
                capture_output=True,
                text=True,
                timeout=COMMAND_TIMEOUT_SECONDS,
                check=False,
            )
        except subprocess.TimeoutExpired as error:
            pytest.fail(f"terraform {args[0]} timed out after {COMMAND_TIMEOUT_SECONDS} s\n{error.stdout!s}")

    assert_ok(terraform("init", "-input=false", f"-plugin-dir={plugin_dir}"), "terraform init")
    return root, terraform


def test_apply_use_destroy(
    tmp_path: Path,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    root, terraform = terraform_root(
        tmp_path, lambda module_dir: root_module(moto_endpoint, module_dir, suffix)
    )
    applied = terraform("apply", "-auto-approve", "-input=false")
    destroyed: subprocess.CompletedProcess[str] | None = None
    try:
        assert_ok(applied, "terraform apply against moto")
        # 13 of the module by default, the agent function's 4 (function, role, policy, log group), the
        # operator role and its policy, the root's admin role, and idle expiry's 7: function, log
        # group, role and policy, schedule, its role and policy.
        assert "Apply complete! Resources: 27 added" in applied.stdout
        output = terraform("output", "-json")
        assert_ok(output, "terraform output")
        root_outputs = json.loads(output.stdout)
        outputs = root_outputs["module"]["value"]
        environment = check_applied(outputs, moto_endpoint)
        check_operator_role(outputs, root_outputs["memory_admin_role_arn"]["value"], moto_endpoint)
        check_expiry(outputs, moto_endpoint)
        check_logging_config_planned(applied.stdout, 3)  # memory, agent, expiry
        use_memory(outputs, environment, moto_endpoint, monkeypatch, caplog)
        # The memory, agent and expiry functions, their roles, policies and log groups.
        check_upgrade_only_moves(terraform, root, 12)
    finally:
        remove_every_version(moto_endpoint, bucket_name(suffix))
        # Without refresh: nothing changed behind terraform's back but the policy deleted above and
        # the versions just removed.
        destroyed = terraform("destroy", "-auto-approve", "-input=false", "-refresh=false")
    assert_ok(destroyed, "terraform destroy against moto")
    assert "Destroy complete!" in destroyed.stdout

    s3, kms, lam, scheduler = (client(name, moto_endpoint) for name in ("s3", "kms", "lambda", "scheduler"))
    with pytest.raises(ClientError):
        s3.head_bucket(Bucket=outputs["bucket_name"])
    assert kms.describe_key(KeyId=outputs["kms_key_arn"])["KeyMetadata"]["KeyState"] == "PendingDeletion"
    for function_name in (outputs["memory_function_name"], outputs["expiry_function_name"]):
        with pytest.raises(ClientError):
            lam.get_function(FunctionName=function_name)
    with pytest.raises(ClientError):
        scheduler.get_schedule(Name=outputs["expiry_function_name"])
    state = json.loads((root / "terraform.tfstate").read_text(encoding="utf-8"))
    assert state["resources"] == []
    assert not (root / ".terraform").exists()  # provider and modules went to TF_DATA_DIR


# -- the MCP endpoint ---------------------------------------------------------------------------------

MCP_SCOPE = "memory/write"
MCP_SECRET = "the spare key is under the third stone"
MCP_ROUTES = (
    "ANY /mcp",
    "GET /.well-known/oauth-protected-resource",
    "GET /.well-known/oauth-protected-resource/mcp",
)


def self_signed_certificate(directory: Path) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 signed by its own key, valid for a day: (certificate, key) PEM
    files in ``directory``."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.x509.oid import NameOID

    key = new_rsa_key()
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    certificate = (
        x509.CertificateBuilder()
        .subject_name(name)
        .issuer_name(name)
        .public_key(key.public_key())
        .serial_number(x509.random_serial_number())
        .not_valid_before(now - datetime.timedelta(minutes=5))
        .not_valid_after(now + datetime.timedelta(days=1))
        .add_extension(
            x509.SubjectAlternativeName([x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), False
        )
        .add_extension(x509.BasicConstraints(ca=True, path_length=None), True)
        .sign(key, hashes.SHA256())
    )
    certificate_file, key_file = directory / "issuer.pem", directory / "issuer-key.pem"
    certificate_file.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key_file.write_bytes(
        key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
    )
    return certificate_file, key_file


@contextmanager
def tls_loopback_issuer(directory: Path) -> Iterator[tuple[Issuer, Path]]:
    """The test issuer (``support/issuer.py``) served over TLS on 127.0.0.1 while the block runs, with
    the certificate that a client must trust for it: the module's jwt_issuer must be https, so the
    loopback issuer's plain http would not be accepted."""
    certificate, key = self_signed_certificate(directory)
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(certificate, key)
    with loopback_issuer(context) as issuer:
        yield issuer, certificate


def mcp_root_module(endpoint: str, module_dir: Path, suffix: str, issuer_url: str) -> str:
    return f"""{provider_block(endpoint)}
module "s3memory" {{
  source = "{module_dir.as_posix()}"

  bucket_name                     = "{bucket_name(suffix)}"
  name_prefix                     = "s3m-{suffix}"
  kms_key_alias                   = "alias/s3memory-apply-{suffix}"
  kms_key_deletion_window_in_days = 7
  force_destroy                   = true
  lambda_zip_path                 = "{FIXTURE_ZIP.as_posix()}"
  create_http_api                 = true
  jwt_issuer                      = "{issuer_url}"
  jwt_audience                    = ["{AUDIENCE}"]
  jwt_authorization_scopes        = ["{MCP_SCOPE}"]
  create_mcp_endpoint             = true
  mcp_function_reserved_concurrency = 10
}}

output "module" {{
  value = module.s3memory
}}
"""


def check_mcp_applied(outputs: dict[str, Any], endpoint: str, issuer_url: str) -> dict[str, Any]:
    """The HTTP API's routes, authorizer and integrations, the MCP function, its permissions, role,
    policy and log group, and its key grants, as the AWS APIs on moto have them. Returns the MCP
    function's environment and the routes by key."""
    api, lam, iam, kms, logs = (
        client(name, endpoint) for name in ("apigatewayv2", "lambda", "iam", "kms", "logs")
    )
    api_id, bucket, key_arn = outputs["api_id"], outputs["bucket_name"], outputs["kms_key_arn"]
    name = outputs["mcp_function_name"]
    prefix = outputs["memory_function_name"].removesuffix("-memory")
    assert name == f"{prefix}-mcp"
    mcp_url = f"{outputs['api_endpoint']}/mcp"
    assert outputs["mcp_url"] == mcp_url

    routes = {route["RouteKey"]: route for route in api.get_routes(ApiId=api_id)["Items"]}
    assert set(routes) == {"POST /memory", *MCP_ROUTES}
    protected = routes["ANY /mcp"]
    assert protected["AuthorizationType"] == "JWT"
    assert protected["AuthorizerId"] == routes["POST /memory"]["AuthorizerId"]
    # moto (5.2) has no GetAuthorizers: the routes' authorizer, read by its id.
    authorizer = api.get_authorizer(ApiId=api_id, AuthorizerId=protected["AuthorizerId"])
    assert authorizer["AuthorizerType"] == "JWT"
    assert authorizer["JwtConfiguration"] == {"Issuer": issuer_url, "Audience": [AUDIENCE]}
    assert protected["AuthorizationScopes"] == [MCP_SCOPE]  # moto keeps a route's scopes
    assert protected["AuthorizationScopes"] == routes["POST /memory"]["AuthorizationScopes"]
    # moto keeps the stage's access log settings: the API's requests, the MCP routes' too, are logged.
    stage = api.get_stage(ApiId=api_id, StageName="$default")
    assert stage["AccessLogSettings"]["DestinationArn"] == (
        f"arn:aws:logs:us-east-1:{client('sts', endpoint).get_caller_identity()['Account']}"
        f":log-group:{outputs['log_group_names']['api']}"
    )
    for key in MCP_ROUTES[1:]:
        assert routes[key]["AuthorizationType"] == "NONE", key
        assert not routes[key].get("AuthorizerId"), key
    targets = {routes[key]["Target"] for key in MCP_ROUTES}
    (target,) = targets  # one integration for the three routes
    assert target != routes["POST /memory"]["Target"]
    integration = api.get_integration(ApiId=api_id, IntegrationId=target.removeprefix("integrations/"))
    function = lam.get_function(FunctionName=name)
    configuration = function["Configuration"]
    assert integration["IntegrationType"] == "AWS_PROXY"
    assert integration["PayloadFormatVersion"] == "2.0"
    assert integration["TimeoutInMillis"] == 30000
    assert integration["IntegrationUri"] == (
        f"arn:aws:apigateway:us-east-1:lambda:path/2015-03-31/functions/{configuration['FunctionArn']}/invocations"
    )
    assert outputs["mcp_function_arn"] == configuration["FunctionArn"]

    # The function: the memory function's runtime and timeout, its own memory size and concurrency;
    # the memory function's store, limits and token check, the route's URL, no direct invocation.
    role_arn = iam.get_role(RoleName=f"{name}-lambda")["Role"]["Arn"]
    assert configuration["Handler"] == "s3memory.aws_lambda.mcp_handler"
    assert configuration["Runtime"] == "python3.11"
    assert configuration["Role"] == role_arn
    assert (configuration["MemorySize"], configuration["Timeout"]) == (512, 30)
    assert function["Concurrency"] == {"ReservedConcurrentExecutions": 10}
    if "LoggingConfig" in configuration:  # moto does not keep it (see the docstring)
        assert configuration["LoggingConfig"]["LogFormat"] == "JSON"
    environment: dict[str, str] = configuration["Environment"]["Variables"]
    jwt = {
        "S3MEMORY_JWT_ISSUER": issuer_url,
        "S3MEMORY_JWT_AUDIENCE": AUDIENCE,
        "S3MEMORY_JWT_SCOPES": MCP_SCOPE,
    }
    store = {
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_PREFIX": "users/",
        "S3MEMORY_KMS_KEY_ID": key_arn,
        "S3MEMORY_STORAGE_FORMAT": "2",
        "S3MEMORY_STORE_ID": bucket,
    }
    assert environment == {**store, **jwt, "S3MEMORY_MCP_URL": mcp_url}
    memory = lam.get_function(FunctionName=outputs["memory_function_name"])["Configuration"]
    assert memory["Environment"]["Variables"] == {**store, **jwt, "S3MEMORY_DIRECT_INVOCATION": "refuse"}

    # API Gateway may invoke it for these three routes of this API only.
    account = client("sts", endpoint).get_caller_identity()["Account"]
    execution_arn = f"arn:aws:execute-api:us-east-1:{account}:{api_id}"
    permissions = json.loads(lam.get_policy(FunctionName=name)["Policy"])["Statement"]
    assert {statement["Condition"]["ArnLike"]["AWS:SourceArn"] for statement in permissions} == {
        f"{execution_arn}/*/*/mcp",
        f"{execution_arn}/*/GET/.well-known/oauth-protected-resource",
        f"{execution_arn}/*/GET/.well-known/oauth-protected-resource/mcp",
    }
    assert len(permissions) == 3
    for statement in permissions:
        assert statement["Principal"] in ({"Service": "apigateway.amazonaws.com"}, "apigateway.amazonaws.com")
        assert statement["Action"] == "lambda:InvokeFunction"
        assert statement["Resource"] == configuration["FunctionArn"]

    # Its role: the memory role's statements, but its own log group; a key user as the memory role is.
    (policy_name,) = iam.list_role_policies(RoleName=f"{name}-lambda")["PolicyNames"]
    document = _document(
        iam.get_role_policy(RoleName=f"{name}-lambda", PolicyName=policy_name)["PolicyDocument"]
    )
    memory_role = outputs["memory_role_arn"].rsplit("/", 1)[1]
    (memory_policy,) = iam.list_role_policies(RoleName=memory_role)["PolicyNames"]
    memory_document = _document(
        iam.get_role_policy(RoleName=memory_role, PolicyName=memory_policy)["PolicyDocument"]
    )
    logs_sid = "OwnLogGroup"
    assert [statement for statement in document["Statement"] if statement["Sid"] != logs_sid] == [
        statement for statement in memory_document["Statement"] if statement["Sid"] != logs_sid
    ]
    (own,) = [statement for statement in document["Statement"] if statement["Sid"] == logs_sid]
    assert own["Resource"] == f"arn:aws:logs:us-east-1:{account}:log-group:/aws/lambda/{name}:*"
    (group,) = logs.describe_log_groups(logGroupNamePrefix=f"/aws/lambda/{name}")["logGroups"]
    assert group["retentionInDays"] == 30 and outputs["log_group_names"]["mcp"] == f"/aws/lambda/{name}"
    key_policy = json.loads(kms.get_key_policy(KeyId=key_arn, PolicyName="default")["Policy"])
    for statement in key_policy["Statement"]:
        if statement["Sid"] in ("EnvelopeKeysWithS3memoryContext", "BucketSseViaS3"):
            assert role_arn in _listed(statement["Principal"]["AWS"]), statement["Sid"]
            assert outputs["memory_role_arn"] in _listed(statement["Principal"]["AWS"]), statement["Sid"]
    return {"environment": environment, "routes": routes}


def use_mcp(
    outputs: dict[str, Any],
    applied: dict[str, Any],
    issuer: Issuer,
    certificate: Path,
    endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The MCP handler, in process, with exactly the applied MCP function's environment (plus moto's
    endpoints, and the issuer's certificate trusted), on events of the applied routes as API Gateway
    sends them: the metadata without a token, 401 without one on /mcp, 403 without the scope, then an
    MCP ``initialize`` and ``tools/call`` of the memory tool with the issuer's token."""
    bucket = outputs["bucket_name"]
    s3 = client("s3", endpoint)
    s3.delete_bucket_policy(Bucket=bucket)  # moto reads the conditional Deny statements as unconditional
    for name in list(os.environ):
        if name.startswith("S3MEMORY_"):
            monkeypatch.delenv(name)
    for name, value in applied["environment"].items():
        monkeypatch.setenv(name, value)
    monkeypatch.setenv("S3MEMORY_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ENDPOINT_URL_KMS", endpoint)
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate))  # the issuer's, for the fetch of its keys
    domain = urlsplit(outputs["api_endpoint"]).hostname
    assert domain is not None
    mcp_url = applied["environment"]["S3MEMORY_MCP_URL"]
    metadata_url = f"{outputs['api_endpoint']}/.well-known/oauth-protected-resource/mcp"

    def serve(route: str, body: object = None, token: str | None = None) -> tuple[int, dict[str, str], Any]:
        assert route in applied["routes"], route  # only what API Gateway routes to the function
        method = "POST" if route.startswith("ANY ") else route.split(" ")[0]
        event = http_event(
            body,
            token=token,
            claimed_sub=None,
            route=route,
            method=method,
            headers={**MCP_HEADERS, "host": domain},
        )
        event["requestContext"]["domainName"] = domain
        answer = mcp_handler(event, None)
        return answer["statusCode"], answer["headers"], json.loads(answer["body"])

    def text_of(answer: dict[str, Any]) -> tuple[str, bool]:
        (content,) = answer["result"]["content"]
        return content["text"], answer["result"]["isError"]

    new_container()
    try:
        expected_metadata = {
            "resource": mcp_url,
            "authorization_servers": [issuer.url],
            "scopes_supported": [MCP_SCOPE],
            "bearer_methods_supported": ["header"],
        }
        for route in MCP_ROUTES[1:]:
            assert serve(route)[::2] == (200, expected_metadata), route

        create = {"command": "create", "path": "/memories/x.md", "file_text": MCP_SECRET}
        status, headers, body = serve("ANY /mcp", mcp_call(create, 2))
        assert status == 401, body
        assert headers["www-authenticate"] == f'Bearer resource_metadata="{metadata_url}"'
        status, _, body = serve("ANY /mcp", INITIALIZE, issuer.token("tf-user", scope="profile"))
        assert status == 403, body
        assert s3.list_objects_v2(Bucket=bucket).get("KeyCount", 0) == 0

        token = issuer.token("tf-user", scope=f"openid {MCP_SCOPE}")
        status, _, body = serve("ANY /mcp", INITIALIZE, token)
        assert status == 200, body
        assert body["result"]["serverInfo"]["name"] == "s3memory"
        status, _, body = serve("ANY /mcp", mcp_call(create, 2), token)
        assert status == 200, body
        assert text_of(body) == ("File created successfully at: /memories/x.md", False)
        status, _, body = serve("ANY /mcp", mcp_call({"command": "view", "path": "/memories/x.md"}, 3), token)
        assert status == 200, body
        viewed, refused = text_of(body)
        assert not refused and viewed.endswith(f"     1\t{MCP_SECRET}"), viewed
        assert issuer.fetches == 1  # the issuer's keys, fetched over TLS once for the container
    finally:
        new_container()

    # Format 2: neither the user id nor the path in any key, the content encrypted.
    keys = [item["Key"] for item in s3.list_objects_v2(Bucket=bucket).get("Contents", [])]
    assert keys and not [key for key in keys if "tf-user" in key or "x.md" in key], keys
    for key in keys:
        assert MCP_SECRET.encode() not in s3.get_object(Bucket=bucket, Key=key)["Body"].read()


def test_apply_mcp_endpoint_use_destroy(
    tmp_path: Path,
    moto_endpoint: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    suffix = uuid.uuid4().hex[:8]
    with tls_loopback_issuer(tmp_path) as (issuer, certificate):
        root, terraform = terraform_root(
            tmp_path, lambda module_dir: mcp_root_module(moto_endpoint, module_dir, suffix, issuer.url)
        )
        applied = terraform("apply", "-auto-approve", "-input=false")
        destroyed: subprocess.CompletedProcess[str] | None = None
        try:
            assert_ok(applied, "terraform apply against moto")
            # 13 of the module by default (no agent function without a secret), the HTTP API's 7 (API,
            # authorizer, stage, log group, the memory route, integration and permission) and the MCP
            # endpoint's 11 (function, role, policy, log group, integration, 3 routes, 3 permissions).
            assert "Apply complete! Resources: 31 added" in applied.stdout
            output = terraform("output", "-json")
            assert_ok(output, "terraform output")
            outputs = json.loads(output.stdout)["module"]["value"]
            # Without a secret (and create_agent_function unset) there is no agent function.
            assert [outputs[name] for name in ("agent_function_arn", "agent_role_arn")] == [None, None]
            assert outputs["log_group_names"]["agent"] is None
            found = check_mcp_applied(outputs, moto_endpoint, issuer.url)
            check_logging_config_planned(applied.stdout, 2)  # memory, mcp (no agent without a secret)
            use_mcp(outputs, found, issuer, certificate, moto_endpoint, monkeypatch)
            # The memory and MCP functions, their roles, policies and log groups, and the API's log group.
            check_upgrade_only_moves(terraform, root, 9)
        finally:
            remove_every_version(moto_endpoint, bucket_name(suffix))
            destroyed = terraform("destroy", "-auto-approve", "-input=false", "-refresh=false")
    assert_ok(destroyed, "terraform destroy against moto")
    assert "Destroy complete!" in destroyed.stdout
    lam, api = client("lambda", moto_endpoint), client("apigatewayv2", moto_endpoint)
    with pytest.raises(ClientError):
        lam.get_function(FunctionName=outputs["mcp_function_name"])
    assert outputs["api_id"] not in {item["ApiId"] for item in api.get_apis()["Items"]}
    state = json.loads((root / "terraform.tfstate").read_text(encoding="utf-8"))
    assert state["resources"] == []
