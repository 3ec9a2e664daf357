"""Browsing: what is at a path (a file, or a directory's files), and a directory's two visible levels.

S3 has no directories: a directory is a key prefix with at least one memory file below it (keys
that map to no valid memory path are never seen here). A directory view usually costs one listing;
a larger one is listed level by level with a ``/`` delimiter, its own entries first, and only until
its answer is cut near the view cap, so its cost follows what the answer shows.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from typing import TypeVar

from s3memory.core.files import Found, MemoryFiles
from s3memory.core.job_records import Source
from s3memory.core.listing import Tree, is_hidden, listed_past
from s3memory.core.paths import MemoryPath
from s3memory.core.text import VIEW_CHARACTER_CAP
from s3memory.crypto import plaintext_size
from s3memory.storage.bucket import Listed, ListingPage

_T = TypeVar("_T")
_SMALLEST_FILE_SIZE = len("0B")
_DIRECTORY_SIZE = len("4.0K")


@dataclass
class _Entry:
    """A name of one directory level: a file (with its plaintext size), a directory, or both.
    ``token`` is the name's key segment (the name itself, or its private token)."""

    name: str
    token: str
    file_size: int | None = None
    is_directory: bool = False

    def least_row_length(self, base: str) -> int:
        """A lower bound of the length of this entry's row(s) in a listing under ``base``."""
        shown = len(base) + 1 + len(self.name) + 2  # "/", and the tab and newline
        file_row = 0 if self.file_size is None else shown + _SMALLEST_FILE_SIZE
        return file_row + (shown + _DIRECTORY_SIZE + 1 if self.is_directory else 0)


class Browser:
    """Reads what lies at a path for the commands, through one user's files."""

    def __init__(self, files: MemoryFiles) -> None:
        self._files = files
        self._bucket = files.bucket
        self._layout = files.layout

    def file_or_sources(
        self, path: MemoryPath, probe: Callable[[], _T | None]
    ) -> tuple[_T | None, list[Source]]:
        """What is at ``path``: ``probe``'s answer for a file, else the files below it (both empty:
        nothing). A path last seen as a directory is listed first, with its own key as the prefix
        (``_listed_at``: a file there wins); any other is probed first."""
        if path in self._files.directories:
            file_first, below = self._listed_at(path)
            if file_first and (found := probe()) is not None:
                return found, []
            sources = self._files.sources_below(path, below)
            return (None, sources) if sources else (probe(), [])
        found = probe()
        return (found, []) if found is not None else (None, self._files.sources_below(path))

    def file_or_tree(self, path: MemoryPath) -> tuple[Found | None, Tree | None]:
        """The file at ``path``, else the directory's tree, else neither.

        A path last seen as a directory is listed first (``_listed_at``), so one request usually
        shows it all; a file there is read and wins. Any other path is read first.
        """
        if path not in self._files.directories:
            found = self._files.read(path)
            return (found, None) if found is not None else (None, self.tree(path))
        file_first, below = self._listed_at(path)
        if file_first and (found := self._files.read(path)) is not None:
            return found, None
        return None, self.tree(path, None if below is None else ListingPage(below))

    def _listed_at(self, path: MemoryPath) -> tuple[bool, list[Listed] | None]:
        """One listing with ``path``'s own key as the prefix: whether a file is at the path (it
        sorts first), and the objects below the path, or None where the page stopped inside the
        directory or before it (the caller lists the directory itself)."""
        key = self._layout.file_key(path)
        page = next(self._bucket.pages(key))
        file_first = bool(page.objects) and page.objects[0].key == key
        below = self._layout.directory_prefix(path)
        if page.truncated and not (page.objects and listed_past(page.objects[-1].key, below)):
            return file_first, None
        return file_first, [listed for listed in page.objects if listed.key.startswith(below)]

    def tree(
        self, directory: MemoryPath, first: ListingPage | None = None, listed_to: str | None = None
    ) -> Tree | None:
        """The directory's two visible levels, or None if no memory file lies below it (the root
        always exists).

        ``first`` is the directory's first listing page when the caller has it, and ``listed_to``
        the last key that listing reached (default: its last object). When the page does not hold
        the whole directory, the levels are listed with a delimiter, the first before the second,
        until the rows found pass the view cap: the answer is cut there anyway.
        """
        prefix = self._layout.directory_prefix(directory)
        if first is None:
            first = next(self._bucket.pages(prefix))
        tree = Tree()
        path_of = _PathsOfKeys(self._layout.path_of_key)
        found = False
        if not first.truncated:
            for listed in first.objects:
                if (path := path_of(listed.key)) is not None:
                    tree.add_file(path.relative_to(directory), plaintext_size(listed.size))
                    found = True
        else:
            found = any(path_of(listed.key) is not None for listed in first.objects)
            last = listed_to or (first.objects[-1].key if first.objects else prefix)
            self._fill_until_cut(tree, directory, first.objects, max(last, prefix), path_of)
        if not (found or tree.root.children or directory.is_root):
            return None  # no memory file below it: no such directory
        self._files.directories.add(
            [directory, *(directory.joined(relative) for relative in tree.directories())]
        )
        return tree

    def _fill_until_cut(
        self, tree: Tree, directory: MemoryPath, seen: list[Listed], last: str, path_of: _PathsOfKeys
    ) -> None:
        """Add the visible entries of the first level to ``tree`` until their rows pass the view
        cap, then those of the second, directory by directory in name order, until all rows pass
        it: what a cut answer shows (``listing.render_listing``), and no more. ``seen`` holds every
        key below the directory up to ``last``, in key order."""
        prefix = self._layout.directory_prefix(directory)
        seen_below: dict[str, list[Listed]] = {}
        for listed in seen:
            token, below, _rest = listed.key[len(prefix) :].partition("/")
            if below:
                seen_below.setdefault(token, []).append(listed)
        used = 0
        listing = _Listing(len(directory.shown))
        directories: list[_Entry] = []
        for entry in self._level(prefix, seen, last, path_of, listing):
            used += entry.least_row_length(directory.shown)
            if entry.file_size is not None:
                tree.add_file((entry.name,), entry.file_size)
            if entry.is_directory:
                tree.add_directory((entry.name,))
                directories.append(entry)
            if used > VIEW_CHARACTER_CAP:
                return
        tree.cut = listing.stopped
        for entry in sorted(directories, key=lambda entry: entry.name):
            inner = f"{prefix}{entry.token}/"
            inner_last = inner if last < inner else (None if listed_past(last, inner) else last)
            base = f"{directory.shown}/{entry.name}"
            listing = _Listing(len(base))
            for child in self._level(inner, seen_below.get(entry.token, []), inner_last, path_of, listing):
                used += child.least_row_length(base)
                if child.file_size is not None:
                    tree.add_file((entry.name, child.name), child.file_size)
                if child.is_directory:
                    tree.add_directory((entry.name, child.name))
                if used > VIEW_CHARACTER_CAP:
                    return
            tree.cut = tree.cut or listing.stopped

    def _level(
        self, prefix: str, seen: Iterable[Listed], last: str | None, path_of: _PathsOfKeys, listing: _Listing
    ) -> Iterator[_Entry]:
        """The visible entries directly below ``prefix``, in name order, listed as they are needed.

        ``seen`` holds the keys below ``prefix`` up to ``last``; ``last`` None means they are all
        of them, else the listing resumes after ``last`` with a delimiter. A name is given out only
        once no key still to come can change it (see ``_settled_below``). A shorter name that
        holds the rest back is probed for a directory (a one-key listing) only when the next page
        did not get past it: usually that page ends the listing and settles everything.
        """
        entries: dict[str, _Entry] = {}
        probed: set[str] = set()
        for listed in seen:
            _note_key(path_of, entries, prefix, listed.key, listed.size)
        # a generator: no request is sent unless the loop below asks it for a page
        pages = self._bucket.pages(prefix, delimiter=True, start_after=last)
        held_back_by: str | None = None
        while last is not None:
            given_below, blocker = _settled_below(prefix, last, probed)
            yield from _give_out(entries, given_below)
            if blocker is not None and blocker == held_back_by:
                probed.add(blocker)
                if not is_hidden(blocker) and self._bucket.any_below(f"{prefix}{blocker}/"):
                    _note_key(path_of, entries, prefix, f"{prefix}{blocker}/", None)
                continue
            held_back_by = blocker
            if listing.spent:
                listing.stopped = True  # keys the answer would have no room for, were they all shown
                return
            page = next(pages)  # pages end only with a page that is not truncated, which ends the loop
            listing.charge(page)
            # a server may show a name again (a common prefix the resumed listing started inside)
            for listed in page.objects:
                _note_key(path_of, entries, prefix, listed.key, listed.size, given_below)
            for common in page.prefixes:
                _note_key(path_of, entries, prefix, common, None, given_below)
            reached = [*(listed.key for listed in page.objects[-1:]), *page.prefixes[-1:]]
            last = max([last, *reached]) if page.truncated else None
        yield from _give_out(entries, None)


class _Listing:
    """What the pages of one level's listing may cost: every key or common prefix they hold is
    charged the least row it could make, shown or not (a hidden name, a key of no memory path), so
    a level lists no more than an answer within the view cap could show; ``stopped`` when it ended
    there, before the level's last key."""

    def __init__(self, base_length: int) -> None:
        self._least_row = base_length + 1 + 1 + 2 + _SMALLEST_FILE_SIZE  # "/", a name, tab, newline
        self._charged = 0
        self.stopped = False

    def charge(self, page: ListingPage) -> None:
        self._charged += (len(page.objects) + len(page.prefixes)) * self._least_row

    @property
    def spent(self) -> bool:
        """True once the pages listed could fill more than the view cap: no further page is listed."""
        return self._charged > VIEW_CHARACTER_CAP


class _PathsOfKeys:
    """``KeyLayout.path_of_key``, remembered for one view: a key is seen at each level it shows a
    name at, and a private name costs a decryption (cached, but not free) per segment."""

    def __init__(self, path_of_key: Callable[[str], MemoryPath | None]) -> None:
        self._path_of_key = path_of_key
        self._known: dict[str, MemoryPath | None] = {}

    def __call__(self, key: str) -> MemoryPath | None:
        try:
            return self._known[key]
        except KeyError:
            path = self._known[key] = self._path_of_key(key)
            return path


def _note_key(
    path_of: _PathsOfKeys,
    entries: dict[str, _Entry],
    prefix: str,
    key: str,
    size: int | None,
    given_below: str = "",
) -> None:
    """Record what ``key`` (an object, or a common prefix when ``size`` is None) shows of its name
    directly below ``prefix``; keys of no valid memory path, hidden names, and names whose key
    segment sorts before ``given_below`` (given out already) show nothing."""
    token, below, _rest = key[len(prefix) :].partition("/")
    path = None if token < given_below else path_of(prefix + token)
    if path is None or is_hidden(path.segments[-1]):
        return
    entry = entries.setdefault(token, _Entry(path.segments[-1], token))
    if not below:
        if size is not None:
            entry.file_size = plaintext_size(size)
    elif size is None or path_of(key) is not None:
        entry.is_directory = True


def _settled_below(prefix: str, last: str, probed: set[str]) -> tuple[str, str | None]:
    """The bound below which every name is settled once the listing has reached ``last``, and the
    name that holds the rest back, if any.

    Keys after ``last`` belong to the last name listed or later ones, or to a shorter name that the
    last one extends with a character sorting before '/' (``notes/...`` keys sort after
    ``notes.md``). Such a shorter name settles once it has been probed for a directory; until
    then, the shortest of them is the bound.
    """
    name, below, _rest = last[len(prefix) :].partition("/")
    for end in range(1, len(name)):
        shorter = name[:end]
        if name[end] < "/" and shorter not in probed:
            return shorter, shorter
    return (name + "\x00" if below else name), None


def _give_out(entries: dict[str, _Entry], bound: str | None) -> Iterator[_Entry]:
    """Take the entries named before ``bound`` (all of them when None) out of ``entries``, in order."""
    for name in sorted(name for name in entries if bound is None or name < bound):
        yield entries.pop(name)
