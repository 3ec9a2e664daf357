"""Where a new file may go: the checks of its place, and the write-then-withdraw protocol.

A path is never both a file and a directory. A new file's place is checked with requests of a fixed
size whatever the memory holds: a HEAD per ancestor (is it a file?) and a one-key listing below the
path (is a directory there?). The depth of a new path is bounded, so the checks are too.
"""

from __future__ import annotations

from collections.abc import Callable
from concurrent.futures import Future, wait
from functools import partial

from s3memory.core.files import MemoryFiles
from s3memory.core.paths import MemoryPath
from s3memory.crypto import Sealed
from s3memory.errors import CommandError, PreconditionFailed, StorageError, StorageRefusal
from s3memory.storage.concurrency import quietly, side

MAX_DEPTH = 16
"""The most segments a new file's path has below ``/memories``: its place costs at most 17 requests."""

Refusal = Callable[[str], CommandError]
"""Makes the command's refusal from a reason."""


def require_file_path(path: MemoryPath, refusal: Refusal) -> None:
    """Refuse a path that cannot name a new file: the root, a trailing '/', or one too deep. No
    request is made, and the refusal is final (no pending job could change it)."""
    if path.is_root or path.text.endswith("/"):
        raise CommandError(
            refusal("a file path must name a file below /memories, without a trailing '/'").message
        )
    require_depth(len(path.mount) + len(path.segments), refusal)


def require_depth(depth: int, refusal: Refusal) -> None:
    """Refuse a new file ``depth`` segments below ``/memories`` when that is over ``MAX_DEPTH``."""
    if depth > MAX_DEPTH:
        reason = f"it would lie {depth} levels below /memories; new files may lie at most {MAX_DEPTH} deep"
        raise CommandError(refusal(reason).message)


class Survey:
    """The checks of a new object's place, sent at once as leaf requests: a HEAD per ancestor
    (is it a file?), a one-key listing below the path (is a directory there?) and, when asked for,
    a HEAD of the path itself (is a file there?)."""

    def __init__(self, files: MemoryFiles, path: MemoryPath, *, file_occupies: bool) -> None:
        bucket, layout = files.bucket, files.layout
        self._exists = bucket.exists
        self._key = layout.file_key(path)
        self._ancestors = [
            (ancestor, side(partial(bucket.exists, layout.file_key(ancestor))))
            for ancestor in path.ancestors()
        ]
        self._below = side(partial(bucket.any_below, self._key + "/"))
        self._at_path: Future[bool] | None = None
        if file_occupies:
            self.count_a_file_as_occupying()

    def count_a_file_as_occupying(self) -> None:
        """Also refuse the place when a file is at the path (a directory's destination)."""
        if self._at_path is None:
            self._at_path = side(partial(self._exists, self._key))

    def _futures(self) -> list[Future[bool]]:
        found = [self._below, *(is_file for _ancestor, is_file in self._ancestors)]
        return found if self._at_path is None else [*found, self._at_path]

    def obstacle(self, refusal: Refusal, occupied: CommandError) -> CommandError | None:
        """``occupied`` for a directory (or a counted file) at the path, ``refusal`` for an ancestor
        that is a file (the outermost), else None. Waits for every check; a failed one is raised."""
        wait(self._futures())
        if self._below.result() or (self._at_path is not None and self._at_path.result()):
            return occupied
        for ancestor, is_file in self._ancestors:
            if is_file.result():
                return refusal(f"{ancestor.shown} is a file, not a directory")
        return None

    def abandon(self) -> None:
        """Wait for the checks whose answers are no longer needed."""
        for future in self._futures():
            quietly(future)


def write_new_file(
    files: MemoryFiles,
    path: MemoryPath,
    sealed: Sealed,
    refusal: Refusal,
    occupied: CommandError,
    origin: MemoryPath | None = None,
    survey: Survey | None = None,
) -> str | None:
    """Write ``sealed`` as a new file at ``path``, which the caller has passed through
    ``require_file_path``; its ETag, or None if a file is there already.

    With ``survey`` (the checks of the path's place, already under way) the checks come first.
    Without, the conditional write and the checks go out at once, so a create costs one round
    trip; a write that the checks then refuse (a directory at the path, an ancestor that is a
    file) or cannot confirm is removed again before the refusal is raised, also when the write's
    own answer was lost (its bytes are looked for). A file already at the path is left as it is,
    also one with the same text: an earlier try that died before it could remove its write cannot
    be told from a file another create wrote and was answered for.
    """
    key = files.layout.file_key(path)
    if survey is not None:
        obstacle = survey.obstacle(refusal, occupied)
        if obstacle is not None:
            raise obstacle
        return files.put_new(key, sealed, origin)
    checks = Survey(files, path, file_occupies=False)
    written = side(partial(files.put_new, key, sealed, origin))
    unchecked: StorageError | None = None
    try:
        obstacle = checks.obstacle(refusal, occupied)
    except StorageError as failure:
        obstacle, unchecked = None, failure
    try:
        etag = written.result()
    except StorageError:
        if obstacle is None:
            raise
        etag = files.landed(key, sealed.body)  # the write may have landed with its answer lost
        if etag is None:
            raise obstacle from None
        raise _withdrawn(files, path, key, etag, obstacle) from None
    if etag is None:
        if obstacle is None:
            if unchecked is not None:
                raise unchecked  # the key is taken, by a file or (some servers say) a directory
            return None
        # a file is there where the place is refused: never this command's to remove, even with
        # the same text (two creates at once may both have been acknowledged: docs/storage.md)
        raise obstacle
    problem = obstacle or unchecked
    if problem is not None:
        raise _withdrawn(files, path, key, etag, problem)
    return etag


def _withdrawn(
    files: MemoryFiles, path: MemoryPath, key: str, etag: str, obstacle: CommandError
) -> CommandError:
    """Remove the object this command wrote at ``key``; the error to raise for ``obstacle``."""
    try:
        files.delete(key, if_match=etag)
    except PreconditionFailed:
        pass  # another writer has changed it since (or our lost delete removed it): not ours now
    except StorageError:
        return StorageRefusal(
            f"{obstacle.message} The file written while this was checked could not be removed "
            f"again; delete {path.quoted}."
        )
    return obstacle
