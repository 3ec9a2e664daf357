"""The one retry helper for conditional writes that lose to another writer (``files.retried``)."""

from __future__ import annotations

import pytest

from s3memory.core import files
from s3memory.core.files import LOST, WRITE_ATTEMPTS, Lost, retried
from s3memory.errors import StorageError


@pytest.fixture
def backoffs(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    slept: list[int] = []
    monkeypatch.setattr(files, "backoff", slept.append)
    return slept


def test_an_answer_ends_the_retries_after_a_backoff_for_each_loss(backoffs: list[int]) -> None:
    tried: list[int] = []

    def attempt(number: int) -> str | Lost | None:
        tried.append(number)
        return LOST if number < 2 else None

    assert retried(attempt, files.conflicting_writes) is None
    assert tried == [0, 1, 2]
    assert backoffs == [0, 1]


def test_every_attempt_lost_raises_the_callers_error_once_the_attempts_are_spent(backoffs: list[int]) -> None:
    tried: list[int] = []

    def attempt(number: int) -> int | Lost:
        tried.append(number)
        return LOST

    with pytest.raises(StorageError) as raised:
        retried(attempt, files.conflicting_writes)
    assert raised.value.message == (
        "Error: S3 kept reporting conflicting writes at this path; nothing was changed. Try again."
    )
    assert tried == list(range(WRITE_ATTEMPTS))
    assert backoffs == list(range(WRITE_ATTEMPTS))


def test_an_error_of_an_attempt_is_not_retried(backoffs: list[int]) -> None:
    def attempt(number: int) -> int | Lost:
        raise ValueError(f"attempt {number}")

    with pytest.raises(ValueError, match=r"^attempt 0$"):
        retried(attempt, files.conflicting_writes)
    assert backoffs == []
