"""A user's wrapped data keys as a KMS rotation reads and retires them (``ops.rotation``,
``docs/rotation.md``): every S3 version of each key version's wrapped key, found by one listing of
versions, and the removal of the versions a rotation retired, once a last listing shows the current
one still stored and the newest."""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime

from s3memory.core.keyvault import KeyVault
from s3memory.core.timestamps import when
from s3memory.errors import CommandError
from s3memory.storage.bucket import DELETE_BATCH, Bucket, Version


@dataclass
class StoredKey:
    """Every S3 version of one wrapped key, and when its current object was written (None when only
    earlier versions or a delete marker are left)."""

    versions: list[Version] = field(default_factory=list)
    written: datetime | None = None


def stored_keys(bucket: Bucket, vault: KeyVault) -> dict[int, StoredKey]:
    """The user's wrapped keys by version, with every S3 version of each (one listing of versions)."""
    found: dict[int, StoredKey] = {}
    for page in bucket.versions(vault.prefix):
        for version in page:
            number = vault.version_of(version.key)
            if number is None:
                continue
            key = found.setdefault(number, StoredKey())
            key.versions.append(version)
            if version.latest and not version.delete_marker:
                key.written = when(version.modified)
    return found


def remove_retired(bucket: Bucket, vault: KeyVault, current: int | None, retired: list[int]) -> None:
    """Remove every S3 version of the wrapped keys of the ``retired`` versions, once a last listing
    shows the ``current`` version still stored and the newest (else ``CommandError``, nothing
    removed)."""
    stored = stored_keys(bucket, vault)
    newest = stored.get(current or 0)
    if newest is None or newest.written is None or max(stored) != current:
        raise CommandError(
            "Error: This user's wrapped data keys changed while the rotation ran; no key was removed. "
            "Run it again."
        )
    doomed = [version for number in retired for version in stored.get(number, StoredKey()).versions]
    for start in range(0, len(doomed), DELETE_BATCH):
        bucket.delete_versions(doomed[start : start + DELETE_BATCH])
