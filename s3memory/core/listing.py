"""Directory emulation: object keys below a prefix become the two-level ``view`` listing.

Pure functions, no I/O. S3 has no directories: a directory is a key prefix that has objects below it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from s3memory.core.paths import shown_name
from s3memory.core.text import VIEW_CHARACTER_CAP, cut_to_cap, human_size

DIRECTORY_SIZE = 4096
"""The size shown for a directory: what the SDK's local tool shows on a common filesystem."""

HIDDEN_NAMES = frozenset({"node_modules"})


def is_hidden(name: str) -> bool:
    return name.startswith(".") or name in HIDDEN_NAMES


@dataclass
class _Node:
    file_size: int | None = None
    is_directory: bool = False
    children: dict[str, _Node] = field(default_factory=dict)


@dataclass
class Tree:
    """The visible entries of a directory, two levels deep, built from listing results; ``cut``
    when the listing stopped before it saw them all (its answer then says so)."""

    root: _Node = field(default_factory=_Node)
    cut: bool = False

    def add_file(self, relative: tuple[str, ...], size: int) -> None:
        """Record an object at ``relative`` (segments below the viewed directory)."""
        if len(relative) > 2:
            self.add_directory(relative[:2])
            return
        parent = self._directory(relative[:-1])
        if parent is not None:
            parent.children.setdefault(relative[-1], _Node()).file_size = size

    def add_directory(self, relative: tuple[str, ...]) -> None:
        """Record a directory (a common prefix) at ``relative``, one or two segments deep."""
        self._directory(relative[:2])

    def _directory(self, relative: tuple[str, ...]) -> _Node | None:
        node = self.root
        for name in relative:
            if is_hidden(name):
                return None
            node = node.children.setdefault(name, _Node())
            node.is_directory = True
        return node

    def mounted(self, mounts: dict[str, Tree | None], lookalike: Callable[[str], bool] | None = None) -> Tree:
        """This tree with each of ``mounts`` (a name below the listed directory, and the tree of the
        memory mounted there) in place of whatever this tree has at that name; an entry of this tree
        whose name ``lookalike`` says looks like a mount point's is kept under its name escaped whole
        (``shown_name``), which no other name is."""
        children = {
            shown_name(name, whole=True) if lookalike is not None and lookalike(name) else name: node
            for name, node in self.root.children.items()
            if name not in mounts
        }
        for name, tree in mounts.items():
            inner = {} if tree is None else dict(tree.root.children)
            children[name] = _Node(is_directory=True, children=inner)
        cut = self.cut or any(tree is not None and tree.cut for tree in mounts.values())
        return Tree(_Node(self.root.file_size, self.root.is_directory, children), cut)

    def directories(self) -> list[tuple[str, ...]]:
        """The visible directories of levels 1 and 2, relative to the listed directory."""
        found: list[tuple[str, ...]] = []
        for name, child in self.root.children.items():
            if child.is_directory:
                found.append((name,))
                found.extend((name, inner) for inner, node in child.children.items() if node.is_directory)
        return found

    def rows(self, base: str) -> list[tuple[int, str]]:
        """The listing rows below the header's own row, in tree order, each with its level (1 or 2)."""
        rows: list[tuple[int, str]] = []
        self._collect(self.root, base, 1, rows)
        return rows

    def _collect(self, node: _Node, base: str, depth: int, rows: list[tuple[int, str]]) -> None:
        for name in sorted(node.children):
            if is_hidden(name):
                continue
            child = node.children[name]
            path = f"{base}/{shown_name(name)}"
            if child.file_size is not None:
                rows.append((depth, f"{human_size(child.file_size)}\t{path}"))
            if child.is_directory:
                rows.append((depth, f"{human_size(DIRECTORY_SIZE)}\t{path}/"))
                if depth < 2:
                    self._collect(child, path, depth + 1, rows)


LISTING_HEADER = "Here're the files and directories up to 2 levels deep in {path}, excluding hidden items and node_modules:"
"""The first line of a directory's ``view`` answer."""


def render_listing(path_text: str, canonical: str, tree: Tree, last: str = "") -> str:
    """The ``view`` answer for a directory (``path_text`` as the header quotes it, ``canonical`` as
    its rows show it, each name below it as ``shown_name`` shows it), and ``last`` (when given) as its last line, within the
    view cap: cut, the directory's own entries are kept before any of their entries, so every
    entry a subdirectory's view cannot show stays shown while they fit, and a closing note says so."""
    header = LISTING_HEADER.format(path=path_text)
    entries = [(0, f"{human_size(DIRECTORY_SIZE)}\t{path_text}"), *tree.rows(canonical)]
    rows = [row for _level, row in entries]
    return cut_to_cap(header, rows, _cut_note, last, lambda index: entries[index][0], cut=tree.cut)


def _cut_note(kept: int) -> str:
    return (
        f"[Listing cut near {VIEW_CHARACTER_CAP:,} characters: {kept} rows shown. "
        "View a subdirectory to see the rest.]"
    )


def listed_past(last_key: str, prefix: str) -> bool:
    """True if a listing that reached ``last_key`` has seen every key that starts with ``prefix``."""
    return last_key > prefix and not last_key.startswith(prefix)
