"""``s3memory expire``: the command over ``idle_expiry.expire`` (moto): it asks first, a dry run changes
nothing, and the answer names what went and why the rest stayed."""

from __future__ import annotations

import json
import time
from typing import Any

import pytest

from s3memory.crypto import LocalKeyProvider
from s3memory.memory import S3Memory
from s3memory.ops import idle_expiry
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, MASTER_KEY, snapshot, stored_keys
from tests.support.console import run


def test_expire_deletes_the_idle_users_files_and_says_why_the_others_stay(
    s3: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    operations.memory("ann").run({"command": "create", "path": "/memories/old.md", "file_text": "idle\n"})
    two_days_later = time.time() + 2 * idle_expiry.DAY_SECONDS
    monkeypatch.setattr(idle_expiry.time, "time", lambda: two_days_later)
    bob = S3Memory(
        operations.bucket, "bob", operations.key_provider, clock=lambda: two_days_later, storage_format=1
    )
    bob.run({"command": "create", "path": "/memories/new.md", "file_text": "fresh\n"})
    before = snapshot(s3)
    assert run(operations, "expire", "--all", "--idle-days", "1")[0] == 1  # not confirmed
    status, out, _ = run(operations, "expire", "--all", "--idle-days", "1", "--dry-run")
    assert (status, out.splitlines()[0]) == (0, "would expire ann /memories/old.md")
    assert snapshot(s3) == before
    status, out, err = run(operations, "expire", "--all", "--idle-days", "1", "--yes")
    assert (status, out.splitlines()) == (
        0,
        [
            "expired ann /memories/old.md",
            "left bob: used since the cutoff",
            "1 files expired of 2 users; kept: 0 written since the cutoff, 0 changed meanwhile, "
            "1 users active; 0 problems",
        ],
    )
    audit = json.loads(err.splitlines()[-1])
    assert (audit["command"], audit["expired"], audit["active"]) == ("expire", 1, 1)
    assert "/memories" not in err.splitlines()[-1]
    assert "users/ann/memories/old.md" not in stored_keys(s3)
    assert "users/bob/memories/new.md" in stored_keys(s3)


def test_bad_idle_days_are_refused_clearly_and_change_nothing(s3: Any) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    operations.memory("ann").run({"command": "create", "path": "/memories/a.md", "file_text": "a\n"})
    before = snapshot(s3)
    for days in ("0", "3651", "1.5", "30d"):  # a usage error: exit 2, after the usage
        status, _, err = run(operations, "expire", "--user", "ann", "--idle-days", days, "--yes")
        assert (status, err.splitlines()[-1]) == (
            2,
            f"s3memory expire: error: argument --idle-days: a whole number of days from 1 to 3,650, not '{days}'",
        )
    assert snapshot(s3) == before
