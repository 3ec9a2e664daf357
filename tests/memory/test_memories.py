"""The memories a process serving many users keeps: one per user, at most a bound of them."""

from __future__ import annotations

from typing import Any

from s3memory.core.paths import UserId
from s3memory.memories import WARM_USERS, Memories


def test_one_memory_per_user_shared_by_their_requests_and_at_most_kept_users() -> None:
    """As the Lambda runtime and the MCP server over HTTP keep them."""
    made: list[str] = []

    def make(user: UserId) -> Any:
        made.append(user)
        return object()

    memories = Memories(make, kept=2)
    first = memories("alice")
    assert memories("alice") is first and made == ["alice"]
    memories("bob")
    memories("alice")
    memories("carol")  # bob, the least recently used, is dropped
    assert len(memories) == 2 and made == ["alice", "bob", "carol"]
    assert memories("alice") is first
    memories("bob")
    assert made == ["alice", "bob", "carol", "bob"]
    assert WARM_USERS == 128
