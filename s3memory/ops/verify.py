"""``verify``: every object of a memory read and authenticated, and the server probed again against
what the store's format needs; what it found as text lines and JSON. It changes nothing (but the
server's record where the server changed).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field

from s3memory.core.job_records import JOB_PREFIX, QUARANTINE_PREFIX
from s3memory.core.keyvault import key_version
from s3memory.core.last_used import ACCESS_NAME
from s3memory.core.moves import MARK_PREFIX
from s3memory.core.paths import RESERVED_USER_PREFIX, UserId, owner_of
from s3memory.errors import AccessDenied, CommandError, escaped
from s3memory.ops.context import StoreContext
from s3memory.ops.progress import SILENT, Progress
from s3memory.placed import PlacedMemory
from s3memory.storage.bucket import Listed
from s3memory.storage.conditions import (
    LOOKED_FOR_IN_SINGLE_WRITER_MODE,
    SINGLE_WRITER,
    Enforced,
)
from s3memory.storage.server_checks import probe_again

STUCK_AFTER_SECONDS = 15 * 60
"""A job record this old was left by a process that died: any command of the user would finish it."""
RESERVED_MEMORY = (
    f"a user id beginning with '{RESERVED_USER_PREFIX}', reserved: no memory tool, function or MCP server "
    "serves it; move this memory to a new id (export it, import it under the new id, erase this one: "
    'docs/operations.md, "Reserved user ids")'
)
"""Why ``verify`` reports a memory whose user id is reserved, and what the operator does."""


@dataclass(frozen=True)
class Finding:
    """One object ``verify`` has something to say about: its kind, the object's key and why."""

    kind: str
    key: str
    detail: str
    problem: bool = True

    def line(self, user_id: str) -> str:
        """The finding as the operator reads it (``verify``, and the verification after ``migrate``):
        the memory, the kind, the object's key (a bucket writer may have chosen it) and why."""
        return f"{escaped(user_id)}: {self.kind} {escaped(self.key)}: {escaped(self.detail)}"

    def document(self) -> dict[str, object]:
        return {"kind": self.kind, "key": self.key, "detail": self.detail, "problem": self.problem}


@dataclass
class Verification:
    """What ``verify`` found for one user: every object checked, and the findings."""

    user_id: str
    checked: int = 0
    findings: list[Finding] = field(default_factory=list)

    @property
    def problems(self) -> list[Finding]:
        return [finding for finding in self.findings if finding.problem]


@dataclass(frozen=True)
class ServerCheck:
    """What ``verify`` found of the server: what it enforces now (None: not checked, this role may
    not write the probe's objects), what the store's record said before (None: no record), and
    what the store's format needs that it does not enforce."""

    enforced: Enforced | None
    recorded: Enforced | None
    missing: list[str]

    @property
    def changed(self) -> bool:
        """True if the server no longer enforces what the record said (a record written since)."""
        return None not in (self.recorded, self.enforced) and self.recorded != self.enforced


@dataclass(frozen=True)
class VerifyReport:
    """What ``s3memory verify`` found: each memory's verification, and the server's check against what
    storage format ``storage_format`` needs."""

    verified: list[Verification]
    server: ServerCheck
    storage_format: int

    def _server_problems(self) -> list[str]:
        answers = {} if self.server.enforced is None else self.server.enforced.answers
        problems = [
            f"server: does not enforce {condition} (it answered: {escaped(answers.get(condition, ''))}), "
            f"which storage format {self.storage_format} needs"
            for condition in self.server.missing
        ]
        if self.server.changed:
            problems.append(
                "server: enforces other conditions than the store's record said; the record now says what it "
                "enforces (restart the processes that serve the store, so that they learn it)"
            )
        return problems

    def counts(self) -> dict[str, int]:
        """The memories, the objects checked, and the problems (the server's among them)."""
        problems = sum(len(report.problems) for report in self.verified) + len(self._server_problems())
        checked = sum(report.checked for report in self.verified)
        return {"users": len(self.verified), "checked": checked, "problems": problems}

    @property
    def complete(self) -> bool:
        """True if no problem was found."""
        return not self.counts()["problems"]

    def lines(self) -> list[str]:
        """The report as the operator reads it: the server's problems (or that it was not checked),
        every finding, and the totals."""
        unchecked = ["server: not checked (this role may not write the probe's objects)"]
        lines = (
            (unchecked if self.server.enforced is None else [])
            + self._server_problems()
            + [finding.line(report.user_id) for report in self.verified for finding in report.findings]
        )
        counts = self.counts()
        problems = counts["problems"]
        lines.append(
            f"{counts['checked']:,} objects of {counts['users']:,} users checked: "
            + (f"{problems:,} problems" if problems else "no problem")
        )
        return lines

    def document(self) -> dict[str, object]:
        """The report as ``--json`` prints it."""
        return {
            "users": [
                {
                    "user_id": report.user_id,
                    "checked": report.checked,
                    "findings": [finding.document() for finding in report.findings],
                }
                for report in self.verified
            ],
            "server": {
                "enforced": None if self.server.enforced is None else sorted(self.server.enforced.held),
                "missing": self.server.missing,
                "changed": self.server.changed,
            },
            "problems": self.counts()["problems"],
        }


class VerifyTask(StoreContext):
    """Verify a memory's objects, and what the server enforces."""

    def check_server(self) -> ServerCheck:
        """Probe the server again (``verify``: a dozen requests on objects of the probe's own, which
        it removes, and of those earlier probes cut short left) and compare with the store's record,
        which is replaced where they differ. A role that may not write (an auditor's) checks nothing."""
        try:
            found, before = probe_again(
                self.bucket, self.prefix, self.store_identity, self.key_provider, time.time()
            )
        except AccessDenied:
            return ServerCheck(None, None, [])
        missing = found.missing(self.format.server_needs)
        if self.weak_server == SINGLE_WRITER:
            missing = [
                condition for condition in missing if condition not in LOOKED_FOR_IN_SINGLE_WRITER_MODE
            ]
        return ServerCheck(found, before, missing)

    def verify(self, user_id: str, *, now: float | None = None, progress: Progress = SILENT) -> Verification:
        """Read and authenticate every object of the user's namespace, changing nothing.

        Problems: a memory file that fails authentication (tampered, truncated, copied from another
        user or path, wrongly keyed), a key that maps to no memory path, a job record that can never
        run or is stuck (older than ``STUCK_AFTER_SECONDS``), a record set aside in quarantine, a
        wrapped data key that cannot be unwrapped, and any other object in the namespace. A job in
        progress and a wrapped key older than the current one (a rotation not yet finished) are
        reported, not counted as problems.

        Format 2: a key whose tokens do not decrypt to a path is one that maps to no memory path,
        and a file whose place record fails (placed for another path, user or store, or altered)
        fails authentication like a tampered body.
        """
        memory = self.existing_placed(user_id)
        report = Verification(user_id)
        if memory is None:
            return report
        layout = memory.layout
        clock = time.time() if now is None else now
        owner = owner_of(user_id)
        key_versions: dict[int, str] = {}
        for page in self.bucket.pages(layout.namespace):
            for listed in page.objects:
                report.checked += 1
                progress.advance()
                finding = self._check(memory, listed, clock)
                if finding is not None:
                    report.findings.append(finding)
                version = key_version(listed.key.removeprefix(layout.internal_prefix))
                if version is not None and listed.key.startswith(layout.internal_prefix):
                    key_versions[version] = listed.key
        report.findings += [
            Finding(
                "old key",
                key,
                "an earlier data key version, kept while objects or their earlier versions need it "
                "(`s3memory rotate` retires it once nothing does)",
                problem=False,
            )
            for version, key in sorted(key_versions.items())
            if version < max(key_versions)
        ]
        if report.checked and isinstance(owner, UserId) and owner.reserved:
            report.findings.append(Finding("reserved id", layout.namespace, RESERVED_MEMORY))
        return report

    def _check(self, memory: PlacedMemory, listed: Listed, now: float) -> Finding | None:
        layout, key = memory.layout, listed.key
        if key.startswith(layout.memories_prefix):
            path = layout.path_of_key(key)
            if path is None:
                return Finding("foreign", key, "a key that maps to no memory path")
            try:
                memory.files.read(path)
            except CommandError as error:
                return Finding("unreadable", key, error.message)
            return None
        name = key[len(layout.internal_prefix) :] if key.startswith(layout.internal_prefix) else None
        if name is None:
            return Finding("foreign", key, "an object outside memories/ and internal/")
        if name.startswith(JOB_PREFIX):
            judged = memory.jobs.judge(listed)
            if judged.problem is not None:
                return Finding("bad job record", key, f"a job record that can never run: {judged.problem}")
            if judged.job is None:
                return None  # finished while listed
            age = now - judged.job.created / 1000
            if age > STUCK_AFTER_SECONDS:
                return Finding("stuck job", key, f"a {judged.job.kind} left {age / 60:,.0f} minutes ago")
            return Finding("pending job", key, f"a {judged.job.kind} in progress", problem=False)
        if name.startswith(QUARANTINE_PREFIX):
            return Finding("quarantined", key, "a job record set aside: planted, tampered or replayed")
        if name.startswith(MARK_PREFIX):
            return None  # a relied-on mark (docs/jobs.md): removed once it can no longer matter
        if name == ACCESS_NAME:
            try:
                memory.access.read()
            except CommandError as error:
                return Finding("unreadable access record", key, error.message)
            return None
        version = key_version(name)
        if version is None:
            return Finding("foreign", key, "an internal object s3memory does not write")
        try:
            memory.files.cipher.check_key(version)
        except CommandError as error:
            return Finding("unreadable key", key, error.message)
        return None
