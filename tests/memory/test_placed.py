"""One memory placed in its store (``placed.PlacedMemory``): built once, by ``place``, from a store,
an owner, ``MemoryLimits`` and an author; ``by`` gives the same memory written by another author over
what the process learned of it; ``S3Memory`` holds one and hands it to the operators' tasks."""

from __future__ import annotations

from typing import Any

import pytest

from s3memory.core.guard import ContentGuard
from s3memory.core.paths import UserId
from s3memory.core.quota import Quota
from s3memory.crypto import LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.placed import MemoryLimits, place
from s3memory.storage.bucket import Bucket
from s3memory.store import Store
from tests.support.bucket import BUCKET


def test_by_writes_as_the_author_over_the_same_hints_usage_and_access_record(
    s3: Any, local_keys: LocalKeyProvider
) -> None:
    store = Store(Bucket(s3, BUCKET), local_keys, storage_format=2)
    placed = place(store, UserId("alice"), MemoryLimits(), None)
    ada = placed.by("ada")
    assert (ada.files.author, placed.files.author) == ("ada", None)
    assert ada.files.directories is placed.files.directories and ada.usage is placed.usage
    assert ada.access is placed.access and ada.upgrade is placed.upgrade
    assert (ada.store, ada.owner, ada.limits, ada.format, ada.layout, ada.key_owner) == (
        placed.store,
        placed.owner,
        placed.limits,
        placed.format,
        placed.layout,
        placed.key_owner,
    )
    assert ada.browser is not placed.browser and ada.jobs is not placed.jobs


def test_a_memory_places_itself_once_with_its_limits_and_its_twins_share_it(
    s3: Any, local_keys: LocalKeyProvider
) -> None:
    quota, guard = Quota(max_files=3), ContentGuard(mode="redact")
    memory = S3Memory(
        Bucket(s3, BUCKET), "alice", local_keys, max_file_bytes=64, content_guard=guard, quota=quota
    )
    assert memory.limits == MemoryLimits(max_file_bytes=64, content_guard=guard, quota=quota)
    placed = memory.placed
    assert memory.placed is placed and placed.limits is memory.limits
    assert placed.files.max_file_bytes == 64 and placed.usage.quota is quota
    twin = memory.acting_as("ada")
    assert twin.placed.files.author == "ada" and twin.placed.usage is placed.usage


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"max_file_bytes": True}, "max_file_bytes must be a positive integer"),
        ({"content_guard": "refuse"}, "content_guard must be a ContentGuard or None"),
        ({"quota": 10}, "quota must be a Quota or None"),
        ({"clock": 0.0}, "clock must be a function that returns seconds since the epoch"),
    ],
)
def test_limits_refuse_a_value_not_of_its_kind_naming_the_option(
    options: dict[str, Any], message: str
) -> None:
    with pytest.raises(ValueError) as refused:
        MemoryLimits(**options)
    assert str(refused.value) == message
