"""The content guard (secrets never reach memory) and per-user quotas."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from s3memory.errors import CommandError
from s3memory.guard import DEFAULT_DETECTORS, ContentGuard, luhn_valid
from s3memory.memory import Quota, S3Memory

from .support.bucket import snapshot

# Fake but well-formed secrets, assembled so that no scanner mistakes this file for a leak.
AWS_KEY_ID = "AKIA" + "Z7QXEXAMPLE2FAKE"
AWS_SECRET = "aws_secret_access_key = " + "wJalrXUtnFEMI/K7MDENG/bPxRfiCYEXAMPLEKEY"
PRIVATE_KEY = "-----BEGIN RSA PRIVATE KEY-----\nMIIEfake\nline\n-----END RSA PRIVATE KEY-----"
ANTHROPIC_KEY = "sk-ant-" + "api03-" + "a" * 40
GITHUB_TOKEN = "ghp_" + "A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
CARD = "4111 1111 1111 1111"

SECRETS = {
    "AWS access key id": AWS_KEY_ID,
    "AWS secret access key": AWS_SECRET,
    "private key block": PRIVATE_KEY,
    "Anthropic API key": ANTHROPIC_KEY,
    "GitHub token": GITHUB_TOKEN,
    "payment card number": CARD,
}


@pytest.mark.parametrize(("kind", "secret"), SECRETS.items())
def test_each_default_detector_refuses_and_names_the_kind_not_the_secret(
    memory: S3Memory, s3: Any, kind: str, secret: str
) -> None:
    memory.run({"command": "create", "path": "/memories/notes.txt", "file_text": "safe\n"})
    before = snapshot(s3)
    for command in (
        {"command": "create", "path": "/memories/new.txt", "file_text": f"note: {secret}\n"},
        {"command": "str_replace", "path": "/memories/notes.txt", "old_str": "safe", "new_str": secret},
        {"command": "insert", "path": "/memories/notes.txt", "insert_line": 0, "insert_text": secret},
    ):
        with pytest.raises(CommandError) as caught:
            memory.run(command)
        assert caught.value.message.startswith("Error: The write to /memories/")
        assert f"looks like a secret ({kind})" in caught.value.message
        assert secret not in caught.value.message
    assert snapshot(s3) == before


def test_redact_mode_stores_the_text_without_the_secret(make_memory: Callable[..., S3Memory]) -> None:
    memory = make_memory(content_guard=ContentGuard(mode="redact"))
    memory.run(
        {"command": "create", "path": "/memories/n.txt", "file_text": f"key {AWS_KEY_ID} and card {CARD}.\n"}
    )
    shown = memory.run({"command": "view", "path": "/memories/n.txt"})
    assert shown.endswith("     1\tkey [REDACTED AWS access key id] and card [REDACTED payment card number].")


def test_the_guard_logs_nothing_it_matched(
    make_memory: Callable[..., S3Memory], caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)
    memory = make_memory()
    with pytest.raises(CommandError):
        memory.run({"command": "create", "path": "/memories/n.txt", "file_text": ANTHROPIC_KEY})
    assert ANTHROPIC_KEY not in caplog.text


def test_ordinary_text_and_numbers_pass(memory: S3Memory) -> None:
    text = "Order 1234-5678, phone +44 20 7946 0958, build 4111111111111112, sk-short, AKIA lowercase akia\n"
    assert memory.run({"command": "create", "path": "/memories/ok.txt", "file_text": text}).startswith(
        "File created"
    )


def test_the_guard_can_be_configured_or_switched_off(make_memory: Callable[..., S3Memory]) -> None:
    only_cards = ContentGuard(
        [detector for detector in DEFAULT_DETECTORS if detector.kind == "payment card number"]
    )
    relaxed = make_memory(content_guard=only_cards)
    relaxed.run({"command": "create", "path": "/memories/a.txt", "file_text": AWS_KEY_ID})
    with pytest.raises(CommandError, match="payment card number"):
        relaxed.run({"command": "create", "path": "/memories/b.txt", "file_text": CARD})
    make_memory(content_guard=None).run({"command": "create", "path": "/memories/c.txt", "file_text": CARD})
    with pytest.raises(ValueError, match="mode"):
        ContentGuard(mode="shout")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("number", "valid"),
    [
        ("4111111111111111", True),
        ("4111111111111112", False),
        ("5500 0000 0000 0004", True),
        ("1234", False),
        ("0" * 20, False),
    ],
)
def test_luhn(number: str, valid: bool) -> None:
    assert luhn_valid(number) is valid


@given(st.text(max_size=200))
def test_redaction_leaves_no_detectable_secret(text: str) -> None:
    redacted = ContentGuard(mode="redact").screen("/memories/x", text + " " + GITHUB_TOKEN)
    assert GITHUB_TOKEN not in redacted
    assert ContentGuard(mode="redact").screen("/memories/x", redacted) == redacted


def test_file_count_quota(make_memory: Callable[..., S3Memory], s3: Any) -> None:
    memory = make_memory(quota=Quota(max_files=2))
    memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "a"})
    memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "b"})
    before = snapshot(s3)
    with pytest.raises(CommandError) as caught:
        memory.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})
    assert caught.value.message == (
        "Error: Cannot write /memories/c.txt: the memory quota allows 2 files and 2 exist. "
        "Delete or merge files first; nothing was changed."
    )
    assert snapshot(s3) == before
    memory.run({"command": "delete", "path": "/memories/a.txt"})
    memory.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})


def test_byte_quota_counts_creates_and_edits(make_memory: Callable[..., S3Memory], s3: Any) -> None:
    memory = make_memory(quota=Quota(max_bytes=10))
    memory.run({"command": "create", "path": "/memories/a.txt", "file_text": "12345"})
    memory.run({"command": "insert", "path": "/memories/a.txt", "insert_line": 1, "insert_text": "678"})
    before = snapshot(s3)
    with pytest.raises(
        CommandError, match=r"allows 10 bytes, 10 are used and this write adds 3\. Nothing was changed\.$"
    ):
        memory.run(
            {"command": "str_replace", "path": "/memories/a.txt", "old_str": "678", "new_str": "678901"}
        )
    with pytest.raises(CommandError, match="quota allows 10 bytes"):
        memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "x"})
    assert snapshot(s3) == before
    memory.run({"command": "str_replace", "path": "/memories/a.txt", "old_str": "12345", "new_str": "1"})
    memory.run({"command": "create", "path": "/memories/b.txt", "file_text": "xyz"})


def test_quota_sees_other_writers_after_refresh(make_memory: Callable[..., S3Memory]) -> None:
    watcher = make_memory(quota=Quota(max_files=2, refresh_seconds=0))
    other = make_memory()
    other.run({"command": "create", "path": "/memories/a.txt", "file_text": "a"})
    other.run({"command": "create", "path": "/memories/b.txt", "file_text": "b"})
    with pytest.raises(CommandError, match="allows 2 files and 2 exist"):
        watcher.run({"command": "create", "path": "/memories/c.txt", "file_text": "c"})


@pytest.mark.parametrize("bad", [{"max_bytes": -1}, {"max_files": "3"}, {"max_files": True}])
def test_bad_quotas_are_refused(bad: dict[str, Any]) -> None:
    with pytest.raises(ValueError, match="Quota"):
        Quota(**bad)
