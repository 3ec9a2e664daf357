"""What a failed S3 request says is misconfigured, and the fix: the refusal ``Bucket`` raises for it.

``failure`` words a request that failed as a ``RequestFailed`` (an ``AccessDenied`` for a 403): the
operation and the S3 error code and, where the error says what is misconfigured (``misconfigured``:
no such bucket, not an S3 endpoint, unreachable, no or refused credentials, another region, a
skewed clock, a denied IAM or KMS action), the cause and the setting that fixes it. It names the
bucket, the endpoint, the region, the IAM action and where the credentials came from; never a key,
a path, content or the error's own message, which may quote request data.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from s3memory.errors import AccessDenied, RequestFailed, aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound", "NoSuchVersion"})
"""S3's codes for a key (or a bucket) that is not there."""
DENIED = frozenset({"AccessDenied", "403", "Forbidden"})
"""S3's codes for a request refused to this role."""
_NO_BUCKET = frozenset({"NoSuchBucket"})
_UNREACHABLE = frozenset({"EndpointConnectionError", "ConnectTimeoutError"})
_NO_CREDENTIALS = frozenset({"NoCredentialsError", "PartialCredentialsError"})
_BAD_CREDENTIALS = frozenset(
    {"InvalidAccessKeyId", "SignatureDoesNotMatch", "ExpiredToken", "InvalidToken", "TokenRefreshRequired"}
)
_OTHER_REGION = frozenset(
    {"PermanentRedirect", "AuthorizationHeaderMalformed", "IllegalLocationConstraintException", "301"}
)
"""Refusals for a bucket in another region (``301``: a HEAD's, which has no body to name a code)."""
_SKEWED_CLOCK = frozenset({"RequestTimeTooSkewed"})
_IAM_ACTIONS = {
    "ListObjectsV2": "s3:ListBucket",
    "ListObjectVersions": "s3:ListBucketVersions",
    "HeadObject": "s3:GetObject",
    "CopyObject": "s3:GetObject and s3:PutObject",
    "DeleteObjects": "s3:DeleteObject",
}
"""The IAM action an S3 operation needs, where it is not ``s3:`` and the operation's name."""
_VERSION_ACTIONS = {
    "GetObject": "s3:GetObjectVersion",
    "HeadObject": "s3:GetObjectVersion",
    "DeleteObject": "s3:DeleteObjectVersion",
    "DeleteObjects": "s3:DeleteObjectVersion",
}
"""The IAM action of an operation on one version of an object (a ``VersionId`` in its arguments)."""
_KMS_ACTIONS = {
    "GetObject": "kms:Decrypt",
    "PutObject": "kms:GenerateDataKey",
    "CopyObject": "kms:Decrypt and kms:GenerateDataKey",
}
"""What an operation needs of the bucket's KMS key on a bucket that encrypts with SSE-KMS (as the
Terraform module's does)."""
_REGION = re.compile(r"[a-z]{2}(-[a-z]+)+-[0-9]{1,2}")


def iam_action(operation: str, arguments: Mapping[str, Any] | None = None) -> str:
    """The IAM action (or actions) ``operation`` needs with ``arguments``: ``s3:ListBucket`` for
    ``ListObjectsV2``, ``s3:GetObjectVersion`` for a ``GetObject`` of one version..."""
    arguments = arguments or {}
    objects = arguments.get("Delete", {}).get("Objects", []) if operation == "DeleteObjects" else []
    if operation in _VERSION_ACTIONS and (
        arguments.get("VersionId")
        or any(isinstance(item, dict) and item.get("VersionId") for item in objects)
    ):
        return _VERSION_ACTIONS[operation]
    return _IAM_ACTIONS.get(operation, f"s3:{operation}")


def denied_grant(operation: str, error: Exception, arguments: Mapping[str, Any] | None = None) -> str:
    """What to grant a role that S3 denied ``operation``: the KMS action on the bucket's key where S3
    says that is what was denied (its message names a ``kms:`` action), the IAM action where it names
    an ``s3:`` one, else the IAM action with the KMS action beside it for an operation that needs one
    on a bucket that encrypts with SSE-KMS. The message only chooses; it is never shown."""
    kms = _KMS_ACTIONS.get(operation)
    response = getattr(error, "response", None)
    details = response.get("Error") if isinstance(response, dict) else None
    message = details.get("Message") if isinstance(details, dict) else None
    named = message.lower() if isinstance(message, str) else ""
    if kms is not None and "kms:" in named:
        return f"{kms} on the bucket's KMS key"
    action = iam_action(operation, arguments)
    if kms is None or "s3:" in named:
        return action
    return f"{action} (and {kms} on the bucket's KMS key, if it encrypts with one)"


def bucket_region(error: Exception) -> str | None:
    """The bucket's region as S3 names it in a refusal for another region (its ``x-amz-bucket-region``
    header, or the ``Region`` of an ``AuthorizationHeaderMalformed``), if it does and it looks like one."""
    response = getattr(error, "response", None)
    if not isinstance(response, dict):
        return None
    headers = response.get("ResponseMetadata", {}).get("HTTPHeaders", {})
    details = response.get("Error", {})
    region = (headers.get("x-amz-bucket-region") if isinstance(headers, dict) else None) or (
        details.get("Region") if isinstance(details, dict) else None
    )
    return region if isinstance(region, str) and _REGION.fullmatch(region) else None


def _endpoint(client: S3Client) -> str:
    return getattr(getattr(client, "meta", None), "endpoint_url", None) or "AWS S3"


def _region(client: S3Client) -> str:
    return getattr(getattr(client, "meta", None), "region_name", None) or "none"


def _credentials_source(client: S3Client) -> str:
    """Where the client's credentials came from, as botocore names it (never the keys)."""
    signer = getattr(client, "_request_signer", None)
    method = getattr(getattr(signer, "_credentials", None), "method", None)
    return f"from {method}" if isinstance(method, str) and method else "from an unknown source"


def where(client: S3Client, bucket: str) -> str:
    """The bucket and the endpoint, as errors name them (never a key)."""
    return f"bucket {bucket} at {_endpoint(client)}"


def described(client: S3Client, bucket: str) -> str:
    """The bucket, the endpoint, the region and where the credentials came from, as the log names
    them (never a key)."""
    return f"{where(client, bucket)}, region {_region(client)}, credentials {_credentials_source(client)}"


def misconfigured(
    client: S3Client,
    bucket: str,
    error: Exception,
    operation: str,
    arguments: Mapping[str, Any] | None = None,
) -> str | None:
    """What the failure ``error`` of ``operation`` (sent with ``arguments`` to ``bucket``) says is
    misconfigured, and the fix; None for failures a retry may mend. Never the error's message, which
    may quote request data."""
    code = aws_error_code(error)
    endpoint, region = _endpoint(client), _region(client)
    if code in _NO_BUCKET:
        return (
            f"bucket {bucket} does not exist at {endpoint}. Check S3MEMORY_BUCKET (--bucket) and "
            "S3MEMORY_ENDPOINT_URL (--endpoint-url), or create the bucket."
        )
    if code in NOT_FOUND and "Key" not in (arguments or {}):  # a request on the bucket, not an object
        return (
            f"{endpoint} answered 404 Not Found for bucket {bucket}: it is not an S3 endpoint, or "
            "not one that serves this bucket. Check S3MEMORY_ENDPOINT_URL (--endpoint-url: the S3 "
            "endpoint itself) and S3MEMORY_BUCKET (--bucket)."
        )
    if code in _UNREACHABLE:
        return (
            f"{where(client, bucket)} could not be reached. Check S3MEMORY_ENDPOINT_URL (--endpoint-url), the "
            "network, and that the server is running."
        )
    if code in _NO_CREDENTIALS:
        return (
            "no AWS credentials were found. Set AWS_PROFILE (--profile), or AWS_ACCESS_KEY_ID and "
            "AWS_SECRET_ACCESS_KEY, or run with an IAM role."
        )
    if code in _BAD_CREDENTIALS:
        return (
            f"the AWS credentials ({_credentials_source(client)}) were refused at {endpoint}: they are "
            "wrong, expired or for another endpoint. Renew them, or choose others (AWS_PROFILE, --profile)."
        )
    if code in _OTHER_REGION:
        found = bucket_region(error)
        if found is None or found == region:
            return (
                f"bucket {bucket} is in another region than the client's ({region}). Set "
                "AWS_DEFAULT_REGION (--region) to the bucket's region."
            )
        return (
            f"bucket {bucket} is in region {found}, not in region {region}. Set AWS_DEFAULT_REGION "
            f"(--region) to {found}."
        )
    if code in _SKEWED_CLOCK:
        return (
            f"the clock of this machine differs from the clock of {endpoint} by more than 15 minutes. "
            "Set the system clock (NTP)."
        )
    if code in DENIED:
        return (
            f"the AWS credentials ({_credentials_source(client)}) may not {operation} in bucket "
            f"{bucket} at {endpoint}. Grant {denied_grant(operation, error, arguments)} to the role "
            "(docs/deploy.md, docs/real-s3.md), or choose other credentials (AWS_PROFILE, --profile)."
        )
    return None


def failure(
    operation: str,
    error: Exception,
    client: S3Client | None = None,
    bucket: str = "",
    arguments: Mapping[str, Any] | None = None,
) -> RequestFailed:
    """The refusal of a failed request: its operation and code and, where the error says what is
    misconfigured (``misconfigured``, with the ``client`` and ``bucket`` it was sent by), the cause and
    the setting that fixes it; ``AccessDenied`` where S3 refused it to this role."""
    code = aws_error_code(error)
    cause = None if client is None else misconfigured(client, bucket, error, operation, arguments)
    site = "" if client is None else described(client, bucket)
    # A request S3 refused did nothing; one that failed on the way may have been applied.
    done = (
        "Nothing was reported as done; try again."
        if code in _UNREACHABLE or cause is None
        else "Nothing was done."
    )
    kind = AccessDenied if code in DENIED else RequestFailed
    if cause is None:
        return kind(f"Error: S3 {operation} failed ({code}). {done}", code, where=site)
    return kind(f"Error: S3 {operation} failed ({code}): {cause} {done}", code, explained=True, where=site)
