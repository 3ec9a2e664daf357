"""The frozen test vectors' cases: for each, how to write its bytes from its inputs (``seal``, with
the random draws the inputs fix) and how to read them back (``read``).

A vector file ``<name>.json`` holds ``inputs`` (bytes as hex, in the order the code draws random
bytes under ``drawn``) and ``expected`` (what ``seal`` wrote when the vector was made). The files are
frozen: ``tests/crypto/test_vectors.py`` checks that today's code reads each one back to its inputs and, where
the bytes are determined by the inputs, writes exactly the same bytes again.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any, cast
from unittest import mock

from s3memory.crypto import KeyOwner, KMSKeyProvider, LocalKeyProvider, ObjectCipher, Opened, Sealed
from s3memory.formats.names import NameCipher, namespace_of, user_of_namespace
from s3memory.formats.store_keys import store_identity
from s3memory.formats.upgrade import fetch_mark, mark_migrated, mark_state
from s3memory.storage.bucket import Bucket, StoredObject
from s3memory.storage.conditions import Enforced
from s3memory.storage.server_checks import open_record, seal_record

from ..support.ciphers import NoVault, local_cipher

Json = dict[str, Any]


@contextlib.contextmanager
def drawn(draws: list[str]) -> Iterator[None]:
    """``os.urandom`` answers with ``draws`` (hex), in order, each exactly the size asked for; all
    must be drawn. The code under test draws its salts, nonces and keys from ``os.urandom``."""
    queue = [bytes.fromhex(draw) for draw in draws]

    def urandom(size: int) -> bytes:
        assert queue, f"an unexpected random draw of {size} bytes"
        draw = queue.pop(0)
        assert len(draw) == size, f"a random draw of {size} bytes where the vector holds {len(draw)}"
        return draw

    with mock.patch("os.urandom", urandom):
        yield
    assert not queue, f"{len(queue)} random draws the vector holds were not made"


def _local(inputs: Json) -> LocalKeyProvider:
    return LocalKeyProvider(bytes.fromhex(inputs["master_key"]), version=inputs["master_version"])


def _owner(inputs: Json) -> KeyOwner:
    return KeyOwner(inputs["user_id"], inputs.get("store"), inputs.get("namespace"))


def _cipher(inputs: Json) -> ObjectCipher:
    return local_cipher(_local(inputs), _owner(inputs))


def _file_sealing(
    seal: Callable[[ObjectCipher], Callable[[str, bytes, str | None], Sealed]],
) -> Callable[[Json], Json]:
    def sealed_file(inputs: Json) -> Json:
        with drawn(inputs["draws"]):
            sealed = seal(_cipher(inputs))(
                inputs["path"], bytes.fromhex(inputs["plaintext"]), inputs["author"]
            )
        return {"body": sealed.body.hex(), "metadata": sealed.metadata}

    return sealed_file


def _file_opening(
    open_with: Callable[[ObjectCipher], Callable[[str, bytes, dict[str, str]], Opened]],
) -> Callable[[Json, Json], Json]:
    def opened_file(inputs: Json, expected: Json) -> Json:
        opened = open_with(_cipher(inputs))(
            inputs["path"], bytes.fromhex(expected["body"]), expected["metadata"]
        )
        return {"plaintext": opened.plaintext.hex(), "author": opened.author}

    return opened_file


_seal_bound_file = _file_sealing(lambda cipher: cipher.seal_bound_file)
_open_bound_file = _file_opening(lambda cipher: cipher.open_bound_file)
_seal_placed_file = _file_sealing(lambda cipher: cipher.seal_placed_file)
_open_placed_file = _file_opening(lambda cipher: cipher.open_placed_file)


def _seal_object(inputs: Json) -> Json:
    with drawn(inputs["draws"]):
        body = _cipher(inputs).seal(inputs["name"], bytes.fromhex(inputs["plaintext"]))
    return {"body": body.hex()}


def _open_object(inputs: Json, expected: Json) -> Json:
    return {"plaintext": _cipher(inputs).open(inputs["name"], bytes.fromhex(expected["body"])).hex()}


def _seal_place(inputs: Json) -> Json:
    with drawn(inputs["draws"]):
        metadata = _cipher(inputs).placed(inputs["path"], bytes.fromhex(inputs["header"]), inputs["author"])
    return {"metadata": metadata}


def _open_place(inputs: Json, expected: Json) -> Json:
    place = _cipher(inputs).place_of(inputs["path"], expected["metadata"])
    return {"header": place.header.hex(), "author": place.author}


def _seal_fingerprint(inputs: Json) -> Json:
    return {"fingerprint": _cipher(inputs).fingerprint(inputs["path"])}


def _read_fingerprint(inputs: Json, expected: Json) -> Json:
    return {"made_of_path": _cipher(inputs).made_of(expected["fingerprint"], inputs["path"])}


def _seal_name_token(inputs: Json) -> Json:
    names = NameCipher(bytes.fromhex(inputs["store_key"]), inputs["user_id"])
    return {"token": names.token(tuple(inputs["parent"]), inputs["name"])}


def _read_name_token(inputs: Json, expected: Json) -> Json:
    names = NameCipher(bytes.fromhex(inputs["store_key"]), inputs["user_id"])
    return {"name": names.name(tuple(inputs["parent"]), expected["token"])}


def _seal_namespace(inputs: Json) -> Json:
    return {"namespace": namespace_of(bytes.fromhex(inputs["store_key"]), inputs["user_id"])}


def _read_namespace(inputs: Json, expected: Json) -> Json:
    return {"user_id": user_of_namespace(bytes.fromhex(inputs["store_key"]), expected["namespace"])}


def _seal_store_identity(inputs: Json) -> Json:
    return {"identity": store_identity(inputs["store_id"], inputs["prefix"])}


def _local_data_keys(inputs: Json) -> Json:
    provider = _local(inputs)
    return {
        name: provider.data_key(_owner(owner), inputs["master_version"], NoVault()).hex()
        for name, owner in inputs["owners"].items()
    }


def _seal_store_key(inputs: Json) -> Json:
    provider = _local(inputs)
    with drawn(inputs["draws"]):
        wrapped = provider.wrap_store_key(inputs["store"], bytes.fromhex(inputs["key"]), inputs["purpose"])
    return {"wrapped": wrapped.hex()}


def _open_store_key(inputs: Json, expected: Json) -> Json:
    key = _local(inputs).open_store_key(
        inputs["store"], bytes.fromhex(expected["wrapped"]), inputs["purpose"]
    )
    return {"key": key.hex()}


class _FakeKMS:
    """A KMS client that hands out the inputs' data key and blob, and decrypts that blob only under
    the encryption context it was generated with (as KMS does)."""

    def __init__(self, inputs: Json) -> None:
        self._key = bytes.fromhex(inputs["data_key"])
        self._blob = bytes.fromhex(inputs["kms_blob"])
        self.context: dict[str, str] | None = None

    def generate_data_key(self, **arguments: Any) -> Json:
        self.context = arguments["EncryptionContext"]
        return {"Plaintext": self._key, "CiphertextBlob": self._blob}

    def decrypt(self, **arguments: Any) -> Json:
        assert arguments["CiphertextBlob"] == self._blob
        assert arguments["EncryptionContext"] == self.context
        return {"Plaintext": self._key}


class _OneKeyVault:
    """A vault holding at most one wrapped key."""

    identity = "vectors"

    def __init__(self, wrapped: bytes | None = None) -> None:
        self.wrapped = wrapped

    def versions(self) -> list[int]:
        return [] if self.wrapped is None else [1]

    def get_wrapped(self, version: int) -> bytes | None:
        return self.wrapped

    def holds_files(self) -> bool:
        return False

    def put_wrapped_if_absent(self, version: int, wrapped: bytes) -> bool:
        self.wrapped = wrapped
        return True


def _seal_kms(inputs: Json) -> Json:
    """The user's first data key as stored, and the store-level keys' wrapped forms, with the KMS
    encryption context each was made under."""
    out: Json = {}
    for name, owner in inputs["owners"].items():
        kms, vault = _FakeKMS(inputs), _OneKeyVault()
        KMSKeyProvider("alias/vectors", cast(Any, kms)).current(_owner(owner), vault)
        out[name] = {"wrapped": (vault.wrapped or b"").hex(), "context": kms.context}
    for purpose in inputs["purposes"]:
        kms = _FakeKMS(inputs)
        _, wrapped = KMSKeyProvider("alias/vectors", cast(Any, kms)).new_store_key(inputs["store"], purpose)
        out[purpose] = {"wrapped": wrapped.hex(), "context": kms.context}
    return out


def _read_kms(inputs: Json, expected: Json) -> Json:
    out: Json = {}
    for name, owner in inputs["owners"].items():
        kms = _FakeKMS(inputs)
        kms.context = expected[name]["context"]
        provider = KMSKeyProvider("alias/vectors", cast(Any, kms))
        vault = _OneKeyVault(bytes.fromhex(expected[name]["wrapped"]))
        out[name] = provider.data_key(_owner(owner), 1, vault).hex()
    for purpose in inputs["purposes"]:
        kms = _FakeKMS(inputs)
        kms.context = expected[purpose]["context"]
        provider = KMSKeyProvider("alias/vectors", cast(Any, kms))
        out[purpose] = provider.open_store_key(
            inputs["store"], bytes.fromhex(expected[purpose]["wrapped"]), purpose
        ).hex()
    return out


class _MarkBucket:
    """Just enough of an ``Bucket`` for the migration mark: one object per key, kept in memory."""

    bucket = "vectors"

    def __init__(self, objects: dict[str, bytes] | None = None) -> None:
        self.objects = dict(objects or {})

    def put(self, key: str, body: bytes) -> None:
        self.objects[key] = body

    def get(self, key: str, *, max_bytes: int) -> StoredObject | None:
        body = self.objects.get(key)
        return None if body is None else StoredObject(body, '"etag"')


def _seal_marks(inputs: Json) -> Json:
    out: Json = {}
    for name, born in (("born", True), ("settled", False)):
        bucket = _MarkBucket()
        mark_migrated(
            cast(Bucket, bucket),
            inputs["prefix"],
            inputs["store"],
            bytes.fromhex(inputs["store_key"]),
            born=born,
        )
        ((key, body),) = bucket.objects.items()
        out[name] = {"key": key, "body": body.hex()}
    return out


def _read_marks(inputs: Json, expected: Json) -> Json:
    out: Json = {}
    for name in ("born", "settled"):
        bucket = _MarkBucket({expected[name]["key"]: bytes.fromhex(expected[name]["body"])})
        stored = fetch_mark(cast(Bucket, bucket), inputs["prefix"])
        state = mark_state(stored, inputs["store"], bytes.fromhex(inputs["store_key"]))
        out[name] = None if state is None else state.decode("ascii")
    return out


def _seal_server_record(inputs: Json) -> Json:
    enforced = Enforced(frozenset(inputs["held"]), inputs["answers"])
    with drawn(inputs["draws"]):
        record = seal_record(enforced, inputs["store"], _local(inputs))
    return {"record": record.hex()}


def _read_server_record(inputs: Json, expected: Json) -> Json:
    enforced = open_record(bytes.fromhex(expected["record"]), inputs["store"], _local(inputs))
    return {"held": sorted(enforced.held), "answers": dict(enforced.answers)}


@dataclass(frozen=True)
class Case:
    """One vector: its inputs as made, how to write its bytes, how to read them back, and what the
    reading must give (from the inputs)."""

    name: str
    about: str
    inputs: Json
    seal: Callable[[Json], Json]
    read: Callable[[Json, Json], Json] | None
    read_gives: Callable[[Json], Json] | None


def _file_read_gives(inputs: Json) -> Json:
    return {"plaintext": inputs["plaintext"], "author": inputs["author"]}


MASTER = "000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f"
STORE_KEY = "a0a1a2a3a4a5a6a7a8a9aaabacadaeafb0b1b2b3b4b5b6b7b8b9babbbcbdbebf"
STORE = "6f0c5e4c1d0b3a29e8f7d6c5b4a39281"
"""A store identity (``store_keys.store_identity``'s shape) for the vectors of format 2."""
NAMESPACE = "namespace-of-alice"
"""A namespace token as a format-2 key owner names it (any string: the cipher binds it only via KMS)."""
PLAINTEXT = b"hello, memory\n".hex()
SALT = "".join(f"{n:02x}" for n in range(0x40, 0x60))
NONCE = "c0c1c2c3c4c5c6c7c8c9cacb"
PLACE_NONCE = "d0d1d2d3d4d5d6d7d8d9dadb"

LOCAL_KEY: Json = {"master_key": MASTER, "master_version": 7}
"""The inputs naming the local master key (of version 7) the vectors' keys come from."""
ALICE: Json = {**LOCAL_KEY, "user_id": "alice"}
"""The inputs of alice as a format-1 key owner, under the local master key."""
ALICE_IN_STORE: Json = {**ALICE, "store": STORE, "namespace": NAMESPACE}
"""The inputs of alice as a format-2 key owner: in the store ``STORE``, under her namespace."""
OWNERS: Json = {
    "format-1": {"user_id": "alice"},
    "format-2": {"user_id": "alice", "store": STORE, "namespace": NAMESPACE},
}
"""A key owner of each format, as ``_owner`` reads one."""


def _internal_object(name: str, about: str, owner: Json) -> Case:
    """The case of a job record sealed as an internal object of ``owner`` (ObjectCipher.seal)."""
    return Case(
        name,
        about,
        {**owner, "name": "internal/jobs/record", "plaintext": b'{"job":1}'.hex(), "draws": [SALT, NONCE]},
        _seal_object,
        _open_object,
        lambda inputs: {"plaintext": inputs["plaintext"]},
    )


def _local_store_key(name: str, about: str, purpose: str) -> Case:
    """The case of the store-level key for ``purpose`` wrapped by LocalKeyProvider."""
    return Case(
        name,
        about,
        {**LOCAL_KEY, "store": STORE, "key": STORE_KEY, "purpose": purpose, "draws": [NONCE]},
        _seal_store_key,
        _open_store_key,
        lambda inputs: {"key": inputs["key"]},
    )


CASES = [
    Case(
        "format-1-file",
        "A format-1 memory file with an author: the object's bytes and metadata (ObjectCipher.seal_file).",
        {
            **ALICE,
            "path": "/memories/notes/today.md",
            "plaintext": PLAINTEXT,
            "author": "agent-7",
            "draws": [SALT, NONCE],
        },
        _seal_bound_file,
        _open_bound_file,
        _file_read_gives,
    ),
    _internal_object(
        "format-1-internal-object",
        "A format-1 internal object (a job record), bound to its name (ObjectCipher.seal).",
        ALICE,
    ),
    Case(
        "format-2-file",
        "A format-2 memory file with an author: content bound to user and store, its header and place record in metadata.",
        {
            **ALICE_IN_STORE,
            "path": "/memories/notes/today.md",
            "plaintext": PLAINTEXT,
            "author": "agent-7",
            "draws": [SALT, NONCE, PLACE_NONCE],
        },
        _seal_placed_file,
        _open_placed_file,
        _file_read_gives,
    ),
    Case(
        "format-2-place-record",
        "A format-2 place record placing a content header at a new path under a new author, as a rename writes it (ObjectCipher.placed).",
        {
            **ALICE_IN_STORE,
            "path": "/memories/archive/today.md",
            "header": "53334d450200000007" + SALT + "ee" * 32 + NONCE,
            "author": "mover@example.com",
            "draws": ["e0e1e2e3e4e5e6e7e8e9eaeb"],
        },
        _seal_place,
        _open_place,
        lambda inputs: {"header": inputs["header"], "author": inputs["author"]},
    ),
    _internal_object(
        "format-2-internal-object",
        "A format-2 internal object (a job record), bound to store, user and name (ObjectCipher.seal).",
        ALICE_IN_STORE,
    ),
    Case(
        "path-fingerprint",
        "A path fingerprint under the current data key (ObjectCipher.fingerprint).",
        {**ALICE, "path": "/memories/notes/today.md"},
        _seal_fingerprint,
        _read_fingerprint,
        lambda inputs: {"made_of_path": True},
    ),
    Case(
        "name-token",
        "A private name: the token of a path segment under its parent (names.NameCipher.token).",
        {"store_key": STORE_KEY, "user_id": "alice", "parent": ["notes", "2026"], "name": "today.md"},
        _seal_name_token,
        _read_name_token,
        lambda inputs: {"name": inputs["name"]},
    ),
    Case(
        "namespace",
        "A user's namespace token under a store key (names.namespace_of).",
        {"store_key": STORE_KEY, "user_id": "alice@example.com"},
        _seal_namespace,
        _read_namespace,
        lambda inputs: {"user_id": inputs["user_id"]},
    ),
    Case(
        "store-identity",
        "A store's identity from its id and prefix (store_keys.store_identity).",
        {"store_id": "my-memory-bucket", "prefix": "tenants/acme/"},
        _seal_store_identity,
        None,
        None,
    ),
    Case(
        "local-data-keys",
        "Data keys LocalKeyProvider derives for a format-1 and a format-2 owner.",
        {**LOCAL_KEY, "owners": OWNERS},
        _local_data_keys,
        None,
        None,
    ),
    _local_store_key(
        "local-store-key",
        "The store key wrapped by LocalKeyProvider (LocalKeyProvider.wrap_store_key).",
        "store-key",
    ),
    _local_store_key(
        "local-server-record-key",
        "The server record's key wrapped by LocalKeyProvider for its purpose.",
        "server-record",
    ),
    Case(
        "kms-wrapped-keys",
        "Keys wrapped by KMSKeyProvider as stored, with the KMS encryption context each is bound to.",
        {
            "data_key": STORE_KEY,
            "kms_blob": "4b4d5320626c6f62206f70617175652062797465730a",
            "store": STORE,
            "owners": OWNERS,
            "purposes": ["store-key", "server-record"],
        },
        _seal_kms,
        _read_kms,
        lambda inputs: {name: inputs["data_key"] for name in [*inputs["owners"], *inputs["purposes"]]},
    ),
    Case(
        "migration-marks",
        "The sealed migration marks, born and settled (migration.mark_migrated).",
        {"store_key": STORE_KEY, "store": STORE, "prefix": "tenants/acme/"},
        _seal_marks,
        _read_marks,
        lambda inputs: {"born": "born in format 2", "settled": "no format-1 files"},
    ),
    Case(
        "server-record",
        "The sealed record of what the S3 server enforces (server_checks.seal_record).",
        {
            **LOCAL_KEY,
            "store": STORE,
            "held": ["PutObject If-None-Match", "PutObject If-Match"],
            "answers": {"CopyObject If-None-Match": "501 NotImplemented"},
            "draws": [STORE_KEY, NONCE, PLACE_NONCE],
        },
        _seal_server_record,
        _read_server_record,
        lambda inputs: {"held": sorted(inputs["held"]), "answers": inputs["answers"]},
    ),
]
