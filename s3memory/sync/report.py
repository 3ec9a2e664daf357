"""What one sync round did, rendering itself as the other operator reports do (``cli.console.Report.of``):
its lines of text, its ``--json`` document, the counts of its audit line (counts only: no path).

A round that ran to its end is complete (exit 0) whatever it reports: a conflict, a file left alone
or deletions the guard withheld are the round's answers, not its failure.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from s3memory.errors import escaped

STOPPED = "stopped (SIGTERM) after the file in progress, before the round's end: the next round finishes it"
WITHHELD_SHOWN = 10
"""The deletions the guard withheld that the text names, one a line (``--json`` names all)."""


@dataclass
class SyncReport:
    """One round, file by file: what went each way, the conflicts (the path and the conflict copy of
    this folder's version), what was left alone (with why), and the deletions the guard withheld
    (with why, ``guard``)."""

    pushed: list[str] = field(default_factory=list)
    """Written from the folder to the memory."""
    pulled: list[str] = field(default_factory=list)
    """Written from the memory to the folder."""
    deleted_local: list[str] = field(default_factory=list)
    """Deleted in the folder, as they were in the memory."""
    deleted_remote: list[str] = field(default_factory=list)
    """Deleted in the memory (versioned: ``s3memory restore`` brings one back), as they were here."""
    conflicts: list[tuple[str, str]] = field(default_factory=list)
    """Changed on both sides: the memory's version at the path on both sides, this folder's kept
    beside it under the second name, on both sides."""
    left_alone: list[tuple[str, str]] = field(default_factory=list)
    withheld: list[str] = field(default_factory=list)
    """Deletions (on either side) the mass-delete guard held back."""
    guard: str | None = None
    unchanged: int = 0
    """Paths in step on both sides, nothing done."""
    adopted: bool = False
    """This round took a folder without a marker as the memory's."""
    pull_only: bool = False
    """A pull-only round: a conflict copy is kept in the folder only."""
    stopped: bool = False
    """Asked to stop (SIGTERM), the round ended after a file's action, before its other files."""

    @property
    def complete(self) -> bool:
        """True if the round ran to its end (whatever it reports): it was not stopped."""
        return not self.stopped

    def counts(self) -> dict[str, int]:
        return {
            "pushed": len(self.pushed),
            "pulled": len(self.pulled),
            "deleted_local": len(self.deleted_local),
            "deleted_remote": len(self.deleted_remote),
            "conflicts": len(self.conflicts),
            "left_alone": len(self.left_alone),
            "withheld": len(self.withheld),
            "unchanged": self.unchanged,
        }

    def document(self) -> dict[str, object]:
        """The round as ``--json`` prints it: the counts, and the paths of each kind."""
        return {
            **self.counts(),
            "adopted": self.adopted,
            "stopped": self.stopped,
            "pushed_paths": self.pushed,
            "pulled_paths": self.pulled,
            "deleted_local_paths": self.deleted_local,
            "deleted_remote_paths": self.deleted_remote,
            "conflict_paths": [{"path": path, "conflict_copy": copy} for path, copy in self.conflicts],
            "left_alone_paths": [{"path": path, "reason": why} for path, why in self.left_alone],
            "withheld_paths": self.withheld,
            "guard": self.guard,
        }

    def lines(self) -> list[str]:
        """The round as the operator reads it: each file that moved, each conflict, each file left
        alone with why, the deletions withheld with why (the first ``WITHHELD_SHOWN`` named), then
        the counts."""
        lines = ["took this folder for the memory (its first round)"] if self.adopted else []
        lines += [f"pushed {escaped(path)}" for path in self.pushed]
        lines += [f"pulled {escaped(path)}" for path in self.pulled]
        lines += [f"deleted {escaped(path)} here (deleted in the memory)" for path in self.deleted_local]
        lines += [f"deleted {escaped(path)} in the memory (deleted here)" for path in self.deleted_remote]
        where = "here only (pull-only)" if self.pull_only else "on both sides"
        lines += [
            f"conflict {escaped(path)}: changed on both sides; the memory's version is at the path, "
            f"this folder's is kept as {escaped(copy)}, {where}"
            for path, copy in self.conflicts
        ]
        lines += [f"left alone {escaped(path)}: {escaped(why)}" for path, why in self.left_alone]
        if self.guard is not None:
            lines.append(f"withheld {_counted(len(self.withheld), 'deletion')}: {escaped(self.guard)}")
            lines += [f"withheld deletion of {escaped(path)}" for path in self.withheld[:WITHHELD_SHOWN]]
            if len(self.withheld) > WITHHELD_SHOWN:
                lines.append(f"... and {len(self.withheld) - WITHHELD_SHOWN:,} more (--json names them)")
        if self.stopped:
            lines.append(STOPPED)
        named = {"deleted_local": "deleted here", "deleted_remote": "deleted in the memory"}
        lines.append(
            ", ".join(
                _counted(count, "conflict")
                if name == "conflicts"
                else f"{count:,} {named.get(name, name.replace('_', ' '))}"
                for name, count in self.counts().items()
            )
        )
        return lines


def _counted(count: int, noun: str) -> str:
    """``count`` and ``noun``, plural but for one."""
    return f"{count:,} {noun}" if count == 1 else f"{count:,} {noun}s"
