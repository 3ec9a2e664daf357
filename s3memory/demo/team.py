"""The demo's third conversation: a team's shared memory mounted read-only beside the user's own.

An operator puts the team's runbook in the shared memory ``team-acme`` (as ``s3memory import --user
shared/team-acme`` would). The user's tool mounts it at ``/memories/team``, read-only: the user asks
for a change to the runbook, the write is refused and changes nothing, and the note goes into the
user's own memory instead. The scripted Claude answers from the tool results it was sent, so a write
that was not refused would be reported as done.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from s3memory.testing.script import Reply, Turn, last_tool_results

if TYPE_CHECKING:
    from s3memory.crypto import KeyProvider
    from s3memory.mounts import Mount
    from s3memory.storage.bucket import Bucket

TEAM_MEMORY = "team-acme"
TEAM_POINT = "/memories/team"
RUNBOOK_PATH = f"{TEAM_POINT}/runbook.md"
RUNBOOK_TEXT = (
    "# Team runbook\n- Deploys go out on Tuesdays.\n- Every schema change gets a rollback script.\n"
)
"""The runbook as the operator stored it (at ``/memories/runbook.md`` in the shared memory)."""
RUNBOOK_ENTRY = "- Billing deploys need the billing-v2 feature flag.\n"
PROPOSAL_PATH = "/memories/proposals/team-runbook.md"
TEAM_MESSAGE = "Please add to our team runbook that billing deploys now need the billing-v2 feature flag."
OPERATOR = "operator:demo"


def team_mount() -> Mount:
    """``team-acme`` at ``/memories/team``, read-only."""
    from s3memory.mounts import Mount

    return Mount(TEAM_POINT, TEAM_MEMORY)


def seed_team_memory(bucket: Bucket, key_provider: KeyProvider) -> None:
    """The operator's runbook in the shared memory ``team-acme``."""
    from s3memory.core.paths import SharedName
    from s3memory.memory import S3Memory

    team = S3Memory(bucket, SharedName(TEAM_MEMORY), key_provider).acting_as(OPERATOR)
    team.run({"command": "create", "path": "/memories/runbook.md", "file_text": RUNBOOK_TEXT})


def team_runbook(bucket: Bucket, key_provider: KeyProvider) -> str:
    """The runbook's text as the shared memory holds it now."""
    from s3memory.core.paths import SharedName, memory_path
    from s3memory.memory import S3Memory

    team = S3Memory(bucket, SharedName(TEAM_MEMORY), key_provider)
    found = team.placed.files.read(memory_path("/memories/runbook.md"))
    return "" if found is None else found.text


def _open_runbook(messages: list[dict[str, Any]]) -> Turn:
    """Turn 2: read the runbook, saying whether the listing marked the mount read-only."""
    results = last_tool_results(messages)
    listing = results[0].text if results and not results[0].is_error else ""
    read_only = f"[Read-only shared memory: {TEAM_POINT}" in listing
    mode = "read-only" if read_only else "shared"
    return Reply(
        f"The team's runbook is in a {mode} shared memory at {TEAM_POINT}; reading it first.",
        [{"command": "view", "path": RUNBOOK_PATH}],
    )


def _add_to_runbook(messages: list[dict[str, Any]]) -> Turn:
    """Turn 3: append the rule to the runbook, after its last line."""
    results = last_tool_results(messages)
    lines = 0 if not results or results[0].is_error else len(results[0].text.splitlines()) - 1
    return Reply(
        "Adding the rule to the runbook.",
        [{"command": "insert", "path": RUNBOOK_PATH, "insert_line": lines, "insert_text": RUNBOOK_ENTRY}],
    )


def _keep_a_proposal(messages: list[dict[str, Any]]) -> Turn:
    """Turn 4: if the runbook refused the write, keep the rule in the user's own memory."""
    results = last_tool_results(messages)
    if results and not results[0].is_error:
        return "Done: the runbook now says billing deploys need the billing-v2 feature flag."
    return Reply(
        "The runbook refused my write, so I'll keep the rule in my own memory for a curator.",
        [
            {
                "command": "create",
                "path": PROPOSAL_PATH,
                "file_text": f"# Proposed for {RUNBOOK_PATH}\n{RUNBOOK_ENTRY}",
            }
        ],
    )


def _report(messages: list[dict[str, Any]]) -> Turn:
    """Final turn: what happened, from the last tool result."""
    results = last_tool_results(messages)
    if not results or results[0].is_error:
        return "The team runbook is read-only for me, and I could not save your rule anywhere."
    return (
        "The team runbook is read-only for me: my write was refused and it is unchanged. I saved your "
        f"rule at {PROPOSAL_PATH} in my own memory, for whoever curates the runbook."
    )


def team_script() -> list[Turn]:
    """What the scripted Claude does with :data:`TEAM_MESSAGE`."""
    return [
        Reply("I'll check my memory directory first.", [{"command": "view", "path": "/memories"}]),
        _open_runbook,
        _add_to_runbook,
        _keep_a_proposal,
        _report,
    ]
