"""The storage format setting ``auto`` (the default, ``store_format.py``): format 2 for a new store or
one that has its store key, format 1 for a store of format-1 users; never format 1 for a store
that has lost its store key; found once per process, at no cost to a store of format 2."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.core import files
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import IntegrityError, PreconditionFailed
from s3memory.formats.choice import checked_format
from s3memory.formats.store_keys import MIGRATED_NAME, STORE_KEY_NAME, Missing, store_identity, store_key
from s3memory.formats.upgrade import BORN
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.settings import Settings, SettingsError
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import SERVER_RECORD_NAME
from s3memory.store import forget_stores
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY, SEAWEEDFS_SLOW, stored_keys
from tests.support.marks import mark_of
from tests.support.overlap import InFlightTogether

BACKENDS = ("moto", SEAWEEDFS_SLOW)
PROBES_EACH_STORE = True
"""The probe runs for each test's store, as for a user's (``support/probe_once.py``): these tests are
of a store's first use."""
USER = "jane.doe@example.com"
CREATE = {"command": "create", "path": "/memories/clients/acme.md", "file_text": "renewal in May\n"}
VIEW = {"command": "view", "path": "/memories/clients/acme.md"}
SETTINGS = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}
FIRST_USE = Counter(
    {
        "GetObject": 1,
        "ListObjectsV2": 1,
        "PutObject": 6,
        "CopyObject": 3,
        "HeadObject": 1,
        "DeleteObject": 1,
        "DeleteObjects": 2,
    }
)
"""What the first use of a store at ``users/`` costs on a server that enforces every condition: the
read of the missing server record, a look for another store at the bucket's root
(``nesting.check_not_nested``), the probe (12 requests: ``server_checks.probe``) and the record's
write: 15 requests."""


def memory(s3: Any, user: str = USER, **options: Any) -> S3Memory:
    """A memory of ``user`` with the library's default format (``auto``) unless ``options`` set one."""
    return S3Memory(Bucket(s3, BUCKET), user, LocalKeyProvider(MASTER_KEY), **options)


def named_in_keys(s3: Any) -> bool:
    """True if any key in the bucket names the user, a directory or a file."""
    return any(name in key for key in stored_keys(s3) for name in (USER, "clients", "acme"))


def test_a_new_store_is_served_in_format_2(s3: Any) -> None:
    fresh = memory(s3)
    fresh.run(CREATE)

    assert fresh.placed.format.storage_format == 2
    assert not named_in_keys(s3)
    assert "users/" + STORE_KEY_NAME in stored_keys(s3)


def test_a_store_of_format_1_users_stays_in_format_1(s3: Any) -> None:
    memory(s3, storage_format=1).run(CREATE)

    served = memory(s3, "bob")
    served.run({"command": "create", "path": "/memories/b.md", "file_text": "bob's\n"})

    assert served.placed.format.storage_format == 1
    assert "users/bob/memories/b.md" in stored_keys(s3)
    assert "users/" + STORE_KEY_NAME not in stored_keys(s3)
    assert (
        memory(s3).run(VIEW)
        == "Here's the content of /memories/clients/acme.md with line numbers:\n     1\trenewal in May"
    )


def test_a_store_with_a_store_key_is_served_in_format_2_beside_format_1_users(s3: Any) -> None:
    memory(s3, "bob", storage_format=1).run(CREATE)
    memory(s3, storage_format=2).run(CREATE)

    assert memory(s3, "carol").placed.format.storage_format == 2
    assert memory(s3, "bob").run(VIEW).endswith("     1\trenewal in May")  # moved on its first command
    assert not any(key.startswith("users/bob/memories/") for key in stored_keys(s3))


def test_a_store_that_lost_its_store_key_is_refused_not_served_in_format_1(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    first = memory(s3)
    first.run(CREATE)
    before = stored_keys(s3)
    s3.delete_object(Bucket=BUCKET, Key="users/" + STORE_KEY_NAME)
    forget_stores()  # a new process

    with pytest.raises(IntegrityError, match="The store key is missing from a store that has one"):
        memory(s3, "bob").run(VIEW)  # its first memory of the store
    assert stored_keys(s3) == [key for key in before if not key.endswith(STORE_KEY_NAME)]


def test_a_new_process_reads_the_store_key_and_the_mark_together(s3: Any) -> None:
    """The mark's key needs no store key: a new process's first command sends both reads at once
    (one round trip of its cold start), and the mark read that way still counts as the store's."""
    memory(s3, storage_format=2).run(CREATE)
    forget_stores()  # a new process

    fresh = memory(s3, storage_format=2)
    counter = RequestCounter(s3)
    with InFlightTogether(s3, 2, "GetObject") as together:
        answer = fresh.run(VIEW)

    assert together.met
    assert "renewal in May" in answer
    assert fresh.store.marked
    assert counter.calls["GetObject"] == 3  # the store key, the mark, then the file


def test_what_a_process_found_it_keeps(s3: Any) -> None:
    memory(s3, "bob", storage_format=1).run(CREATE)
    assert memory(s3).placed.format.storage_format == 1
    memory(s3, "carol", storage_format=2).run(CREATE)  # an operator's process, set to format 2

    assert memory(s3).placed.format.storage_format == 1


def test_auto_costs_a_store_of_format_2_no_request_more_than_format_2(s3: Any) -> None:
    first = memory(s3, storage_format=2)
    first.run(CREATE)
    counted: list[int] = []
    for setting in (2, "auto"):
        counter = RequestCounter(s3)
        provider = LocalKeyProvider(MASTER_KEY)  # a new process learns the store key anew
        assert (
            S3Memory(Bucket(s3, BUCKET), USER, provider, storage_format=setting).placed.format.storage_format
            == 2
        )
        counted.append(counter.total)

    assert counted[0] == counted[1] > 0


@pytest.mark.parametrize("setting", ["auto", 2])
def test_a_new_stores_first_memory_looks_once_then_makes_its_key_and_mark(s3: Any, setting: Any) -> None:
    """A read of the missing store key, a look for the missing mark and a listing (``auto``: a
    HEAD of the mark and a listing of anything below the prefix; ``2``: a GET of the mark sent
    with the key's, then a listing of the namespaces), the server's conditions found once for
    the store (``FIRST_USE``), then the store key and the mark written: what one look found
    missing is not looked for again."""
    counter = RequestCounter(s3)
    first = memory(s3, storage_format=setting)

    assert first.placed.format.storage_format == 2
    mark = {"HeadObject": 1} if setting == "auto" else {"GetObject": 1}
    looked = Counter({"GetObject": 1, "ListObjectsV2": 1, "PutObject": 2}) + Counter(mark)
    assert counter.calls == looked + FIRST_USE
    assert mark_of(s3) == BORN
    assert sorted(stored_keys(s3)) == sorted(
        ["users/" + MIGRATED_NAME, "users/" + STORE_KEY_NAME, "users/" + SERVER_RECORD_NAME]
    )


def test_a_store_key_made_by_another_process_since_the_look_is_the_one_used(s3: Any) -> None:
    """The look found the store new; another process stored its key before this one: this
    process's conditional write loses, and it reads and uses the other's key."""
    bucket, provider = Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY)
    identity = store_identity(BUCKET, "users/")
    winner, wrapped = provider.new_store_key(identity)
    bucket.put("users/" + STORE_KEY_NAME, wrapped, if_none_match=True)

    key, missing = store_key(
        bucket, "users/", identity, LocalKeyProvider(MASTER_KEY), Missing(True, True, True)
    )

    assert key == winner
    assert missing == Missing()  # the key was read: nothing is known missing
    assert stored_keys(s3) == ["users/" + STORE_KEY_NAME]


def test_a_store_key_made_and_marked_between_the_read_and_the_look_at_the_mark_is_used(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process makes the store key and marks the store after this one found no key, before
    it looks at the mark: the key is read again, not taken for lost (twelve racing first uses once
    refused one another so)."""
    bucket, provider = Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY)
    identity = store_identity(BUCKET, "users/")
    winner, wrapped = provider.new_store_key(identity)
    exists = bucket.exists

    def meanwhile(key: str) -> bool:
        if key == "users/" + MIGRATED_NAME and not exists(key):
            bucket.put("users/" + STORE_KEY_NAME, wrapped, if_none_match=True)
            bucket.put(key, BORN)
        return exists(key)

    monkeypatch.setattr(bucket, "exists", meanwhile)
    key, _missing = store_key(bucket, "users/", identity, LocalKeyProvider(MASTER_KEY))

    assert key == winner
    assert sorted(stored_keys(s3)) == ["users/" + MIGRATED_NAME, "users/" + STORE_KEY_NAME]


def test_a_store_key_made_while_auto_looks_makes_the_store_format_2(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process makes the store key of a new store after this one found none and before its
    listing: the listing finds that key, and the store is format 2 (not a store of format-1 users)."""
    bucket = Bucket(s3, BUCKET)
    provider = LocalKeyProvider(MASTER_KEY)
    _key, wrapped = provider.new_store_key(store_identity(BUCKET, "users/"))
    any_below = bucket.any_below

    def meanwhile(prefix: str) -> bool:
        bucket.put("users/" + STORE_KEY_NAME, wrapped, if_none_match=True)
        return any_below(prefix)

    monkeypatch.setattr(bucket, "any_below", meanwhile)
    served = S3Memory(bucket, USER, LocalKeyProvider(MASTER_KEY))

    assert served.placed.format.storage_format == 2
    assert served.placed.layout.namespace != f"users/{USER}/"


def test_a_store_key_that_vanished_after_its_write_lost_is_made_with_a_fresh_look(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The look found the store new, but the key's write lost and no key can be read after: the
    key is made on the next try, after a fresh look below the prefix, and the store is no longer
    taken for empty once something was written there meanwhile (its namespaces are listed before
    it is marked born in format 2)."""
    bucket = Bucket(s3, BUCKET)
    identity = store_identity(BUCKET, "users/")
    put, lost = bucket.put, []
    meanwhile = "users/bob/memories/b.md"

    def loses_once(key: str, body: bytes, **conditions: Any) -> str:
        if not lost:
            lost.append(key)
            put(meanwhile, b"a format-1 user's")
            raise PreconditionFailed(key)  # a key was there, and was deleted before the read
        return put(key, body, **conditions)

    monkeypatch.setattr(bucket, "put", loses_once)
    monkeypatch.setattr(files, "backoff", lambda attempt: None)
    _key, missing = store_key(
        bucket, "users/", identity, LocalKeyProvider(MASTER_KEY), Missing(True, True, True)
    )

    assert lost == ["users/" + STORE_KEY_NAME]
    assert missing == Missing(key=True, mark=True)
    assert stored_keys(s3) == [meanwhile, "users/" + STORE_KEY_NAME]


def test_operations_find_the_format_without_writing(s3: Any) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY))

    assert operations.storage_format == 2
    assert list(operations.users()) == []
    assert stored_keys(s3) == []


@pytest.mark.parametrize("value", [None, "auto", "AUTO", " auto "])
def test_the_setting_is_auto_by_default(value: str | None) -> None:
    environ = dict(SETTINGS)
    if value is not None:
        environ["S3MEMORY_STORAGE_FORMAT"] = value

    assert Settings.from_env(environ).storage_format == "auto"


def test_a_storage_format_setting_other_than_auto_1_or_2_is_refused() -> None:
    environ = {**SETTINGS, "S3MEMORY_STORAGE_FORMAT": "3"}

    with pytest.raises(SettingsError, match=r"^S3MEMORY_STORAGE_FORMAT must be one of auto, 1, 2$"):
        Settings.from_env(environ)


@pytest.mark.parametrize("value", [True, 3, 0, "2", 2.0, None])
def test_the_library_refuses_a_storage_format_other_than_1_2_or_auto(value: object) -> None:
    with pytest.raises(ValueError, match=r'^storage_format must be 1, 2 or "auto"$'):
        checked_format(value)
