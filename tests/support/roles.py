"""Clients as roles of narrower permissions than the tests' own."""

from __future__ import annotations

from typing import Any

from botocore.exceptions import ClientError


def confined(client: Any, prefix: str) -> Any:
    """``client`` as a role whose permissions stop at ``prefix``: S3 denies it any listing outside."""

    def deny(params: dict[str, Any], **_: Any) -> None:
        if not str(params.get("Prefix", "")).startswith(prefix):
            raise ClientError(
                {"Error": {"Code": "AccessDenied", "Message": "Access Denied"}, "ResponseMetadata": {}},
                "ListObjectsV2",
            )

    client.meta.events.register("provide-client-params.s3.ListObjectsV2", deny)
    return client
