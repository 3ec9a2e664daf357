"""Path policy: which memory paths are valid, and the object keys they map to.

Pure functions, no I/O. Every storage key of a memory file is derived here from a
validated path, so no input can name an object outside the user's ``memories/`` prefix.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from dataclasses import dataclass, field
from typing import Protocol
from urllib.parse import unquote

from s3memory.core.confusables import DEFAULT_IGNORABLE
from s3memory.errors import CommandError, shown

MEMORY_ROOT = "/memories"
S3_MAX_KEY_BYTES = 1024
_MAX_DECODE_ROUNDS = 16
DRAWN_BLANK = (0x2800, 0x1D159)
"""Characters drawn blank that ``str.isprintable`` passes and Default_Ignorable_Code_Point does not
hold: U+2800 BRAILLE PATTERN BLANK (in Unicode's confusables.txt, a SPACE) and U+1D159 MUSICAL
SYMBOL NULL NOTEHEAD (a notehead with nothing drawn)."""
_UNSEEN = re.compile(
    "["
    + "".join(f"{chr(low)}-{chr(high)}" for low, high in DEFAULT_IGNORABLE)
    + "".join(map(chr, DRAWN_BLANK))
    + "]"
)
"""The default-ignorable code points and ``DRAWN_BLANK``: beside the format characters (Cf), what no
one sees in a name."""


def _has_control_character(text: str) -> bool:
    return any(unicodedata.category(char) in ("Cc", "Cs") for char in text)


def _invisible(char: str) -> bool:
    """True for a character no one sees: a format character (Cf) or one ``_UNSEEN`` holds."""
    return unicodedata.category(char) == "Cf" or _UNSEEN.match(char) is not None


def _dot_segment(segment: str) -> bool:
    """True for ``.`` and ``..``, also as NFKC look-alikes (``\uff0e``, ``\u2025``...)."""
    return unicodedata.normalize("NFKC", segment) in (".", "..")


def _decoded_forms(path: str) -> list[str]:
    """The path and every form that repeated percent-decoding gives, until nothing changes."""
    forms = [path]
    for _ in range(_MAX_DECODE_ROUNDS):
        decoded = unquote(forms[-1], errors="surrogateescape")
        if decoded == forms[-1]:
            return forms
        forms.append(decoded)
    raise _refusal(path, "too many layers of percent-encoding")


def _refusal(path: str, reason: str) -> CommandError:
    return CommandError(f"Error: The path {shown(path)} is not allowed: {reason}.")


def _too_long(path: str, *, private: bool = False) -> CommandError:
    names = (
        " With private names each name is stored encrypted, about 1.6 times its length and at least "
        "52 characters, so use fewer or shorter names."
        if private
        else ""
    )
    return CommandError(
        f"Error: The path {shown(path)} is too long: its storage key would exceed "
        f"{S3_MAX_KEY_BYTES} bytes (prefixes included).{names}"
    )


def check_memory_path(path: str) -> tuple[str, ...]:
    """Validate a memory path and return its segments below ``/memories`` (empty for the root).

    A path longer than S3's key limit is refused first, in time independent of its length; every
    later check is linear in the path. Answers are remembered (a listing checks every key it maps
    back to a path, and the same keys come back view after view); refusals are not. A name with an
    invisible character passes here, so that a file an older version stored under one can still be
    reached; ``check_new_name`` refuses it where a command makes a name.
    """
    if len(path) > S3_MAX_KEY_BYTES or len(path.encode("utf-8", "surrogatepass")) > S3_MAX_KEY_BYTES:
        raise _too_long(path)
    return _remembered_check(path)[0]


@functools.lru_cache(maxsize=8192)
def _remembered_check(path: str) -> tuple[tuple[str, ...], str | None]:
    """``_check``, its answers remembered (a function of its own, so that mutation testing, which
    mutates no decorated function, measures the checks)."""
    return _check(path)


def _check(path: str) -> tuple[tuple[str, ...], str | None]:
    """The segments of a path of key length and its first invisible character (``_invisible``) in
    any percent-decoded form (None for none), or a refusal (not a clean-up) of: paths
    outside ``/memories`` and ``.``/``..`` segments in any percent-encoded or NFKC-normalised
    spelling (in the SDK's words, our reason after), backslashes, control characters, empty segments
    and percent-encoded separators. NFKC keeps each '.', '/' and '\\' of a form where it was
    (``test_nfkc_keeps_every_dot_slash_and_backslash_so_its_form_holds_every_dot_segment``), so the
    NFKC form alone is searched for them."""
    invisible: str | None = None
    if path != MEMORY_ROOT and not path.startswith(MEMORY_ROOT + "/"):
        raise CommandError(
            f"Error: Path must start with {MEMORY_ROOT}, got: {shown(path)} "
            f"(a memory path is {MEMORY_ROOT} or starts with {MEMORY_ROOT}/)"
        )
    for form in _decoded_forms(path):
        if "%2f" in form.lower() or "%5c" in form.lower():
            raise _refusal(path, "percent-encoded '/' and '\\' are refused")
        categories = set(map(unicodedata.category, form))
        if "Cs" in categories:
            raise _refusal(path, "it is not valid UTF-8 text")
        if "Cc" in categories:
            raise _refusal(path, "NUL and other control characters are refused")
        if invisible is None and ("Cf" in categories or _UNSEEN.search(form)):
            invisible = next(filter(_invisible, form))
        nfkc = unicodedata.normalize("NFKC", form)
        if "\\" in nfkc:
            raise _refusal(path, "backslashes are refused")
        if any(_dot_segment(segment) for segment in nfkc.split("/")):
            raise CommandError(
                f"Error: Path {shown(path)} would escape {MEMORY_ROOT} directory "
                "('.' and '..' segments are refused, also percent-encoded or as look-alike characters)"
            )
    relative = path[len(MEMORY_ROOT) :]
    if relative.endswith("/"):
        relative = relative[:-1]
    segments = tuple(relative.split("/")[1:])  # () for the root, whose relative is ""
    if any(segment == "" for segment in segments):
        raise _refusal(path, "empty path segments ('//') are refused")
    return segments, invisible


def check_new_name(path: MemoryPath) -> MemoryPath:
    """``path``, refused where it would make a name: when a name of it holds an invisible character,
    also percent-encoded, with which one name passes for another: a format character (Unicode category
    Cf: zero-width spaces and joiners, the soft hyphen, bidi controls, the byte order mark...), a
    default-ignorable code point (Unicode's Default_Ignorable_Code_Point: also the combining grapheme
    joiner, variation selectors, the Hangul fillers...) or one ``DRAWN_BLANK``. The refusal names the
    first such character. ``create`` and a rename's destination check their path here; every other
    command reaches a file stored under such a name (``docs/library.md``)."""
    character = _remembered_check(path.text)[1]
    if character is not None:
        named = f"U+{ord(character):04X} {unicodedata.name(character, '')}".rstrip()
        raise _refusal(
            path.text,
            f"a name may not hold {named}, an invisible character with which one name can pass for "
            "another; use a name without it",
        )
    return path


@dataclass(frozen=True)
class MemoryPath:
    """A validated memory path: the text the model sent and its segments below the root of the
    memory it lies in. In a shared memory mounted at ``/memories/<mount>``, ``segments`` are the
    path's in that memory (what keys and seals it) and ``mount`` is where the user sees it
    (``shown``). ``lookalike``: its first name, in the user's own memory, looks like a mount point's
    (``mounts.MountedMemory``), so answers show it escaped whole (``shown_name``). Neither ``mount``
    nor ``lookalike`` takes part in equality."""

    text: str
    segments: tuple[str, ...]
    mount: tuple[str, ...] = field(default=(), compare=False)
    lookalike: bool = field(default=False, compare=False)

    @property
    def is_root(self) -> bool:
        return not self.segments

    @property
    def canonical(self) -> str:
        """The path in its memory, without a trailing slash: ``/memories`` or ``/memories/a/b``."""
        return "/".join((MEMORY_ROOT, *self.segments))

    @property
    def shown(self) -> str:
        """The path as answers show it, without a trailing slash (``canonical`` below the mount,
        each name as ``shown_name`` shows it)."""
        return shown_path(self.canonical, self.mount, lookalike=self.lookalike)

    @property
    def quoted(self) -> str:
        """The text the model sent as answers quote it: ``shown``, with its trailing slash if it had
        one (the text itself where it shows as it is)."""
        if not self.lookalike and _seen(self.text):
            return self.text
        return self.shown + "/" if self.text.endswith("/") else self.shown

    def ancestors(self) -> list[MemoryPath]:
        """The directories strictly between the root and this path, outermost first."""
        return [
            MemoryPath(
                _text_of(self.segments[:depth], self.mount), self.segments[:depth], self.mount, self.lookalike
            )
            for depth in range(1, len(self.segments))
        ]

    def is_within(self, other: MemoryPath) -> bool:
        """True if this path is ``other`` or lies below it."""
        return self.segments[: len(other.segments)] == other.segments

    def relative_to(self, other: MemoryPath) -> tuple[str, ...]:
        return self.segments[len(other.segments) :]

    def joined(self, relative: tuple[str, ...]) -> MemoryPath:
        segments = self.segments + relative
        return MemoryPath(_text_of(segments, self.mount), segments, self.mount, self.lookalike)


def _text_of(segments: tuple[str, ...], mount: tuple[str, ...]) -> str:
    """The text that names ``segments`` of a memory mounted at ``mount``."""
    return "/".join((MEMORY_ROOT, *mount, *segments))


def shown_path(canonical: str, mount: tuple[str, ...], *, lookalike: bool = False) -> str:
    """``canonical``, a path in a memory, as the user sees it with that memory mounted at ``mount``:
    each name as ``shown_name`` shows it, the first escaped whole where it is a ``lookalike``."""
    names = (*mount, *canonical.split("/")[2:])
    if lookalike and names:
        return "/".join((MEMORY_ROOT, shown_name(names[0], whole=True), *map(shown_name, names[1:])))
    return "/".join((MEMORY_ROOT, *map(shown_name, names)))


def shown_name(name: str, *, whole: bool = False) -> str:
    """``name`` as answers show it: each character ``str.isprintable`` refuses (format characters,
    spaces other than U+0020, line and paragraph separators, unassigned code points) or ``_UNSEEN``
    holds (default-ignorable and ``DRAWN_BLANK``) escaped as JSON escapes it (``\\u200b``; a surrogate
    pair above U+FFFF), so that no two names look alike and a model that copies the name into a tool
    call's JSON names the file. ``whole``: every character escaped, for a name that looks like a mount
    point's. No name holds a backslash, so no escaped name is another's."""
    if not whole and _seen(name):
        return name
    return "".join(_json_escape(char) if whole or not _seen(char) else char for char in name)


def _seen(text: str) -> bool:
    """True if every character of ``text`` shows as itself: printable, and none ``_UNSEEN`` holds
    (every one is U+00AD or above, so ASCII text holds none)."""
    return text.isprintable() and (text.isascii() or _UNSEEN.search(text) is None)


def _json_escape(char: str) -> str:
    code = ord(char)
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    code -= 0x10000
    return f"\\u{0xD800 + (code >> 10):04x}\\u{0xDC00 + (code & 0x3FF):04x}"


ROOT = MemoryPath(MEMORY_ROOT, ())
"""The memory root directory, ``/memories``."""


def memory_path(path: object, field: str = "path") -> MemoryPath:
    """Validate a raw command value as a memory path."""
    if not isinstance(path, str):
        raise CommandError(f"Error: `{field}` must be a string starting with {MEMORY_ROOT}.")
    return MemoryPath(path, check_memory_path(path))


RESERVED_USER_PREFIX = "s3memory."
"""How the names of the objects a store keeps of its own, directly at its prefix, begin
(``nesting.STORE_OBJECTS``): no user id may begin so (``docs/operations.md`` "Reserved user ids")."""
RESERVED_USER_ID = (
    f"user_id must not begin with '{RESERVED_USER_PREFIX}', which names the store's own objects; choose "
    "another user id"
)


def check_user_id(user_id: object, *, reserved: bool = False) -> str:
    """``user_id``, refused (``ValueError`` naming the cause) if it could change the key prefix:
    empty, ``.``/``..``, separators, control characters, over 256 bytes of UTF-8; or, unless
    ``reserved`` (an operator naming a memory that has such an id already), if it begins with
    ``RESERVED_USER_PREFIX``."""
    if not isinstance(user_id, str) or not user_id:
        raise ValueError("user_id must be a non-empty string")
    if "/" in user_id or "\\" in user_id or _dot_segment(user_id) or _has_control_character(user_id):
        raise ValueError("user_id must not contain '/', '\\' or control characters, nor be '.' or '..'")
    if len(user_id.encode("utf-8")) > 256:
        raise ValueError("user_id must be at most 256 bytes of UTF-8")
    if not reserved and user_id.startswith(RESERVED_USER_PREFIX):
        raise ValueError(RESERVED_USER_ID)
    return user_id


class UserId(str):
    """A user id checked once, when made (``check_user_id``); made again from one, it is not checked
    again, so an edge that checks a request's user id hands the check on with the value."""

    __slots__ = ()

    def __new__(cls, user_id: object) -> UserId:
        if isinstance(user_id, UserId):
            return user_id
        return super().__new__(cls, check_user_id(user_id))

    @classmethod
    def named_by_operator(cls, user_id: object) -> UserId:
        """``user_id`` checked as when made, but a reserved one taken (``check_user_id``'s
        ``reserved``): what the operator commands take, so that a memory a user id now reserved
        already has can be listed, read, moved and erased."""
        if isinstance(user_id, UserId):
            return user_id
        return super().__new__(cls, check_user_id(user_id, reserved=True))

    @property
    def reserved(self) -> bool:
        """True if this id begins with ``RESERVED_USER_PREFIX`` (only an operator names such a one)."""
        return self.startswith(RESERVED_USER_PREFIX)


SHARED_PRINCIPAL = "shared/"
"""What a shared memory's name is prefixed with where a user id would stand (its namespace, its keys):
no user id holds a ``/``, so no shared memory's namespace is a user's."""
_SHARED_NAME = re.compile(r"[a-z0-9][a-z0-9._-]{0,62}")


class SharedName(str):
    """The name of a shared memory (a team's, a project's): 1 to 63 of ``a-z 0-9 . _ -``, starting
    with a letter or digit; checked once, when made. It belongs to no user."""

    __slots__ = ()

    def __new__(cls, name: object) -> SharedName:
        if isinstance(name, SharedName):
            return name
        if not isinstance(name, str) or _SHARED_NAME.fullmatch(name) is None:
            raise ValueError(
                "a shared memory's name must be 1 to 63 of a-z, 0-9, '.', '_' and '-', starting with a "
                "letter or digit"
            )
        return super().__new__(cls, name)

    @property
    def principal(self) -> str:
        """Where a user id would stand: ``shared/<name>``."""
        return SHARED_PRINCIPAL + self


def owner_of(name: object) -> UserId | SharedName:
    """Whose memory ``name`` names, as the operator commands take it: ``shared/<name>`` a shared
    memory's, anything else a user id, a reserved one too (``UserId.named_by_operator``;
    ``ValueError`` for neither)."""
    if isinstance(name, UserId | SharedName):
        return name
    if isinstance(name, str) and name.startswith(SHARED_PRINCIPAL):
        return SharedName(name[len(SHARED_PRINCIPAL) :])
    return UserId.named_by_operator(name)


def check_owner(name: object, prefix: object) -> UserId | SharedName:
    """``owner_of(name)``, with ``prefix`` checked as ``validate_namespace`` checks it."""
    check_prefix(prefix)
    return owner_of(name)


DEFAULT_PREFIX = "users/"
"""The key prefix of the user namespaces when none is given (``S3MEMORY_PREFIX``'s default too)."""


def check_prefix(prefix: object) -> str:
    """``prefix``, refused (``ValueError``) unless it is empty or ``/``-separated plain segments
    each ending in ``/``."""
    if not isinstance(prefix, str):
        raise ValueError("prefix must be a string")
    if prefix:
        segments = prefix.split("/")
        if (
            segments[-1] != ""
            or any(segment == "" or _dot_segment(segment) for segment in segments[:-1])
            or "\\" in prefix
            or _has_control_character(prefix)
        ):
            raise ValueError("prefix must be empty or plain segments each ending in '/', like 'users/'")
    return prefix


def validate_namespace(user_id: object, prefix: object) -> str:
    """Check a user id (unless it is a ``UserId``) and key prefix, and return the user's namespace
    (``prefix + user_id + '/'``)."""
    return f"{check_prefix(prefix)}{UserId(user_id)}/"


class SegmentNames(Protocol):
    """Private names (``names.NameCipher``): the key segments of memory path segments, and back."""

    def tokens(self, segments: tuple[str, ...]) -> tuple[str, ...]: ...

    def segments(self, tokens: tuple[str, ...]) -> tuple[str, ...] | None: ...


@dataclass(frozen=True)
class KeyLayout:
    """Where a user's objects live: memory files under ``memories/``, internal objects beside it.
    With ``names`` (format 2), each segment of a memory path is a private name's token."""

    namespace: str
    names: SegmentNames | None = None

    @property
    def memories_prefix(self) -> str:
        return self.namespace + "memories/"

    @property
    def internal_prefix(self) -> str:
        return self.namespace + "internal/"

    def file_key(self, path: MemoryPath) -> str:
        """The object key of a memory file; refused if it would pass S3's key length limit."""
        if path.is_root:
            raise CommandError(f"Error: {path.quoted} is the memory root directory, not a file.")
        segments = path.segments if self.names is None else self.names.tokens(path.segments)
        key = self.memories_prefix + "/".join(segments)
        if len(key.encode("utf-8")) > S3_MAX_KEY_BYTES:
            raise _too_long(path.quoted, private=self.names is not None)
        return key

    def directory_prefix(self, path: MemoryPath) -> str:
        """The key prefix below which a directory's objects lie (ends with '/')."""
        if path.is_root:
            return self.memories_prefix
        return self.file_key(path) + "/"

    def path_of_key(self, key: str) -> MemoryPath | None:
        """The memory path stored at ``key``, or None for keys no valid path maps to."""
        if not key.startswith(self.memories_prefix):
            return None
        relative = key[len(self.memories_prefix) :]
        if self.names is not None:
            named = self.names.segments(tuple(relative.split("/")))
            if named is None:
                return None
            relative = "/".join(named)
        text = MEMORY_ROOT + "/" + relative
        try:
            segments = check_memory_path(text)
        except CommandError:
            return None
        if text.endswith("/") or not segments:
            return None
        return MemoryPath(text, segments)

    def key_of_internal(self, name: str) -> str:
        return self.internal_prefix + name
