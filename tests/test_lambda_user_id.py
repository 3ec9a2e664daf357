"""A Lambda request's user id is checked once, where the request comes in (``events``): the
``UserId`` it makes is taken as it is by the runtime, the memory and the store's placement."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from s3memory import paths
from s3memory.aws_lambda import memory_handler, runtime
from s3memory.paths import UserId, validate_namespace

from .support.issuer import http_event, loopback_issuer

VIEW = {"command": "view", "path": "/memories"}
CREATE = {"command": "create", "path": "/memories/a.txt", "file_text": "hello\n"}


@pytest.fixture(autouse=True)
def clean_runtime() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The user ids ``check_user_id`` is asked about, in order."""
    checked: list[object] = []
    check = paths.check_user_id

    def spy(user_id: object) -> str:
        checked.append(user_id)
        return check(user_id)

    monkeypatch.setattr(paths, "check_user_id", spy)
    return checked


def test_a_direct_request_checks_its_user_id_once_cold_and_warm(
    local_env: Any, monkeypatch: pytest.MonkeyPatch, checks: list[object]
) -> None:
    monkeypatch.setenv("S3MEMORY_DIRECT_INVOCATION", "allow")
    created = memory_handler({"user_id": "alice", "input": CREATE}, None)
    assert created == {"content": "File created successfully at: /memories/a.txt", "is_error": False}
    assert checks == ["alice"]  # a cold container: the store resolved, the memory built and placed
    checks.clear()
    assert memory_handler({"user_id": "alice", "input": VIEW, "actor": "agent-1"}, None)["is_error"] is False
    assert checks == ["alice"]


def test_an_http_request_checks_its_tokens_subject_once(
    local_env: Any, monkeypatch: pytest.MonkeyPatch, checks: list[object]
) -> None:
    with loopback_issuer() as issuer:
        for name, value in issuer.environ().items():
            monkeypatch.setenv(name, value)
        answer = memory_handler(http_event({"input": CREATE}, token=issuer.token()), None)
    assert json.loads(answer["body"]) == {
        "content": "File created successfully at: /memories/a.txt",
        "is_error": False,
    }
    assert checks == ["alice"]


@pytest.mark.parametrize(
    ("user_id", "refusal"),
    [
        (5, "user_id must be a non-empty string"),
        ("", "user_id must be a non-empty string"),
        ("..", "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'"),
        ("a/b", "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'"),
        ("é" * 129, "user_id must be at most 256 bytes of UTF-8"),
    ],
)
def test_a_user_id_is_refused_when_made_and_by_a_namespace_as_before(user_id: object, refusal: str) -> None:
    with pytest.raises(ValueError) as made:
        UserId(user_id)
    assert str(made.value) == refusal
    with pytest.raises(ValueError) as placed:
        validate_namespace(user_id, "users/")
    assert str(placed.value) == refusal


def test_a_user_id_made_once_is_not_checked_again(checks: list[object]) -> None:
    user = UserId("alice")
    assert UserId(user) is user
    assert validate_namespace(user, "users/") == "users/alice/"
    assert checks == ["alice"]
    assert validate_namespace("bob", "users/") == "users/bob/"  # a plain string is checked
    assert checks == ["alice", "bob"]
