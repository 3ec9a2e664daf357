"""Mounts granted by a verified token's claims (``S3MEMORY_MOUNTS``, ``mounts.Grant``): the memory function
and the MCP function mount exactly what the claims grant; a token without the claim sees no mount and
reaches the shared memory by no path; a direct event gets no mount."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from s3memory.aws_lambda import mcp_handler, memory_handler, runtime
from s3memory.core.paths import SharedName, UserId
from s3memory.memory import S3Memory
from s3memory.mounts import READ_ONLY, READ_WRITE, Grant, Mount, granted, grants_from_json
from s3memory.settings import Settings, SettingsError
from tests.support.api_gateway import MCP_URL, client_through
from tests.support.bucket import BUCKET, LOCAL_KEY_B64
from tests.support.issuer import Issuer, http_event, loopback_issuer
from tests.support.mcp_servers import ok

TEAM = "team-acme"
GRANTS = [
    {"claim": "groups", "value": "acme", "point": "/memories/team", "memory": TEAM},
    {
        "claim": "groups",
        "value": "acme-curators",
        "point": "/memories/team",
        "memory": TEAM,
        "mode": "read_write",
    },
    {"claim": "scope", "value": "runbooks", "point": "/memories/runbooks", "memory": "runbooks"},
]


# -- the rule --------------------------------------------------------------------------------------------


def test_claims_grant_their_mounts_and_read_write_wins_at_one_point() -> None:
    grants = grants_from_json(json.dumps(GRANTS))
    team_ro, team_rw = Mount("/memories/team", TEAM), Mount("/memories/team", TEAM, READ_WRITE)
    runbooks = Mount("/memories/runbooks", "runbooks", READ_ONLY)
    alice = UserId("alice")
    assert granted(grants, {"groups": ["acme"]}, alice, None) == (team_ro,)
    assert granted(grants, {"groups": ["acme", "acme-curators"]}, alice, None) == (team_rw,)
    assert granted(grants, {"groups": "acme-curators", "scope": "openid runbooks"}, alice, "mcp") == (
        runbooks,
        team_rw,
    )
    assert granted(grants, {"groups": ["acme-x"], "scope": "runbooks-extra"}, alice, None) == ()
    assert granted(grants, {"groups": {"acme": True}, "scp": "runbooks"}, alice, None) == ()
    assert granted(grants, {}, alice, None) == ()


def test_a_user_whose_writes_no_author_can_record_is_granted_read_write_mounts_read_only() -> None:
    """An id of up to 79 bytes is recorded (in base32 where it is not an author's name as it is);
    a longer one, or one that makes too long an author with its actor, reads the mount."""
    grants = grants_from_json(json.dumps(GRANTS))
    curators = {"groups": ["acme", "acme-curators"], "scope": "runbooks"}
    team_rw, team_ro = Mount("/memories/team", TEAM, READ_WRITE), Mount("/memories/team", TEAM)
    runbooks = Mount("/memories/runbooks", "runbooks")
    for user in ("auth0|5f7c8ec7c33c6c004bbafe82", "operator", "é" * 39, "a" * 128):
        assert granted(grants, curators, UserId(user), None) == (runbooks, team_rw)
    assert granted(grants, curators, UserId("é" * 40), None) == (runbooks, team_ro)
    assert granted(grants, curators, UserId("é" * 30), "session-" + "1" * 60) == (runbooks, team_ro)


@pytest.mark.parametrize(
    ("text", "cause"),
    [
        ("{", "it is not valid JSON"),
        ('{"claim": "groups"}', "it must be a JSON array"),
        ('[{"claim": "groups", "value": "a", "point": "/memories/t"}]', "grant 1 must be an object with"),
        ('[{"claim": "", "value": "a", "point": "/memories/t", "memory": "t"}]', "grant 1: claim and value"),
        (
            '[{"claim": "g", "value": "a", "point": "/memories/a/b", "memory": "t"}]',
            "grant 1: a mount point is",
        ),
        (
            '[{"claim": "g", "value": "a", "point": "/memories/t", "memory": "T!"}]',
            "grant 1: a shared memory's",
        ),
        (
            '[{"claim": "g", "value": "a", "point": "/memories/t", "memory": "t", "mode": "rw"}]',
            "grant 1: a mount's",
        ),
        (
            '[{"claim": "g", "value": "a", "point": "/memories/t", "memory": "t"},'
            ' {"claim": "g", "value": "b", "point": "/memories/t", "memory": "u"}]',
            "/memories/t is granted two shared memories",
        ),
    ],
)
def test_a_bad_grant_setting_is_refused_naming_the_variable(text: str, cause: str) -> None:
    environ = {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_JWT_ISSUER": "https://issuer.example",
        "S3MEMORY_JWT_AUDIENCE": "api",
        "S3MEMORY_MOUNTS": text,
    }
    with pytest.raises(SettingsError) as refused:
        Settings.from_env(environ)
    assert str(refused.value).startswith(f"S3MEMORY_MOUNTS is refused: {cause}")


def test_grants_need_a_token_issuer() -> None:
    environ = {
        "S3MEMORY_BUCKET": BUCKET,
        "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64,
        "S3MEMORY_MOUNTS": json.dumps(GRANTS),
    }
    with pytest.raises(SettingsError) as refused:
        Settings.from_env(environ)
    assert (
        str(refused.value)
        == "S3MEMORY_MOUNTS needs S3MEMORY_JWT_ISSUER: only a verified token's claims grant a mount"
    )


def test_a_grant_is_read_only_unless_told() -> None:
    (grant, *_) = grants_from_json(json.dumps(GRANTS))
    assert grant == Grant("groups", "acme", Mount("/memories/team", TEAM))


# -- served ------------------------------------------------------------------------------------------------


@pytest.fixture
def issuer(local_env: Any, monkeypatch: pytest.MonkeyPatch) -> Iterator[Issuer]:
    """The functions trusting a loopback issuer, with ``GRANTS``, on format 2; the team memory seeded."""
    monkeypatch.setenv("S3MEMORY_STORAGE_FORMAT", "2")
    monkeypatch.setenv("S3MEMORY_MOUNTS", json.dumps(GRANTS))
    monkeypatch.setenv("S3MEMORY_MCP_URL", MCP_URL)
    monkeypatch.setenv("S3MEMORY_DIRECT_INVOCATION", "allow")
    runtime.reset()
    with loopback_issuer() as served:
        for name, value in served.environ().items():
            monkeypatch.setenv(name, value)
        store = runtime.get_runtime().store
        S3Memory(store, SharedName(TEAM)).run(
            {"command": "create", "path": "/memories/runbook.md", "file_text": "restart the pager\n"}
        )
        yield served
    runtime.reset()


def answered(response: dict[str, Any]) -> tuple[str, bool]:
    body = json.loads(response["body"]) if "body" in response else response
    return body["content"], body["is_error"]


def over_http(
    issuer: Issuer, tool_input: dict[str, Any], user: str = "alice", **claims: Any
) -> tuple[str, bool]:
    return answered(
        memory_handler(http_event({"input": tool_input}, token=issuer.token(user, **claims)), None)
    )


def test_the_memory_function_mounts_what_the_token_grants(issuer: Issuer) -> None:
    view = {"command": "view", "path": "/memories/team/runbook.md"}
    text, is_error = over_http(issuer, view, groups=["acme"])
    assert (text, is_error) == (
        "Here's the content of /memories/team/runbook.md with line numbers:\n     1\trestart the pager",
        False,
    )
    write = {"command": "create", "path": "/memories/team/new.md", "file_text": "x"}
    assert over_http(issuer, write, groups=["acme"]) == (
        "Error: Cannot change /memories/team/new.md: /memories/team is a read-only shared memory. Nothing was changed.",
        True,
    )
    assert over_http(issuer, write, groups=["acme-curators"]) == (
        "File created successfully at: /memories/team/new.md",
        False,
    )


@pytest.mark.parametrize("user", ["auth0|5f7c8ec7c33c6c004bbafe82", "josé", "é" * 40])
def test_a_curator_whose_subject_is_no_authors_name_writes_or_at_least_reads(
    issuer: Issuer, user: str
) -> None:
    """A subject like Auth0's ``auth0|...`` writes as its id in base32 (``crypto.user_author``); one
    too long for an author reads the mount its grant makes read-write, and keeps its own memory."""
    own = {"command": "create", "path": "/memories/own.md", "file_text": "x"}
    assert over_http(issuer, own, user, groups=["acme-curators"]) == (
        "File created successfully at: /memories/own.md",
        False,
    )
    write = {"command": "create", "path": "/memories/team/new.md", "file_text": "x"}
    text, is_error = over_http(issuer, write, user, groups=["acme-curators"])
    if len(user) < 40:
        assert (text, is_error) == ("File created successfully at: /memories/team/new.md", False)
    else:
        assert (text, is_error) == (
            "Error: Cannot change /memories/team/new.md: /memories/team is a read-only shared memory. "
            "Nothing was changed.",
            True,
        )
    view = {"command": "view", "path": "/memories/team/runbook.md"}
    assert over_http(issuer, view, user, groups=["acme-curators"])[1] is False


@pytest.mark.parametrize(
    "path", ["/memories/team/runbook.md", "/memories/runbook.md", "/memories/shared/team-acme/runbook.md"]
)
def test_a_token_without_the_claim_sees_no_mount_and_reaches_the_shared_memory_by_no_path(
    issuer: Issuer, path: str
) -> None:
    assert over_http(issuer, {"command": "view", "path": path}, groups=["other"]) == (
        f"The path {path} does not exist. Please provide a valid path.",
        True,
    )
    listing, _ = over_http(issuer, {"command": "view", "path": "/memories"}, groups=["other"])
    assert "team" not in listing and "Read-only" not in listing


def test_a_direct_event_gets_no_mount(issuer: Issuer) -> None:
    response = memory_handler(
        {"user_id": "alice", "input": {"command": "view", "path": "/memories/team/runbook.md"}}, None
    )
    assert answered(response) == (
        "The path /memories/team/runbook.md does not exist. Please provide a valid path.",
        True,
    )


def test_the_mcp_function_mounts_what_the_token_grants(issuer: Issuer) -> None:
    with client_through(mcp_handler, issuer.token("bob", groups=["acme"])) as bob:
        assert ok(bob, command="view", path="/memories/team/runbook.md").endswith("     1\trestart the pager")
        assert ok(bob, command="view", path="/memories").endswith(
            "[Read-only shared memory: /memories/team; writes there are refused.]"
        )
    with client_through(mcp_handler, issuer.token("bob")) as bob:
        assert bob.call(command="view", path="/memories/team/runbook.md") == (
            "The path /memories/team/runbook.md does not exist. Please provide a valid path.",
            True,
        )
