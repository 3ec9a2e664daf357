"""``s3memory demo``: Claude's memory tool on S3, end to end, offline by default.

Everything runs in this process on 127.0.0.1: moto's S3 server, and (unless ``--live``) a scripted
stand-in for the Messages API. The real Anthropic SDK drives the real :class:`S3MemoryTool` through
its tool runner over three conversations. The second starts with an empty context and a fresh tool
instance, and its answer is built from the ``tool_result`` text it was sent, so what it recalls can
only have come from S3. Then a stored object is read with plain boto3 to show it is ciphertext. Last,
the third sees a team's shared memory mounted read-only, and its write there refused (``team.py``).

With ``--live`` (and ``ANTHROPIC_API_KEY`` set) the same conversations go to real Claude; S3 is
still the embedded moto server. No key is ever printed.
"""

from __future__ import annotations

import contextlib
import os
import re
import secrets
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TextIO

from s3memory.settings import DEFAULT_MODEL
from s3memory.testing.offline import offline_aws_environment
from s3memory.testing.script import Reply, ToolResult, Turn, last_tool_results, tool_results
from s3memory.testing.scripted_claude import ScriptedClaude

if TYPE_CHECKING:
    from anthropic import Anthropic
    from mypy_boto3_s3 import S3Client

    from s3memory.crypto import KeyProvider
    from s3memory.mounts import Mount
    from s3memory.tool import S3MemoryTool

USER_ID = "alice"
MAX_TOKENS = 2048
MAX_ITERATIONS = 16
"""Bounds the model turns of one conversation (and so the cost of ``--live``)."""
BETAS = ["context-management-2025-06-27"]
EXIT_NO_API_KEY = 2
RAW_BYTES_SHOWN = 128
"""How much of the stored object the hex dump shows: its whole header and the start of the ciphertext."""
RESULT_LINES_SHOWN = 24

FIRST_MESSAGE = (
    "I prefer concise answers in British English. "
    "We are migrating the billing service; step 1 (schema) is done."
)
SECOND_MESSAGE = "Hello again. How do I like my answers, and where are we with the billing migration?"

PREFERENCES_PATH = "/memories/preferences.md"
PROGRESS_PATH = "/memories/progress/billing-migration.md"
PREFERENCES_TEXT = "# Preferences\n- Concise answers.\n- British English spelling and style.\n"
PROGRESS_TEXT = (
    "# Billing service migration\nGoal: move billing to the new service, step by step.\n\n## Progress log\n"
)
PROGRESS_ENTRY = "- Step 1 (schema): done.\n"

_VIEW_HEADER = re.compile(r"Here's the content of (?P<path>.+) with line numbers:")
_NUMBERED_LINE = re.compile(r" *\d+\t")


# -- the scripted Claude ----------------------------------------------------------------------


def _failures(results: Sequence[ToolResult]) -> list[str]:
    return [result.text for result in results if result.is_error]


def _remember(messages: list[dict[str, Any]]) -> Turn:
    """Conversation 1, turn 2: store the preferences and start a progress file."""
    listing = last_tool_results(messages)
    empty = bool(listing) and not listing[0].is_error and len(listing[0].text.strip().splitlines()) <= 2
    opening = "My memory is empty, so" if empty else "Noted:"
    return Reply(
        f"{opening} I'll save your preferences and start a progress file for the migration.",
        [
            {"command": "create", "path": PREFERENCES_PATH, "file_text": PREFERENCES_TEXT},
            {"command": "create", "path": PROGRESS_PATH, "file_text": PROGRESS_TEXT},
        ],
    )


def _log_progress(messages: list[dict[str, Any]]) -> Turn:
    """Conversation 1, turn 3: append a progress entry, once both files are saved."""
    failures = _failures(last_tool_results(messages))
    if failures:
        return "I could not save my notes: " + " ".join(failures)
    return Reply(
        "Both files are saved. Now I'll log where the migration stands.",
        [
            {
                "command": "insert",
                "path": PROGRESS_PATH,
                "insert_line": len(PROGRESS_TEXT.splitlines()),
                "insert_text": PROGRESS_ENTRY,
            }
        ],
    )


def _confirm(messages: list[dict[str, Any]]) -> Turn:
    """Conversation 1, final turn."""
    failures = _failures(last_tool_results(messages))
    if failures:
        return "I could not log the progress entry: " + " ".join(failures)
    return (
        "Noted: concise answers, in British English. I've recorded that step 1 (schema) of the billing "
        "migration is done, so we can pick up from there next time."
    )


def conversation_1_script() -> list[Turn]:
    """What the scripted Claude does with :data:`FIRST_MESSAGE`."""
    return [
        Reply("I'll check my memory directory first.", [{"command": "view", "path": "/memories"}]),
        _remember,
        _log_progress,
        _confirm,
    ]


def listed_files(listing: str) -> list[str]:
    """The file paths of a ``view`` directory listing (the rows that no other row lies below)."""
    rows = [line.split("\t", 1)[1].rstrip("/") for line in listing.splitlines()[1:] if "\t" in line]
    return [
        row for row in rows if row != "/memories" and not any(other.startswith(row + "/") for other in rows)
    ]


def viewed_file(view_text: str) -> tuple[str, list[str]] | None:
    """The path and lines of a ``view`` file answer, line numbers stripped; None for anything else."""
    lines = view_text.split("\n")
    header = _VIEW_HEADER.fullmatch(lines[0]) if lines else None
    if header is None:
        return None
    return header["path"], [
        line[match.end() :] for line in lines[1:] if (match := _NUMBERED_LINE.match(line)) is not None
    ]


def _read_listed_files(messages: list[dict[str, Any]]) -> Turn:
    """Conversation 2, turn 2: open every file the listing showed."""
    results = last_tool_results(messages)
    files = listed_files(results[0].text) if results and not results[0].is_error else []
    if not files:
        return "I have nothing in memory about you yet. How do you like your answers?"
    return Reply(
        f"I have {len(files)} memory file{'s' if len(files) != 1 else ''}; reading them.",
        [{"command": "view", "path": path} for path in files],
    )


def recall_answer(results: Sequence[ToolResult]) -> str:
    """The final answer of conversation 2, built only from the files' ``view`` results."""
    sections: list[str] = []
    for result in results:
        viewed = None if result.is_error else viewed_file(result.text)
        if viewed is None:
            continue
        path, lines = viewed
        title = next((line.lstrip("#").strip() for line in lines if line.startswith("#")), path)
        notes = [line for line in lines if line.startswith("- ")]
        if notes:
            sections.append(f"{title} ({path}):\n" + "\n".join(notes))
    if not sections:
        return "I could not read my notes, so I don't know yet. Could you remind me?"
    return "Welcome back. From my memory:\n\n" + "\n\n".join(sections)


def _recall(messages: list[dict[str, Any]]) -> Turn:
    """Conversation 2, final turn: answer from what the ``view`` results held."""
    return recall_answer(last_tool_results(messages))


def conversation_2_script() -> list[Turn]:
    """What the scripted Claude does with :data:`SECOND_MESSAGE`, in a fresh context."""
    return [
        Reply("Let me check my memory first.", [{"command": "view", "path": "/memories"}]),
        _read_listed_files,
        _recall,
    ]


# -- the run ----------------------------------------------------------------------------------


@dataclass
class ToolCall:
    input: dict[str, Any]
    result: str
    is_error: bool


@dataclass
class Conversation:
    user_message: str
    final_text: str = ""
    tool_calls: list[ToolCall] = field(default_factory=list)


@dataclass
class DemoReport:
    """What a demo run did, for tests and callers that want more than the printout."""

    bucket: str
    conversations: list[Conversation] = field(default_factory=list)
    object_key: str = ""
    raw_object: bytes = b""
    decrypted_view: str = ""
    api: ScriptedClaude | None = None
    """The scripted stand-in (None with ``--live``): its recorded requests and histories."""
    api_requests_per_conversation: list[int] = field(default_factory=list)
    team_runbook: str = ""
    """The team's runbook as the shared memory held it after conversation 3."""


class _Printer:
    def __init__(self, out: TextIO) -> None:
        self.out = out

    def line(self, text: str = "") -> None:
        self.out.write(text + "\n")
        self.out.flush()

    def block(self, prefix: str, text: str) -> None:
        """``text`` with ``prefix`` before its first line and the others aligned under it."""
        lines = text.splitlines() or [""]
        self.line(prefix + lines[0])
        for line in lines[1:]:
            self.line(" " * len(prefix) + line)

    def indented(self, text: str, indent: str = "      ") -> None:
        lines = text.splitlines() or [""]
        for line in lines[:RESULT_LINES_SHOWN]:
            self.line(indent + line)
        if len(lines) > RESULT_LINES_SHOWN:
            self.line(f"{indent}... ({len(lines) - RESULT_LINES_SHOWN} more lines)")


def describe_call(tool_input: Mapping[str, Any]) -> str:
    """A tool call as one line: the command and its path(s), never the file text."""
    command = str(tool_input.get("command", "?"))
    if command == "rename":
        return f"memory rename {tool_input.get('old_path')} -> {tool_input.get('new_path')}"
    detail = ""
    if command == "view" and tool_input.get("view_range") is not None:
        detail = f" (lines {tool_input['view_range']})"
    elif command == "insert":
        detail = f" (after line {tool_input.get('insert_line')})"
    return f"memory {command} {tool_input.get('path')}{detail}"


def _converse(
    client: Anthropic, model: str, tool: S3MemoryTool, user_message: str, printer: _Printer
) -> Conversation:
    from anthropic.types.beta import BetaTextBlock, BetaToolUseBlock

    conversation = Conversation(user_message)
    printer.block("user>   ", user_message)
    runner = client.beta.messages.tool_runner(
        model=model,
        max_tokens=MAX_TOKENS,
        max_iterations=MAX_ITERATIONS,
        messages=[{"role": "user", "content": user_message}],
        tools=[tool],
        betas=BETAS,
    )
    for message in runner:
        texts = [
            block.text for block in message.content if isinstance(block, BetaTextBlock) and block.text.strip()
        ]
        for text in texts:
            printer.block("claude> ", text)
        calls = [block for block in message.content if isinstance(block, BetaToolUseBlock)]
        if not calls:
            conversation.final_text = "\n".join(texts)
            continue
        response: Mapping[str, Any] = runner.generate_tool_call_response() or {}
        results = {result.tool_use_id: result for result in tool_results(response)}
        for call in calls:
            result = results.get(call.id, ToolResult(call.id, "", False))
            conversation.tool_calls.append(ToolCall(dict(call.input), result.text, result.is_error))
            printer.line(f"  -> {describe_call(call.input)}")
            printer.indented(("(error) " if result.is_error else "") + result.text)
    return conversation


def hex_dump(data: bytes, *, indent: str = "  ") -> list[str]:
    """``data`` as hex dump rows: offset, 16 bytes in hex, and the printable ASCII of them."""
    rows = []
    for offset in range(0, len(data), 16):
        chunk = data[offset : offset + 16]
        ascii_text = "".join(chr(byte) if 0x20 <= byte < 0x7F else "." for byte in chunk)
        rows.append(f"{indent}{offset:04x}  {chunk.hex(' '):<47}  |{ascii_text}|")
    return rows


@contextlib.contextmanager
def _offline_aws_environment() -> Iterator[None]:
    """The environment of an offline test (``s3memory.testing.offline``): dummy AWS credentials, no
    AWS config files, loopback never proxied; restored afterwards."""
    changes = offline_aws_environment(os.environ)
    saved = {name: os.environ.get(name) for name in changes}
    try:
        _set_environment(changes)
        yield
    finally:
        _set_environment(saved)


def _set_environment(values: Mapping[str, str | None]) -> None:
    """Set each variable to its value; ``None`` removes it."""
    for name, value in values.items():
        if value is None:
            os.environ.pop(name, None)
        else:
            os.environ[name] = value


def _make_tool(
    bucket: str, key_provider: KeyProvider, endpoint: str, mounts: Sequence[Mount] = ()
) -> S3MemoryTool:
    """A new S3 client and tool for the demo user, with ``mounts``: nothing is shared with an earlier
    instance but S3."""
    from s3memory.clients import make_s3_client
    from s3memory.tool import S3MemoryTool

    s3 = make_s3_client(endpoint_url=endpoint)
    return S3MemoryTool(
        bucket=bucket, user_id=USER_ID, key_provider=key_provider, s3_client=s3, mounts=mounts
    )


def _show_at_rest(
    printer: _Printer, report: DemoReport, plain: S3Client, key_provider: KeyProvider, endpoint: str
) -> None:
    """List the bucket and read the preferences object with plain boto3, and print them beside what
    the tool (with the key) makes of them: the paths the keys name, the decrypted view."""
    from s3memory.core.paths import memory_path
    from s3memory.crypto import HEADER_BYTES, TAG_BYTES
    from s3memory.memory import S3Memory
    from s3memory.storage.bucket import Bucket

    bucket = report.bucket
    tool = _make_tool(bucket, key_provider, endpoint)
    layout = S3Memory(Bucket(plain, bucket), USER_ID, key_provider).placed.layout
    printer.line()
    printer.line("=== At rest: the bucket read with plain boto3 (no s3memory, no key) ===")
    printer.line("Every object key, and (after '=') what it names, as only the key holder can tell:")
    listing = plain.list_objects_v2(Bucket=bucket).get("Contents", [])
    keys = [str(entry.get("Key", "")) for entry in listing]
    for entry, key in zip(listing, keys, strict=True):
        path = layout.path_of_key(key)
        named = path.canonical if path is not None else _internal_name(key, layout.namespace)
        printer.line(f"  s3://{bucket}/{key}  ({entry.get('Size', 0)} bytes)")
        printer.line(f"      = {named}")
    names = [
        USER_ID,
        *{segment for path in (PREFERENCES_PATH, PROGRESS_PATH) for segment in path.split("/")[2:]},
    ]
    shown_names = [name for name in names if any(name in key for key in keys)]
    printer.line(
        f"  the user id or a file or directory name in any key: {', '.join(shown_names) if shown_names else 'no'}"
    )
    key = layout.file_key(memory_path(PREFERENCES_PATH))
    if key not in keys:
        raise RuntimeError(f"{PREFERENCES_PATH} is not in the bucket; conversation 1 did not store it")
    stored = plain.get_object(Bucket=bucket, Key=key)
    raw: bytes = stored["Body"].read()
    decrypted = tool.call({"command": "view", "path": PREFERENCES_PATH})
    report.object_key, report.raw_object, report.decrypted_view = key, raw, decrypted
    shown = raw[:RAW_BYTES_SHOWN]
    printer.line(f"get_object of {PREFERENCES_PATH}'s key: {len(raw)} bytes; the first {len(shown)} as hex:")
    for row in hex_dump(shown):
        printer.line(row)
    printer.line(
        f"  (bytes 0-{HEADER_BYTES - 1}: header with magic 'S3ME', format, key version, salt, key "
        f"commitment and nonce; then AES-256-GCM ciphertext and a {TAG_BYTES}-byte tag)"
    )
    metadata = stored.get("Metadata", {})
    printer.line(
        f"  metadata: {', '.join(sorted(metadata))} (the header, and the sealed record that places the "
        "content at its path and names its author)"
    )
    leaked = any(line.encode("utf-8") in raw for line in PREFERENCES_TEXT.splitlines() if line)
    printer.line(
        f"  plaintext {len(PREFERENCES_TEXT.encode('utf-8'))} bytes, stored {len(raw)} bytes; "
        f"any line of the plaintext in the stored bytes: {'YES' if leaked else 'no'}"
    )
    printer.line(f"The same file through S3MemoryTool (decrypted with {USER_ID}'s key):")
    printer.indented(decrypted, indent="  ")


def _internal_name(key: str, namespace: str) -> str:
    """What an object that is no memory file is, by its key."""
    if key.startswith(namespace):
        return f"{USER_ID}'s {key[len(namespace) :]} (s3memory's own record)"
    return f"the store's {key.rsplit('/', 1)[-1]} (s3memory's own record)"


def run_demo(out: TextIO, *, live: bool = False, model: str = DEFAULT_MODEL) -> DemoReport:
    """Run both conversations and the at-rest check, printing as it goes. Raises on failure."""
    import anthropic
    import boto3

    from s3memory.crypto import LocalKeyProvider
    from s3memory.demo import team
    from s3memory.storage.bucket import Bucket
    from s3memory.testing.embedded_s3 import moto_server

    started = time.monotonic()
    printer = _Printer(out)
    bucket = f"s3memory-demo-{secrets.token_hex(4)}"
    report = DemoReport(bucket=bucket)
    with contextlib.ExitStack() as stack:
        stack.enter_context(_offline_aws_environment())
        endpoint = stack.enter_context(moto_server(bucket))
        key_provider = LocalKeyProvider(secrets.token_bytes(32))

        printer.line("s3memory demo: Claude's memory tool (memory_20250818) on S3, encrypted on the client")
        printer.line(f"  S3:     moto server at {endpoint}, bucket {bucket}, user {USER_ID!r}")
        printer.line("  key:    LocalKeyProvider with a random 32-byte master key (never printed)")
        if live:
            client = anthropic.Anthropic(max_retries=2)
            printer.line(f"  Claude: the Anthropic API (--live), model {model}")
        else:
            api = stack.enter_context(ScriptedClaude())
            report.api = api
            client = api.client(timeout=30)
            printer.line(f"  Claude: scripted stand-in for the Messages API at {api.base_url} (offline)")
            printer.line("          (`s3memory demo --live` talks to real Claude instead)")
        printer.line(
            "  Every conversation runs the real Anthropic SDK tool runner with the real S3MemoryTool."
        )

        plans = [
            ("Conversation 1", FIRST_MESSAGE, conversation_1_script()),
            (
                "Conversation 2: empty context (new messages, new S3MemoryTool; same bucket and user)",
                SECOND_MESSAGE,
                conversation_2_script(),
            ),
        ]

        def play(title: str, user_message: str, script: list[Turn], tool: S3MemoryTool) -> None:
            printer.line()
            printer.line(f"=== {title} ===")
            if report.api is not None:
                report.api.play(*script)
            before = len(report.api.requests) if report.api is not None else 0
            report.conversations.append(_converse(client, model, tool, user_message, printer))
            if report.api is not None:
                report.api_requests_per_conversation.append(len(report.api.requests) - before)
                if report.api.remaining:
                    raise RuntimeError(
                        f"{title}: the client stopped with {report.api.remaining} scripted turns left"
                    )

        for title, user_message, script in plans:
            play(title, user_message, script, _make_tool(bucket, key_provider, endpoint))

        plain = boto3.client("s3", endpoint_url=endpoint)
        _show_at_rest(printer, report, plain, key_provider, endpoint)

        store = Bucket(plain, bucket)
        team.seed_team_memory(store, key_provider)
        mounted = _make_tool(bucket, key_provider, endpoint, [team.team_mount()])
        play(
            f"Conversation 3: the team's shared memory {team.TEAM_MEMORY} mounted read-only at {team.TEAM_POINT}",
            team.TEAM_MESSAGE,
            team.team_script(),
            mounted,
        )
        report.team_runbook = team.team_runbook(store, key_provider)
        kept = "unchanged" if report.team_runbook == team.RUNBOOK_TEXT else "CHANGED"
        printer.line(f"The runbook in the shared memory {team.TEAM_MEMORY}, read back from S3: {kept}.")
        printer.line()
        reach = "S3 on loopback; Claude over the network" if live else "no network beyond 127.0.0.1"
        printer.line(f"Done in {time.monotonic() - started:.1f}s ({reach}).")
    return report


def demo_main(*, live: bool = False, model: str = DEFAULT_MODEL, out: TextIO | None = None) -> int:
    """The ``s3memory demo`` command: 0 on success, 2 for ``--live`` without a key, 1 on failure."""
    out = sys.stdout if out is None else out
    if live and not os.environ.get("ANTHROPIC_API_KEY", "").strip():
        print(
            "s3memory demo --live needs the ANTHROPIC_API_KEY environment variable (your Anthropic API key). "
            "Set it, or run `s3memory demo` without --live for the offline demo.",
            file=sys.stderr,
        )
        return EXIT_NO_API_KEY
    try:
        run_demo(out, live=live, model=model)
    except Exception as error:
        print(f"s3memory demo failed: {type(error).__name__}: {error}", file=sys.stderr)
        return 1
    return 0
