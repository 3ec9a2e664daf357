"""The object keys of the Lambda handlers' memories, in the suite's storage format: derived from the
memory the warm runtime serves a user (its layout), never spelled as format 1's plain keys."""

from __future__ import annotations

from collections.abc import Iterable

from s3memory.aws_lambda import runtime
from s3memory.core.last_used import ACCESS_NAME
from s3memory.memory import S3Memory

from ..conftest import keys_of, store_objects


def served(user_id: str) -> S3Memory:
    """The memory the runtime serves ``user_id`` (built as the handlers build it, kept warm).

    Call it only once the handlers have used the store: on format 2 a memory of a new store makes
    its store key and mark."""
    return runtime.get_runtime().memory(user_id)


def access_key(user_id: str) -> str:
    """The key of ``user_id``'s access record."""
    return served(user_id).placed.layout.key_of_internal(ACCESS_NAME)


def user_keys(user_id: str, paths: Iterable[str]) -> list[str]:
    """The keys of ``user_id``'s access record and files at ``paths``, sorted as a listing returns
    them."""
    return sorted([access_key(user_id), *keys_of(served(user_id), paths)])


def new_store_keys(user_id: str, paths: Iterable[str]) -> list[str]:
    """Every key of a new store once only ``user_id`` wrote the files at ``paths`` (none: only
    read) through the handlers: the store's own objects (``conftest.store_objects``), the user's
    access record and files, sorted as a listing returns them."""
    paths = list(paths)
    return sorted([*store_objects(written=bool(paths)), *user_keys(user_id, paths)])
