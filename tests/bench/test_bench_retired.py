"""Issue 42 retires issue 26's two criteria on ``seaweedfs+10ms`` (create, and a directory rename of
1,000 files, ahead of s3fs there): they are reported with the measured reason, never judged; every
other target stays judged (``bench/results_model.py``, ``bench/README.md``). No timing is measured."""

from __future__ import annotations

from bench.metrics import Summary
from bench.peers_session import PeerResult
from bench.plan import QUICK
from bench.results_model import REPORTED, Results, evaluate, retired
from tests.support.peer_results import peer_session


def session(backend: str) -> PeerResult:
    """A session on ``backend`` in which s3memory was behind s3fs at every kind of command."""
    return peer_session(Summary.of([1.1, 1.2, 1.15]), backend=backend)


def test_the_two_criteria_are_retired_on_seaweedfs_with_latency_and_nowhere_else() -> None:
    assert retired("create", "seaweedfs+10ms").startswith(
        "retired by issue 42: the SeaweedFS server shares the client's 2 cores, so this is bound by the CPU "
        "they share, not by round trips: create sends the checks"
    )
    assert "P9's HEAD per file" in retired("rename dir", "seaweedfs+10ms", 1000)
    assert retired("rename dir", "seaweedfs+10ms", 100) == ""  # the 100-file rename stays judged
    assert retired("create", "moto+10ms") == ""
    assert retired("str_replace", "seaweedfs+10ms") == ""


def test_a_create_behind_s3fs_there_is_reported_and_elsewhere_missed() -> None:
    results = Results(QUICK, "now", {"cores": "2"}, peers=[session("seaweedfs+10ms"), session("moto+10ms")])
    create = {t.where: t for t in evaluate(results) if t.target == "ahead of s3fs: create"}
    assert create["seaweedfs+10ms"].status == REPORTED
    assert create["seaweedfs+10ms"].note.startswith("retired by issue 42")
    assert create["moto+10ms"].status == "FAIL"
    edits = [t for t in evaluate(results) if t.target == "ahead of s3fs: str_replace"]
    assert {t.status for t in edits} == {"FAIL"}  # every other kind stays judged
