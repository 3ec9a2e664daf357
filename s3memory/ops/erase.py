"""``erase``: every object and every version of a user's folders removed, wrapped data keys first, and
what it removed (or would remove) and left, as text lines and JSON.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from s3memory.core.paths import KeyLayout, UserId, owner_of, validate_namespace
from s3memory.crypto import KMSKeyProvider
from s3memory.formats.keyvault import KEYS_PREFIX
from s3memory.formats.upgrade import born_in_format_2
from s3memory.ops.context import StoreContext
from s3memory.ops.progress import SILENT, Progress
from s3memory.storage.bucket import Version


@dataclass
class Erasure:
    """What ``erase`` removed (or, in a dry run, would remove), and what is left after it."""

    user_id: str
    key_versions: int = 0
    other_versions: int = 0
    left: int = 0
    shredded: bool = False
    """Copies of the user's objects kept elsewhere can no longer be decrypted (the data keys existed
    only wrapped, and every version of them is gone); False with a local master key."""


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
        memory = self.existing_memory(user_id)
        erasure = Erasure(user_id, shredded=isinstance(self.key_provider, KMSKeyProvider))
        layouts: list[KeyLayout] = [] if memory is None else [memory.layout]
        owner = owner_of(user_id)
        if (
            self._identity is not None
            and not born_in_format_2(self.bucket, self.prefix, self._identity, self.store_key())
            and isinstance(owner, UserId)
        ):  # and what format 1 left of a user: files not moved
            # yet, keys, history (its listing names the user)
            layouts.append(KeyLayout(validate_namespace(owner, self.prefix)))
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
