"""Export and import against a folder whoever controls it has prepared: symbolic links (planted, or
swapped in while the command runs), hard links, FIFOs, sockets, deep trees, huge sparse files and
entries this user may not read, and what an export cut off leaves (``docs/operations.md``, E6-E12;
moto, on both storage formats)."""

from __future__ import annotations

import errno
import json
import os
import socket
import threading
import tracemalloc
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from s3memory.core.placement import MAX_DEPTH
from s3memory.crypto import LocalKeyProvider
from s3memory.errors import CommandError
from s3memory.ops import folders
from s3memory.ops.operations import Operations
from s3memory.settings import Limits
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY
from tests.support.console import run as command
from tests.support.formats import both_formats
from tests.support.hostile_files import grows_after_its_size_is_checked

KEYS = "ssh-ed25519 AAAA the user's key\n"
SECRET = "the operator's secret\n"
MiB = 1 << 20
NOTES = "/memories/notes/authorized_keys"
LINKED_NOTES = "/memories/notes is a symbolic link, which export never follows; remove it to export below it"


def make(s3: Any, storage_format: int, limits: Limits | None = None) -> Operations:
    return Operations(
        Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), limits=limits, storage_format=storage_format
    )


def seed(operations: Operations, user: str, files: dict[str, str]) -> None:
    memory = operations.memory(user)
    for path, text in files.items():
        memory.run({"command": "create", "path": path, "file_text": text})


def stored(operations: Operations, user: str) -> dict[str, str]:
    return {file.path: operations.read(user, file.path) for file in operations.files(user)}


class Swap:
    """A ``Progress`` that runs ``swaps`` (in order) as export reaches the files after the first."""

    def __init__(self, *swaps: Callable[[], None]) -> None:
        self.swaps = list(swaps)
        self.done = 0

    def expect(self, total: int) -> None:
        pass

    def advance(self, count: int = 1) -> None:
        self.done += count
        if self.done > 1 and self.swaps:
            self.swaps.pop(0)()


@both_formats
def test_export_follows_no_link_below_its_target(s3: Any, tmp_path: Path, storage_format: int) -> None:
    operations = make(s3, storage_format)
    ssh, config = tmp_path / "home" / ".ssh", tmp_path / "home" / "config"
    ssh.mkdir(parents=True)
    config.write_text("the operator's config\n")
    base = tmp_path / "folder"
    (base / "memories").mkdir(parents=True)
    (base / "memories" / "notes").symlink_to(ssh)  # planted by whoever prepared the folder
    (base / "memories" / "config.md").symlink_to(config)
    imported = operations.import_folder("alice", base)  # refused, and left in place
    assert imported.refused == [
        ("/memories/config.md", "Error: /memories/config.md is a symbolic link; it was not imported."),
        ("/memories/notes", "Error: /memories/notes is a symbolic link; it was not imported."),
    ]
    files = {NOTES: KEYS, "/memories/config.md": "Host *\n", "/memories/ok/fine.md": "fine\n"}
    seed(operations, "alice", files)
    transfer = operations.export("alice", base)
    assert list(ssh.iterdir()) == [] and config.read_text() == "the operator's config\n"
    skipped = [("/memories/config.md", "a symbolic link is there"), (NOTES, LINKED_NOTES)]
    assert (transfer.written, transfer.skipped) == (["/memories/ok/fine.md"], skipped)
    again = operations.export("alice", base, overwrite=True)  # replaces the link itself, never its target
    assert list(ssh.iterdir()) == [] and config.read_text() == "the operator's config\n"
    assert (again.written, again.unchanged, again.skipped) == (
        ["/memories/config.md"],
        ["/memories/ok/fine.md"],
        skipped[1:],
    )
    assert not (base / "memories" / "config.md").is_symlink()
    assert (base / "memories" / "config.md").read_text() == "Host *\n"

    linked = tmp_path / "linked"  # memories/ itself a link: nothing is written
    linked.mkdir()
    (linked / "memories").symlink_to(ssh, target_is_directory=True)
    with pytest.raises(
        FileNotFoundError, match=r"/linked/memories is not a directory \(a memory folder holds "
    ):
        operations.export("alice", linked)
    status, _, err = command(operations, "export", "--user", "alice", str(linked))
    assert status == 1 and "memories/, a directory and no symbolic link)" in err
    assert list(ssh.iterdir()) == []

    given = tmp_path / "given"  # the folder the operator names may be a link: it is followed, once
    given.symlink_to(tmp_path / "elsewhere", target_is_directory=True)
    (tmp_path / "elsewhere").mkdir()
    assert operations.export("alice", given).complete
    assert (tmp_path / "elsewhere" / "memories" / "notes" / "authorized_keys").read_text() == KEYS


def test_export_leaves_what_is_in_the_way_alone_and_reports_it(s3: Any, tmp_path: Path) -> None:
    operations = make(s3, 1)
    seed(
        operations,
        "alice",
        {
            "/memories/plain/x.md": "x\n",
            "/memories/todo.md": "todo\n",
            "/memories/a.md": "a\n",
            "/memories/huge.md": "h\n",
        },
    )
    root = tmp_path / "memories"
    root.mkdir()
    (root / "plain").write_text("a file where the user has a directory\n")
    (root / "todo.md").mkdir()
    with open(root / "huge.md", "wb") as sparse:
        sparse.truncate(256 * MiB)
    in_the_way = [
        ("/memories/plain/x.md", "/memories/plain is not a directory; remove it to export below it"),
        ("/memories/todo.md", "a directory is there"),
    ]
    tracemalloc.start()
    try:
        transfer = operations.export("alice", tmp_path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 16 * MiB  # the local huge.md is compared by its size, not read
    assert transfer.skipped == [("/memories/huge.md", "a different local file is there"), *in_the_way]
    assert operations.export("alice", tmp_path, overwrite=True).skipped == in_the_way
    assert (root / "plain").read_text() == "a file where the user has a directory\n"
    assert list((root / "todo.md").iterdir()) == [] and (root / "a.md").read_text() == "a\n"
    assert (root / "huge.md").read_text() == "h\n"


def test_export_into_a_path_that_is_no_folder_names_it_and_the_fix(s3: Any, tmp_path: Path) -> None:
    """A file, or a file above the path: refused, naming it (helper-40: a bare '[Errno 17] File
    exists'), and nothing written."""
    operations = make(s3, 2)
    seed(operations, "alice", {"/memories/a.md": "a\n"})
    taken = tmp_path / "e1"
    taken.write_text("mine\n")
    for base in (taken, taken / "below"):
        status, out, err = command(operations, "export", "--user", "alice", str(base))
        assert (status, out) == (1, "")
        assert err.splitlines()[0] == (
            f"s3memory export: {base} is not a folder (a file or another entry is there, or above it): give "
            "the path of a folder to export into, or of one to make"
        )
    assert taken.read_text() == "mine\n" and sorted(tmp_path.iterdir()) == [taken]


@both_formats
def test_export_never_writes_through_a_directory_swapped_for_a_link_mid_export(
    s3: Any, tmp_path: Path, storage_format: int
) -> None:
    operations = make(s3, storage_format)
    seed(operations, "alice", {"/memories/notes/a.md": "a\n", "/memories/notes/b.md": KEYS})
    ssh = tmp_path / ".ssh"
    ssh.mkdir()
    notes = tmp_path / "folder" / "memories" / "notes"

    def swap() -> None:  # after a.md was written, notes/ becomes a link to ~/.ssh
        notes.rename(tmp_path / "moved")
        notes.symlink_to(ssh, target_is_directory=True)

    transfer = operations.export("alice", tmp_path / "folder", progress=Swap(swap))
    assert list(ssh.iterdir()) == []
    assert transfer.written == ["/memories/notes/a.md"]
    assert transfer.skipped == [("/memories/notes/b.md", LINKED_NOTES.replace("/authorized_keys", ""))]


def test_export_replaces_a_hard_linked_file_by_its_name_alone(s3: Any, tmp_path: Path) -> None:
    operations = make(s3, 1)
    seed(operations, "alice", {"/memories/a.md": "stored\n"})
    outside = tmp_path / "outside.txt"
    outside.write_text("the operator's file\n")
    (tmp_path / "folder" / "memories").mkdir(parents=True)
    os.link(outside, tmp_path / "folder" / "memories" / "a.md")
    assert operations.export("alice", tmp_path / "folder").skipped == [
        ("/memories/a.md", "a different local file is there")
    ]
    assert operations.export("alice", tmp_path / "folder", overwrite=True).written == ["/memories/a.md"]
    assert (tmp_path / "folder" / "memories" / "a.md").read_text() == "stored\n"
    assert outside.read_text() == "the operator's file\n"


class Swapped:
    """``os.stat`` and ``os.lstat`` wrapped: right after the first check of an entry named in ``swaps``,
    that entry is replaced (the race of a check, then an open by name, made deterministic)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch, swaps: dict[str, Callable[[], None]]) -> None:
        self.swaps = swaps
        for name in ("stat", "lstat"):
            monkeypatch.setattr(os, name, self.wrapped(getattr(os, name)))

    def wrapped(self, real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def checked(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
            result = real(path, *args, **kwargs)
            swap = self.swaps.pop(os.path.basename(os.fspath(path)), None)
            if swap is not None:
                swap()
            return result

        return checked


@both_formats
def test_import_opens_each_entry_once_and_never_through_a_link_swapped_in(
    s3: Any, tmp_path: Path, storage_format: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = make(s3, storage_format)
    secret, secrets = tmp_path / "secret.txt", tmp_path / "secrets"
    secret.write_text(SECRET)
    secrets.mkdir()
    (secrets / "inner.md").write_text(SECRET)
    root = tmp_path / "folder" / "memories"
    (root / "d").mkdir(parents=True)
    (root / "d" / "inner.md").write_text("inner\n")
    for name in ("a.md", "f.md", "z.md"):
        (root / name).write_text(f"{name}\n")
    fifo = root / "f.md"
    writer = threading.Thread(target=lambda: os.close(os.open(fifo, os.O_WRONLY)), daemon=True)

    def link_file() -> None:
        (root / "a.md").unlink()
        (root / "a.md").symlink_to(secret)

    def link_directory() -> None:
        (root / "d").rename(tmp_path / "moved")
        (root / "d").symlink_to(secrets, target_is_directory=True)

    def plant_fifo() -> None:  # a writer that would let a blocking open of it return
        fifo.unlink()
        os.mkfifo(fifo)
        writer.start()

    Swapped(monkeypatch, {"a.md": link_file, "d": link_directory, "f.md": plant_fifo})
    transfer = operations.import_folder("alice", tmp_path / "folder")
    monkeypatch.undo()
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)  # lets the writer's open return, if still waiting
    writer.join()
    os.close(reader)
    assert stored(operations, "alice") == {"/memories/z.md": "z.md\n"}
    assert transfer.refused == [
        ("/memories/a.md", "Error: /memories/a.md is a symbolic link; it was not imported."),
        ("/memories/f.md", "Error: /memories/f.md is not a regular file; it was not imported."),
        ("/memories/d", "Error: /memories/d is a symbolic link; it was not imported."),
    ]
    assert transfer.written == ["/memories/z.md"]


@both_formats
def test_import_reads_at_most_the_size_limit_plus_one_byte(
    s3: Any, tmp_path: Path, storage_format: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = make(s3, storage_format, Limits(max_file_bytes=64))
    root = tmp_path / "memories"
    root.mkdir()
    (root / "fine.md").write_text("fine\n")
    with open(root / "huge.md", "wb") as sparse:
        sparse.truncate(256 * MiB)  # a sparse file: no disk, all zero bytes
    read = {"bytes": 0}
    real_read = os.read

    def counted(descriptor: int, count: int) -> bytes:
        chunk = real_read(descriptor, count)
        read["bytes"] += len(chunk)
        return chunk

    monkeypatch.setattr(os, "read", counted)
    tracemalloc.start()
    try:
        honest = operations.import_folder("alice", tmp_path)
        honest_peak = tracemalloc.get_traced_memory()[1]
        honest_read = read["bytes"]
        grows_after_its_size_is_checked(monkeypatch, 256 * MiB)
        tracemalloc.reset_peak()
        read["bytes"] = 0
        grown = operations.import_folder("bob", tmp_path)
        grown_peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
        monkeypatch.undo()
    assert honest_peak < 16 * MiB and grown_peak < 16 * MiB  # was 770 MiB
    assert honest_read == len("fine\n")  # its size is known from what was opened: none of it is read
    assert read["bytes"] <= 64 + 1 + len("fine\n")  # its first 65 bytes, then its size now
    message = (
        "Error: The file /memories/huge.md would be 268,435,456 bytes; the limit is 64 bytes. "
        "Nothing was changed."
    )
    for transfer in (honest, grown):
        assert (transfer.written, transfer.refused) == (
            ["/memories/fine.md"],
            [("/memories/huge.md", message)],
        )
    assert stored(operations, "bob") == {"/memories/fine.md": "fine\n"}


def test_import_refuses_fifos_hard_links_and_directories_too_deep(s3: Any, tmp_path: Path) -> None:
    operations = make(s3, 1)
    root = tmp_path / "memories"
    root.mkdir()
    os.mkfifo(root / "fifo.md")
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    os.link(outside, root / "linked.md")
    levels = [f"d{level}" for level in range(1, MAX_DEPTH + 3)]
    root.joinpath(*levels).mkdir(parents=True)
    root.joinpath(*levels, "file.md").write_text("deep\n")
    root.joinpath(*levels[: MAX_DEPTH - 1], "file.md").write_text("as deep as a file may lie\n")
    limit = "/memories/" + "/".join(levels[:MAX_DEPTH])
    transfer = operations.import_folder("alice", tmp_path)
    assert transfer.written == ["/memories/" + "/".join(levels[: MAX_DEPTH - 1]) + "/file.md"]
    assert transfer.refused == [
        ("/memories/fifo.md", "Error: /memories/fifo.md is not a regular file; it was not imported."),
        (
            "/memories/linked.md",
            "Error: /memories/linked.md is a file with other hard links (import a copy of it); it was not "
            "imported.",
        ),
        (
            limit,
            f"Error: {limit} is a directory {MAX_DEPTH} levels below /memories, where no file may lie; it was "
            "not imported.",
        ),
    ]
    with pytest.raises(CommandError, match="does not exist"):
        operations.read("alice", "/memories/linked.md")
    linked = tmp_path / "linked"  # memories/ itself a link: refused whole
    linked.mkdir()
    (linked / "memories").symlink_to(root, target_is_directory=True)
    with pytest.raises(
        FileNotFoundError, match=r"/linked/memories is not a directory \(a memory folder holds "
    ):
        operations.import_folder("alice", linked)


def denied(
    monkeypatch: pytest.MonkeyPatch,
    name: str,
    names: set[str] | None,
    when: Callable[[int], bool] = lambda _: True,
) -> None:
    """``os.<name>`` (``open`` or ``stat``) refuses the entries ``names`` (None: every entry) as the
    kernel refuses this user an entry it may not read or write (``EACCES``; the tests run as root,
    whom nothing is denied), ``open`` only with the flags ``when`` takes."""
    real = getattr(os, name)

    def refusing(path: Any, *args: Any, **kwargs: Any) -> Any:
        flags = args[0] if args else kwargs.get("flags", 0)
        refused = names is None or os.path.basename(os.fspath(path)) in names
        if refused and (name != "open" or when(flags)):
            raise PermissionError(errno.EACCES, os.strerror(errno.EACCES), os.fspath(path))
        return real(path, *args, **kwargs)

    monkeypatch.setattr(os, name, refusing)


@both_formats
def test_import_refuses_a_socket_swapped_in_and_what_this_user_may_not_read_and_goes_on(
    s3: Any, tmp_path: Path, storage_format: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = make(s3, storage_format)
    root = tmp_path / "memories"
    for directory in ("locked", "private"):
        (root / directory).mkdir(parents=True)
    for name in ("a.md", "secret.md", "socket.md", "z.md", "locked/inner.md", "private/p.md"):
        (root / name).write_text(f"{name}\n")
    monkeypatch.chdir(root)  # a socket's path is at most 107 bytes: bound by its name
    listening = socket.socket(socket.AF_UNIX)

    def plant_socket() -> None:  # open fails with ENXIO, which stopped the whole import
        (root / "socket.md").unlink()
        listening.bind("socket.md")

    Swapped(monkeypatch, {"socket.md": plant_socket})
    denied(monkeypatch, "open", {"secret.md", "private"})  # a file, a directory this user may not read
    denied(monkeypatch, "stat", {"inner.md"})  # in a directory it may list but not search
    try:
        transfer = operations.import_folder("alice", tmp_path)
    finally:
        monkeypatch.undo()
        listening.close()
    unreadable = "is not readable by this user (permission denied: make it readable, then import again)"
    assert transfer.refused == [
        ("/memories/secret.md", f"Error: /memories/secret.md {unreadable}; it was not imported."),
        ("/memories/socket.md", "Error: /memories/socket.md is not a regular file; it was not imported."),
        ("/memories/locked/inner.md", f"Error: /memories/locked/inner.md {unreadable}; it was not imported."),
        ("/memories/private", f"Error: /memories/private {unreadable}; it was not imported."),
    ]
    assert transfer.written == ["/memories/a.md", "/memories/z.md"]
    assert stored(operations, "alice") == {"/memories/a.md": "a.md\n", "/memories/z.md": "z.md\n"}


def test_export_skips_what_this_user_may_not_read_or_write_and_goes_on(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = make(s3, 1)
    seed(
        operations,
        "alice",
        {"/memories/a.md": "a\n", "/memories/private/p.md": "p\n", "/memories/z.md": "z\n"},
    )
    root = tmp_path / "memories"
    (root / "private").mkdir(parents=True)
    (root / "a.md").write_text("a local file\n")
    denied(monkeypatch, "open", {"a.md", "private"})  # a file, a directory this user may not read
    private = (
        "/memories/private may not be read or made by this user (permission denied); change its "
        "permissions to export below it"
    )
    transfer = operations.export("alice", tmp_path)
    assert (transfer.written, transfer.skipped) == (
        ["/memories/z.md"],
        [
            ("/memories/a.md", "a local file this user may not read is there (permission denied)"),
            ("/memories/private/p.md", private),
        ],
    )
    again = operations.export("alice", tmp_path, overwrite=True)  # replaced by its name alone
    assert (again.written, again.unchanged, again.skipped) == (
        ["/memories/a.md"],
        ["/memories/z.md"],
        [("/memories/private/p.md", private)],
    )
    monkeypatch.undo()
    assert (root / "a.md").read_text() == "a\n"
    denied(monkeypatch, "open", None, when=lambda flags: bool(flags & os.O_CREAT))  # no new file
    (root / "z.md").write_text("other\n")
    elsewhere = operations.export("alice", tmp_path / "elsewhere").skipped
    overwritten = operations.export("alice", tmp_path, overwrite=True).skipped
    monkeypatch.undo()
    not_writable = (
        "this user may not write the file there (permission denied); change the permissions, then export "
        "again"
    )
    assert elsewhere == [
        (path, not_writable) for path in ("/memories/a.md", "/memories/private/p.md", "/memories/z.md")
    ]
    assert overwritten == [("/memories/private/p.md", not_writable), ("/memories/z.md", not_writable)]
    assert (root / "z.md").read_text() == "other\n"


LONG_NAME = "/memories/m\ue000" + "n" * 296 + ".md"
"""A file whose name is 303 bytes of UTF-8 (a private-use character, which a report escapes, first):
longer than the 255 bytes a name that common local file systems take."""
LONG_DIRECTORY = "/memories/n\ue000" + "d" * 299
"""A directory whose name is 303 bytes of UTF-8."""
TOO_LONG = "too long: ENAMETOOLONG, most take 255 bytes a name"


def refused_name(cause: str) -> str:
    return (
        f"the local file system refuses its name ({cause}); rename the file with the memory tool's "
        "`rename` command (`s3memory cat` shows its text meanwhile), then export again"
    )


def refused_directory(directory: str, cause: str) -> str:
    return (
        f"the local file system refuses the name of the directory {directory} ({cause}); rename that "
        "directory with the memory tool's `rename` command, then export again"
    )


@both_formats
def test_export_goes_on_past_a_name_the_local_file_system_refuses(
    s3: Any, tmp_path: Path, storage_format: int
) -> None:
    """Issue 37, S3: export stopped at the first file whose name the local file system refused
    (``ENAMETOOLONG``), and the files after it were not exported: a user with a read-write mount
    could end the team's backup there. Each such file is refused with its fix and counted, and the
    export goes on (exit 1, as for any refused file)."""
    operations = make(s3, storage_format)
    inner = LONG_DIRECTORY + "/inner.md"
    seed(
        operations,
        "alice",
        {"/memories/a.md": "a\n", LONG_NAME: "long\n", inner: "i\n", "/memories/z.md": "z\n"},
    )

    transfer = operations.export("alice", tmp_path)

    assert (transfer.written, transfer.refused) == (
        ["/memories/a.md", "/memories/z.md"],
        [
            (LONG_NAME, refused_name(TOO_LONG)),
            (inner, refused_directory(LONG_DIRECTORY, TOO_LONG)),
        ],
    )
    assert sorted(os.listdir(tmp_path / "memories")) == ["a.md", "z.md"]
    assert (tmp_path / "memories" / "z.md").read_text() == "z\n"
    status, out, _ = command(operations, "export", "--user", "alice", str(tmp_path / "again"))
    assert status == 1
    assert out.splitlines() == [
        "written /memories/a.md",
        "written /memories/z.md",
        f"refused /memories/m\\ue000{'n' * 296}.md: {refused_name(TOO_LONG)}",
        f"refused /memories/n\\ue000{'d' * 299}/inner.md: "
        + refused_directory(f"/memories/n\\ue000{'d' * 299}", TOO_LONG),
        "2 written, 0 unchanged, 0 skipped, 2 refused",
    ]
    status, out, _ = command(operations, "export", "--user", "alice", str(tmp_path / "again"), "--json")
    document = json.loads(out)
    assert (status, document["refused"], document["unchanged"]) == (1, 2, 2)
    assert document["refused_paths"] == [
        {"path": LONG_NAME, "reason": refused_name(TOO_LONG)},
        {
            "path": inner,
            "reason": refused_directory(LONG_DIRECTORY, TOO_LONG),
        },
    ]


@pytest.mark.parametrize(
    ("refusal", "cause"),
    [
        (errno.EILSEQ, "not in an encoding it takes: EILSEQ"),
        (errno.EINVAL, "a character it does not take: EINVAL"),
    ],
)
def test_export_goes_on_past_a_name_not_in_the_file_systems_encoding_or_characters(
    s3: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, refusal: int, cause: str
) -> None:
    """As above, for the other refusals of a name (a file system that takes only UTF-8, or not
    ``:``): the file system of the test takes every name, so ``os.stat`` and ``os.open`` refuse
    ``b:c.md`` and ``d:e`` as such a file system does."""
    operations = make(s3, 1)
    seed(
        operations,
        "alice",
        {
            "/memories/a.md": "a\n",
            "/memories/b:c.md": "b\n",
            "/memories/d:e/f.md": "f\n",
            "/memories/z.md": "z\n",
        },
    )
    for name in ("stat", "open"):
        real = getattr(os, name)

        def refusing(path: Any, *args: Any, real: Any = real, **kwargs: Any) -> Any:
            if os.path.basename(os.fspath(path)) in ("b:c.md", "d:e"):
                raise OSError(refusal, os.strerror(refusal), os.fspath(path))
            return real(path, *args, **kwargs)

        monkeypatch.setattr(os, name, refusing)

    transfer = operations.export("alice", tmp_path)

    monkeypatch.undo()
    assert (transfer.written, transfer.refused) == (
        ["/memories/a.md", "/memories/z.md"],
        [
            (
                "/memories/b:c.md",
                refused_name(cause),
            ),
            ("/memories/d:e/f.md", refused_directory("/memories/d:e", cause)),
        ],
    )


@both_formats
def test_import_never_takes_an_exports_temporary_files_and_the_next_export_removes_them(
    s3: Any, tmp_path: Path, storage_format: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = make(s3, storage_format)
    temporary_name = "/memories/.s3memory-0123456789abcdef"  # a memory file of the name: never exported
    seed(operations, "alice", {"/memories/a.md": "a\n", "/memories/notes/b.md": KEYS, temporary_name: "t\n"})
    root = tmp_path / "memories"
    for directory in ("notes", "old"):
        (root / directory).mkdir(parents=True)
    (root / "a.md").write_text("a\n")  # what an export killed while writing notes/b.md leaves
    left = [root / "notes" / ".s3memory-5f0c6a2e9b1d4e73", root / "old" / ".s3memory-00ff00ff00ff00ff"]
    for path in left:
        path.write_text(KEYS[:9])  # cut off, 0600, as export writes it
        path.chmod(folders.FILE_MODE)
    outside = tmp_path / "outside.txt"
    outside.write_text(SECRET)
    linked = root / "notes" / ".s3memory-a1b2c3d4e5f60718"
    linked.symlink_to(outside)  # removed, never what it points to
    skipped = (
        "a temporary file of an export cut off or still running, never imported (an export into this folder "
        "removes it)"
    )
    imported = operations.import_folder("bob", tmp_path)
    assert (imported.written, imported.refused) == (["/memories/a.md"], [])
    assert imported.skipped == sorted(
        (f"/memories/{path.parent.name}/{path.name}", skipped) for path in [*left, linked]
    )
    assert stored(operations, "bob") == {"/memories/a.md": "a\n"}
    status, _, _ = command(operations, "import", "--user", "bob", str(tmp_path))
    assert status == 1

    again = operations.export("alice", tmp_path)  # removes them where it writes, and finishes
    never = "a name export gives its temporary files, never exported (rename the stored file to export it)"
    assert (again.written, again.unchanged, again.skipped) == (
        ["/memories/notes/b.md"],
        ["/memories/a.md"],
        [(temporary_name, never)],
    )
    assert sorted(path.name for path in (root / "notes").iterdir()) == ["b.md"]
    assert outside.read_text() == SECRET
    assert [path.name for path in (root / "old").iterdir()] == [left[1].name]  # where export wrote nothing
    finished = operations.import_folder("bob", tmp_path)
    assert (finished.written, finished.unchanged, finished.skipped) == (
        ["/memories/notes/b.md"],
        ["/memories/a.md"],
        [(f"/memories/old/{left[1].name}", skipped)],
    )

    real_replace = os.replace

    def swept_first(source: Any, *args: Any, **kwargs: Any) -> None:  # as another export would
        assert folders.is_temporary(source)  # export's own name: what an export removes
        os.unlink(source, dir_fd=kwargs["src_dir_fd"])
        real_replace(source, *args, **kwargs)

    monkeypatch.setattr(os, "replace", swept_first)
    lost = operations.export("alice", tmp_path / "raced").skipped
    monkeypatch.undo()
    removed = (
        "its temporary file was removed before it was renamed into place (by another export into this "
        "folder?); export again"
    )
    assert lost == [(temporary_name, never), ("/memories/a.md", removed), ("/memories/notes/b.md", removed)]
    assert list((tmp_path / "raced" / "memories").rglob("*")) == [tmp_path / "raced" / "memories" / "notes"]
