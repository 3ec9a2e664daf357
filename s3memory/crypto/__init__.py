"""Client-side encryption, one private module per job:

- ``_objects``: the object formats (seal and open a format-1 or format-2 object, format 2's place
  record) and ``ObjectCipher``;
- ``_fingerprints``: path fingerprints, the keyed hash naming a path in metadata;
- ``_owners``: key owners (``KeyOwner``), their KMS encryption contexts and the purposes of
  store-level keys;
- ``_providers``: the key providers (``LocalKeyProvider``, ``KMSKeyProvider``) and ``DataKeySource``;
  ``_expiring``: the bounded, lapsing cache the KMS provider keeps;
- ``_primitives``: sizes and encodings they share;
- ``_authors``: who wrote a version (the rule for an author's name, and the metadata that keeps it,
  authenticated with the object).

Import from ``s3memory.crypto``, never from a private module. The bytes each format writes are
pinned by the frozen vectors in ``tests/vectors`` (``tests/crypto/test_vectors.py``).
"""

from s3memory.crypto._authors import (
    AUTHOR_METADATA,
    OPERATOR,
    shown_author,
    user_author,
    validate_author,
    validate_served_author,
)
from s3memory.crypto._fingerprints import FINGERPRINT_CHARACTERS, parsed_fingerprint
from s3memory.crypto._objects import (
    COMMITMENT_BYTES,
    FORMAT_1,
    FORMAT_2,
    HEADER_BYTES,
    HEADER_METADATA,
    MAGIC,
    OVERHEAD,
    PLACE_METADATA,
    SALT_BYTES,
    SEALED_VERSION_BYTES,
    ObjectCipher,
    Opened,
    Place,
    Sealed,
    plaintext_size,
    sealed_version,
)
from s3memory.crypto._owners import SERVER_RECORD_PURPOSE, STORE_KEY_PURPOSE, KeyOwner, WrappedKeyVault
from s3memory.crypto._primitives import (
    DATA_KEY_BYTES,
    MAX_KEY_VERSION,
    NONCE_BYTES,
    TAG_BYTES,
    key_version_named,
)
from s3memory.crypto._providers import (
    MAX_KEY_CACHE_SECONDS,
    STORE_KEY_MAGIC,
    WRAPPED_KEY_MAGIC,
    DataKeySource,
    KeyProvider,
    KMSKeyProvider,
    LocalKeyProvider,
)

__all__ = [
    "AUTHOR_METADATA",
    "COMMITMENT_BYTES",
    "DATA_KEY_BYTES",
    "FINGERPRINT_CHARACTERS",
    "FORMAT_1",
    "FORMAT_2",
    "HEADER_BYTES",
    "HEADER_METADATA",
    "MAGIC",
    "MAX_KEY_CACHE_SECONDS",
    "MAX_KEY_VERSION",
    "NONCE_BYTES",
    "OPERATOR",
    "OVERHEAD",
    "PLACE_METADATA",
    "SALT_BYTES",
    "SEALED_VERSION_BYTES",
    "SERVER_RECORD_PURPOSE",
    "STORE_KEY_MAGIC",
    "STORE_KEY_PURPOSE",
    "TAG_BYTES",
    "WRAPPED_KEY_MAGIC",
    "DataKeySource",
    "KMSKeyProvider",
    "KeyOwner",
    "KeyProvider",
    "LocalKeyProvider",
    "ObjectCipher",
    "Opened",
    "Place",
    "Sealed",
    "WrappedKeyVault",
    "key_version_named",
    "parsed_fingerprint",
    "plaintext_size",
    "sealed_version",
    "shown_author",
    "user_author",
    "validate_author",
    "validate_served_author",
]
