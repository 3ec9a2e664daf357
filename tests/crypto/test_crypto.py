"""Encryption: the object format, refusals of anything we did not seal, KMS envelope keys."""

from __future__ import annotations

import base64
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from bench.metrics import RequestCounter
from s3memory.core.keyvault import KeyVault
from s3memory.core.paths import memory_path
from s3memory.crypto import (
    HEADER_BYTES,
    HEADER_METADATA,
    MAGIC,
    OVERHEAD,
    PLACE_METADATA,
    KeyOwner,
    KeyProvider,
    KMSKeyProvider,
    LocalKeyProvider,
    ObjectCipher,
    plaintext_size,
    sealed_version,
)
from s3memory.errors import CommandError, IntegrityError
from s3memory.memory import S3Memory
from tests.conftest import STORAGE_FORMAT, format_1_only, key_of, store_objects
from tests.support.bucket import BUCKET, MASTER_KEY, snapshot, stored_keys
from tests.support.ciphers import local_cipher

pytestmark = [pytest.mark.takes_format]

COLD_STORE_KEY = 0 if STORAGE_FORMAT == 1 else 1
"""On format 2 a process with a new key provider first reads and unwraps the store key (one
GetObject, one KMS Decrypt: ``store_keys.py``) to name the user."""

SECRET = "my passport number is X1234567"


def cipher(
    user: str = "alice", master: bytes = MASTER_KEY, provider: KeyProvider | None = None
) -> ObjectCipher:
    return local_cipher(provider or LocalKeyProvider(master), KeyOwner(user))


@given(st.binary(max_size=4096))
def test_seal_then_open_round_trips_with_fixed_overhead(plaintext: bytes) -> None:
    sealed = cipher().seal("/memories/a.txt", plaintext)
    assert len(sealed) == len(plaintext) + OVERHEAD
    assert plaintext_size(len(sealed)) == len(plaintext)
    assert sealed.startswith(MAGIC + b"\x01\x00\x00\x00\x01")
    assert cipher().open("/memories/a.txt", sealed) == plaintext


def test_every_object_gets_fresh_salt_and_nonce() -> None:
    first = cipher().seal("/memories/a.txt", b"same")
    second = cipher().seal("/memories/a.txt", b"same")
    assert first[:5] == second[:5]
    assert first[9:HEADER_BYTES] != second[9:HEADER_BYTES]


@pytest.mark.parametrize(
    "forge",
    [
        pytest.param(lambda blob: blob[:-1], id="truncated"),
        pytest.param(lambda blob: blob[: HEADER_BYTES - 1], id="header only"),
        pytest.param(lambda blob: b"", id="empty"),
        pytest.param(lambda blob: b"plain text that was never encrypted" * 4, id="unencrypted"),
        pytest.param(lambda blob: blob[:4] + b"\x02" + blob[5:], id="unknown format"),
        pytest.param(lambda blob: blob[:5] + b"\x00\x00\x00\x07" + blob[9:], id="unknown key version"),
        pytest.param(lambda blob: blob[:20] + bytes([blob[20] ^ 1]) + blob[21:], id="salt"),
        pytest.param(lambda blob: blob[:50] + bytes([blob[50] ^ 1]) + blob[51:], id="commitment"),
        pytest.param(lambda blob: blob[:-20] + bytes([blob[-20] ^ 1]) + blob[-19:], id="ciphertext"),
        pytest.param(lambda blob: blob[:-1] + bytes([blob[-1] ^ 1]), id="tag"),
    ],
)
def test_anything_we_did_not_seal_is_refused(forge: Callable[[bytes], bytes]) -> None:
    sealed = cipher().seal("/memories/a.txt", SECRET.encode())
    with pytest.raises(
        IntegrityError, match=r"^Error: The stored object for /memories/a.txt .*it was not read\.$"
    ):
        cipher().open("/memories/a.txt", forge(sealed))


def test_a_ciphertext_is_bound_to_its_user_path_and_key() -> None:
    sealed = cipher().seal("/memories/a.txt", SECRET.encode())
    for other in (
        lambda: cipher().open("/memories/b.txt", sealed),
        lambda: cipher(user="bob").open("/memories/a.txt", sealed),
        lambda: cipher(master=bytes(32)).open("/memories/a.txt", sealed),
    ):
        with pytest.raises(IntegrityError):
            other()


@pytest.mark.parametrize("bad", [b"short", b"x" * 33, "k" * 32, None])
def test_local_key_provider_needs_exactly_32_bytes(bad: Any) -> None:
    with pytest.raises(ValueError, match="exactly 32 bytes"):
        LocalKeyProvider(bad)


@pytest.mark.parametrize(
    ("options", "message"),
    [
        ({"version": 0}, "LocalKeyProvider's version must be a key version: a whole number from 1 to "),
        ({"version": True}, "LocalKeyProvider's version must be a key version"),
        ({"version": 1_000_000_000}, "LocalKeyProvider's version must be a key version"),
        ({"previous": [MASTER_KEY]}, "LocalKeyProvider's previous must map key versions to master keys"),
        (
            {"previous": {"1": bytes(32)}},
            "each of LocalKeyProvider's previous versions must be a key version",
        ),
        ({"previous": {1: bytes(32)}}, "LocalKeyProvider's previous holds version 1, the current version"),
        ({"version": 2, "previous": {1: b"short"}}, "previous master key of version 1 must be exactly 32"),
        ({"version": 2, "previous": {1: MASTER_KEY}}, "needs a different master key for each version"),
    ],
)
def test_local_key_versions_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        LocalKeyProvider(MASTER_KEY, **options)


def test_providers_never_show_key_material() -> None:
    provider = LocalKeyProvider(MASTER_KEY, version=3, previous={1: bytes(32), 2: bytes(range(1, 33))})
    assert MASTER_KEY.hex() not in repr(provider) and bytes(32).hex() not in repr(provider)
    assert repr(provider) == "LocalKeyProvider(master_key=<redacted>, version=3, previous_versions=[1, 2])"


def test_a_local_rotation_seals_with_the_new_key_and_opens_with_the_old() -> None:
    new_master = bytes(range(50, 82))
    old = cipher()
    new = cipher(provider=LocalKeyProvider(new_master, version=2, previous={1: MASTER_KEY}))
    before = old.seal("/memories/a.txt", SECRET.encode())
    after = new.seal("/memories/a.txt", SECRET.encode())
    assert (sealed_version(before), sealed_version(after)) == (1, 2)
    assert new.open("/memories/a.txt", before) == new.open("/memories/a.txt", after) == SECRET.encode()
    alone = cipher(provider=LocalKeyProvider(new_master, version=2))
    with pytest.raises(IntegrityError, match="names data key version 1, which this user does not have"):
        alone.open("/memories/a.txt", before)
    assert sealed_version(b"S3ME") is None and sealed_version(b"XXXX" + after[4:]) is None


@pytest.mark.parametrize("seconds", [-1, 301, float("nan"), True, "60"])
def test_the_kms_key_cache_lasts_at_most_the_rotation_wait(seconds: Any) -> None:
    with pytest.raises(ValueError, match="cache_seconds must be from 0 to 300: a key rotation waits"):
        KMSKeyProvider("alias/k", cache_seconds=seconds)


def test_stored_objects_hold_no_plaintext_anywhere(memory: S3Memory, s3: Any) -> None:
    memory.create(memory_path("/memories/secret.txt"), SECRET)
    key = key_of(memory, "/memories/secret.txt")
    assert stored_keys(s3) == sorted([*store_objects(), key])
    body = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    assert SECRET.encode() not in body
    assert b"passport" not in body
    metadata = s3.head_object(Bucket=BUCKET, Key=key)["Metadata"]
    if STORAGE_FORMAT == 1:
        assert metadata == {}
    else:  # the content's header and its place record (docs/format-v2.md)
        assert sorted(metadata) == sorted([HEADER_METADATA, PLACE_METADATA])
        assert not any("passport" in value or "secret" in value for value in metadata.values())
    assert s3.get_object_tagging(Bucket=BUCKET, Key=key)["TagSet"] == []


def test_a_file_copied_to_another_path_or_user_is_refused(
    make_memory: Callable[..., S3Memory], s3: Any
) -> None:
    alice = make_memory("alice")
    bob = make_memory("bob")
    alice.create(memory_path("/memories/a.txt"), SECRET)
    source = {"Bucket": BUCKET, "Key": key_of(alice, "/memories/a.txt")}
    s3.copy_object(CopySource=source, Bucket=BUCKET, Key=key_of(alice, "/memories/b.txt"))
    s3.copy_object(CopySource=source, Bucket=BUCKET, Key=key_of(bob, "/memories/a.txt"))
    for memory, path in ((alice, "/memories/b.txt"), (bob, "/memories/a.txt")):
        with pytest.raises(IntegrityError) as caught:
            memory.run({"command": "view", "path": path})
        assert SECRET not in caught.value.message
        before = snapshot(s3)
        with pytest.raises(IntegrityError):
            memory.run({"command": "str_replace", "path": path, "old_str": "passport", "new_str": "x"})
        assert snapshot(s3) == before


def test_tenants_are_isolated(make_memory: Callable[..., S3Memory]) -> None:
    alice = make_memory("alice")
    bob = make_memory("bob")
    alice.create(memory_path("/memories/a.txt"), SECRET)
    with pytest.raises(CommandError, match="does not exist"):
        bob.run({"command": "view", "path": "/memories/a.txt"})
    assert "a.txt" not in bob.run({"command": "view", "path": "/memories"})


def test_another_master_key_cannot_read(make_memory: Callable[..., S3Memory]) -> None:
    make_memory().create(memory_path("/memories/a.txt"), SECRET)
    if STORAGE_FORMAT != 1:  # the store key it cannot open refuses it before it reads anything
        with pytest.raises(
            IntegrityError, match=r"^Error: The store key is not one s3memory wrapped for this"
        ):
            make_memory(key_provider=LocalKeyProvider(bytes(32)))
        return
    stranger = make_memory(key_provider=LocalKeyProvider(bytes(32)))
    with pytest.raises(IntegrityError, match="integrity check"):
        stranger.run({"command": "view", "path": "/memories/a.txt"})


@format_1_only(
    "format 2's KMS context names the store and the user's namespace token, never the user "
    "(test_format2.py::test_a_format_2_kms_data_key_is_wrapped_under_the_store_and_token)"
)
def test_kms_envelope_stores_only_the_wrapped_key_with_a_context_naming_the_user(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    provider = KMSKeyProvider(key_id, kms_client=kms)
    memory = make_memory("alice", key_provider=provider)
    memory.create(memory_path("/memories/a.txt"), SECRET)
    wrapped = s3.get_object(Bucket=BUCKET, Key="users/alice/internal/keys/v1")["Body"].read()
    assert wrapped.startswith(b"S3MK\x01")
    data_key = provider.data_key(KeyOwner("alice"), 1, KeyVault(memory.store.bucket, memory.placed.layout))
    assert data_key not in wrapped
    assert base64.b64encode(data_key) not in wrapped
    unwrapped = kms.decrypt(
        CiphertextBlob=wrapped[5:], EncryptionContext={"s3memory:user": "alice", "s3memory:key_version": "1"}
    )
    assert unwrapped["Plaintext"] == data_key
    with pytest.raises(kms.exceptions.InvalidCiphertextException):
        kms.decrypt(
            CiphertextBlob=wrapped[5:],
            EncryptionContext={"s3memory:user": "bob", "s3memory:key_version": "1"},
        )


def test_a_cold_process_unwraps_once_then_caches(
    make_memory: Callable[..., S3Memory], kms: Any, key_id: str
) -> None:
    make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms)).create(
        memory_path("/memories/a.txt"), SECRET
    )
    kms_requests = RequestCounter(kms)
    cold = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    for _ in range(3):
        assert SECRET in cold.run({"command": "view", "path": "/memories/a.txt"})
    assert dict(kms_requests.calls) == {"Decrypt": 1 + COLD_STORE_KEY}


def test_the_key_cache_is_bounded_in_time(
    make_memory: Callable[..., S3Memory], kms: Any, key_id: str
) -> None:
    provider = KMSKeyProvider(key_id, kms_client=kms, cache_seconds=0)
    memory = make_memory(key_provider=provider)
    memory.create(memory_path("/memories/a.txt"), SECRET)
    memory.run({"command": "view", "path": "/memories/a.txt"})
    kms_requests = RequestCounter(kms)
    memory.run({"command": "view", "path": "/memories/a.txt"})
    memory.run({"command": "view", "path": "/memories/a.txt"})
    assert kms_requests.calls["Decrypt"] == 2


def test_a_tampered_wrapped_key_is_a_clear_error(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    first = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    first.create(memory_path("/memories/a.txt"), SECRET)
    s3.put_object(
        Bucket=BUCKET, Key=first.placed.layout.key_of_internal("keys/v1"), Body=b"S3MK\x01" + b"\x00" * 200
    )
    fresh = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    with pytest.raises(CommandError, match=r"^Error: (KMS Decrypt failed|The user.s wrapped data key)"):
        fresh.run({"command": "view", "path": "/memories/a.txt"})


def test_racing_first_use_creates_exactly_one_data_key(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    writers = 12
    barrier = threading.Barrier(writers)
    errors: list[BaseException] = []

    def first_use(index: int) -> None:
        try:
            memory = make_memory("newcomer", key_provider=KMSKeyProvider(key_id, kms_client=kms))
            barrier.wait(timeout=60)
            memory.create(memory_path(f"/memories/w{index}.txt"), f"written by {index}")
        except BaseException as error:
            barrier.abort()  # the others fail rather than wait for this one for ever
            errors.append(error)

    threads = [threading.Thread(target=first_use, args=(index,)) for index in range(writers)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert errors == []
    reader = make_memory("newcomer", key_provider=KMSKeyProvider(key_id, kms_client=kms))
    assert stored_keys(s3, reader.placed.layout.internal_prefix) == [
        reader.placed.layout.key_of_internal("keys/v1")
    ]
    for index in range(writers):
        assert f"written by {index}" in reader.run({"command": "view", "path": f"/memories/w{index}.txt"})


def test_a_memory_whose_keys_a_bucket_writer_removed_gets_no_new_key_and_is_whole_once_they_are_back(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    """A write after the only wrapped key was deleted is refused, not sealed under a new version 1
    (which would leave the files unreadable for good, and itself unreadable once the key is put
    back: helper-39); putting the key back makes the memory whole, with nothing lost."""
    make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms)).create(
        memory_path("/memories/a.txt"), SECRET
    )
    writer = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    key = writer.placed.layout.key_of_internal("keys/v1")
    wrapped = s3.get_object(Bucket=BUCKET, Key=key)["Body"].read()
    s3.delete_object(Bucket=BUCKET, Key=key)
    before = snapshot(s3)
    with pytest.raises(CommandError) as refused:
        writer.run({"command": "create", "path": "/memories/b.txt", "file_text": "new"})
    assert refused.value.message == (
        "Error: This memory's wrapped data keys are gone from the bucket while its files remain, so "
        "nothing is written under a new key. An operator can put them back (the objects "
        "internal/keys/v<n> of the user's namespace, from their S3 versions) or, if the user was being "
        "erased, run `s3memory erase` again to finish. Nothing was changed."
    )
    assert snapshot(s3) == before
    s3.put_object(Bucket=BUCKET, Key=key, Body=wrapped)
    assert writer.run({"command": "create", "path": "/memories/b.txt", "file_text": "new"}) == (
        "File created successfully at: /memories/b.txt"
    )
    reader = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    for path, text in (("/memories/a.txt", SECRET), ("/memories/b.txt", "new")):
        found = reader.placed.files.read(memory_path(path))
        assert found is not None and found.text == text


def test_the_cold_path_lists_the_keys_only_to_seal(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    """A cold process reads an object with the key its header names (a GET and a Decrypt, as before
    versions); to seal, it also lists the user's keys once to learn the current version. The access
    record the first command writes before its answer is sealed too (its one PUT), so a reader
    lists the keys for it."""
    make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms)).create(
        memory_path("/memories/a.txt"), SECRET
    )
    s3_requests, kms_requests = RequestCounter(s3), RequestCounter(kms)
    reader = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    reader.run({"command": "view", "path": "/memories/a.txt"})
    # the key and the file; then the access record, sealed: the keys listed, its PUT
    assert (s3_requests.calls, kms_requests.calls) == (
        {"GetObject": 2 + COLD_STORE_KEY, "ListObjectsV2": 1, "PutObject": 1},
        {"Decrypt": 1 + COLD_STORE_KEY},
    )
    s3_requests.reset()
    reader.run({"command": "create", "path": "/memories/b.txt", "file_text": "b"})
    assert s3_requests.calls == {"ListObjectsV2": 1, "PutObject": 1}  # the place, the write
    s3_requests.reset()
    kms_requests.reset()
    writer = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms))
    writer.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})
    assert s3_requests.calls == {"ListObjectsV2": 2, "GetObject": 1 + COLD_STORE_KEY, "PutObject": 2}
    assert kms_requests.calls == {"Decrypt": 1 + COLD_STORE_KEY}  # and the record
    s3_requests.reset()
    kms_requests.reset()
    writer.run({"command": "view", "path": "/memories/c.txt"})
    writer.run({"command": "create", "path": "/memories/d.txt", "file_text": "d"})
    assert s3_requests.calls == {"GetObject": 1, "ListObjectsV2": 1, "PutObject": 1}  # warm: no key requests
    assert kms_requests.total == 0


def test_a_warm_process_learns_a_new_version_when_its_cache_lapses(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str
) -> None:
    now = [0.0]
    serving = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms, clock=lambda: now[0]))
    serving.create(memory_path("/memories/a.txt"), SECRET)
    vault = KeyVault(serving.store.bucket, serving.placed.layout)
    assert KMSKeyProvider(key_id, kms_client=kms).create(serving.placed.key_owner, 2, vault)
    assert not KMSKeyProvider(key_id, kms_client=kms).create(serving.placed.key_owner, 2, vault)  # one winner

    def version_of(name: str) -> int | None:
        key = key_of(serving, f"/memories/{name}")
        return sealed_version(s3.get_object(Bucket=BUCKET, Key=key)["Body"].read())

    now[0] = 299.0
    serving.create(memory_path("/memories/b.txt"), SECRET)
    now[0] = 300.0
    serving.create(memory_path("/memories/c.txt"), SECRET)
    assert [version_of(name) for name in ("a.txt", "b.txt", "c.txt")] == [1, 1, 2]
    assert SECRET in serving.run({"command": "view", "path": "/memories/b.txt"})


def test_the_key_cache_lapses_by_the_wall_clock_too(
    make_memory: Callable[..., S3Memory], s3: Any, kms: Any, key_id: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A monotonic clock stands still while the machine sleeps: a process that resumes after a
    rotation must not seal with a version it learned before, however little its clock moved."""
    frozen = [0.0]
    serving = make_memory(key_provider=KMSKeyProvider(key_id, kms_client=kms, clock=lambda: frozen[0]))
    serving.create(memory_path("/memories/a.txt"), SECRET)
    assert KMSKeyProvider(key_id, kms_client=kms).create(
        serving.placed.key_owner, 2, KeyVault(serving.store.bucket, serving.placed.layout)
    )
    woke = time.time() + 301
    monkeypatch.setattr(time, "time", lambda: woke)  # the machine slept: only the wall clock moved
    serving.create(memory_path("/memories/b.txt"), SECRET)
    body = s3.get_object(Bucket=BUCKET, Key=key_of(serving, "/memories/b.txt"))["Body"].read()
    assert sealed_version(body) == 2
