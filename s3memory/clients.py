"""Building AWS clients: the one place where client settings (retries, timeouts) are chosen."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from mypy_boto3_kms import KMSClient
    from mypy_boto3_s3 import S3Client

RETRY_ATTEMPTS = 5


def _config() -> object:
    from botocore.config import Config

    return Config(
        retries={"mode": "standard", "total_max_attempts": RETRY_ATTEMPTS},
        connect_timeout=5,
        read_timeout=20,
        max_pool_connections=32,
    )


def make_s3_client(*, endpoint_url: str | None = None, region_name: str | None = None) -> S3Client:
    """An S3 client with botocore's standard retry mode (throttling and 5xx retried with backoff)."""
    import boto3

    return boto3.session.Session().client(
        "s3", endpoint_url=endpoint_url, region_name=region_name, config=_config()
    )


def make_kms_client(*, endpoint_url: str | None = None, region_name: str | None = None) -> KMSClient:
    """A KMS client with the same retry settings as the S3 client."""
    import boto3

    return boto3.session.Session().client(
        "kms", endpoint_url=endpoint_url, region_name=region_name, config=_config()
    )
