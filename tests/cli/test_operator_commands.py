"""The operator commands as declared in ``operator_commands``: each is listed by ``s3memory --help``
with its help, and its ``--json`` output is its report's document, printed by the one renderer (moto)."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
from pathlib import Path
from typing import Any

import pytest

from s3memory.cli import console
from s3memory.cli import main as cli
from s3memory.cli.console import Console, Report, settings_from
from s3memory.cli.operator_commands import COMMANDS
from s3memory.crypto import LocalKeyProvider
from s3memory.ops.operations import Operations
from s3memory.storage.bucket import Bucket
from tests.support.bucket import BUCKET, LOCAL_KEY_B64, MASTER_KEY, snapshot
from tests.support.console import audit, run


def test_every_declared_command_is_listed_with_its_help(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("COLUMNS", "200")  # one line a command
    with pytest.raises(SystemExit) as exited:
        cli.main(["--help"])
    assert exited.value.code == 0
    listing = capsys.readouterr().out
    names = [declared.name for declared in COMMANDS]
    assert re.findall(r"^    ([a-z0-9-]+) ", listing, re.MULTILINE) == [
        "demo",
        "mcp",
        *names,
        "local-s3",
        "completion",
    ]
    for declared in COMMANDS:
        assert re.search(rf"^ +{declared.name} +{re.escape(declared.help)}$", listing, re.MULTILINE), (
            declared.name
        )


def test_a_command_that_asks_first_takes_yes_and_the_others_do_not() -> None:
    parser = cli._parser()
    for declared in COMMANDS:
        arguments = parser.parse_args([declared.name, *REQUIRED[declared.name]])
        assert hasattr(arguments, "yes") == (declared.confirms is not None), declared.name
        assert arguments.operator_command is declared


REQUIRED = {
    "users": [],
    "shared": [],
    "ls": ["--user", "u"],
    "cat": ["--user", "u", "/memories/a.md"],
    "export": ["--user", "u", "out"],
    "import": ["--user", "u", "in"],
    "sync": ["--user", "u", "dir"],
    "history": ["--user", "u", "/memories/a.md"],
    "restore": ["--user", "u", "--as-of", "2026-01-01"],
    "redact": ["--user", "u", "/memories/a.md", "--version", "v"],
    "erase": ["--user", "u"],
    "expire": ["--all", "--idle-days", "1"],
    "rotate": ["--all"],
    "verify": ["--all"],
    "migrate": [],
}
"""The arguments each command cannot do without."""


def test_every_command_prints_its_report_as_json(
    s3: Any, versioned: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    operations = Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=1)
    migrating = Operations(Bucket(s3, versioned), LocalKeyProvider(MASTER_KEY), storage_format=2)
    memory = operations.memory("alice")
    memory.run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    memory.run({"command": "str_replace", "path": "/memories/a.md", "old_str": "one", "new_str": "two"})
    (tmp_path / "in" / "memories").mkdir(parents=True)
    (tmp_path / "in" / "memories" / "b.md").write_text("b\n")
    rendered: list[tuple[Report, str]] = []

    def spy(report: Report, as_json: bool) -> str:
        text = real_render(report, as_json)
        rendered.append((report, text))
        return text

    real_render = console.render
    monkeypatch.setattr(console, "render", spy)
    earlier: list[str] = []
    earlier_reports: list[str] = []
    argvs = {
        "users": [],
        "shared": [],
        "ls": ["--user", "alice"],
        "cat": ["--user", "alice", "/memories/a.md"],
        "export": ["--user", "alice", str(tmp_path / "out")],
        "import": ["--user", "bob", str(tmp_path / "in")],
        "sync": ["--user", "carol", str(tmp_path / "synced"), "--once"],
        "history": ["--user", "alice", "/memories/a.md"],
        "redact": ["--user", "alice", "/memories/a.md", "--version", "EARLIER", "--yes"],
        "restore": ["--user", "alice", "--as-of", "2000-01-01T00:00:00Z", "--yes"],
        "expire": ["--all", "--idle-days", "1", "--dry-run"],
        "rotate": ["--all", "--dry-run"],
        "verify": ["--all"],
        "erase": ["--user", "bob", "--yes"],
        "migrate": ["--yes"],
    }
    assert sorted(argvs) == sorted(declared.name for declared in COMMANDS)
    for name, argv in argvs.items():
        argv = [earlier[0] if word == "EARLIER" else word for word in argv]
        status, out, err = run(migrating if name == "migrate" else operations, name, *argv, "--json")
        assert (status, len(rendered)) == (0, len(earlier_reports) + 1), (name, err)
        report, text = rendered[-1]
        earlier_reports.append(name)
        assert out == text and isinstance(json.loads(out), dict), name
        assert report.counts.items() <= audit(err).items(), name
        if name == "history":
            earlier.extend(version["version_id"] for version in json.loads(out)["versions"][1:])


def test_a_dry_run_is_never_asked_about_and_changes_nothing(s3: Any, tmp_path: Path) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "a.md").write_text("other\n")
    before = snapshot(s3)
    asked: list[str] = []

    def answer(question: str) -> bool:
        asked.append(question)
        return False

    dry_runs = {
        "import": ["--user", "alice", str(tmp_path), "--overwrite", "--dry-run"],
        "erase": ["--user", "alice", "--dry-run"],
        "expire": ["--all", "--idle-days", "1", "--dry-run"],
        "rotate": ["--all", "--dry-run"],
    }
    parser = cli._parser()
    assert sorted(dry_runs) == sorted(
        declared.name
        for declared in COMMANDS
        if declared.confirms is not None
        and hasattr(parser.parse_args([declared.name, *REQUIRED[declared.name]]), "dry_run")
    )
    for name, argv in dry_runs.items():
        assert run(operations, name, *argv, confirm=answer)[0] == 0, name
    assert asked == []
    assert snapshot(s3) == before


# -- the global options -------------------------------------------------------------------------------


def test_the_global_options_go_before_or_after_the_command_and_after_wins() -> None:
    parser = cli._parser()
    before = parser.parse_args(["--bucket", "b", "--json", "-q", "ls", "--user", "u"])
    after = parser.parse_args(["ls", "--user", "u", "--bucket", "b", "--json", "-q"])
    for arguments in (before, after):
        assert (arguments.bucket, arguments.json, arguments.quiet, arguments.user) == ("b", True, True, "u")
    both = parser.parse_args(
        ["--bucket", "first", "--region", "eu-west-1", "ls", "--user", "u", "--bucket", "second"]
    )
    assert (both.bucket, both.region, both.profile, both.audit_log) == ("second", "eu-west-1", None, None)


@pytest.mark.parametrize("command", [["demo"], ["mcp", "--user", "alice"]])
def test_the_global_options_are_refused_before_demo_and_mcp(
    command: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["--bucket", "b", "--profile", "p", *command])
    assert exited.value.code == 2
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"s3memory: error: --bucket, --profile: options of the operator commands, not of {command[0]} "
        "(which takes the S3MEMORY_* settings: docs/settings.md)"
    )


def test_quiet_leaves_out_the_audit_line_and_audit_log_appends_it(s3: Any, tmp_path: Path) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    status, out, err = run(operations, "-q", "users")
    assert (status, out, err) == (0, "alice\n", "")
    log = tmp_path / "audit.jsonl"
    for _ in range(2):
        status, out, err = run(operations, "users", "--quiet", "--audit-log", str(log))
        assert (status, out, err) == (0, "alice\n", "")
    lines = [json.loads(line) for line in log.read_text().splitlines()]
    assert [(line["command"], line["users"], line["status"]) for line in lines] == [("users", 1, 0)] * 2
    status, _, err = run(operations, "users", "--audit-log", str(log))
    assert status == 0 and audit(err) == json.loads(log.read_text().splitlines()[-1])


def test_an_audit_log_that_cannot_be_written_stops_the_command_before_it_runs(
    s3: Any, tmp_path: Path
) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    before = snapshot(s3)
    status, out, err = run(
        operations, "erase", "--user", "alice", "--yes", "--audit-log", str(tmp_path / "no" / "log")
    )
    assert (status, out) == (2, "")
    assert err == (
        "s3memory erase: --audit-log cannot be written (No such file or directory): give a file this user "
        "may append to; nothing was done\n"
    )
    assert snapshot(s3) == before


def test_an_audit_log_fifo_no_one_reads_is_refused_at_once_and_a_full_one_fails_the_command(
    s3: Any, tmp_path: Path
) -> None:
    """No wait for a reader (helper-40: the command hung before doing anything), and a line that
    could not be written makes the status 1 with the cause, not a traceback after the command."""
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    fifo = tmp_path / "audit.fifo"
    os.mkfifo(fifo)
    status, out, err = run(operations, "users", "--audit-log", str(fifo))
    assert (status, out, err) == (
        2,
        "",
        "s3memory users: --audit-log cannot be written (a FIFO no process reads: start its reader first): "
        "give a file this user may append to; nothing was done\n",
    )
    status, out, err = run(operations, "users", "--quiet", "--audit-log", "/dev/full")
    assert (status, out, err) == (
        1,
        "alice\n",
        "s3memory users: the audit line could not be appended to --audit-log (No space left on device); the "
        "command ran (status 0), free the space or give another file\n",
    )


def test_an_unknown_profile_is_refused_naming_the_option(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = tmp_path / "config"
    config.write_text("[profile known]\nregion = eu-west-1\n")
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    environ = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}
    status, out, err = run(None, "users", "--profile", "absent", **environ)
    assert (status, out) == (2, "")
    assert err.splitlines()[0] == (
        "s3memory users: the AWS client could not be built: The config profile (absent) could not be found "
        "(check --profile and --region)"
    )


def test_profile_and_region_choose_the_clients_region_and_credentials(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "config").write_text("[profile known]\nregion = eu-west-1\n")
    (tmp_path / "credentials").write_text(
        "[known]\naws_access_key_id = AKIDKNOWN\naws_secret_access_key = s\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(tmp_path / "config"))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(tmp_path / "credentials"))
    for name in ("AWS_REGION", "AWS_DEFAULT_REGION", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.delenv(name, raising=False)  # the environment's would win over the profile's
    environ = {"S3MEMORY_BUCKET": BUCKET, "S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}
    for argv, region in (
        [["--profile", "known"], "eu-west-1"],
        [["--profile", "known", "--region", "ap-south-1"], "ap-south-1"],
    ):
        arguments = cli._parser().parse_args([*argv, "users"])
        console = Console(arguments, environ=environ)
        client = console._operations_of(settings_from(arguments, environ)).bucket.client
        credentials = client._request_signer._credentials  # type: ignore[attr-defined]
        assert (client.meta.region_name, credentials.access_key) == (region, "AKIDKNOWN")


def test_every_commands_help_shows_examples_that_parse() -> None:
    parser = cli._parser()
    declared = {command.name: command.examples for command in COMMANDS}
    declared |= {
        "demo": cli.DEMO_EXAMPLES,
        "mcp": cli.MCP_EXAMPLES,
        "local-s3": cli.LOCAL_S3_EXAMPLES,
        "completion": cli.COMPLETION_EXAMPLES,
    }
    for name, examples in declared.items():
        assert examples, name
        help_text = parser._subparsers._group_actions[0].choices[name].format_help()  # type: ignore[union-attr]
        assert help_text.endswith("examples:\n" + "".join(f"  {example}\n" for example in examples)), name
        for example in examples:
            words = shlex.split(example.split("#")[0].replace("ANTHROPIC_API_KEY=... ", ""))
            if words[0] == "eval":
                words = shlex.split(words[1].strip("$()"))
            assert words[0] == "s3memory" and name in words, example
            assert parser.parse_args(words[1:]).command == name, example


# -- names a folder, a bucket or a user chose -----------------------------------------------------------

FORGED = "zz\nwritten all files OK, 0 refused\nx"
"""A file name that would print a line of its own, which a reader takes for the command's."""
TITLED = "esc\x1b]0;PWNED\x07\x1b[2J.md"
"""A file name that would set the terminal's title and clear its screen."""
NOT_UTF8 = b"b\xff\xfe.md"
"""A file name that is not UTF-8: ``os.listdir`` answers it with surrogates (``b\\udcff\\udcfe.md``)."""
LONG = "l" * 230 + ".md"
"""A printable name longer than any error echoes: a report lists it whole."""


def hostile_folder(base: Path) -> Path:
    """``base`` holding ``memories/`` with a file of each hostile name, and two fine ones."""
    root = base / "memories"
    root.mkdir(parents=True)
    for name in (FORGED, TITLED, "fine.md", LONG):
        (root / name).write_text("text\n")
    os.close(os.open(os.fsencode(root) + b"/" + NOT_UTF8, os.O_CREAT | os.O_WRONLY, 0o600))
    return base


def test_import_prints_the_names_a_folder_chose_escaped(s3: Any, tmp_path: Path) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    status, out, err = run(operations, "import", "--user", "alice", str(hostile_folder(tmp_path)))
    refusal = "is not allowed: NUL and other control characters are refused."
    assert (status, out) == (
        1,
        "written /memories/fine.md\n"
        f"written /memories/{LONG}\n"
        r"refused /memories/b\udcff\udcfe.md: Error: The path /memories/b\udcff\udcfe.md is not allowed: it is "
        "not valid UTF-8 text.\n"
        r"refused /memories/esc\x1b]0;PWNED\x07\x1b[2J.md: Error: The path "
        rf"/memories/esc\x1b]0;PWNED\x07\x1b[2J.md {refusal}" + "\n"
        r"refused /memories/zz\nwritten all files OK, 0 refused\nx: Error: The path "
        rf"/memories/zz\nwritten all files OK, 0 refused\nx {refusal}" + "\n"
        "2 written, 0 unchanged, 0 skipped, 3 refused\n",
    )
    assert (
        "\x1b" not in out + err and "\x07" not in out + err and "/memories/" not in err
    )  # nor in the audit line
    status, out, _ = run(operations, "import", "--user", "alice", str(tmp_path), "--json")
    assert status == 1 and [refused["path"] for refused in json.loads(out)["refused_paths"]] == [
        "/memories/b\udcff\udcfe.md",
        f"/memories/{TITLED}",
        f"/memories/{FORGED}",
    ]


@pytest.mark.parametrize("as_json", [[], ["--json"]])
def test_a_name_that_is_not_utf8_is_reported_on_a_strict_utf8_stdout(
    s3: Any, tmp_path: Path, as_json: list[str]
) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    (tmp_path / "memories").mkdir()
    os.close(os.open(os.fsencode(tmp_path / "memories") + b"/" + NOT_UTF8, os.O_CREAT | os.O_WRONLY, 0o600))
    out = io.TextIOWrapper(io.BytesIO(), encoding="utf-8", errors="strict")  # PYTHONIOENCODING=utf-8
    arguments = cli._parser().parse_args(["import", "--user", "alice", str(tmp_path), "-q", *as_json])
    assert Console(arguments, environ={}, out=out, operations=operations).run() == 1
    out.seek(0)
    printed = out.read()
    assert r"/memories/b\udcff\udcfe.md" in printed and "refused" in printed


def test_verify_prints_a_planted_keys_escape_sequence_escaped(s3: Any) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=1)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    planted = "users/alice/internal/zz\x1b[31mRED\x1b[0m"
    s3.put_object(Bucket=BUCKET, Key=planted, Body=b"planted")
    try:
        status, out, _ = run(operations, "verify", "--user", "alice")
    finally:
        s3.delete_object(Bucket=BUCKET, Key=planted)  # moto cannot parse it in a DeleteObjects request
    assert status == 1 and out.splitlines()[-2:] == [
        r"alice: foreign users/alice/internal/zz\x1b[31mRED\x1b[0m: an internal object s3memory does not write",
        "3 objects of 1 users checked: 1 problems",
    ]


# -- exit status, errors as JSON, "did you mean", the audit line ---------------------------------------

NOBODY = (
    "Error: The user bob does not exist in this store: `s3memory users` lists its users (--bucket and "
    "--prefix choose the store)."
)
"""What a command that reads one memory says of a user with no object in the store."""
OTHER_COMMANDS = {"demo": [], "mcp": ["--user", "u"], "local-s3": [], "completion": ["bash"]}
"""The commands that are no operator command, and the arguments each cannot do without."""


@pytest.mark.parametrize("name", [*REQUIRED, *OTHER_COMMANDS])
def test_a_command_line_that_cannot_work_exits_2_before_anything_is_read(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, 7: usage errors exit 2, as ``docs/operator.md`` says, for every command: an option
    it does not take and, where it takes ``--user``, a name no memory can have (it exited 1)."""
    required = {**REQUIRED, **OTHER_COMMANDS}[name]
    lines = [[name, *required, "--no-such-option"]]
    if "--user" in required and name != "mcp":
        lines.append([name, *("../u" if word == "u" else word for word in required)])
    for argv in lines:
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        out, err = capsys.readouterr()
        assert (exited.value.code, out, err.startswith(f"usage: s3memory {name} ")) == (2, "", True), argv
        assert err.splitlines()[-1].startswith(f"s3memory {name}: error: "), argv


def test_exit_status_is_0_done_1_refused_by_the_store_2_a_command_line_or_setting_that_cannot_work(
    s3: Any, tmp_path: Path
) -> None:
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    (tmp_path / "memories").mkdir()
    (tmp_path / "memories" / "a.md").write_text("other\n")
    (tmp_path / "memories" / "key.md").write_text("AKIA" + "IOSFODNN7EXAMPLE\n")  # the content guard
    environ = {"S3MEMORY_LOCAL_KEY": LOCAL_KEY_B64}
    rows: list[tuple[Operations | None, list[str], int, str]] = [
        (operations, ["cat", "--user", "alice", "/memories/a.md"], 0, "one\n"),
        (operations, ["ls", "--user", "bob"], 1, f"s3memory ls: {NOBODY}"),
        (operations, ["erase", "--user", "alice"], 1, "s3memory erase: not confirmed; nothing was changed"),
        (
            operations,
            ["restore", "--user", "alice", "/memories/a.md", "--as-of", "2026-01-01"],
            2,
            "s3memory restore: --as-of puts back the whole memory: give no path\n",
        ),
        (
            operations,
            ["expire", "--user", "alice", "--idle-days", "0"],
            2,
            "s3memory expire: error: argument --idle-days: a whole number of days from 1 to 3,650, not '0'\n",
        ),
        (None, ["users"], 2, "s3memory users: S3MEMORY_BUCKET is required"),
        (operations, ["import", "--user", "carol", str(tmp_path)], 1, "refused /memories/key.md"),  # writes
    ]
    before = snapshot(s3)
    for given, argv, status, first in rows:
        found, out, err = run(given, *argv, **environ)
        assert found == status, argv
        assert first in (out + err), argv
        if argv[0] != "import":
            assert snapshot(s3) == before, argv


def test_with_json_an_error_is_one_json_object_on_stderr_with_the_fields_of_its_line(
    s3: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, 7: ``--json`` errors were plain text. Each is one JSON object on stderr (stdout holds a
    report, and only a report), with the command, the message and the exit status: what the text line
    says, ``s3memory COMMAND: message``."""
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    for argv, status, message in (
        (["ls", "--user", "bob"], 1, NOBODY),
        (["erase", "--user", "alice"], 1, "not confirmed; nothing was changed"),
        (["restore", "--user", "alice", "--version", "v"], 2, "--version needs the file's path"),
    ):
        found, out, err = run(operations, *argv, "--json")
        text = run(operations, *argv)[2].splitlines()[0]
        assert (found, out, err.splitlines()[0]) == (
            status,
            "",
            json.dumps({"command": argv[0], "error": message, "status": status}),
        )
        assert text == f"s3memory {argv[0]}: {message}"
        # the audit line follows on stderr, a pipeline's: every line of it is one JSON object
        assert [sorted(json.loads(line)) for line in err.splitlines()][1:] == [sorted(audit(err))]
    found, out, err = run(None, "users", "--json", S3MEMORY_LOCAL_KEY=LOCAL_KEY_B64)
    assert (found, out, json.loads(err.splitlines()[0])["status"]) == (2, "", 2)
    for argv, command, message in (
        (
            ["ls", "--user", "../bob", "--json"],
            "ls",
            "argument --user: user_id must not contain '/', '\\' or control characters, nor be '.' or '..'",
        ),
        (["--json", "lss"], None, "argument COMMAND: invalid choice: 'lss': did you mean 'ls'?"),
        (["--js", "users", "--bukcet", "b"], "users", "unrecognized option --bukcet: did you mean --bucket?"),
    ):
        with pytest.raises(SystemExit) as exited:
            cli.main(argv)
        assert (exited.value.code, capsys.readouterr()) == (
            2,
            ("", json.dumps({"command": command, "error": message, "status": 2}) + "\n"),
        )


@pytest.mark.parametrize(
    ("argv", "line"),
    [
        (
            ["lss", "--user", "bob"],
            "s3memory: error: argument COMMAND: invalid choice: 'lss': did you mean 'ls'?",
        ),
        (["ls", "--usr", "bob"], "s3memory ls: error: unrecognized option --usr: did you mean --user?"),
        (["--bukcet", "b", "users"], "s3memory: error: unrecognized option --bukcet: did you mean --bucket?"),
        (
            ["users", "--bukcet=b"],
            "s3memory users: error: unrecognized option --bukcet: did you mean --bucket?",
        ),
        (
            ["erase", "--user", "bob", "--dryrun"],
            "s3memory erase: error: unrecognized option --dryrun: did you mean --dry-run?",
        ),
        (
            ["--storage-format", "22", "users"],
            "s3memory: error: argument --storage-format: invalid choice: '22': did you mean '2'?",
        ),
        (
            ["mcp", "--trasport", "http"],
            "s3memory mcp: error: unrecognized option --trasport: did you mean --transport?",
        ),
        (
            ["completion", "bsh"],
            "s3memory completion: error: argument shell: invalid choice: 'bsh': did you mean 'bash'?",
        ),
    ],
)
def test_a_mistyped_command_option_or_choice_gets_did_you_mean_on_one_line(
    argv: list[str], line: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Issue 38, 7: ``difflib`` over the commands, the options of the command typed (or the global ones
    before it) and an option's choices; the line alone, without the usage, and exit 2."""
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert (exited.value.code, capsys.readouterr()) == (2, ("", line + "\n"))


def test_no_close_word_gets_the_usage_and_an_abbreviation_or_a_value_is_no_typo(
    capsys: pytest.CaptureFixture[str],
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(["ls", "--user", "bob", "--zzzzzz"])
    err = capsys.readouterr().err
    assert exited.value.code == 2 and err.startswith("usage: s3memory ls ")
    assert err.splitlines()[-1] == "s3memory ls: error: unrecognized arguments: --zzzzzz"
    assert cli._parser().parse_args(["ls", "--us", "bob"]).user == "bob"  # argparse takes it
    with pytest.raises(SystemExit):
        cli.main(["--bucket", "--usr", "users"])  # a value argparse refuses, not a mistyped option
    assert "did you mean" not in capsys.readouterr().err


class Terminal(io.StringIO):
    """A stream that says it is a terminal, as a person's stderr is."""

    def isatty(self) -> bool:
        return True


def test_the_audit_line_goes_to_the_audit_log_and_to_stderr_only_when_no_person_reads_it(
    s3: Any, tmp_path: Path
) -> None:
    """Issue 38, 7: on a terminal the audit line was noise unless ``-q``. It goes to ``--audit-log``
    when given, and to stderr only when stderr is no terminal (a job's or a pipeline's log, kept)."""
    operations = Operations(Bucket(s3, BUCKET), LocalKeyProvider(MASTER_KEY), storage_format=2)
    operations.memory("alice").run({"command": "create", "path": "/memories/a.md", "file_text": "one\n"})
    log = tmp_path / "audit.jsonl"

    def run_on(err: io.StringIO, *argv: str) -> int:
        arguments = cli._parser().parse_args(["users", *argv])
        return Console(arguments, environ={}, out=io.StringIO(), err=err, operations=operations).run()

    terminal, piped = Terminal(), io.StringIO()
    assert run_on(terminal) == run_on(terminal, "--audit-log", str(log)) == run_on(piped) == 0
    assert terminal.getvalue() == ""
    (line,) = log.read_text().splitlines()
    assert (
        json.loads(line) | {"seconds": 0}
        == json.loads(piped.getvalue()) | {"seconds": 0}
        == {
            "command": "users",
            "event": "s3memory.operator",
            "operator": console._operator(),
            "seconds": 0,
            "status": 0,
            "user_id": None,
            "users": 1,
        }
    )
    assert run_on(terminal, "--json") == 0 and terminal.getvalue() == ""
