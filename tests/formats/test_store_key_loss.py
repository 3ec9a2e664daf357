"""A store that lost its store key (``formats/store_keys.py``, ``docs/format-v2.md`` "The store
key"): a new key is made only for a store that holds no user of format 2, whether the format is
pinned to 2 or found by ``auto`` (issue 37, S1); and a user is an object below a namespace, not a
folder, which SeaweedFS keeps and lists once every object in it is deleted (S5)."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from bench.metrics import RequestCounter
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import IntegrityError
from s3memory.formats.names import namespace_shaped
from s3memory.formats.store_keys import EMPTY_NAMESPACE_LOOKS, MIGRATED_NAME, STORE_KEY_NAME
from s3memory.formats.upgrade import BORN, SETTLED
from s3memory.memory import S3Memory
from s3memory.ops.migrate import migrate_store
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import SERVER_RECORD_NAME
from s3memory.store import forget_stores
from tests.formats.test_store_format import FIRST_USE
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, stored_keys
from tests.support.marks import mark_of

BACKENDS = ("moto", SEAWEEDFS_SLOW)
PROBES_EACH_STORE = True
"""The probe runs for each test's store, as for a user's (``support/probe_once.py``): these tests are
of a store's first use."""
KEY = "users/" + STORE_KEY_NAME
MARK = "users/" + MIGRATED_NAME
FILES = {"/memories/notes.md": "renewal in May\n", "/memories/clients/acme.md": "call Ann\n"}
REFUSED = (
    "Error: The store key is missing from a store that holds users of storage format 2: their names "
    "cannot be read without it, and format 1 would not see them. Restore users/s3memory.storage.bucket-key "
    "(an earlier version, or a backup); nothing was changed. A store of format 1 whose user ids look "
    "like format-2 names is served with S3MEMORY_STORAGE_FORMAT=1."
)
"""What a store that lost its key and mark is refused with, under ``auto`` and pinned to 2 alike."""
SETTINGS: tuple[Any, ...] = ("auto", 2)


def memory(s3: Any, user: str = "alice", **options: Any) -> S3Memory:
    """A memory as a new process makes it: what this process learned of stores is forgotten, and a
    new key provider has learned no store key."""
    forget_stores()
    return S3Memory(Bucket(s3, BUCKET), user, LocalKeyProvider(MASTER_KEY), **options)


def write(target: S3Memory, files: dict[str, str] = FILES) -> None:
    for path, text in files.items():
        target.run({"command": "create", "path": path, "file_text": text})


def read(target: S3Memory, path: str) -> str:
    return target.run({"command": "view", "path": path})


def served(text: str) -> str:
    """The last line of a view of a one-line file: its text, numbered."""
    return text.splitlines()[-1]


def emptied_folders(s3: Any, names: list[str]) -> None:
    """Folders with nothing in them at ``users/<name>/``: an object put and deleted (SeaweedFS
    keeps the folder and lists it; S3 and moto list nothing there)."""
    for name in names:
        s3.put_object(Bucket=BUCKET, Key=f"users/{name}/internal/access", Body=b"gone")
        s3.delete_object(Bucket=BUCKET, Key=f"users/{name}/internal/access")


def shaped(index: int) -> str:
    """A name of format 2's namespace shape (``names.namespace_shaped``), the ``index``-th."""
    name = f"{index:04d}".translate(str.maketrans("0123456789", "abcdefghij")) + "a" * 48
    assert namespace_shaped(name)
    return name


# S1: a pinned format refuses what ``auto`` refuses


def test_a_pinned_store_that_lost_its_key_and_mark_is_refused_as_auto_and_the_old_key_serves_again(
    s3: Any,
) -> None:
    """A bucket writer deletes the store key and the mark of a store pinned to format 2. The next
    process, pinned or ``auto``, refuses with the same words and writes nothing (no new store key:
    that would show an empty memory and hide what was there). The old key put back serves the
    files, and the store is marked again."""
    write(memory(s3, storage_format=2))
    old_key = s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()
    for lost in (KEY, MARK):
        s3.delete_object(Bucket=BUCKET, Key=lost)
    before = stored_keys(s3)

    for setting in SETTINGS:
        with pytest.raises(IntegrityError) as refused:
            read(memory(s3, storage_format=setting), "/memories/notes.md")
        assert refused.value.message == REFUSED
        assert stored_keys(s3) == before

    s3.put_object(Bucket=BUCKET, Key=KEY, Body=old_key)
    for setting in SETTINGS:
        assert (
            served(read(memory(s3, storage_format=setting), "/memories/notes.md")) == "     1\trenewal in May"
        )
    assert mark_of(s3) == SETTLED


def test_a_pinned_store_that_lost_only_its_key_is_refused_while_its_users_remain(s3: Any) -> None:
    """The mark says a key was made; with users of format 2 below the prefix, the next process
    refuses, pinned or ``auto``, and makes no key."""
    write(memory(s3, storage_format=2))
    s3.delete_object(Bucket=BUCKET, Key=KEY)
    before = stored_keys(s3)

    for setting in SETTINGS:
        with pytest.raises(IntegrityError) as refused:
            memory(s3, "bob", storage_format=setting).resolve()
        assert refused.value.message == (
            "Error: The store key is missing from a store that has one: its names cannot be read without it. "
            "Restore users/s3memory.storage.bucket-key (an earlier version, or a backup); nothing was changed."
        )
        assert stored_keys(s3) == before


def test_a_store_key_made_by_another_process_while_the_store_is_looked_at_is_used(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Another process makes the key and writes its user after this one found no key: the objects
    it lists then are that user's, and the key read again before refusing is the one used."""
    first = memory(s3, storage_format=2)
    write(first)
    wrapped = s3.get_object(Bucket=BUCKET, Key=KEY)["Body"].read()
    for lost in (KEY, MARK):
        s3.delete_object(Bucket=BUCKET, Key=lost)
    late = memory(s3, "bob", storage_format=2)
    pages = late.store.bucket.pages

    def meanwhile(prefix: str, **options: Any) -> Any:
        if options.get("max_keys") == 1 and not stored_keys(s3, KEY):  # the look below a namespace
            s3.put_object(Bucket=BUCKET, Key=KEY, Body=wrapped)
        return pages(prefix, **options)

    monkeypatch.setattr(late.store.bucket, "pages", meanwhile)
    late.resolve()
    assert late.store.stored_key() == first.store.stored_key()


def test_a_new_store_pinned_to_format_2_makes_its_key_after_one_listing(s3: Any) -> None:
    """The reads of the missing key and mark, one listing that finds nothing below the prefix, then
    the key and the mark (born in format 2) written, besides the server's first check
    (``FIRST_USE``): what it cost before a key was made only where no user is."""
    counter = RequestCounter(s3)
    memory(s3, storage_format=2).resolve()

    assert counter.calls == Counter({"GetObject": 2, "ListObjectsV2": 1, "PutObject": 2}) + FIRST_USE
    assert mark_of(s3) == BORN
    assert sorted(stored_keys(s3)) == [MARK, "users/" + SERVER_RECORD_NAME, KEY]


def test_a_format_1_store_pinned_to_format_2_is_still_migrated(s3: Any) -> None:
    """``s3memory migrate`` starts on a store of format-1 users with format 2 pinned: it has no store
    key yet, and none of its users is of format 2, so its key is made."""
    write(memory(s3, storage_format=1))
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)

    report = migrate_store(operations)

    assert report.complete
    assert list(operations.users()) == ["alice"]
    assert served(read(memory(s3, storage_format=2), "/memories/notes.md")) == "     1\trenewal in May"
    assert mark_of(s3) == SETTLED


# S5: a user is an object below a namespace, not a listed folder


@pytest.mark.parametrize("setting", SETTINGS)
@pytest.mark.parametrize("lost", [(KEY,), (KEY, MARK)], ids=["key", "key-and-mark"])
def test_a_store_whose_users_were_all_erased_and_whose_key_is_gone_is_used_again(
    s3: Any, setting: Any, lost: tuple[str, ...]
) -> None:
    """Every user erased (SeaweedFS keeps their empty folders and lists them), then the store key
    (and the mark) deleted: nothing of format 2 is left to lose, so a new key is made, the store
    serves, and it is marked born again."""
    for user in ("alice", "bob"):
        write(memory(s3, user, storage_format=2))
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    for user in ("alice", "bob"):
        assert operations.erase(user).left == 0
    for name in lost:
        s3.delete_object(Bucket=BUCKET, Key=name)

    again = memory(s3, "carol", storage_format=setting)
    write(again, {"/memories/a.md": "again\n"})

    assert again.placed.format.storage_format == 2
    assert served(read(memory(s3, "carol", storage_format=setting), "/memories/a.md")) == "     1\tagain"
    assert mark_of(s3) == BORN


def test_a_pile_of_empty_folders_costs_a_few_requests_and_hides_no_user(s3: Any, backend: str) -> None:
    """A store with no key or mark, below which a pile of empty folders of format 2's shape lies
    (SeaweedFS lists them): an object below the last of them is found in three listings, and the
    store refused; without it, one listing finds the store new, however many folders."""
    if backend != "seaweedfs":
        pytest.skip("only SeaweedFS lists empty folders")
    names = [shaped(index) for index in range(60)]
    emptied_folders(s3, names)
    s3.put_object(Bucket=BUCKET, Key=f"users/{names[-1]}/internal/keys/v1", Body=b"a user's")
    s3.put_object(Bucket=BUCKET, Key="users/" + SERVER_RECORD_NAME, Body=b"a store's own object")

    counter = RequestCounter(s3)
    with pytest.raises(IntegrityError) as refused:
        memory(s3, storage_format=2).resolve()
    assert refused.value.message == REFUSED
    # anything below the prefix, the namespaces, one look from the first: an object of the last
    assert counter.calls["ListObjectsV2"] == 3

    s3.delete_object(Bucket=BUCKET, Key=f"users/{names[-1]}/internal/keys/v1")
    counter.reset()
    memory(s3, storage_format=2).resolve()
    # anything below the prefix, which finds nothing but the store's own object (a new store), and
    # the look for a store enclosing this one that the server's check (the record does not open) makes
    assert counter.calls["ListObjectsV2"] == 2
    assert mark_of(s3) == BORN


def test_empty_folders_between_other_objects_are_looked_at_a_bounded_number_of_times(
    s3: Any, backend: str
) -> None:
    """Empty folders of format 2's shape planted each before another object (a stray): each takes
    a listing of its own, so past a bound the store is taken to hold a user of format 2 (refused,
    as an object planted below one would have it)."""
    if backend != "seaweedfs":
        pytest.skip("only SeaweedFS lists empty folders")
    names = [shaped(index) for index in range(EMPTY_NAMESPACE_LOOKS + 1)]
    emptied_folders(s3, names)
    for name in names:
        s3.put_object(Bucket=BUCKET, Key=f"users/{name}-stray", Body=b"planted")

    counter = RequestCounter(s3)
    with pytest.raises(IntegrityError) as refused:
        memory(s3, storage_format=2).resolve()
    assert refused.value.message == REFUSED
    # anything below the prefix, then per look the namespaces from the last object and a key
    assert counter.calls["ListObjectsV2"] == 1 + 2 * EMPTY_NAMESPACE_LOOKS
    assert not stored_keys(s3, KEY)
