"""Parsing a raw ``tool_use`` input into a typed command. Pure, no I/O.

Anything malformed (not an object, unknown command, missing fields, wrong types, text that is not
valid UTF-8, numbers out of range) is refused with a message that says what was expected.
Fields a command does not use are ignored.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from s3memory.core.paths import MemoryPath, check_new_name, memory_path
from s3memory.errors import CommandError, shown

COMMANDS = ("view", "create", "str_replace", "insert", "delete", "rename")
_INT_LIMIT = 10**100
"""An integer parameter is refused as out of range at this size: a line number of up to 100 digits
gets the command's own answer (the contract's, naming it), and no longer one is written out."""


@dataclass(frozen=True)
class View:
    path: MemoryPath
    view_range: list[int] | None


@dataclass(frozen=True)
class Create:
    path: MemoryPath
    file_text: str


@dataclass(frozen=True)
class StrReplace:
    path: MemoryPath
    old_str: str
    new_str: str


@dataclass(frozen=True)
class Insert:
    path: MemoryPath
    insert_line: int
    insert_text: str


@dataclass(frozen=True)
class Delete:
    path: MemoryPath


@dataclass(frozen=True)
class Rename:
    old_path: MemoryPath
    new_path: MemoryPath


Command = View | Create | StrReplace | Insert | Delete | Rename


class _Fields:
    def __init__(self, command: str, raw: Mapping[object, object]) -> None:
        self.command = command
        self.raw = raw

    def required(self, name: str) -> object:
        """The field ``name``, refused where it is missing or null."""
        value = self.raw.get(name)
        if value is None:
            raise CommandError(f"Error: Missing required parameter `{name}` for command `{self.command}`.")
        return value

    def _wrong_type(self, name: str, expected: str, value: object) -> CommandError:
        return CommandError(
            f"Error: Parameter `{name}` of command `{self.command}` must be {expected}, "
            f"got {type(value).__name__}."
        )

    def path(self, name: str = "path") -> MemoryPath:
        return memory_path(self.required(name), name)

    def text(self, name: str, value: object) -> str:
        """``value`` (the field ``name``) as a string UTF-8 can encode (no lone surrogate)."""
        if not isinstance(value, str):
            raise self._wrong_type(name, "a string", value)
        try:
            value.encode()
        except UnicodeEncodeError:
            raise CommandError(
                f"Error: Parameter `{name}` of command `{self.command}` is not a valid UTF-8 text file: "
                "it holds a lone surrogate."
            ) from None
        return value

    def required_text(self, name: str) -> str:
        return self.text(name, self.required(name))

    def optional_text(self, name: str) -> str:
        """The text of the field ``name``, empty where it is missing or null."""
        value = self.raw.get(name)
        return "" if value is None else self.text(name, value)

    def integer(self, name: str, value: object) -> int:
        """``value`` (the field ``name`` or an item of it) as an integer of at most 100 digits."""
        if isinstance(value, bool) or not isinstance(value, int):
            raise self._wrong_type(name, "an integer", value)
        if not -_INT_LIMIT < value < _INT_LIMIT:
            raise CommandError(f"Error: Parameter `{name}` of command `{self.command}` is out of range.")
        return value

    def view_range(self) -> list[int] | None:
        value = self.raw.get("view_range")
        if value is None:
            return None
        if not isinstance(value, list | tuple) or len(value) != 2:
            raise CommandError(
                "Error: `view_range` must be a list of two integers [start, end] (end -1: to the end of the file)."
            )
        return [self.integer("view_range", item) for item in value]


def parse_command(raw: object) -> Command:
    """The typed command for a raw ``tool_use`` input."""
    if not isinstance(raw, Mapping):
        raise CommandError(
            f"Error: The memory tool input must be an object with a `command` field, got {type(raw).__name__}."
        )
    command = raw.get("command")
    valid = f"Valid commands: {', '.join(COMMANDS)}."
    if command is None:
        raise CommandError(f"Error: Missing required parameter `command`. {valid}")
    if not isinstance(command, str) or command not in COMMANDS:
        named = shown(command) if isinstance(command, str) else f"of type {type(command).__name__}"
        raise CommandError(f"Error: Unknown command {named}. {valid}")
    fields = _Fields(command, raw)
    if command == "view":
        return View(fields.path(), fields.view_range())
    if command == "create":
        return Create(check_new_name(fields.path()), fields.required_text("file_text"))
    if command == "str_replace":
        return StrReplace(fields.path(), fields.required_text("old_str"), fields.optional_text("new_str"))
    if command == "insert":
        path = fields.path()
        line = fields.integer("insert_line", fields.required("insert_line"))
        return Insert(path, line, fields.required_text("insert_text"))
    if command == "delete":
        return Delete(fields.path())
    return Rename(fields.path("old_path"), check_new_name(fields.path("new_path")))
