"""``s3memory migrate``: move every user of a store from storage format 1 to format 2, verify each,
and mark the store migrated once nothing is left to move.

Each user moves as their own next command would move them (``formats.upgrade.Upgrade``), so the memory
function may serve the store, in format 2, while this runs: a user is moved by whichever comes
first, and by both at once without loss. A run that stops is resumed by running it again.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field

from s3memory.errors import CommandError, escaped
from s3memory.formats.names import user_of_namespace
from s3memory.formats.upgrade import UserMigration
from s3memory.ops.inventory import usable_user_id
from s3memory.ops.operations import Operations
from s3memory.ops.progress import SILENT, Progress
from s3memory.ops.verify import Verification


@dataclass
class StoreMigration:
    """What ``migrate_store`` did: each format-1 user's move and the verification of their memory
    after it, and whether the store is now marked migrated."""

    moved: dict[str, UserMigration] = field(default_factory=dict)
    verified: dict[str, Verification] = field(default_factory=dict)
    marked: bool = False

    @property
    def complete(self) -> bool:
        return (
            self.marked
            and all(report.clean for report in self.moved.values())
            and not any(report.problems for report in self.verified.values())
        )

    def counts(self) -> dict[str, int]:
        """The users, the files moved (now and before), left in format 1, and the problems verify found."""
        moved = self.moved.values()
        return {
            "users": len(self.moved),
            "moved": sum(user.moved for user in moved),
            "already": sum(user.already for user in moved),
            "left": sum(len(user.left) for user in moved),
            "problems": sum(len(verified.problems) for verified in self.verified.values()),
        }

    def lines(self) -> list[str]:
        """What was left in format 1 and why, what verify found, and the totals."""
        lines = [
            f"{escaped(user)}: left {escaped(where)}: {escaped(why)}"
            for user, done in self.moved.items()
            for where, why in done.left
        ]
        lines += [
            finding.line(user) for user, verified in self.verified.items() for finding in verified.problems
        ]
        counts = self.counts()
        lines.append(
            f"{counts['users']:,} users, {counts['moved']:,} files moved ({counts['already']:,} moved before), "
            f"{counts['left']:,} left in format 1, {counts['problems']:,} problems; "
            + ("the store is marked migrated" if self.marked else "run migrate again once they are resolved")
        )
        return lines

    def document(self) -> dict[str, object]:
        users = {
            user: {**asdict(done), "problems": len(self.verified[user].problems)}
            for user, done in self.moved.items()
        }
        return {"users": users, "marked": self.marked}


def format_1_users(operations: Operations) -> list[str]:
    """The user ids with a format-1 namespace in the store (one that is no format-2 namespace; some
    servers, SeaweedFS among them, still list it once it is empty)."""
    key = operations.store_key()
    found: list[str] = []
    for page in operations.bucket.pages(operations.prefix, delimiter=True):
        for common in page.prefixes:
            name = common[len(operations.prefix) : -1]
            if (key is None or user_of_namespace(key, name) is None) and usable_user_id(
                name, operations.prefix
            ):
                found.append(name)
    return found


def migrate_store(operations: Operations, progress: Progress = SILENT) -> StoreMigration:
    """Move every format-1 user of ``operations``' store to format 2 and verify their memory; mark
    the store migrated when every file moved and nothing is left in format 1."""
    if not operations.format.moves_older_formats:
        raise CommandError(
            "Error: migrate moves a store to storage format 2, and this one is served in format 1 "
            "(S3MEMORY_STORAGE_FORMAT=1, or auto on a store of format-1 users); set "
            "S3MEMORY_STORAGE_FORMAT=2 (--storage-format 2) here and for every process that serves "
            "the store. Nothing was changed."
        )
    operations.check_nesting()
    report = StoreMigration()
    users = format_1_users(operations)
    progress.expect(len(users))
    for user_id in users:
        upgrade = operations.placed(user_id).upgrade
        assert upgrade is not None  # format 2
        if not upgrade.pending():  # moved already (some servers list emptied prefixes)
            upgrade.carry_access()  # unless a move died before it carried the access time
            progress.advance()
            continue
        moved = upgrade.run()
        if not moved.left and upgrade.pending():
            moved.left.append(("/memories", "format-1 files appeared while it was moved; run migrate again"))
        report.moved[user_id] = moved
        report.verified[user_id] = operations.verify(user_id)
        progress.advance()
    if all(moved.clean for moved in report.moved.values()):
        operations.store.mark_migrated()
        report.marked = True
    return report
