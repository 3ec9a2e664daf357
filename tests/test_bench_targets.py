"""The bench's targets (``bench/results_model.py``): a comparison whose command answered an error is
never judged. No timing is measured."""

from __future__ import annotations

from bench.metrics import Summary
from bench.peers_session import KINDS, S3FS, S3MEMORY, S3MEMORY_F2, PeerResult
from bench.results_model import _answered_an_error


def session(failures: dict[str, list[str]]) -> PeerResult:
    ahead = Summary.of([0.8, 0.9, 0.85])
    return PeerResult(
        backend="seaweedfs+10ms",
        implementations=[S3MEMORY, S3MEMORY_F2, S3FS],
        seconds={},
        totals={},
        ratio_s3fs=dict.fromkeys(KINDS, ahead),
        ratio_total=None,
        requests={},
        request_totals={},
        failures=failures,
        ratio_s3fs_f2=dict.fromkeys(KINDS, ahead),
    )


def test_a_kind_that_answered_an_error_is_named_and_only_that_kind() -> None:
    """SeaweedFS keeps the directories an earlier run emptied: s3fs's rename then answered "already
    exists" after two requests, which made s3memory look 2x behind."""
    peer = session({S3FS: ["rename dir: /memories/project"], S3MEMORY: ["create: /memories/a.md"]})
    assert _answered_an_error(peer, "rename dir") == "s3fs answered an error: not comparable"
    assert _answered_an_error(peer, "create") == "s3memory answered an error: not comparable"
    assert _answered_an_error(peer, "rename") == ""
    assert _answered_an_error(session({}), "rename dir") == ""
