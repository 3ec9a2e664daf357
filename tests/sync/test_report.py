"""What a sync round reports (``sync/report.py``): its lines (names escaped), its ``--json`` document,
the counts of its audit line (no path), complete whatever it reports."""

from __future__ import annotations

import json

from s3memory.cli.console import Report, render
from s3memory.sync.report import WITHHELD_SHOWN, SyncReport


def test_a_round_renders_what_it_did_with_names_escaped() -> None:
    report = SyncReport(
        pushed=["/memories/a.md"],
        pulled=["/memories/b\x1b[31m.md"],
        deleted_local=["/memories/c.md"],
        deleted_remote=["/memories/d.md"],
        conflicts=[("/memories/e.md", "/memories/e.conflict-laptop-20261207T180000Z.md")],
        left_alone=[("/memories/link", "a symbolic link\nforged line")],
        unchanged=3,
        adopted=True,
    )
    assert report.lines() == [
        "took this folder for the memory (its first round)",
        "pushed /memories/a.md",
        "pulled /memories/b\\x1b[31m.md",
        "deleted /memories/c.md here (deleted in the memory)",
        "deleted /memories/d.md in the memory (deleted here)",
        "conflict /memories/e.md: changed on both sides; the memory's version is at the path, this "
        "folder's is kept as /memories/e.conflict-laptop-20261207T180000Z.md, on both sides",
        "left alone /memories/link: a symbolic link\\nforged line",
        "1 pushed, 1 pulled, 1 deleted here, 1 deleted in the memory, 1 conflict, 1 left alone, "
        "0 withheld, 3 unchanged",
    ]


def test_the_guard_names_why_and_the_first_withheld_deletions() -> None:
    withheld = [f"/memories/f{number:02}" for number in range(WITHHELD_SHOWN + 2)]
    report = SyncReport(withheld=withheld, guard="why")
    assert report.lines()[0] == f"withheld {WITHHELD_SHOWN + 2} deletions: why"
    assert report.lines()[1 : WITHHELD_SHOWN + 1] == [
        f"withheld deletion of {path}" for path in withheld[:10]
    ]
    assert report.lines()[-2] == "... and 2 more (--json names them)"
    assert report.document()["withheld_paths"] == withheld


def test_the_audit_counts_name_no_path_and_a_round_is_complete_whatever_it_reports() -> None:
    report = SyncReport(
        conflicts=[("/memories/secret-name", "/memories/secret-name.conflict")],
        left_alone=[("/memories/x", "why")],
        withheld=["/memories/y"],
        guard="why",
    )
    assert report.lines()[-4:] == [
        "left alone /memories/x: why",
        "withheld 1 deletion: why",
        "withheld deletion of /memories/y",
        "0 pushed, 0 pulled, 0 deleted here, 0 deleted in the memory, 1 conflict, 1 left alone, 1 withheld, "
        "0 unchanged",
    ]
    rendered = Report.of(report)
    assert rendered.complete
    assert "secret" not in json.dumps(rendered.counts)
    assert rendered.counts == {
        "pushed": 0,
        "pulled": 0,
        "deleted_local": 0,
        "deleted_remote": 0,
        "conflicts": 1,
        "left_alone": 1,
        "withheld": 1,
        "unchanged": 0,
    }
    document = json.loads(render(rendered, as_json=True))
    assert document["conflict_paths"] == [
        {"path": "/memories/secret-name", "conflict_copy": "/memories/secret-name.conflict"}
    ]
    assert document["left_alone_paths"] == [{"path": "/memories/x", "reason": "why"}]
    assert document["guard"] == "why" and document["adopted"] is False
