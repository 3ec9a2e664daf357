"""The shared wording of AWS error codes and unforeseen failures."""

from __future__ import annotations

from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from s3memory.errors import StorageError, aws_error_code, unexpected_failure
from s3memory.storage.bucket import Bucket


def test_an_aws_error_is_named_by_its_code_never_its_message() -> None:
    refused = ClientError({"Error": {"Code": "AccessDenied", "Message": "secret detail"}}, "GetObject")
    assert aws_error_code(refused) == "AccessDenied"
    assert aws_error_code(ClientError({}, "GetObject")) == "Unknown"
    assert aws_error_code(EndpointConnectionError(endpoint_url="http://x")) == "EndpointConnectionError"


def test_an_unforeseen_failure_names_its_class_and_its_subject() -> None:
    error = RuntimeError("secret detail")
    assert unexpected_failure(error) == (
        "Error: s3memory failed unexpectedly (RuntimeError); the command may not have run."
    )
    assert unexpected_failure(error, "s3memory's agent", consequence="") == (
        "Error: s3memory's agent failed unexpectedly (RuntimeError)."
    )


def test_an_empty_object_key_is_refused_before_any_request() -> None:
    """botocore does not check parameters for s3memory's clients: an empty key (a request on the
    bucket itself, a DeleteObject that would be a DeleteBucket) is refused before it is sent."""

    class NoClient:
        def __getattr__(self, name: str) -> Any:
            raise AssertionError(f"a request was sent: {name}")

    bucket = Bucket(NoClient(), "bucket")  # type: ignore[arg-type]
    with pytest.raises(StorageError) as refused:
        bucket.delete("")
    assert refused.value.message == (
        "Error: S3 DeleteObject was not sent: its object key is empty. Nothing was done."
    )
