"""The S3 edge: conditional get/put, paginated listing, batched deletes. No content rules live here.

Every S3 failure becomes a ``StorageError`` whose message names the operation and the S3 error
code, never object content. Conditional-write outcomes are exceptions of their own. Within
``watching``, every request that may have changed the bucket is noted (a network edge words a
failure by it: ``answers``).
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, NamedTuple

from botocore.exceptions import BotoCoreError, ClientError

from s3memory.errors import (
    ConditionalConflict,
    ObjectTooLarge,
    PreconditionFailed,
    StorageError,
    aws_error_code,
)
from s3memory.storage import diagnosis
from s3memory.storage.concurrency import holding, parallel
from s3memory.storage.conditions import (
    BATCH_DELETE_ETAGS,
    COPY_IF_NONE_MATCH,
    COPY_REPLACES_METADATA,
    COPY_SOURCE_IF_MATCH,
    DELETE_IF_MATCH,
    PUT_IF_MATCH,
    PUT_IF_NONE_MATCH,
    Gate,
    ServerRefused,
)
from s3memory.storage.diagnosis import NOT_FOUND

if TYPE_CHECKING:
    from mypy_boto3_s3 import S3Client

DELETE_BATCH = 1000
"""S3's limit of keys per DeleteObjects request."""

_PRECONDITION_FAILED = frozenset({"PreconditionFailed", "412"})
_CONFLICT = frozenset({"ConditionalRequestConflict", "409", "OperationAborted"})
_SNAKE_CASE = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


@dataclass(frozen=True)
class BatchDeleted:
    """What a conditional ``DeleteObjects`` left: keys kept because their ETag changed, and keys
    already gone before it (left empty when botocore had retried the request, since its own lost
    first attempt may have deleted them)."""

    changed: list[str] = field(default_factory=list)
    gone: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class StoredObject:
    body: bytes
    etag: str
    metadata: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class Head:
    """An object as a HEAD shows it: its ETag, size and user metadata."""

    etag: str
    size: int
    metadata: dict[str, str]


class Listed(NamedTuple):
    """An object as a listing shows it."""

    key: str
    size: int
    etag: str
    modified: str = ""
    """When it was last written, as S3 sends it (ISO 8601)."""


class Version(NamedTuple):
    """One stored version of a key (``null`` on a bucket without versioning), or a delete marker."""

    key: str
    version_id: str
    delete_marker: bool = False
    modified: str = ""
    """When it was written, as S3 sends it (ISO 8601)."""
    size: int = 0
    latest: bool = False


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


_CHANGES = frozenset({"PutObject", "CopyObject", "DeleteObject", "DeleteObjects"})
"""The operations that change a bucket (those s3memory sends)."""


class Changes:
    """What ``watching`` saw: ``maybe`` once a request that may have changed the bucket was sent."""

    def __init__(self) -> None:
        self.maybe = False


_watched: ContextVar[Changes | None] = ContextVar("s3memory_bucket_changes", default=None)


def watching() -> contextlib.AbstractContextManager[Changes]:
    """Note every request of this context (and of the workers it starts: ``concurrency``) that may
    have changed a bucket: a write that succeeded, or that failed otherwise than by S3 refusing it at
    its first attempt (a 4xx answer; a failure on the way, a 5xx or a retried request may have been
    applied)."""
    return holding(_watched, Changes())


def _refused_unapplied(error: ClientError) -> bool:
    """True if S3 refused the request at its first attempt: it changed nothing."""
    return not _retried(error) and 400 <= _status(error) < 500


class _Missing(Exception):
    """S3 has no object at the key. ``failure`` is the error to raise where that is a fault;
    ``after_retry`` as in ``PreconditionFailed``."""

    def __init__(self, failure: StorageError, *, after_retry: bool) -> None:
        super().__init__(failure.message)
        self.failure = failure
        self.after_retry = after_retry


class Bucket:
    """One bucket, as the memory core needs it. Every request goes through ``_call``; every
    conditional request first asks the ``gate`` whether the server enforces its condition."""

    def __init__(self, client: S3Client, bucket: str, *, page_size: int = 1000) -> None:
        self.client = client
        self.bucket = bucket
        self.page_size = page_size
        """Keys per listing page unless a call asks for fewer (S3 gives at most 1,000)."""
        self.gate: Gate | None = None
        """What the server is known to enforce (``conditions.Gate``), set by whoever serves a store
        in this bucket; None sends every condition as asked (the probe itself, and raw use)."""

    @property
    def where(self) -> str:
        """The bucket and the endpoint, as errors name them (never a key)."""
        return diagnosis.where(self.client, self.bucket)

    @property
    def described(self) -> str:
        """The bucket, the endpoint, the region and where the credentials came from, as the log names
        them (never a key)."""
        return diagnosis.described(self.client, self.bucket)

    def _sends(self, condition: str) -> bool:
        """True if ``condition`` goes to the server; False where the store looks first instead."""
        return self.gate is None or self.gate.sends(condition)

    def _looked_for(self, key: str, *, absent: bool = False, etag: str | None = None) -> None:
        """The single-writer mode's stand-in for a condition the server ignores: raise
        ``PreconditionFailed`` unless ``key`` is ``absent`` or, with ``etag``, has that ETag."""
        head = self.head(key)
        if (head is not None) if absent else (head is None or head.etag != etag):
            raise PreconditionFailed(key)

    def _if_match(self, arguments: dict[str, Any], condition: str, key: str, etag: str) -> None:
        """``IfMatch: etag`` on the request ``arguments`` where the server enforces ``condition``;
        elsewhere the single-writer mode's look instead (``_looked_for``)."""
        if self._sends(condition):
            arguments["IfMatch"] = etag
        else:
            self._looked_for(key, etag=etag)

    def _call(self, operation: str, **arguments: Any) -> Any:
        """Send one ``operation`` (``"GetObject"``...) on this bucket. A failure becomes
        ``PreconditionFailed`` (412; ``after_retry`` when botocore had retried), ``ConditionalConflict``
        (409), ``_Missing`` (no such object), ``AccessDenied`` (403), or else a ``StorageError``
        naming the operation and the S3 error code, never content."""
        if arguments.get("Key") == "":  # botocore does not check parameters (``clients.py``)
            raise StorageError(
                f"Error: S3 {operation} was not sent: its object key is empty. Nothing was done."
            )
        method = getattr(self.client, _SNAKE_CASE.sub("_", operation).lower())
        changes = _watched.get() if operation in _CHANGES else None
        try:
            response = method(Bucket=self.bucket, **arguments)
        except ClientError as error:
            if changes is not None and not _refused_unapplied(error):
                changes.maybe = True
            code, key = aws_error_code(error), str(arguments.get("Key", ""))
            if code in _PRECONDITION_FAILED or _status(error) == 412:
                raise PreconditionFailed(key, after_retry=_retried(error)) from None
            if code in _CONFLICT or _status(error) == 409:
                raise ConditionalConflict(key) from None
            if code in NOT_FOUND and "Key" in arguments:
                raise _Missing(diagnosis.failure(operation, error), after_retry=_retried(error)) from None
            raise diagnosis.failure(operation, error, self.client, self.bucket, arguments) from None
        except BotoCoreError as error:
            if changes is not None:
                changes.maybe = True
            raise diagnosis.failure(operation, error, self.client, self.bucket, arguments) from None
        if changes is not None:
            changes.maybe = True
        return response

    def get(self, key: str, *, max_bytes: int, version_id: str | None = None) -> StoredObject | None:
        """The object's bytes and ETag (of ``version_id`` if given), or None if there is none.

        An object over ``max_bytes`` is refused unread, so a hostile bucket cannot exhaust memory.
        """
        try:
            extra = {} if version_id is None else {"VersionId": version_id}
            response = self._call("GetObject", Key=key, **extra)
        except _Missing:
            return None
        if int(response.get("ContentLength", 0)) > max_bytes:
            response["Body"].close()
            raise ObjectTooLarge(
                f"Error: The stored object is larger than {max_bytes:,} bytes, more than s3memory writes; "
                "it was not read."
            )
        try:
            body = response["Body"].read()
        except BotoCoreError as error:
            raise diagnosis.failure("GetObject", error, self.client, self.bucket) from None
        return StoredObject(body, response["ETag"], dict(response.get("Metadata", {})))

    def exists(self, key: str) -> bool:
        try:
            self._call("HeadObject", Key=key)
        except _Missing:
            return False
        return True

    def head(self, key: str, version_id: str | None = None) -> Head | None:
        """The object's ETag, size and user metadata (of ``version_id`` if given), or None if there
        is none; its bytes are not read."""
        try:
            extra = {} if version_id is None else {"VersionId": version_id}
            response = self._call("HeadObject", Key=key, **extra)
        except _Missing:
            return None
        return Head(
            str(response["ETag"]), int(response.get("ContentLength", 0)), dict(response.get("Metadata", {}))
        )

    def metadata(self, key: str, version_id: str | None = None) -> dict[str, str] | None:
        """The user metadata of the object (of ``version_id`` if given), or None if there is none."""
        head = self.head(key, version_id)
        return None if head is None else head.metadata

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
        arguments: dict[str, Any] = {"Key": key, "Body": body}
        if metadata:
            arguments["Metadata"] = metadata
        if if_none_match:
            if self._sends(PUT_IF_NONE_MATCH):
                arguments["IfNoneMatch"] = "*"
            else:
                self._looked_for(key, absent=True)
        if if_match is not None:
            self._if_match(arguments, PUT_IF_MATCH, key, if_match)
        try:
            return str(self._call("PutObject", **arguments)["ETag"])
        except _Missing as missing:  # IfMatch on a key that is gone (moto answers 404)
            if if_match is None:
                raise missing.failure from None
            raise PreconditionFailed(key, after_retry=missing.after_retry) from None

    def delete(self, key: str, *, if_match: str | None = None) -> None:
        """Delete ``key``; with ``if_match``, raise PreconditionFailed if the object has changed or
        is gone (a retry of a delete whose answer was lost may find it so: see ``after_retry``)."""
        arguments: dict[str, Any] = {"Key": key}
        if if_match is not None:
            self._if_match(arguments, DELETE_IF_MATCH, key, if_match)
        try:
            self._call("DeleteObject", **arguments)
        except _Missing as missing:
            if if_match is not None:
                raise PreconditionFailed(key, after_retry=missing.after_retry) from None

    def copy(self, source: str, target: str) -> bool:
        """Copy the object at ``source`` to ``target`` within the bucket (the bytes stay on the
        server); False if there is no object at ``source``."""
        try:
            self._call("CopyObject", Key=target, CopySource={"Bucket": self.bucket, "Key": source})
        except _Missing:
            return False
        return True

    def copy_new(self, source: str, target: str, *, source_etag: str, metadata: dict[str, str]) -> str | None:
        """Copy ``source`` to ``target`` on the server with ``metadata`` in place of the source's, only
        if ``source`` still has ``source_etag`` and nothing is at ``target``; returns the new object's
        ETag (quoted, as a HEAD shows it), or None if there is no object at ``source``.

        Raises PreconditionFailed if ``target`` exists or ``source`` has changed (``after_retry`` as
        for ``put``), ConditionalConflict on a 409; ``ServerRefused`` where the server is not known
        to enforce the copy's conditions (storage format 2 is never served there).
        """
        for condition in (COPY_IF_NONE_MATCH, COPY_SOURCE_IF_MATCH, COPY_REPLACES_METADATA):
            if not self._sends(condition):
                raise ServerRefused(
                    f"Error: The S3 server of {self.where} does not enforce {condition}; nothing was copied."
                )
        try:
            response = self._call(
                "CopyObject",
                Key=target,
                CopySource={"Bucket": self.bucket, "Key": source},
                CopySourceIfMatch=source_etag,
                IfNoneMatch="*",
                MetadataDirective="REPLACE",
                Metadata=metadata,
            )
        except _Missing:
            return None
        etag = str(response["CopyObjectResult"]["ETag"])
        return etag if etag.startswith('"') else f'"{etag}"'  # SeaweedFS leaves it unquoted

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
        arguments: dict[str, Any] = {"Prefix": prefix, "MaxKeys": max_keys or self.page_size}
        if delimiter:
            arguments["Delimiter"] = "/"
        if start_after is not None:
            arguments["StartAfter"] = start_after
        while True:
            response = self._call("ListObjectsV2", **arguments)
            token = response.get("NextContinuationToken")
            more = bool(response.get("IsTruncated")) and bool(token)
            yield ListingPage(
                [
                    Listed(
                        item["Key"],
                        int(item["Size"]),
                        str(item.get("ETag", "")),
                        str(item.get("LastModified", "")),
                    )
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

    def versions(self, prefix: str, *, max_keys: int | None = None) -> Iterator[list[Version]]:
        """ListObjectVersions pages below ``prefix`` (of ``max_keys`` each, if given): every version
        and delete marker (on a bucket without versioning, each object once, as version ``null``)."""
        arguments: dict[str, Any] = {"Prefix": prefix, "MaxKeys": max_keys or self.page_size}
        while True:
            response = self._call("ListObjectVersions", **arguments)
            yield [
                Version(
                    str(item["Key"]),
                    str(item.get("VersionId") or "null"),
                    marker,
                    str(item.get("LastModified", "")),
                    int(item.get("Size", 0)),
                    bool(item.get("IsLatest")),
                )
                for marker, field in ((False, "Versions"), (True, "DeleteMarkers"))
                for item in response.get(field, [])
            ]
            if not response.get("IsTruncated") or not response.get("NextKeyMarker"):
                return
            arguments["KeyMarker"] = response["NextKeyMarker"]
            if response.get("NextVersionIdMarker"):
                arguments["VersionIdMarker"] = response["NextVersionIdMarker"]
            else:
                arguments.pop("VersionIdMarker", None)

    def versioning(self) -> str | None:
        """The bucket's versioning status (``Enabled``, ``Suspended``), or None if it was never on."""
        status = self._call("GetBucketVersioning").get("Status")
        return str(status) if status else None

    def delete_versions(self, versions: Sequence[Version]) -> None:
        """Remove up to 1,000 object versions (or delete markers) for good, in one request."""
        if len(versions) > DELETE_BATCH:
            raise ValueError(f"at most {DELETE_BATCH} keys per DeleteObjects request")
        if not versions:
            return
        objects: list[Any] = [{"Key": version.key, "VersionId": version.version_id} for version in versions]
        response = self._call("DeleteObjects", Delete={"Objects": objects, "Quiet": True})
        failed = [item for item in response.get("Errors", []) if item.get("Code") not in NOT_FOUND]
        if failed:
            codes = sorted({str(item.get("Code", "Unknown")) for item in failed})
            raise StorageError(
                f"Error: S3 DeleteObjects could not remove {len(failed)} of {len(versions)} object versions "
                f"({', '.join(codes)}); run the command again."
            )

    def delete_batch(self, items: Sequence[tuple[str, str | None]]) -> BatchDeleted:
        """Delete up to 1,000 keys in one request, each only if its ETag still matches when one is given.

        Any per-key error but a changed ETag or a key already gone fails loudly.
        """
        if not items:
            return BatchDeleted()
        if len(items) > DELETE_BATCH:
            raise ValueError(f"at most {DELETE_BATCH} keys per DeleteObjects request")
        if any(etag is not None for _key, etag in items) and not self._sends(BATCH_DELETE_ETAGS):
            return self._delete_each(items)
        objects: list[Any] = [
            {"Key": key} if etag is None else {"Key": key, "ETag": etag} for key, etag in items
        ]
        response = self._call("DeleteObjects", Delete={"Objects": objects, "Quiet": True})
        errors = response.get("Errors", [])
        failed = [item for item in errors if item.get("Code") not in _PRECONDITION_FAILED | NOT_FOUND]
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
            else [str(item.get("Key")) for item in errors if item.get("Code") in NOT_FOUND],
        )

    def _delete_each(self, items: Sequence[tuple[str, str | None]]) -> BatchDeleted:
        """``delete_batch`` on a server that ignores per-key ETags in ``DeleteObjects``: the keys
        with an ETag by one conditional ``DeleteObject`` each, in parallel; the others in a batch."""
        plain = [(key, None) for key, etag in items if etag is None]
        left = self.delete_batch(plain) if plain else BatchDeleted()

        def delete(item: tuple[str, str | None]) -> None:
            key, etag = item
            try:
                self.delete(key, if_match=etag)
            except PreconditionFailed as failed:
                if self.exists(key):
                    left.changed.append(key)
                elif not failed.after_retry:
                    left.gone.append(key)

        parallel(delete, [item for item in items if item[1] is not None])
        return left
