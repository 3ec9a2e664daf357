"""The operators' writes into one user's memory (``placed.PlacedMemory``), beside the model's
``create``: what ``create`` would refuse, checked without writing (import's dry run, and before a
file is replaced), and a file replaced in one conditional write (import with ``overwrite``)."""

from __future__ import annotations

from s3memory.core.files import Found
from s3memory.core.paths import MemoryPath, check_new_name
from s3memory.core.placement import Survey, require_file_path
from s3memory.errors import CommandError
from s3memory.placed import PlacedMemory


def check_create(
    memory: PlacedMemory,
    path: MemoryPath,
    file_text: str,
    planned: tuple[int, int] = (0, 0),
    *,
    replacing: bool = False,
) -> None:
    """Raise what ``create`` would refuse, changing nothing: a name it may not make (unless
    ``replacing`` the file stored under it), a path that cannot hold a new file,
    the size limit, the content guard (``redact`` is no refusal), the quota counted with the
    ``planned`` (bytes, files) of other writes not yet made, and the place (a directory at
    the path, an ancestor that is a file, a file already there unless ``replacing`` it)."""

    def refusal(reason: str) -> CommandError:
        return CommandError(f"Error: Cannot create {path.quoted}: {reason}.")

    if not replacing:
        check_new_name(path)
    require_file_path(path, refusal)
    size = len(file_text.encode("utf-8"))
    memory.files.check_size(path, size)
    memory.screen(path, file_text)
    memory.usage.check(path, size, 0 if replacing else 1, planned)
    obstacle = Survey(memory.files, path, file_occupies=not replacing).obstacle(
        refusal, refusal(f"{path.shown} is a directory or a file already")
    )
    if obstacle is not None:
        raise obstacle


def overwrite(memory: PlacedMemory, path: MemoryPath, found: Found, file_text: str) -> str:
    """Write ``file_text`` over the file at ``path`` in one request, conditional on the object
    ``found`` was read from (an operator's import replacing a file): the checks of ``create``, the
    quota counted by the growth. Refused, writing nothing, if the file changed since."""
    memory.files.check_size(path, len(file_text.encode("utf-8")))
    if not memory.write_over(path, memory.files.encode(path, memory.screen(path, file_text)), found):
        raise CommandError(
            f"Error: {path.quoted} changed while it was being replaced; nothing was written. Try again."
        )
    return f"File {path.quoted} replaced"
