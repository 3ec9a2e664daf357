"""Export and import: a user's memory moved to and from a folder in the layout of the SDK's
``BetaLocalFilesystemMemoryTool``, and what moved, as text lines and JSON.

Export and import can be run again after a crash or an interruption: a file already in place with
the same bytes is counted ``unchanged``, so a rerun finishes the work and changes nothing twice.
Import sends every file through the memory tool's own ``create``, so it refuses what the tool would
refuse (bad paths, files over the size limit, secrets per the content guard, a quota) and never
overwrites unless asked.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from pathlib import Path

from s3memory.core.paths import UserId, check_user_id, memory_path, owner_of
from s3memory.errors import CommandError, StorageError, escaped, with_fix
from s3memory.ops import folder_writes, folders, writes
from s3memory.ops.context import no_such_memory
from s3memory.ops.inventory import InventoryTask
from s3memory.ops.progress import SILENT, Progress


@dataclass
class Transfer:
    """What an export or import did (or, an import's dry run, would do), file by file."""

    dry_run: bool = False
    written: list[str] = field(default_factory=list)
    unchanged: list[str] = field(default_factory=list)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    """Files left alone, with why: they differ (no ``overwrite``), (export) a link, a directory or
    another file is in the way, or (import) an export's temporary file (``folders.TEMPORARY``)."""
    refused: list[tuple[str, str]] = field(default_factory=list)
    """Files refused, with the message: by the memory tool (import), or (export) stored files that
    cannot be read, failing authentication, and files whose name the local file system refuses."""

    def counts(self) -> dict[str, int]:
        return {
            "written": len(self.written),
            "unchanged": len(self.unchanged),
            "skipped": len(self.skipped),
            "refused": len(self.refused),
        }

    @property
    def complete(self) -> bool:
        return not self.skipped and not self.refused

    def document(self) -> dict[str, object]:
        """The transfer as ``--json`` prints it: the counts, and the paths of each kind."""
        return {
            **self.counts(),
            "written_paths": self.written,
            "unchanged_paths": self.unchanged,
            "skipped_paths": [{"path": path, "reason": why} for path, why in self.skipped],
            "refused_paths": [{"path": path, "reason": why} for path, why in self.refused],
        }

    def lines(self) -> list[str]:
        """The transfer as the operator reads it: each file written (``would write``), skipped and
        refused, with why, then the counts."""
        verb, written = ("would write", "would be written") if self.dry_run else ("written", "written")
        lines = [f"{verb} {escaped(path)}" for path in self.written]
        lines += [f"skipped {escaped(path)}: {escaped(why)}" for path, why in self.skipped]
        lines += [f"refused {escaped(path)}: {escaped(why)}" for path, why in self.refused]
        named = {"written": written}
        lines.append(", ".join(f"{count} {named.get(name, name)}" for name, count in self.counts().items()))
        return lines


class TransferTask(InventoryTask):
    """Export a user's memory to a folder, import one from it."""

    def export(
        self, user_id: str, base: Path, *, overwrite: bool = False, progress: Progress = SILENT
    ) -> Transfer:
        """Write the user's memory below ``base/memories``, byte for byte, and nowhere else
        (``folder_writes.Target``: no link below ``base`` is followed); what is in the way is left alone
        and reported, and a different local file is left alone unless ``overwrite``. A stored file
        that cannot be read (one failing authentication), and one whose name the local file system
        refuses (too long, not in its encoding), is refused and reported with its fix, and the
        export goes on; a failure of the store ends it. A user who does not exist is refused
        (``check_exists``), an empty memory exports nothing."""
        memory = self.existing_placed(user_id)
        transfer = Transfer()
        if memory is None:
            raise CommandError(no_such_memory(user_id))
        stored_files = self.files(user_id)
        progress.expect(len(stored_files))
        if not stored_files:
            return transfer
        with folder_writes.Target(base) as target:
            for stored in stored_files:
                progress.advance()
                try:
                    found = memory.files.read(memory_path(stored.path))
                    if found is None:
                        continue  # deleted since it was listed
                    written = target.put(stored.path, found.text.encode("utf-8"), overwrite=overwrite)
                except folders.LeftAlone as left:
                    transfer.skipped.append((stored.path, left.reason))
                    continue
                except folders.NameRefused as refused:  # this file's name, not the folder's state
                    transfer.refused.append((stored.path, refused.reason))
                    continue
                except StorageError:
                    raise  # the store's failure, not the file's: every file would meet it
                except CommandError as error:  # this file's: failing authentication, not UTF-8
                    transfer.refused.append((stored.path, with_fix(error)))
                    continue
                (transfer.written if written else transfer.unchanged).append(stored.path)
        return transfer

    def import_folder(
        self,
        user_id: str,
        base: Path,
        *,
        overwrite: bool = False,
        dry_run: bool = False,
        progress: Progress = SILENT,
    ) -> Transfer:
        """Create each file of ``base/memories`` in the user's memory through the tool's ``create``.
        A stored file with other text is left alone unless ``overwrite`` (then replaced in one
        request conditional on what was read, once the text is known to pass every check of
        ``create``: a refused file keeps what was stored, and no moment has it gone). ``dry_run`` checks everything and changes nothing.
        A reserved user id (``paths.RESERVED_USER_PREFIX``) is refused (``ValueError``): import makes
        memories, and none is made under such an id."""
        if isinstance(owner_of(user_id), UserId):
            check_user_id(user_id)
        memory = self.memory(user_id)
        placed = memory.placed
        transfer = Transfer(dry_run)
        planned = (0, 0)
        """What the dry run's earlier files would add to the quota's usage: (bytes, files)."""
        for local in folders.walk(base, placed.files.max_file_bytes):  # one file in memory at a time
            progress.advance()
            if local.problem == folders.TEMPORARY:
                transfer.skipped.append((local.path, local.problem))
                continue
            try:
                target = memory_path(local.path)
                placed.files.check_size(target, local.size)
                text = _text(local)
                found = placed.files.read(target)
                if found is not None and found.text == text:
                    transfer.unchanged.append(local.path)
                    continue
                if found is not None and not overwrite:
                    transfer.skipped.append((local.path, "a file with other text is stored there"))
                    continue
                if dry_run or found is not None:  # what create would refuse, before anything is deleted
                    writes.check_create(placed, target, text, planned, replacing=found is not None)
                if dry_run:
                    planned = (planned[0] + local.size, planned[1] + (found is None))
                    transfer.written.append(local.path)
                    continue
                if found is None:
                    memory.run({"command": "create", "path": local.path, "file_text": text})
                else:  # one conditional write: the stored file is never gone meanwhile
                    memory.answering(functools.partial(writes.overwrite, placed, target, found, text))
                transfer.written.append(local.path)
            except CommandError as error:
                transfer.refused.append((local.path, error.message))
        return transfer


def _text(local: folders.LocalFile) -> str:
    """The file's text; ``CommandError`` naming why it has none."""
    if local.data is None:
        raise CommandError(f"Error: {local.path} is {local.problem}; it was not imported.")
    try:
        return local.data.decode("utf-8")
    except UnicodeDecodeError:
        raise CommandError(
            f"Error: {local.path} is not a valid UTF-8 text file; it was not imported."
        ) from None
