"""Each rule once (issue 22): a Lambda request's user id is checked once, where the request comes in
(``events``), and the ``UserId`` it makes is taken as it is by the runtime, the memory and the
store's placement; and one path leads from settings to a store (``assembly.make_store``), for the
Lambda runtime, the console's operations and ``Operations.from_settings``."""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from s3memory import S3MemoryTool, assembly
from s3memory.aws_lambda import memory_handler, runtime
from s3memory.aws_lambda.agent.event import Invalid, parse_event
from s3memory.cli.console import settings_from
from s3memory.core import paths
from s3memory.core.paths import UserId, validate_namespace
from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.settings import Settings
from s3memory.storage import nesting
from s3memory.store import Store
from tests.support.bucket import BUCKET, STORE_ENVIRON, stored_keys
from tests.support.issuer import http_event, loopback_issuer

VIEW = {"command": "view", "path": "/memories"}
RESERVED = (
    "user_id must not begin with 's3memory.', which names the store's own objects; choose another user id"
)
CREATE = {"command": "create", "path": "/memories/a.txt", "file_text": "hello\n"}


@pytest.fixture(autouse=True)
def clean_runtime() -> Iterator[None]:
    runtime.reset()
    yield
    runtime.reset()


def answers(monkeypatch: pytest.MonkeyPatch, owner: object, name: str) -> list[Any]:
    """What ``owner.name`` answers from now on, each call's answer in order."""
    answered: list[Any] = []
    original: Callable[..., Any] = getattr(owner, name)

    def spy(*args: Any, **kwargs: Any) -> Any:
        answered.append(original(*args, **kwargs))
        return answered[-1]

    monkeypatch.setattr(owner, name, spy)
    return answered


@pytest.fixture
def checks(monkeypatch: pytest.MonkeyPatch) -> list[object]:
    """The user ids ``check_user_id`` passed, in order."""
    return answers(monkeypatch, paths, "check_user_id")


@pytest.fixture
def made(monkeypatch: pytest.MonkeyPatch) -> list[Store]:
    """Every store ``assembly.make_store`` makes, in order."""
    return answers(monkeypatch, assembly, "Store")


# -- the user id --------------------------------------------------------------------------------


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


def test_the_agent_functions_event_checks_its_user_id_once(checks: list[object]) -> None:
    request = parse_event({"user_id": "alice", "prompt": "hi"})
    assert isinstance(request.user_id, UserId) and request.user_id == "alice"
    assert checks == ["alice"]
    with pytest.raises(Invalid) as refused:
        parse_event({"user_id": "..", "prompt": "hi"})
    assert refused.value.message == (
        "Error: `user_id` is not a usable user id: user_id must not contain '/', '\\' or control "
        "characters, nor be '.' or '..'."
    )


@pytest.mark.parametrize(
    ("user_id", "refusal"),
    [
        (5, "user_id must be a non-empty string"),
        ("", "user_id must be a non-empty string"),
        ("..", "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'"),
        ("a/b", "user_id must not contain '/', '\\' or control characters, nor be '.' or '..'"),
        ("é" * 129, "user_id must be at most 256 bytes of UTF-8"),
        ("s3memory.probe-notes", RESERVED),
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


def test_every_edge_refuses_a_reserved_user_id_and_only_an_operator_names_one(
    local_env: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Issue 37, S2: user ids beginning with ``s3memory.`` (the names of a store's own objects) are
    reserved in every format. The library, the Lambda function's direct events and its tokens'
    subjects refuse one, naming the cause and the fix and writing nothing; the operator commands
    (``owner_of``) name one, so that a memory made under it before can be moved
    (``test_operations.py::test_a_memory_under_a_user_id_now_reserved_is_moved_by_the_operator``)."""
    monkeypatch.setenv("S3MEMORY_DIRECT_INVOCATION", "allow")
    with pytest.raises(ValueError) as refused:
        S3MemoryTool(bucket=BUCKET, user_id="s3memory.notes", key_provider=LocalKeyProvider(b"k" * 32))
    assert str(refused.value) == RESERVED
    direct = memory_handler({"user_id": "s3memory.notes", "input": CREATE}, None)
    assert direct == {"content": f"Error: `user_id` is not a usable user id: {RESERVED}.", "is_error": True}
    with loopback_issuer() as issuer:
        for name, value in issuer.environ().items():
            monkeypatch.setenv(name, value)
        answer = memory_handler(http_event({"input": CREATE}, token=issuer.token("s3memory.notes")), None)
    assert (answer["statusCode"], json.loads(answer["body"])) == (
        403,
        {"content": f"Error: The token's subject is not a usable user id: {RESERVED}.", "is_error": True},
    )
    assert stored_keys(local_env) == []
    assert paths.RESERVED_USER_PREFIX == nesting.STORE_OBJECTS  # the names of a store's own objects
    owner = paths.owner_of("s3memory.notes")
    assert isinstance(owner, UserId) and owner == "s3memory.notes" and owner.reserved


# -- one path from settings to a store -----------------------------------------------------------


def described(store: Store) -> tuple[object, ...]:
    return (
        store.bucket.bucket,
        store.prefix,
        store.setting,
        store.store_id,
        store.weak_server,
        store.identity,
    )


def test_the_store_a_setting_names(s3: Any) -> None:
    provider = LocalKeyProvider(b"k" * 32)
    store = assembly.make_store(Settings.from_env(STORE_ENVIRON), s3, provider)
    assert store.key_provider is provider and store.bucket.client is s3
    assert described(store)[:5] == (BUCKET, "tenants/acme/", 2, "replica-source", "single-writer")


def test_the_lambda_runtime_and_operations_take_the_settings_store(s3: Any, made: list[Store]) -> None:
    served = runtime.get_runtime(STORE_ENVIRON)
    assert made == [served.store]
    operations = Operations.from_settings(served.settings, s3, key_provider=served.key_provider)
    assert made[1:] == [operations.store]
    assert described(operations.store) == described(served.store)
    assert (operations.prefix, operations.store_id, operations.weak_server) == (
        "tenants/acme/",
        "replica-source",
        "single-writer",
    )
    assert operations.store_identity == served.store.identity


def test_the_consoles_flags_override_the_environment_on_the_same_path(s3: Any, made: list[Store]) -> None:
    arguments = argparse.Namespace(prefix="other/", store_id=None, bucket=None)
    settings = settings_from(arguments, STORE_ENVIRON)
    assert (settings.prefix, settings.store_id) == ("other/", "replica-source")
    assert described(Operations.from_settings(settings, s3).store)[1:4] == (
        "other/",
        2,
        "replica-source",
    )
    assert len(made) == 1
