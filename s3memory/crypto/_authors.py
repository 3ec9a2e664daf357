"""Who wrote a file's version: the rule for an author's name, and where a stored object keeps it.

An author is whatever the caller names (a session, an agent, an operator): s3memory does not check
who it is, but binds it into the object's authentication, so no one without the user's key can
change, add or remove it (``crypto.ObjectCipher``).
"""

from __future__ import annotations

import string
from collections.abc import Mapping

AUTHOR_METADATA = "s3memory-author"
"""The object metadata that names the author of the write (absent when none was named)."""
AUTHOR_MAX_CHARACTERS = 128
_AUTHOR_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._:@/+=-")


def validate_author(author: object) -> str:
    """``author`` if it is a usable name; ``ValueError`` saying why not."""
    if not isinstance(author, str) or not author:
        raise ValueError(
            f"an author must be a non-empty string of at most {AUTHOR_MAX_CHARACTERS} characters"
        )
    if len(author) > AUTHOR_MAX_CHARACTERS:
        raise ValueError(f"an author is at most {AUTHOR_MAX_CHARACTERS} characters, got {len(author):,}")
    if not _AUTHOR_CHARACTERS.issuperset(author):
        raise ValueError("an author may hold only ASCII letters, digits and . _ : @ / + = -")
    return author


OPERATOR = "operator"
"""The name, alone or before ``:``, of what the operator commands write; no served request takes it."""


def validate_served_author(author: object) -> str:
    """``validate_author``, and refused when it takes the operator's name (``operator``,
    ``operator:...``): a caller of the served tool cannot pass its writes off as an operator's."""
    checked = validate_author(author)
    if checked.split(":", 1)[0].lower() == OPERATOR:
        raise ValueError("an author named operator is kept for the operator commands")
    return checked


def author_of(metadata: Mapping[str, str]) -> str | None:
    """The author an object's metadata names (unchecked until the object is opened), or None."""
    return metadata.get(AUTHOR_METADATA)


def author_metadata(author: str | None) -> dict[str, str]:
    """The metadata that names ``author`` on a write (none for no author)."""
    return {} if author is None else {AUTHOR_METADATA: author}
