"""``s3memory mcp --env-file PATH``: the settings from a file of ``export NAME=VALUE`` lines, as
``s3memory local-s3`` writes it, so that an MCP client's configuration names the file instead of
holding a local master key or AWS credentials in plain text (``docs/mcp.md``, "--env-file").

The file must be this user's, a regular file that no one else may read or write (mode ``600``), named
itself and not through a symbolic link (opened with ``O_NOFOLLOW``), and at most ``MAX_BYTES``. Each
line is blank, a comment (``#``), or ``NAME=VALUE`` with ``export`` before it or not, whose value a
POSIX shell would read as one word that expands nothing (quoted as ``shlex`` reads it); only
``S3MEMORY_*`` and ``AWS_*`` names, each once. Anything else refuses the whole file, naming the line's
number and never its value.
"""

from __future__ import annotations

import errno
import os
import re
import shlex
import stat
from pathlib import Path

MAX_BYTES = 65_536
"""The largest env file read: a few settings take a few hundred bytes."""
TAKEN = ("S3MEMORY_", "AWS_")
"""The prefixes of the names an env file may set."""
_ASSIGNMENT = re.compile(r"(?:export[ \t]+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)")
_SHELL_ACTS_ON = frozenset(";&|<>()~")
"""Characters a shell acts on outside quotes (commands, redirections, a home directory)."""


class EnvFileRefused(ValueError):
    """Why the env file is not read: one line, naming a line's number or a variable, never a value."""


def _shell_word(text: str) -> str | None:
    """``text`` as a POSIX shell reads one word that expands nothing, or None if it is not one: more
    words, an unclosed quote or escape, ``$`` or `````` outside single quotes (escaped or not), or an
    unquoted character a shell acts on."""
    quote = ""
    escaped = False
    for character in text:
        if quote != "'" and character in "$`":  # escaped too: shlex keeps a backslash the shell drops
            return None
        if escaped:
            escaped = False
        elif quote == "'":
            quote = "" if character == "'" else quote
        elif character == "\\":
            escaped = True
        elif quote == '"':
            quote = "" if character == '"' else quote
        elif character in "'\"":
            quote = character
        elif character in _SHELL_ACTS_ON or character.isspace():
            return None
    if quote or escaped:
        return None
    words = shlex.split(text)
    return words[0] if words else ""


def parse(text: str) -> dict[str, str]:
    """The settings of an env file's ``text``; ``EnvFileRefused`` naming the first line that is not
    blank, a comment or one assignment of an ``S3MEMORY_*`` or ``AWS_*`` name not set before."""
    values: dict[str, str] = {}
    first: dict[str, int] = {}
    for number, raw in enumerate(text.split("\n"), start=1):
        line = raw.removesuffix("\r").strip(" \t")
        if not line or line.startswith("#"):
            continue
        if not line.replace("\t", " ").isprintable():
            raise EnvFileRefused(f"line {number} holds a control character")
        matched = _ASSIGNMENT.fullmatch(line)
        if matched is None:
            raise EnvFileRefused(
                f"line {number} is not NAME=VALUE or export NAME=VALUE, a comment or a blank line"
            )
        name, value = matched.groups()
        if not name.startswith(TAKEN):
            raise EnvFileRefused(
                f"line {number} sets a variable whose name begins neither S3MEMORY_ nor AWS_"
            )
        if name in first:
            raise EnvFileRefused(f"line {number} sets {name} again (line {first[name]} set it first)")
        word = _shell_word(value)
        if word is None:
            raise EnvFileRefused(
                f"line {number}: the value of {name} is not one shell word that expands nothing (put it "
                "in single quotes: spaces, $, `, ;, &, |, <, >, (, ) and ~ only inside them)"
            )
        first[name] = number
        values[name] = word
    return values


def read(path: Path) -> dict[str, str]:
    """The settings of the env file at ``path`` (``parse``); ``EnvFileRefused`` for a file that is not
    this user's alone, a symbolic link, not a regular file, too large or not UTF-8 text."""
    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC
    try:
        descriptor = os.open(path, flags)
    except FileNotFoundError:
        raise EnvFileRefused(
            "no such file (s3memory local-s3 writes its env file while it runs and removes it when it stops)"
        ) from None
    except OSError as error:
        if error.errno == errno.ELOOP:
            raise EnvFileRefused(
                "is a symbolic link: name the file itself (a link can be pointed elsewhere)"
            ) from None
        raise EnvFileRefused(f"cannot be opened ({error.strerror})") from None
    try:
        status = os.fstat(descriptor)
        if not stat.S_ISREG(status.st_mode):
            raise EnvFileRefused("is not a regular file")
        if status.st_uid != os.geteuid():
            raise EnvFileRefused(
                "belongs to another user: use a file of your own (s3memory local-s3 writes one)"
            )
        if status.st_mode & 0o077:
            mode = stat.S_IMODE(status.st_mode)
            raise EnvFileRefused(f"may be read or written by others (mode {mode:03o}): chmod 600 {path}")
        data = b""
        while len(data) <= MAX_BYTES and (chunk := os.read(descriptor, MAX_BYTES + 1 - len(data))):
            data += chunk
    finally:
        os.close(descriptor)
    if len(data) > MAX_BYTES:
        raise EnvFileRefused(f"is larger than {MAX_BYTES:,} bytes: an env file holds a few settings")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise EnvFileRefused("is not UTF-8 text") from None
    return parse(text)
