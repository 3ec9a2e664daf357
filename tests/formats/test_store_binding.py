"""A bucket writer's copies on storage format 2, through ``S3Memory``: a file copied to another path,
another user, the same user under another prefix, or another store (bucket), is refused where it
lands; so is a wrapped store key or data key copied to another store or user. A replica read with
the source's store id reads everything (the identity is configured, not the bucket's name)."""

from __future__ import annotations

import uuid
import weakref
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from s3memory.core import files
from s3memory.core.files import WRITE_ATTEMPTS
from s3memory.core.keyvault import KEYS_PREFIX
from s3memory.core.paths import memory_path
from s3memory.crypto import KeyProvider, KMSKeyProvider, LocalKeyProvider
from s3memory.errors import IntegrityError, PreconditionFailed, StorageError
from s3memory.formats import store_keys
from s3memory.formats.store_keys import STORE_KEY_NAME
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, empty_bucket, stored_keys
from tests.support.roles import confined

BACKENDS = ("moto", SEAWEEDFS_SLOW)
REFUSED = (
    "Error: The stored object for /memories/a.md failed its integrity check (tampered, truncated, foreign, "
    "wrongly keyed or not encrypted); it was not read."
)


@pytest.fixture
def v2(make_memory: Callable[..., S3Memory]) -> Callable[..., S3Memory]:
    """``v2(user, **options)``: a format-2 memory in the test's bucket."""
    return lambda user="alice", **options: make_memory(user, storage_format=2, **options)


@pytest.fixture
def other_bucket(s3: Any) -> Iterator[str]:
    bucket = f"s3memory-other-{uuid.uuid4().hex[:12]}"
    s3.create_bucket(Bucket=bucket)
    yield bucket
    empty_bucket(s3, bucket)
    s3.delete_bucket(Bucket=bucket)


def key(memory: S3Memory, path: str = "/memories/a.md") -> str:
    return memory.placed.layout.file_key(memory_path(path))


def copy(s3: Any, source: str, target: str, *, source_bucket: str = BUCKET, bucket: str = BUCKET) -> None:
    """The bucket writer's copy: bytes and metadata as they are."""
    s3.copy_object(Bucket=bucket, Key=target, CopySource={"Bucket": source_bucket, "Key": source})


def view(memory: S3Memory, path: str = "/memories/a.md") -> str:
    try:
        return memory.run({"command": "view", "path": path})
    except IntegrityError as refused:
        return refused.message


def seed(memory: S3Memory, text: str) -> None:
    memory.create(memory_path("/memories/a.md"), text)
    memory.create(memory_path("/memories/b.md"), f"{text.strip()} too\n")


def test_a_file_copied_to_another_path_of_its_user_is_refused_there(
    v2: Callable[..., S3Memory], s3: Any
) -> None:
    alice = v2()
    seed(alice, "alpha\n")
    copy(s3, key(alice, "/memories/b.md"), key(alice))
    assert view(alice) == REFUSED
    assert view(alice, "/memories/b.md") == (
        "Here's the content of /memories/b.md with line numbers:\n     1\talpha too"
    )


def test_a_file_copied_to_another_users_key_is_refused_there(v2: Callable[..., S3Memory], s3: Any) -> None:
    alice, bob = v2("alice"), v2("bob")
    seed(alice, "alice's\n")
    seed(bob, "bob's\n")
    copy(s3, key(alice), key(bob))
    assert view(bob) == REFUSED
    assert view(alice) == "Here's the content of /memories/a.md with line numbers:\n     1\talice's"


def test_a_file_copied_to_the_same_user_under_another_prefix_is_refused_there(
    v2: Callable[..., S3Memory], s3: Any
) -> None:
    inner = v2(
        prefix="users/team/"
    )  # made first: made second, it would be refused (tests/storage/test_nesting.py)
    outer = v2(prefix="users/")
    seed(outer, "outer\n")
    seed(inner, "inner\n")
    copy(s3, key(outer), key(inner))
    copy(s3, key(inner, "/memories/b.md"), key(outer, "/memories/b.md"))
    assert view(inner) == REFUSED
    assert view(outer, "/memories/b.md") == REFUSED.replace("/memories/a.md", "/memories/b.md")
    assert view(inner, "/memories/b.md") == (
        "Here's the content of /memories/b.md with line numbers:\n     1\tinner too"
    )
    assert view(outer) == "Here's the content of /memories/a.md with line numbers:\n     1\touter"


def test_a_store_nested_in_a_users_namespace_is_never_listed_or_deleted_by_that_user(
    v2: Callable[..., S3Memory], s3: Any, new_client: Callable[..., Any], local_keys: KeyProvider
) -> None:
    outer = v2("alice")
    namespace = outer.placed.layout.namespace  # the deepest overlap: inside alice's own namespace, made by a
    inner = S3Memory(  # role that cannot list outside it (else refused: tests/storage/test_nesting.py)
        Bucket(confined(new_client(), namespace), BUCKET),
        "alice",
        local_keys,
        prefix=namespace,
        storage_format=2,
    )
    seed(outer, "outer\n")
    seed(inner, "inner\n")
    inner_keys = stored_keys(s3, inner.placed.layout.namespace)
    assert view(outer, "/memories") == (
        "Here're the files and directories up to 2 levels deep in /memories, excluding hidden items and "
        "node_modules:\n4.0K\t/memories\n6B\t/memories/a.md\n10B\t/memories/b.md"
    )
    assert outer.clear_all() == "All memory cleared"
    assert set(inner_keys) <= set(stored_keys(s3, inner.placed.layout.namespace))
    assert view(inner) == "Here's the content of /memories/a.md with line numbers:\n     1\tinner"


def test_a_file_copied_to_another_store_is_refused_there(
    v2: Callable[..., S3Memory], s3: Any, local_keys: KeyProvider, other_bucket: str
) -> None:
    here = v2()
    there = S3Memory(Bucket(s3, other_bucket), "alice", local_keys, storage_format=2)
    seed(here, "here\n")
    seed(there, "there\n")
    copy(s3, key(here), key(there), bucket=other_bucket)
    assert view(there) == REFUSED


def test_a_replica_reads_with_the_source_store_id_and_only_with_it(
    v2: Callable[..., S3Memory], s3: Any, local_keys: KeyProvider, other_bucket: str
) -> None:
    source = v2()
    seed(source, "replicated\n")
    for stored in stored_keys(s3):
        copy(s3, stored, stored, bucket=other_bucket)
    replica = S3Memory(Bucket(s3, other_bucket), "alice", local_keys, storage_format=2, store_id=BUCKET)
    assert view(replica) == "Here's the content of /memories/a.md with line numbers:\n     1\treplicated"
    with pytest.raises(IntegrityError):  # under its own bucket's name, the replica's store key is foreign
        S3Memory(Bucket(s3, other_bucket), "alice", local_keys, storage_format=2).resolve()


def test_a_store_key_copied_to_another_prefix_or_store_is_refused(
    v2: Callable[..., S3Memory], s3: Any, local_keys: KeyProvider, other_bucket: str
) -> None:
    v2()  # makes the store key at users/
    copy(s3, f"users/{STORE_KEY_NAME}", f"team/{STORE_KEY_NAME}")
    copy(s3, f"users/{STORE_KEY_NAME}", f"users/{STORE_KEY_NAME}", bucket=other_bucket)
    with pytest.raises(IntegrityError):
        v2(prefix="team/")
    with pytest.raises(IntegrityError):
        S3Memory(Bucket(s3, other_bucket), "alice", local_keys, storage_format=2).resolve()


def test_a_kms_wrapped_data_key_copied_to_another_user_is_refused(
    s3: Any, kms: Any, key_id: str, backend: str
) -> None:
    if backend != "moto":
        pytest.skip("moto's KMS: one backend is enough")
    provider = KMSKeyProvider(key_id, kms)
    alice = S3Memory(Bucket(s3, BUCKET), "alice", provider, storage_format=2)
    bob = S3Memory(Bucket(s3, BUCKET), "bob", provider, storage_format=2)
    seed(alice, "alice's\n")
    wrapped = f"{KEYS_PREFIX}v1"
    copy(s3, alice.placed.layout.key_of_internal(wrapped), bob.placed.layout.key_of_internal(wrapped))
    fresh = S3Memory(Bucket(s3, BUCKET), "bob", KMSKeyProvider(key_id, kms), storage_format=2)
    with pytest.raises(IntegrityError):  # KMS opens it only under alice's token: bob never uses her key
        fresh.create(memory_path("/memories/a.md"), "bob's\n")
    assert stored_keys(s3, bob.placed.layout.memories_prefix) == []
    copy(s3, f"users/{STORE_KEY_NAME}", f"team/{STORE_KEY_NAME}")
    with pytest.raises(IntegrityError):
        S3Memory(Bucket(s3, BUCKET), "alice", provider, prefix="team/", storage_format=2).resolve()


def test_a_lost_race_to_make_the_store_key_uses_the_winners(
    s3: Any, local_keys: KeyProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    bucket = Bucket(s3, BUCKET)
    identity = store_keys.store_identity(BUCKET, "users/")
    winner, wrapped = local_keys.new_store_key(identity)
    put = bucket.put

    def loses(key: str, body: bytes, **conditions: Any) -> str:
        put(key, wrapped, if_none_match=True)  # another process stores its key first
        return put(key, body, **conditions)

    monkeypatch.setattr(bucket, "put", loses)
    assert store_keys.store_key(bucket, "users/", identity, LocalKeyProvider(MASTER_KEY))[0] == winner


def test_a_store_key_that_keeps_vanishing_is_an_error_not_an_endless_retry(
    s3: Any, local_keys: KeyProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A bucket writer who deletes every store key as soon as it is written: a bounded number of
    tries, then a clear error."""
    bucket = Bucket(s3, BUCKET)
    monkeypatch.setattr(files, "backoff", lambda attempt: None)
    attempts = 0

    def refused(key: str, body: bytes, **conditions: Any) -> str:
        nonlocal attempts
        attempts += 1
        raise PreconditionFailed(key)

    monkeypatch.setattr(bucket, "put", refused)
    with pytest.raises(StorageError) as failed:
        store_keys.store_key(bucket, "users/", store_keys.store_identity(BUCKET, "users/"), local_keys)
    assert failed.value.message == (
        "Error: The store key could not be read or made: its write kept losing while none could be read. "
        "Nothing was changed. Try again."
    )
    assert attempts == WRITE_ATTEMPTS


def test_a_store_key_deleted_from_a_marked_store_is_refused_not_replaced(
    v2: Callable[..., S3Memory], s3: Any, local_keys: KeyProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A new key would hide every name written under the old one, and split the memory between
    processes that knew the old key and those that make a new one."""
    seed(v2(), "alpha\n")
    s3.delete_object(Bucket=BUCKET, Key=f"users/{STORE_KEY_NAME}")
    monkeypatch.setattr(store_keys, "_learned", weakref.WeakKeyDictionary())  # a new process
    with pytest.raises(IntegrityError) as refused:
        v2()
    assert refused.value.message == (
        "Error: The store key is missing from a store that has one: its names cannot be read without it. "
        "Restore users/s3memory.storage.bucket-key (an earlier version, or a backup); nothing was changed."
    )
    assert stored_keys(s3, f"users/{STORE_KEY_NAME}") == []
