"""Stores inside stores (``nesting.py``, docs/operations.md "Stores inside stores"): the operator
commands of a store whose prefix lies inside another store's refuse to run, none acts on a user
whose namespace holds another store, and erase removes a user's own folders only, so a store nested
deeper in the namespace survives it; each refusal changes nothing. A role that may not list an
enclosing prefix is not refused for what it cannot see."""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError, NestedStore
from s3memory.memory import S3Memory
from s3memory.ops.idle_expiry import DAY_SECONDS, expire
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.storage.nesting import check_not_nested, enclosing_prefixes
from s3memory.storage.server_checks import SERVER_RECORD_NAME
from tests.ops.test_operations import seed
from tests.support.bucket import BUCKET, MASTER_KEY, snapshot, stored_keys
from tests.support.console import run
from tests.support.formats import both_formats
from tests.support.roles import confined

PROBES_EACH_STORE = True
"""The probe runs for each test's store, as for a user's (``support/probe_once.py``): these tests are
of a store's first use."""

SERVER_RECORD = "s3memory.server"
"""A store's record of the server it was checked on: what a format-1 store keeps of its own below
its prefix, written at its first use."""


def operations(client: Any, prefix: str = "users/", storage_format: int = 1) -> Operations:
    return Operations(
        Bucket(client, BUCKET), LocalKeyProvider(MASTER_KEY), prefix=prefix, storage_format=storage_format
    )


def outer_store(s3: Any, storage_format: int) -> tuple[Operations, S3Memory]:
    """A store at ``users/`` with a user, alice, and the objects it keeps of its own; alice's memory."""
    outer = operations(s3, storage_format=storage_format)
    alice = seed(outer, "alice", {"/memories/a.md": "alice's\n"})
    if storage_format == 1:
        s3.put_object(Bucket=BUCKET, Key="users/" + SERVER_RECORD, Body=b"{}")
    return outer, alice


def refusals(acts: list[Callable[[], object]]) -> set[str]:
    """The refusal of each of ``acts``, which must all be refused."""
    messages: set[str] = set()
    for act in acts:
        with pytest.raises(CommandError) as refused:
            act()
        assert isinstance(refused.value, NestedStore)
        messages.add(refused.value.message)
    return messages


@both_formats
@pytest.mark.parametrize("inner_format", [1, 2], ids=["inner-1", "inner-2"])
def test_the_commands_of_a_store_inside_another_stores_prefix_refuse_and_change_nothing(
    s3: Any, storage_format: int, inner_format: int
) -> None:
    """Inside alice's namespace, a format-1 store would take her folders for users ``internal``
    and ``memories``, and erase them."""
    _outer, alice = outer_store(s3, storage_format)
    namespace = alice.placed.layout.namespace
    inner = operations(s3, namespace, inner_format)
    before = snapshot(s3)
    shown = "users/" + (SERVER_RECORD if storage_format == 1 else "s3memory.migrated")
    refusal = (
        f"Error: This store's prefix '{namespace}' lies inside 'users/', the prefix of another store "
        f"({shown} is there): each would list, read and erase the other's objects as its own users'. "
        "Give this store a prefix outside every other store's (S3MEMORY_PREFIX, --prefix), or a bucket "
        "of its own. Nothing was changed."
    )
    assert refusals(
        [
            lambda: list(inner.users()),
            lambda: inner.erase("memories"),
            lambda: inner.verify("memories"),
            lambda: inner.files("memories"),
            lambda: inner.memory("memories"),
        ]
    ) == {refusal}
    status, out, err = run(inner, "erase", "--user", "memories", "--yes")
    assert (status, out) == (1, "") and f"s3memory erase: {refusal}\n" in err
    assert snapshot(s3) == before


@both_formats
def test_no_command_acts_on_a_user_whose_namespace_holds_another_store(
    s3: Any, storage_format: int, new_client: Callable[..., Any], tmp_path: Path
) -> None:
    """A store made at alice's namespace (by a role that could not see the store around it) is
    not alice's: the outer store's commands on alice refuse, and it stays whole."""
    outer, alice = outer_store(s3, storage_format)
    namespace = alice.placed.layout.namespace
    client = confined(new_client(), namespace)
    inner = S3Memory(
        Bucket(client, BUCKET), "bob", LocalKeyProvider(MASTER_KEY), prefix=namespace, storage_format=2
    )
    inner.run({"command": "create", "path": "/memories/b.md", "file_text": "bob's\n"})
    before = snapshot(s3)
    shown = namespace + "s3memory.server"  # the first of the inner store's own objects
    refusal = (
        f"Error: Another store lies at '{namespace}', this user's namespace ({shown} is there): it is "
        "not the user's, and nothing was read, written or erased there. Move that store to a prefix "
        f"outside this one's (its S3MEMORY_PREFIX), or delete {shown} if no store of yours wrote it. "
        "Nothing was changed."
    )
    assert refusals(
        [
            lambda: outer.erase("alice"),
            lambda: outer.erase("alice", dry_run=True),
            lambda: outer.verify("alice"),
            lambda: outer.files("alice"),
            lambda: outer.export("alice", tmp_path),
            lambda: outer.read("alice", "/memories/a.md"),
            lambda: expire(outer, 1, ["alice"], now=time.time() + 2 * DAY_SECONDS),
            lambda: outer.memory("alice"),
        ]
    ) == {refusal}
    assert snapshot(s3) == before and list(tmp_path.iterdir()) == []
    assert inner.run({"command": "view", "path": "/memories/b.md"}).endswith("1\tbob's")


@both_formats
def test_erase_removes_the_users_folders_and_leaves_a_store_nested_deeper_alone(
    s3: Any, storage_format: int, new_client: Callable[..., Any]
) -> None:
    outer, alice = outer_store(s3, storage_format)
    deeper = alice.placed.layout.namespace + "team/"
    inner = S3Memory(
        Bucket(confined(new_client(), deeper), BUCKET),
        "bob",
        LocalKeyProvider(MASTER_KEY),
        prefix=deeper,
        storage_format=1,
    )
    inner.run({"command": "create", "path": "/memories/b.md", "file_text": "bob's\n"})
    inner_keys = stored_keys(s3, deeper)
    erasure = outer.erase("alice")
    assert (erasure.other_versions, erasure.left) == (2, 0)  # alice's file and access record
    assert stored_keys(s3, alice.placed.layout.namespace) == inner_keys
    assert inner.run({"command": "view", "path": "/memories/b.md"}).endswith("1\tbob's")


def test_a_role_that_may_not_list_an_enclosing_prefix_is_not_refused_for_what_it_cannot_see(
    s3: Any, new_client: Callable[..., Any]
) -> None:
    s3.put_object(Bucket=BUCKET, Key=SERVER_RECORD, Body=b"{}")  # a store at the bucket's root
    with pytest.raises(
        NestedStore, match=r"^Error: This store's prefix 'users/' lies inside the bucket's root"
    ):
        list(operations(s3).users())
    assert list(operations(confined(new_client(), "users/")).users()) == []


def test_only_objects_directly_at_an_enclosing_prefix_named_as_a_stores_are_a_store(s3: Any) -> None:
    """A user of the store around whose id begins ``s3memory.`` is no store object."""
    seed(operations(s3, ""), "s3memory.notes", {"/memories/a.md": "a\n"})
    s3.delete_object(Bucket=BUCKET, Key=SERVER_RECORD_NAME)  # the root store's own object: gone
    check_not_nested(Bucket(s3, BUCKET), "users/")


@pytest.mark.parametrize(
    ("prefix", "enclosing"),
    [("", []), ("users/", [""]), ("a/b/c/", ["", "a/", "a/b/"])],
)
def test_the_look_costs_one_listing_per_enclosing_prefix(s3: Any, prefix: str, enclosing: list[str]) -> None:
    counter = RequestCounter(s3)
    check_not_nested(Bucket(s3, BUCKET), prefix)
    assert enclosing_prefixes(prefix) == enclosing
    assert counter.calls == Counter({"ListObjectsV2": len(enclosing)} if enclosing else {})
