"""The shared wording of AWS error codes and unforeseen failures."""

from __future__ import annotations

from botocore.exceptions import ClientError, EndpointConnectionError

from s3memory.errors import aws_error_code, unexpected_failure


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
