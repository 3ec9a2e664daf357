"""Who wrote each version: the author a writer names is kept in the object's metadata and bound
into its authentication, so a bucket writer can neither forge, move nor strip it (moto and SeaweedFS)."""

from __future__ import annotations

import io
import json
from typing import Any

import pytest

from s3memory.aws_lambda.agent.event import Invalid, parse_event
from s3memory.cli.console import Console, operator_actor
from s3memory.cli.main import _parser
from s3memory.crypto import (
    AUTHOR_METADATA,
    KeyOwner,
    LocalKeyProvider,
    ObjectCipher,
    shown_author,
    user_author,
    validate_author,
    validate_served_author,
)
from s3memory.errors import IntegrityError
from s3memory.memory import S3Memory
from s3memory.ops.operations import Operations
from s3memory.ops.versions import MemoryVersions
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY, SEAWEEDFS_SLOW, snapshot
from tests.support.ciphers import local_cipher

BACKENDS = ("moto", SEAWEEDFS_SLOW)
PATH = "/memories/notes.md"
KEY = "users/alice/memories/notes.md"


def _cipher(user: str = "alice") -> ObjectCipher:
    return local_cipher(LocalKeyProvider(MASTER_KEY), KeyOwner(user))


# -- the rule and the cipher ---------------------------------------------------------------------


@pytest.mark.parametrize(
    ("author", "message"),
    [
        ("", "an author must be a non-empty string of at most 128 characters"),
        (7, "an author must be a non-empty string of at most 128 characters"),
        ("a" * 129, "an author is at most 128 characters, got 129"),
        ("agent 7", "an author may hold only ASCII letters, digits and . _ : @ / + = -"),
        ("agent\n7", "an author may hold only ASCII letters, digits and . _ : @ / + = -"),
        ("agént", "an author may hold only ASCII letters, digits and . _ : @ / + = -"),
    ],
)
def test_unusable_authors_are_refused_clearly(author: object, message: str) -> None:
    with pytest.raises(ValueError) as refused:
        validate_author(author)
    assert str(refused.value) == message


def test_usable_authors_are_kept_as_given() -> None:
    for author in ("session_01AbC", "agent:planner/7", "arn:aws:iam::123456789012:role/x", "a@b.example"):
        assert validate_author(author) == author


def test_an_object_opens_only_with_the_author_it_was_sealed_for() -> None:
    cipher = _cipher()
    by_ada = cipher.seal(PATH, b"text", "ada")
    unnamed = cipher.seal(PATH, b"text")
    assert cipher.open(PATH, by_ada, "ada") == b"text"
    assert cipher.open(PATH, unnamed) == b"text"
    for blob, author in ((by_ada, "eve"), (by_ada, None), (unnamed, "ada"), (by_ada, "ad")):
        with pytest.raises(IntegrityError, match="failed its integrity check"):
            cipher.open(PATH, blob, author)


# -- through S3 ----------------------------------------------------------------------------------


@pytest.fixture
def operations(s3: Any, versioned: str) -> Operations:
    return Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1)


def _memory(operations: Operations, actor: str | None) -> S3Memory:
    return S3Memory(operations.bucket, "alice", operations.key_provider, actor=actor, storage_format=1)


def test_history_shows_three_edits_with_their_authors(operations: Operations) -> None:
    _memory(operations, "session-1").run({"command": "create", "path": PATH, "file_text": "one\n"})
    _memory(operations, "agent:planner").run(
        {"command": "str_replace", "path": PATH, "old_str": "one", "new_str": "two"}
    )
    _memory(operations, None).run({"command": "insert", "path": PATH, "insert_line": 1, "insert_text": "x"})
    history = MemoryVersions(operations.memory("alice")).history(PATH)
    assert [(v.author, v.authentic, v.operation) for v in history] == [
        (None, True, "written"),
        ("agent:planner", True, "written"),
        ("session-1", True, "written"),
    ]
    out, err = io.StringIO(), io.StringIO()
    arguments = _parser().parse_args(["history", "--user", "alice", PATH])
    assert Console(arguments, environ={}, out=out, err=err, operations=operations).run() == 0
    rows = out.getvalue().splitlines()
    assert [row.split("  by ")[1] if "  by " in row else None for row in rows] == [
        None,
        "agent:planner",
        "session-1",
    ]


def test_renames_and_directory_renames_are_by_who_renamed(operations: Operations) -> None:
    _memory(operations, "writer").run({"command": "create", "path": "/memories/d/a.md", "file_text": "a\n"})
    _memory(operations, "mover").run(
        {"command": "rename", "old_path": "/memories/d", "new_path": "/memories/e"}
    )
    _memory(operations, "renamer").run(
        {"command": "rename", "old_path": "/memories/e/a.md", "new_path": "/memories/f.md"}
    )
    versions = MemoryVersions(operations.memory("alice"))
    assert [(v.author, v.renamed_from) for v in versions.history("/memories/e/a.md") if v.size] == [
        ("mover", "/memories/d/a.md")
    ]
    assert [(v.author, v.renamed_from) for v in versions.history("/memories/f.md")] == [
        ("renamer", "/memories/e/a.md")
    ]


@pytest.mark.parametrize(
    "forged",
    [
        {AUTHOR_METADATA: "someone-else"},  # changed
        {},  # stripped
    ],
    ids=["changed", "stripped"],
)
def test_a_bucket_writer_cannot_change_or_strip_an_author(
    operations: Operations, s3: Any, versioned: str, forged: dict[str, str]
) -> None:
    _memory(operations, "ada").run({"command": "create", "path": PATH, "file_text": "one\n"})
    s3.copy_object(
        Bucket=versioned,
        Key=KEY,
        CopySource={"Bucket": versioned, "Key": KEY},
        Metadata=forged,
        MetadataDirective="REPLACE",
    )
    with pytest.raises(IntegrityError, match="failed its integrity check"):
        operations.read("alice", PATH)
    history = MemoryVersions(operations.memory("alice")).history(PATH)
    assert [(v.author, v.authentic) for v in history] == [(None, False), ("ada", True)]


def test_a_bucket_writer_cannot_name_an_author_on_an_unnamed_write(
    operations: Operations, s3: Any, versioned: str
) -> None:
    _memory(operations, None).run({"command": "create", "path": PATH, "file_text": "one\n"})
    s3.copy_object(
        Bucket=versioned,
        Key=KEY,
        CopySource={"Bucket": versioned, "Key": KEY},
        Metadata={AUTHOR_METADATA: "ada"},
        MetadataDirective="REPLACE",
    )
    with pytest.raises(IntegrityError, match="failed its integrity check"):
        operations.read("alice", PATH)
    out, err = io.StringIO(), io.StringIO()
    arguments = _parser().parse_args(["history", "--user", "alice", PATH, "--json"])
    assert Console(arguments, environ={}, out=out, err=err, operations=operations).run() == 1
    assert [(v["author"], v["authentic"]) for v in json.loads(out.getvalue())["versions"]] == [
        (None, False),
        (None, True),
    ]


def test_acting_as_shares_what_the_process_learned_and_writes_as_the_actor(operations: Operations) -> None:
    memory = _memory(operations, None)
    memory.run({"command": "create", "path": "/memories/d/a.md", "file_text": "a\n"})
    twin = memory.acting_as("ada")
    assert (
        twin.placed.files.directories is memory.placed.files.directories
        and twin.placed.usage is memory.placed.usage
    )
    assert memory.acting_as(None) is memory
    twin.run({"command": "create", "path": "/memories/d/b.md", "file_text": "b\n"})
    assert operations.bucket.metadata("users/alice/memories/d/b.md") == {AUTHOR_METADATA: "ada"}
    assert operations.bucket.metadata("users/alice/memories/d/a.md") == {}
    with pytest.raises(ValueError, match="actor: an author may hold only"):
        memory.acting_as("not ok")


def test_an_unusable_actor_is_refused_before_any_request(s3: Any) -> None:
    before = snapshot(s3)
    with pytest.raises(ValueError, match="actor: an author is at most 128 characters"):
        S3Memory(Bucket(s3, BUCKET), "alice", LocalKeyProvider(MASTER_KEY), actor="x" * 200, storage_format=1)
    assert snapshot(s3) == before


def test_operator_writes_are_by_the_operator() -> None:
    assert operator_actor().startswith("operator")
    validate_author(operator_actor())


# -- the Lambda handlers set it from the request ----------------------------------------------------


@pytest.mark.parametrize("actor", ["operator", "operator:root", "Operator:ann"])
def test_a_served_request_cannot_name_itself_an_operator(actor: str) -> None:
    with pytest.raises(ValueError) as refused:
        validate_served_author(actor)
    assert str(refused.value) == "an author named operator is kept for the operator commands"
    with pytest.raises(Invalid) as invalid:
        parse_event({"user_id": "alice", "prompt": "hi", "actor": actor})
    assert invalid.value.message == (
        "Error: `actor` is not usable: an author named operator is kept for the operator commands."
    )
    assert validate_served_author("operators-desk") == "operators-desk"


def test_a_served_author_cannot_start_as_a_user_id_in_base32_does() -> None:
    with pytest.raises(ValueError) as refused:
        validate_served_author("=MFRGG")
    assert str(refused.value) == "an author starting with '=' is kept for user ids written in base32"


@pytest.mark.parametrize(
    ("user", "actor", "author", "shown"),
    [
        ("alice", None, "alice", "alice"),
        ("alice", "mcp", "alice/mcp", "alice/mcp"),
        ("auth0|5f7c", "mcp", "=MF2XI2BQPQ2WMN3D/mcp", '"auth0|5f7c"/mcp'),
        ("operator", None, "=N5YGK4TBORXXE", '"operator"'),
        ("operator:root", None, "=N5YGK4TBORXXEOTSN5XXI", '"operator:root"'),  # not the operator's own
        ("café", "s-1", "=MNQWNQ5J/s-1", '"caf\\u00e9"/s-1'),
        ("alice\u200b", None, "=MFWGSY3F4KAIW", '"alice\\u200b"'),  # nothing invisible passes for alice
        ("=x", None, "=HV4A", '"=x"'),
        ("a" * 128, None, "a" * 128, "a" * 128),
        ("é" * 39, None, "=" + "YOU4HKODVHB2TQ5J" * 7 + "YOU4HKODVHB2S", json.dumps("é" * 39)),
    ],
)
def test_a_users_writes_into_a_shared_memory_name_its_id_or_its_base32(
    user: str, actor: str | None, author: str, shown: str
) -> None:
    assert user_author(user, actor) == author
    assert len(author) <= 128 and validate_author(author) == author
    assert shown_author(author) == shown


def test_an_author_not_in_base32_is_shown_as_it_is() -> None:
    for author in ("=not base32", "=MFRGG=/x", "=\u00e9", "=/x", "=7QA"):  # "=7QA": not UTF-8
        assert shown_author(author) == author
    assert shown_author("=MFRGG/x") == '"abc"/x'


def test_a_user_id_too_long_for_an_author_is_refused() -> None:
    with pytest.raises(ValueError) as refused:
        user_author("é" * 40)
    assert str(refused.value) == "the user id and the actor make an author of 129 characters, over 128"


def test_the_agent_event_takes_an_actor() -> None:
    assert parse_event({"user_id": "alice", "prompt": "hi", "actor": "session-2"}).actor == "session-2"
    assert parse_event({"user_id": "alice", "prompt": "hi"}).actor is None
    with pytest.raises(Invalid) as refused:
        parse_event({"user_id": "alice", "prompt": "hi", "actor": ["x"]})
    assert refused.value.message == (
        "Error: `actor` is not usable: an author must be a non-empty string of at most 128 characters."
    )
