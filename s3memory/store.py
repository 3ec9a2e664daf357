"""The S3 edge: conditional get/put, paginated listing, batched deletes. No content rules live here.

Every S3 failure becomes a ``StorageError`` whose message names the operation and the S3 error
code, never object content. Conditional-write outcomes are exceptions of their own.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from .errors import StorageError, aws_error_code

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DELETE_BATCH = 1000
"""S3's limit of keys per DeleteObjects request."""

_NOT_FOUND = frozenset({"NoSuchKey", "404", "NotFound"})
_PRECONDITION_FAILED = frozenset({"PreconditionFailed", "412"})
_CONFLICT = frozenset({"ConditionalRequestConflict", "409", "OperationAborted"})


class PreconditionFailed(Exception):
    """A conditional write lost: the object exists (IfNoneMatch) or changed (IfMatch).

    ``after_retry``: botocore had retried the request (its first answer was lost), so the winning
    write may have been this one.
    """

    def __init__(self, key: str, *, after_retry: bool = False) -> None:
        super().__init__(key)
        self.after_retry = after_retry


class ObjectTooLarge(StorageError):
    """An object larger than s3memory writes there; it was not read."""


@dataclass(frozen=True)
class BatchDeleted:
    """What a conditional ``DeleteObjects`` left: keys kept because their ETag changed, and keys
    already gone before it (left empty when botocore had retried the request, since its own lost
    first attempt may have deleted them)."""

    changed: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)


class ConditionalConflict(Exception):
    """S3 answered 409 to a conditional write racing another one; retry."""


@dataclass(frozen=True)
class StoredObject:
    body: bytes
    etag: str
    metadata: dict[str, str] = field(default_factory=dict)


class Listed(NamedTuple):
    """An object as a listing shows it."""

    key: str
    size: int
    etag: str


@dataclass
class ListingPage:
    """One ListObjectsV2 answer: objects, common prefixes, and whether more pages follow."""

    objects: list[Listed] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    truncated: bool = False


def _retried(error: ClientError) -> bool:
    """True if botocore had retried the request that failed: its first answer may have been lost."""
    return int(error.response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0


def _status(error: ClientError) -> int:
    return int(error.response.get("ResponseMetadata", {}).get("HTTPStatusCode", 0))


def _failure(operation: str, error: Exception) -> StorageError:
    return StorageError(
        f"Error: S3 {operation} failed ({aws_error_code(error)}). Nothing was reported as done; try again."
    )


class S3Store:
    """One bucket, as the memory core needs it."""

    def __init__(self, client: S3Client, bucket: str, *, page_size: int = 1000) -> None:
        self.client = client
        self.bucket = bucket
        self.page_size = page_size
        """Keys per listing page unless a call asks for fewer (S3 gives at most 1,000)."""

    def get(self, key: str, *, max_bytes: int) -> StoredObject | None:
        """The object's bytes and ETag, or None if there is no such object.

        An object over ``max_bytes`` is refused unread, so a hostile bucket cannot exhaust memory.
        """
        try:
            response = self.client.get_object(Bucket=self.bucket, Key=key)
            if int(response.get("ContentLength", 0)) > max_bytes:
                response["Body"].close()
                raise ObjectTooLarge(
                    f"Error: The stored object is larger than {max_bytes:,} bytes, more than s3memory writes; "
                    "it was not read."
                )
            body = response["Body"].read()
        except ClientError as error:
            if aws_error_code(error) in _NOT_FOUND:
                return None
            raise _failure("GetObject", error) from None
        except BotoCoreError as error:
            raise _failure("GetObject", error) from None
        return StoredObject(body, response["ETag"], dict(response.get("Metadata", {})))

    def exists(self, key: str) -> bool:
        try:
            self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if aws_error_code(error) in _NOT_FOUND or _status(error) == 404:
                return False
            raise _failure("HeadObject", error) from None
        except BotoCoreError as error:
            raise _failure("HeadObject", error) from None
        return True

    def put(
        self,
        key: str,
        body: bytes,
        *,
        if_none_match: bool = False,
        if_match: str | None = None,
        metadata: dict[str, str] | None = None,
    ) -> str:
        """Write ``body``; with a condition, raise PreconditionFailed or ConditionalConflict on losing."""
        arguments: dict[str, Any] = {"Bucket": self.bucket, "Key": key, "Body": body}
        if metadata:
            arguments["Metadata"] = metadata
        if if_none_match:
            arguments["IfNoneMatch"] = "*"
        if if_match is not None:
            arguments["IfMatch"] = if_match
        try:
            return str(self.client.put_object(**arguments)["ETag"])
        except ClientError as error:
            code = aws_error_code(error)
            retried = _retried(error)
            if code in _PRECONDITION_FAILED or _status(error) == 412:
                raise PreconditionFailed(key, after_retry=retried) from None
            if code in _CONFLICT or _status(error) == 409:
                raise ConditionalConflict(key) from None
            if if_match is not None and code in _NOT_FOUND:
                raise PreconditionFailed(key, after_retry=retried) from None
            raise _failure("PutObject", error) from None
        except BotoCoreError as error:
            raise _failure("PutObject", error) from None

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        """Delete ``key``; with ``if_match``, raise PreconditionFailed if the object has changed (or,
        on some servers, is gone: a retry of a delete whose answer was lost finds it so)."""
        arguments: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if if_match is not None:
            arguments["IfMatch"] = if_match
        try:
            self.client.delete_object(**arguments)
        except ClientError as error:
            if aws_error_code(error) in _PRECONDITION_FAILED or _status(error) == 412:
                raise PreconditionFailed(key, after_retry=_retried(error)) from None
            raise _failure("DeleteObject", error) from None
        except BotoCoreError as error:
            raise _failure("DeleteObject", error) from None

    def tag(self, key: str, tags: dict[str, str]) -> bool:
        """Set ``key``'s tags (its bytes and ETag stay as they are); False if there is no such object."""
        tag_set: list[Any] = [{"Key": name, "Value": value} for name, value in tags.items()]
        try:
            self.client.put_object_tagging(Bucket=self.bucket, Key=key, Tagging={"TagSet": tag_set})
        except ClientError as error:
            if aws_error_code(error) in _NOT_FOUND or _status(error) == 404:
                return False
            raise _failure("PutObjectTagging", error) from None
        except BotoCoreError as error:
            raise _failure("PutObjectTagging", error) from None
        return True

    def tags(self, key: str) -> dict[str, str]:
        """``key``'s tags (none if there is no such object)."""
        try:
            response = self.client.get_object_tagging(Bucket=self.bucket, Key=key)
        except ClientError as error:
            if aws_error_code(error) in _NOT_FOUND or _status(error) == 404:
                return {}
            raise _failure("GetObjectTagging", error) from None
        except BotoCoreError as error:
            raise _failure("GetObjectTagging", error) from None
        return {str(tag["Key"]): str(tag["Value"]) for tag in response.get("TagSet", [])}

    def copy(self, source: str, target: str) -> bool:
        """Copy the object at ``source`` to ``target`` within the bucket (the bytes stay on the
        server); False if there is no object at ``source``."""
        try:
            self.client.copy_object(
                Bucket=self.bucket, Key=target, CopySource={"Bucket": self.bucket, "Key": source}
            )
        except ClientError as error:
            if aws_error_code(error) in _NOT_FOUND or _status(error) == 404:
                return False
            raise _failure("CopyObject", error) from None
        except BotoCoreError as error:
            raise _failure("CopyObject", error) from None
        return True

    def pages(
        self,
        prefix: str,
        *,
        delimiter: bool = False,
        max_keys: int | None = None,
        start_after: str | None = None,
    ) -> Iterator[ListingPage]:
        """ListObjectsV2 pages below ``prefix`` (after ``start_after``, if given); with ``delimiter``,
        one level (common prefixes)."""
        arguments: dict[str, Any] = {
            "Bucket": self.bucket,
            "Prefix": prefix,
            "MaxKeys": max_keys or self.page_size,
        }
        if delimiter:
            arguments["Delimiter"] = "/"
        if start_after is not None:
            arguments["StartAfter"] = start_after
        while True:
            try:
                response = self.client.list_objects_v2(**arguments)
            except (ClientError, BotoCoreError) as error:
                raise _failure("ListObjectsV2", error) from None
            token = response.get("NextContinuationToken")
            more = bool(response.get("IsTruncated")) and bool(token)
            yield ListingPage(
                [
                    Listed(item["Key"], int(item["Size"]), str(item.get("ETag", "")))
                    for item in response.get("Contents", [])
                ],
                [item["Prefix"] for item in response.get("CommonPrefixes", [])],
                more,
            )
            if not more:
                return
            arguments["ContinuationToken"] = token

    def any_below(self, prefix: str) -> bool:
        """True if at least one object lies below ``prefix`` (one request)."""
        page = next(self.pages(prefix, max_keys=1))
        return bool(page.objects)

    def delete_batch(self, items: Sequence[tuple[str, str | None]]) -> BatchDeleted:
        """Delete up to 1,000 keys in one request, each only if its ETag still matches when one is given.

        Any per-key error but a changed ETag or a key already gone fails loudly.
        """
        if not items:
            return BatchDeleted()
        if len(items) > DELETE_BATCH:
            raise ValueError(f"at most {DELETE_BATCH} keys per DeleteObjects request")
        objects: list[Any] = [
            {"Key": key} if etag is None else {"Key": key, "ETag": etag} for key, etag in items
        ]
        try:
            response = self.client.delete_objects(
                Bucket=self.bucket, Delete={"Objects": objects, "Quiet": True}
            )
        except (ClientError, BotoCoreError) as error:
            raise _failure("DeleteObjects", error) from None
        errors = response.get("Errors", [])
        failed = [item for item in errors if item.get("Code") not in _PRECONDITION_FAILED | _NOT_FOUND]
        if failed:
            codes = sorted({str(item.get("Code", "Unknown")) for item in failed})
            raise StorageError(
                f"Error: S3 DeleteObjects could not delete {len(failed)} of {len(items)} objects "
                f"({', '.join(codes)}). Nothing was reported as done; try again."
            )
        retried = int(response.get("ResponseMetadata", {}).get("RetryAttempts", 0)) > 0
        return BatchDeleted(
            changed=[str(item.get("Key")) for item in errors if item.get("Code") in _PRECONDITION_FAILED],
            gone=[]
            if retried
            else [str(item.get("Key")) for item in errors if item.get("Code") in _NOT_FOUND],
        )
