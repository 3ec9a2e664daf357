"""``s3memory local-s3``: a local, versioned S3 for trying s3memory, and the settings to reach it.

It serves moto's S3 on 127.0.0.1 (the demo's, ``testing.embedded_s3``) with one versioned bucket, writes the
settings another shell needs (the endpoint, the bucket, a new random local key, new random AWS
credentials) to a new env file only this user may read, and prints how to load it, and how Claude
Code and Claude Desktop start ``s3memory mcp`` on it (``mcp_recipes``: the paths whole, the settings
read from the env file). The server answers only requests signed with those credentials, for its own
address, from no web page (``guarded_s3``); the key and the credentials are printed nowhere, nor put
in a client's configuration. It serves until interrupted; the memory lives in this process and goes
with it, and so do the env file and the credentials.

What it cannot do it refuses before starting anything, in one line on stderr that names the cause and
the fix, with the exit status of bad usage (``EXIT_USAGE``): a ``--port`` that is no port, is in use
or is not this user's to listen on; an ``--env-file`` that exists, is a directory, or whose folder
does not exist.
"""

from __future__ import annotations

import base64
import errno
import json
import os
import secrets
import shlex
import signal
import stat
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, TextIO

from s3memory.demo import LOCAL_S3_ENV_FILE
from s3memory.demo.guarded_s3 import Credentials

if TYPE_CHECKING:
    from s3memory.testing.embedded_s3 import PortUnavailable

EXIT_SERVED = 0
EXIT_USAGE = 2
"""As the CLI's (``s3memory.cli.main``): bad usage or settings, here a port or an env file refused."""

PORTS = range(65536)
"""What ``--port`` may be: 0 for a free one, or a TCP port."""

STOP_SIGNALS = tuple(
    getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)
)
"""What stops the server, with its env file deleted: Ctrl-C, ``kill``, and its terminal closed."""

REGION = "us-east-1"
MCP_USER = "alice"
"""Whose memory the printed MCP recipes serve: the README's example user."""


class Refused(Exception):
    """Why ``serve`` starts nothing, and the fix: one line."""


def settings_text(endpoint: str, bucket: str, local_key: bytes, credentials: Credentials) -> str:
    """The env file: ``export`` lines a POSIX shell sources. The credentials, the server's own, also
    keep the shell's real AWS ones away from the local S3."""
    settings = {
        "S3MEMORY_ENDPOINT_URL": endpoint,
        "S3MEMORY_BUCKET": bucket,
        "S3MEMORY_LOCAL_KEY": base64.b64encode(local_key).decode("ascii"),
        "AWS_ACCESS_KEY_ID": credentials.access_key_id,
        "AWS_SECRET_ACCESS_KEY": credentials.secret_access_key,
        "AWS_DEFAULT_REGION": REGION,
    }
    return "".join(f"export {name}={value}\n" for name, value in settings.items())


def sourcing_command(path: Path) -> str:
    """The command that loads the env file at ``path`` into a POSIX shell (sh, dash, bash, zsh).

    ``.`` looks a name without a slash up in ``PATH`` only (sh, dash and zsh never look in the
    current directory), so such a name is given as ``./NAME``; a path with a slash, absolute or not,
    is given as it is. Quoted for the shell where it needs to be."""
    text = str(path)
    return f". {shlex.quote(text if '/' in text else f'./{text}')}"


def running_program(argv0: str, python: str) -> list[str]:
    """The command that runs this s3memory, from any folder: the program it was started as, whole
    (the ``s3memory`` script, as the shell found it on ``PATH``), or, when it was started as a module
    (``python -m``, whose ``argv0`` is a ``.py`` file), this interpreter ``python`` with ``-m``."""
    program = Path(os.path.abspath(argv0))
    if program.suffix != ".py" and program.is_file() and os.access(program, os.X_OK):
        return [str(program)]
    return [python, "-m", "s3memory.cli.main"]


def mcp_recipes(program: Sequence[str], env_file: Path) -> str:
    """How Claude Code (a ``claude mcp add`` line) and Claude Desktop (its configuration's JSON) start
    ``s3memory mcp`` on this server: ``program`` and ``env_file`` as absolute paths (a client starts
    its servers from a folder of its own, with a ``PATH`` of its own), and the settings given by
    ``--env-file``, so the key and the credentials stay in that file, out of the client's
    configuration. Quoted for a POSIX shell; each indented two spaces."""
    command = [*program, "mcp", "--env-file", str(env_file), "--user", MCP_USER]
    desktop = [
        "{",
        '  "mcpServers": {',
        '    "s3memory": {',
        f'      "command": {json.dumps(command[0])},',
        f'      "args": {json.dumps(command[1:])}',
        "    }",
        "  }",
        "}",
    ]
    return (
        "For Claude Code (the key stays in the env file: the server reads it when the client starts it):\n"
        f"  {shlex.join(['claude', 'mcp', 'add', 's3memory', '--', *command])}\n"
        "For Claude Desktop, in claude_desktop_config.json:\n" + "".join(f"  {line}\n" for line in desktop)
    )


class EnvFile:
    """The env file: created new at ``path``, readable by this user only, and deleted at the end
    while it is still that file.

    Any file already at ``path`` is refused, not replaced: it may be the user's (``--env-file`` names
    any path), and one that only looks like this command's (a marker line in it, say) may be another
    ``local-s3``'s, still serving, whose shells load it. Only a run killed before it could delete its
    file (SIGKILL) leaves one behind, and the refusal says to remove it. Creating it with ``O_EXCL``
    makes the check and the creation one step (and follows no symbolic link)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        try:
            self._descriptor: int | None = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            if path.is_dir():
                raise Refused(
                    f"--env-file {path} is a directory: give a file's path, e.g. --env-file {path / LOCAL_S3_ENV_FILE}"
                ) from None
            raise Refused(
                f"--env-file {path} already exists, and is left as it is: remove it (a local-s3 that was "
                "killed leaves its env file behind) or give another --env-file"
            ) from None
        except FileNotFoundError:
            raise Refused(
                f"--env-file {path}: the folder {path.parent} does not exist: create it or give another --env-file"
            ) from None
        except OSError as error:
            raise Refused(
                f"--env-file {path} cannot be created ({error.strerror}): give another --env-file"
            ) from None
        status = os.fstat(self._descriptor)
        self._identity = (status.st_dev, status.st_ino)
        self._text = ""

    def write(self, text: str) -> None:
        """``text`` in the file, which is then closed."""
        descriptor, self._descriptor = self._descriptor, None
        assert descriptor is not None, "written once"
        with os.fdopen(descriptor, "w", encoding="utf-8") as file:
            file.write(text)
        self._text = text

    def remove(self) -> None:
        """Delete the file if it is still the one made here: the same file, holding what was written
        (its new random key; a file put in its place may get the same inode number)."""
        if self._descriptor is not None:
            os.close(self._descriptor)
            self._descriptor = None
        try:
            status = self.path.lstat()
            ours = (
                stat.S_ISREG(status.st_mode)
                and (status.st_dev, status.st_ino) == self._identity
                and self.path.read_text(encoding="utf-8") == self._text
            )
        except (OSError, UnicodeDecodeError):
            return
        if ours:
            self.path.unlink(missing_ok=True)


def port_refusal(error: PortUnavailable) -> Refused:
    """Why moto's server cannot listen on the port it was given, and the fix."""
    where = f"port {error.port} on 127.0.0.1"
    if error.errno == errno.EADDRINUSE:
        cause = f"{where} is in use by another program"
    elif error.errno == errno.EACCES:
        cause = f"{where} is not this user's to listen on ({error.strerror})"
    else:
        cause = f"{where} cannot be listened on ({error.strerror})"
    return Refused(f"{cause}: give another --port, or --port 0 for a free one")


@contextmanager
def stopped_by_signals(stop: threading.Event) -> Iterator[None]:
    """While it lasts, ``STOP_SIGNALS`` set ``stop``; then their handlers are as they were."""
    previous = {number: signal.getsignal(number) for number in STOP_SIGNALS}
    try:
        for number in STOP_SIGNALS:
            signal.signal(number, lambda *_: stop.set())
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def serve(
    out: TextIO,
    *,
    port: int,
    bucket: str,
    env_file: Path,
    stop: threading.Event | None = None,
    err: TextIO | None = None,
    program: Sequence[str] | None = None,
) -> int:
    """Serve until SIGINT, SIGTERM or SIGHUP (or ``stop``); the exit status. A refusal (see the
    module) is one line on ``err`` (stderr), with nothing started, written or deleted. ``program``
    runs s3memory in the MCP recipes (by default ``running_program``'s)."""
    from s3memory.testing.embedded_s3 import PortUnavailable, moto_server

    err = sys.stderr if err is None else err
    stop = threading.Event() if stop is None else stop
    program = running_program(sys.argv[0], sys.executable) if program is None else program
    try:
        if port not in PORTS:
            raise Refused(
                f"--port {port} is no port (0 to 65535): give another --port, or --port 0 for a free one"
            )
    except Refused as refusal:
        return _refuse(err, refusal)
    with stopped_by_signals(stop):  # first: off the main thread it fails before the file is made
        try:
            settings = EnvFile(env_file)
        except Refused as refusal:
            return _refuse(err, refusal)
        try:
            credentials = Credentials.generate()
            with moto_server(bucket, port=port, versioned=True, credentials=credentials) as endpoint:
                settings.write(settings_text(endpoint, bucket, secrets.token_bytes(32), credentials))
                out.write(
                    f"s3memory local-s3: moto's S3 at {endpoint}, bucket {bucket} (versioned), a new local key "
                    "and new credentials.\n"
                    f"In another shell:\n  {sourcing_command(env_file)}\n  s3memory users\n"
                    f"{mcp_recipes(program, Path(os.path.abspath(env_file)))}"
                    "Stop with Ctrl-C: the memory is in this process and goes with it.\n"
                )
                out.flush()
                stop.wait()
        except PortUnavailable as error:
            return _refuse(err, port_refusal(error))
        finally:
            settings.remove()
    out.write("s3memory local-s3: stopped\n")
    return EXIT_SERVED


def _refuse(err: TextIO, refusal: Refused) -> int:
    err.write(f"s3memory local-s3: {refusal}\n")
    err.flush()
    return EXIT_USAGE
