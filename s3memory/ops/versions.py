"""A user's memory through time, on S3 versioning: a file's history, restoring a version or the whole
memory as it was, and removing one version for good.

Every version is read through the user's cipher, so only what s3memory sealed for that user and path
is shown or restored. A restore is an ordinary conditional write: a file that changes while it is
restored is left as the other writer left it and reported, never overwritten blindly.

A file's history is the versions at its object key. On format 1 a version a rename wrote names the
path it came from (``s3memory-origin``, a keyed fingerprint of that path). Format 2 writes no such
fingerprint: its history follows the key alone, and a renamed file's history begins with the
rename (the version that placed it there, by whoever moved it); the versions before it are the
history of the old path.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from s3memory.core.files import Found
from s3memory.core.paths import MemoryPath, memory_path
from s3memory.core.timestamps import when
from s3memory.crypto import parsed_fingerprint, plaintext_size, shown_author
from s3memory.errors import CommandError, IntegrityError, PreconditionFailed, escaped, shown, with_fix
from s3memory.memory import S3Memory
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.storage.bucket import Version
from s3memory.storage.concurrency import parallel


@dataclass(frozen=True)
class FileVersion:
    """One version of a file: when, its plaintext size, and whether it wrote or deleted the file."""

    path: str
    version_id: str
    modified: datetime
    size: int
    operation: str
    """``written`` or ``deleted`` (a delete marker)."""
    current: bool
    renamed_from: str | None = None
    """The path this version was copied from by a rename, when the user's memory still shows it
    (format 1 only: format 2 keeps no trace of where a file came from)."""
    author: str | None = None
    """Who wrote it, as the writer named itself; authenticated with the version's content."""
    authentic: bool = True
    """False when the version failed authentication (tampered, foreign, or keyed otherwise): then
    neither its author nor where it came from is shown."""


@dataclass
class Restored:
    """What a restore of the whole memory did, file by file."""

    written: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    changed_meanwhile: list[str] = field(default_factory=list)
    failed_authentication: list[tuple[str, str]] = field(default_factory=list)
    """Files left as they are because a version to read (the current one, or the one to restore)
    failed authentication, each with the message (``with_fix``)."""

    @property
    def complete(self) -> bool:
        """Every file restored or already as it was: none changed meanwhile, none failed authentication."""
        return not self.changed_meanwhile and not self.failed_authentication

    def _groups(self) -> dict[str, list[str]]:
        return {
            "written": self.written,
            "deleted": self.deleted,
            "unchanged": self.unchanged,
            "changed_meanwhile": self.changed_meanwhile,
        }

    def counts(self) -> dict[str, int]:
        """How many files of each outcome (no path)."""
        counts = {name: len(paths) for name, paths in self._groups().items()}
        return counts | {"failed_authentication": len(self.failed_authentication)}

    def lines(self) -> list[str]:
        """What was written, deleted, found changed meanwhile and found failing authentication, one
        file a line, then the counts."""
        groups = self._groups()
        lines = [
            f"{name} {escaped(path)}"
            for name in ("written", "deleted", "changed_meanwhile")
            for path in groups[name]
        ]
        lines += [
            f"failed authentication {escaped(path)}: {escaped(why)}"
            for path, why in self.failed_authentication
        ]
        lines.append(", ".join(f"{count} {name.replace('_', ' ')}" for name, count in self.counts().items()))
        return lines

    def document(self) -> dict[str, object]:
        """The paths of each outcome, and each failing file with its reason."""
        failed = [{"path": path, "reason": why} for path, why in self.failed_authentication]
        return {**self._groups(), "failed_authentication": failed}


@dataclass(frozen=True)
class History:
    """Every version of the file at ``path``, newest first (``MemoryVersions.history``)."""

    path: str
    versions: list[FileVersion]

    @property
    def complete(self) -> bool:
        """Every version passed authentication."""
        return all(version.authentic for version in self.versions)

    def counts(self) -> dict[str, int]:
        return {"versions": len(self.versions)}

    def lines(self) -> list[str]:
        """One version a line: when, what, its size and id, and whether it is current, who wrote it,
        where it came from, or that it failed authentication."""
        return [
            f"{v.modified.isoformat(timespec='seconds')}  {v.operation:<7}  {v.size:>9,}  {escaped(v.version_id)}"
            + ("  (current)" if v.current else "")
            + (f"  by {escaped(shown_author(v.author))}" if v.author else "")
            + (f"  renamed from {escaped(v.renamed_from)}" if v.renamed_from else "")
            + ("" if v.authentic else "  FAILED AUTHENTICATION (not written by s3memory for this file)")
            for v in self.versions
        ] or [f"(no versions of {escaped(self.path)})"]

    def document(self) -> dict[str, object]:
        versions = [
            {
                "version_id": v.version_id,
                "modified": v.modified.isoformat(),
                "operation": v.operation,
                "size": v.size,
                "current": v.current,
                "renamed_from": v.renamed_from,
                "author": v.author,
                "authentic": v.authentic,
            }
            for v in self.versions
        ]
        return {"path": self.path, "versions": versions}


class MemoryVersions:
    """The versions of one user's memory files."""

    def __init__(self, memory: S3Memory) -> None:
        self.memory = memory
        """The memory whose ``create`` restores a file that is gone (as the model's command)."""
        self.bucket = memory.store.bucket
        status = self.bucket.versioning()
        if status is None:
            raise CommandError(
                f"Error: The bucket {self.bucket.bucket} has never had S3 versioning on, so it keeps no "
                "earlier versions: history, restore and redact need it (the Terraform module enables it)."
            )

    @property
    def placed(self) -> PlacedMemory:
        """The memory placed in its store: what the versions are read from and written to."""
        return self.memory.placed

    def history(self, path: str) -> list[FileVersion]:
        """Every version of the file at ``path``, newest first (delete markers included). Each
        written version is read and authenticated (a GET each, in parallel): its author is
        trusted only once its content has opened with it."""
        target = memory_path(path)
        versions = self._versions_of(self.placed.layout.file_key(target))
        opened: dict[str, Found | None] = {}

        def read(version: Version) -> None:
            with contextlib.suppress(IntegrityError):  # not authentic: no author, no origin
                opened[version.version_id] = self.placed.files.read(target, version.version_id)

        parallel(read, [version for version in versions if not version.delete_marker])
        origins = _Origins(self.placed) if self.placed.format.keeps_origins else None
        return sorted(
            (self._described(target, version, opened, origins) for version in versions), key=_newest_first
        )

    def _described(
        self,
        target: MemoryPath,
        version: Version,
        opened: dict[str, Found | None],
        origins: _Origins | None,
    ) -> FileVersion:
        found = opened.get(version.version_id)
        renamed_from = (
            None
            if found is None or found.origin is None or origins is None
            else origins.path_of(found.origin)
        )
        return FileVersion(
            target.text,
            version.version_id,
            when(version.modified),
            0 if version.delete_marker else plaintext_size(version.size),
            "deleted" if version.delete_marker else "written",
            version.latest,
            renamed_from,
            None if found is None else found.author,
            version.delete_marker or version.version_id in opened,
        )

    def text_of(self, path: str, version_id: str) -> str:
        """The text the file had in ``version_id``, authenticated for this user and path; an id no
        S3 server gives is refused before any request."""
        target = memory_path(path)
        found = None if not _may_be_version_id(version_id) else self.placed.files.read(target, version_id)
        if found is None:
            raise CommandError(
                f"Error: {target.text} has no version {shown(version_id)} (or it is a deletion): "
                f"`s3memory history {target.text}` lists its versions."
            )
        return found.text

    def restore(self, path: str, version_id: str) -> str:
        """Make ``version_id`` the file's current text again: ``written`` or ``unchanged``."""
        text = self.text_of(path, version_id)
        return self._put(memory_path(path), text)

    def _put(self, target: MemoryPath, text: str) -> str:
        files = self.placed.files
        current = files.read(target)
        if current is not None and current.text == text:
            return "unchanged"
        if current is None:
            self.memory.run({"command": "create", "path": target.text, "file_text": text})
            return "written"
        if not files.replace(target, files.encode(target, text), current.etag):
            raise CommandError(f"Error: {target.text} changed while it was restored; it was left as it is.")
        return "written"

    def restore_as_of(self, moment: datetime, progress: Progress = SILENT) -> Restored:
        """Every file as it was at ``moment``: files written since are put back or deleted, files
        deleted since come back. Each change is conditional on what was read. Files are restored in
        the order of their paths. A file whose current version or version at ``moment`` fails
        authentication is left as it is and reported (``failed_authentication``), and the restore
        goes on."""
        layout = self.placed.layout
        chosen: dict[str, Version | None] = {}
        for page in self.bucket.versions(layout.memories_prefix):
            for listed in page:
                if layout.path_of_key(listed.key) is None:
                    continue
                best = chosen.get(listed.key)
                if when(listed.modified) <= moment and (best is None or _later(listed, best)):
                    chosen[listed.key] = listed
                else:
                    chosen.setdefault(listed.key, None)
        restored = Restored()
        progress.expect(len(chosen))
        for target, version in _by_path(layout.path_of_key, chosen):
            progress.advance()
            try:
                if version is None or version.delete_marker:
                    self._delete(target, restored)
                else:
                    text = self.text_of(target.text, version.version_id)
                    outcome = self._put(target, text)
                    (restored.unchanged if outcome == "unchanged" else restored.written).append(target.text)
            except IntegrityError as error:
                restored.failed_authentication.append((target.text, with_fix(error)))
            except CommandError:
                restored.changed_meanwhile.append(target.text)
        return restored

    def _delete(self, target: MemoryPath, restored: Restored) -> None:
        current = self.placed.files.read(target)
        if current is None:
            return
        try:
            self.placed.files.delete(self.placed.layout.file_key(target), if_match=current.etag)
        except PreconditionFailed:
            restored.changed_meanwhile.append(target.text)
            return
        restored.deleted.append(target.text)

    def redact(self, path: str, version_id: str) -> None:
        """Remove one version of the file for good (the current one too, if named)."""
        target = memory_path(path)
        key = self.placed.layout.file_key(target)
        if not any(version.version_id == version_id for version in self._versions_of(key)):
            raise CommandError(
                f"Error: {target.text} has no version {shown(version_id)}; nothing was changed: "
                f"`s3memory history {target.text}` lists its versions."
            )
        self.bucket.delete_versions([Version(key, version_id)])

    def _versions_of(self, key: str) -> list[Version]:
        return [version for page in self.bucket.versions(key) for version in page if version.key == key]


class _Origins:
    """Which path a rename's keyed fingerprint stands for: any path the user's versions still show,
    listed once, on first need, and fingerprinted under each key version a fingerprint names (the
    metadata holds the fingerprint only, never the path)."""

    def __init__(self, memory: PlacedMemory) -> None:
        self._memory = memory
        self._paths: list[MemoryPath] | None = None
        self._by_version: dict[int, dict[str, str]] = {}

    def path_of(self, fingerprint: str) -> str | None:
        """The path a stored ``fingerprint`` was made of, or None."""
        parsed = parsed_fingerprint(fingerprint)
        if parsed is None:
            return None
        version, digest = parsed
        if version not in self._by_version:
            self._by_version[version] = self._fingerprinted(version)
        return self._by_version[version].get(f"{version}:{digest}")

    def _fingerprinted(self, version: int) -> dict[str, str]:
        """Every listed path by its fingerprint under ``version`` (none if the user has no such key)."""
        layout, cipher = self._memory.layout, self._memory.files.cipher
        if self._paths is None:
            self._paths = list(
                {
                    path
                    for page in self._memory.bucket.versions(layout.memories_prefix)
                    for listed in page
                    if (path := layout.path_of_key(listed.key)) is not None
                }
            )
        try:
            return {cipher.fingerprint(path.canonical, version): path.text for path in self._paths}
        except IntegrityError:
            return {}


def _by_path(
    path_of_key: Callable[[str], MemoryPath | None], chosen: dict[str, Version | None]
) -> list[tuple[MemoryPath, Version | None]]:
    """The chosen version of each key, by its path, in path order (format 1: key order)."""
    found = [(path, version) for key, version in chosen.items() if (path := path_of_key(key)) is not None]
    return sorted(found, key=lambda item: item[0].text)


def _newest_first(version: FileVersion) -> tuple[bool, float]:
    return (not version.current, -version.modified.timestamp())


def _later(version: Version, other: Version) -> bool:
    if when(version.modified) != when(other.modified):
        return when(version.modified) > when(other.modified)
    return version.latest or (not other.latest and version.delete_marker)


MAX_VERSION_ID_CHARACTERS = 1024
"""The longest version id taken: S3's are 32 characters, other servers' longer, none near this."""


def _may_be_version_id(version_id: str) -> bool:
    """True if ``version_id`` has the form of an S3 version id: 1 to 1,024 printable ASCII characters."""
    return (
        0 < len(version_id) <= MAX_VERSION_ID_CHARACTERS and version_id.isascii() and version_id.isprintable()
    )
