"""Who wrote a file's version: the rule for an author's name, and where a stored object keeps it.

An author is whatever the caller names (a session, an agent, an operator): s3memory does not check
who it is, but binds it into the object's authentication, so no one without the user's key can
change, add or remove it (``crypto.ObjectCipher``).
"""

from __future__ import annotations

import base64
import binascii
import json
import string
from collections.abc import Mapping

AUTHOR_METADATA = "s3memory-author"
"""The object metadata that names the author of the write (absent when none was named)."""
AUTHOR_MAX_CHARACTERS = 128
_AUTHOR_CHARACTERS = frozenset(string.ascii_letters + string.digits + "._:@/+=-")
_BASE32 = frozenset(string.ascii_uppercase + "234567")


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


ENCODED_USER = "="
"""What starts the author of a user whose id is not written as it is (``user_author``)."""


def validate_served_author(author: object) -> str:
    """``validate_author``, and refused when it takes the operator's name (``operator``,
    ``operator:...``) or starts as an encoded user id does (``=``): a caller of the served tool
    cannot pass its writes off as an operator's or another user's."""
    checked = validate_author(author)
    if checked.split(":", 1)[0].lower() == OPERATOR:
        raise ValueError("an author named operator is kept for the operator commands")
    if checked.startswith(ENCODED_USER):
        raise ValueError(f"an author starting with {ENCODED_USER!r} is kept for user ids written in base32")
    return checked


def user_author(user_id: str, actor: str | None = None) -> str:
    """The author that records ``user_id``'s writes into a shared memory (``/<actor>`` after it
    with an actor). The id is written as it is when it is a served author's name; any other (the
    operator's name, non-ASCII, ``|`` as in ``auth0|...``, a leading ``=``) as ``=`` and the
    unpadded base32 of its UTF-8, so every user id of up to 79 bytes has one and none passes for an
    operator or another user. ``ValueError`` when the author would pass ``AUTHOR_MAX_CHARACTERS``."""
    try:
        written = validate_served_author(user_id)
    except ValueError:
        written = ENCODED_USER + base64.b32encode(user_id.encode("utf-8")).decode("ascii").rstrip("=")
    if actor is not None:
        written = f"{written}/{actor}"
    if len(written) > AUTHOR_MAX_CHARACTERS:
        raise ValueError(
            f"the user id and the actor make an author of {len(written):,} characters, over {AUTHOR_MAX_CHARACTERS}"
        )
    return written


def shown_author(author: str) -> str:
    """``author`` as a person reads it: a user id that ``user_author`` wrote in base32 decoded, and
    shown in double quotes with JSON's escapes in ASCII (``"auth0|5f7c"/mcp``), so that it passes
    for no author written as it is (none holds a quote) and hides nothing invisible."""
    if not author.startswith(ENCODED_USER):
        return author
    encoded, slash, actor = author[len(ENCODED_USER) :].partition("/")
    if not encoded or not _BASE32.issuperset(encoded):
        return author
    try:
        user_id = base64.b32decode(encoded + "=" * (-len(encoded) % 8)).decode("utf-8")
    except (binascii.Error, ValueError):
        return author
    return json.dumps(user_id) + slash + actor


def author_of(metadata: Mapping[str, str]) -> str | None:
    """The author an object's metadata names (unchecked until the object is opened), or None."""
    return metadata.get(AUTHOR_METADATA)


def author_metadata(author: str | None) -> dict[str, str]:
    """The metadata that names ``author`` on a write (none for no author)."""
    return {} if author is None else {AUTHOR_METADATA: author}
