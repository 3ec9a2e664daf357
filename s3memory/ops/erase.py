"""``erase``: every object and every version of a user's folders removed, wrapped data keys first, and
what it removed (or would remove) and left, as text lines and JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from s3memory.core.keyvault import KEYS_PREFIX
from s3memory.core.paths import KeyLayout, owner_of
from s3memory.crypto import KMSKeyProvider
from s3memory.ops.context import StoreContext
from s3memory.ops.progress import SILENT, Progress
from s3memory.storage.bucket import Version


@dataclass
class Erasure:
    """What ``erase`` removed (or, in a dry run, would remove), and what is left after it."""

    user_id: str
    dry_run: bool = False
    key_versions: int = 0
    other_versions: int = 0
    left: int = 0
    keys_wrapped_by_kms: bool = False
    """The user's data keys existed only wrapped by KMS; False with a local master key, which opens
    every copy kept elsewhere whatever is erased."""
    names_outlive_data_keys: bool = False
    """The store's format names files by tokens of the store key, which every user shares and which
    stays (``formats.strategy``)."""

    @property
    def shredded(self) -> bool:
        """Copies of the user's objects kept elsewhere can no longer be decrypted: the data keys
        existed only wrapped, and the last listing found nothing left (what a serving process wrote
        meanwhile, a new wrapped data key among it, is still there, and decrypts). Never in a dry run."""
        return self.keys_wrapped_by_kms and not self.left and not self.dry_run

    @property
    def complete(self) -> bool:
        """True if nothing is left."""
        return not self.left

    def counts(self) -> dict[str, int]:
        return {"key_versions": self.key_versions, "other_versions": self.other_versions, "left": self.left}

    def document(self) -> dict[str, object]:
        """The erasure as ``--json`` prints it."""
        return {"user_id": self.user_id, "dry_run": self.dry_run, **self.counts(), "shredded": self.shredded}

    def lines(self) -> list[str]:
        """The erasure as the operator reads it: what went (or would go), and after a real one what is
        left and what copies kept elsewhere still reveal."""
        verb = "would remove" if self.dry_run else "removed"
        removed = f"{verb} {self.key_versions:,} wrapped key versions and {self.other_versions:,} other object versions"
        if self.dry_run:
            return [removed]
        left = f"left: {self.left:,} object versions"
        if self.left:
            left += ": something is still writing to this user: stop serving it and run erase again"
        return [removed, left, self._copies()]

    def _copies(self) -> str:
        """What copies kept elsewhere (a backup, a replica) still reveal."""
        if self.shredded:
            shredding = "copies kept elsewhere can no longer be decrypted: every version of the wrapped data keys is gone"
            if self.names_outlive_data_keys:
                shredding += (
                    "; their private names (user id, paths) still decrypt with the store key, which stays"
                )
            return shredding
        if self.keys_wrapped_by_kms:
            return "copies kept elsewhere may still decrypt: a wrapped data key may be among what is left"
        return "with a local master key, copies kept elsewhere stay readable with that key"


class EraseTask(StoreContext):
    """Erase a user's memory, keys first."""

    def erase(self, user_id: str, *, dry_run: bool = False, progress: Progress = SILENT) -> Erasure:
        """Remove every object and every version of the user's folders (``internal/`` and
        ``memories/`` of the user's namespace: all s3memory writes there), wrapped data keys first:
        from the first batch on, what is left (here, in a backup or a replica) cannot be decrypted
        without a key that is gone. Run it again to finish an erase that was interrupted; the user
        must not be served meanwhile (a write is refused while files remain without a key, and
        starts a new key once none remains). ``left`` counts what a last listing still found.
        Anything else in the namespace (another store's prefix may lie below it) is not the user's
        and stays.

        Format 2: the namespace is the user's token prefix, and the data keys are wrapped under the
        store identity and that token, so the content of copies kept elsewhere is shredded as in
        format 1; their names (the user's token and the paths' tokens) still decrypt with the store
        key, which every user shares and which stays. What format 1 left of the user (files not moved
        yet, its wrapped keys, earlier versions) goes too, unless the store's mark authenticates as
        born in format 2."""
        memory = self.existing_placed(user_id)
        erasure = Erasure(
            user_id,
            dry_run,
            keys_wrapped_by_kms=isinstance(self.key_provider, KMSKeyProvider),
            names_outlive_data_keys=self.format.names_outlive_data_keys,
        )
        layouts: list[KeyLayout] = [] if memory is None else [memory.layout]
        owner = owner_of(user_id)
        layouts += self.format.older_layouts(
            self.bucket, self.prefix, self.store_identity, self.store_key, owner
        )
        for layout in layouts:
            prefixes = (layout.internal_prefix, layout.memories_prefix)
            keys = layout.key_of_internal(KEYS_PREFIX)
            for prefix in (keys, *prefixes):
                pages = self.bucket.versions(prefix) if dry_run else self._first_pages(prefix)
                for page in pages:
                    if dry_run and prefix != keys:
                        page = [version for version in page if not version.key.startswith(keys)]
                    if not dry_run:
                        self.bucket.delete_versions(page)  # a page holds at most 1,000: one request
                    progress.advance(len(page))
                    erasure.key_versions += sum(version.key.startswith(keys) for version in page)
                    erasure.other_versions += sum(not version.key.startswith(keys) for version in page)
            if not dry_run:
                erasure.left += sum(len(page) for prefix in prefixes for page in self.bucket.versions(prefix))
        return erasure

    def _first_pages(self, prefix: str) -> Iterator[list[Version]]:
        """The first page of versions below ``prefix``, listed again after each is removed, until
        none is left (a marker of versions just removed is not a safe place to go on from) or the
        same page comes back (its removal did not take; ``left`` will say so)."""
        previous: list[Version] | None = None
        while True:
            page = next(self.bucket.versions(prefix))
            if not page or page == previous:
                return
            yield page
            previous = page
