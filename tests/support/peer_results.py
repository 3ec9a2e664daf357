"""A bench peer session (``bench.peers_session.PeerResult``) made up for a test of how results are
judged: every kind of command at one ratio to s3fs, for both formats."""

from __future__ import annotations

from bench.metrics import Summary
from bench.peers_session import KINDS, S3FS, S3MEMORY, S3MEMORY_F2, PeerResult


def peer_session(
    ratio: Summary, *, backend: str = "seaweedfs+10ms", failures: dict[str, list[str]] | None = None
) -> PeerResult:
    """A session on ``backend`` in which s3memory (either format) took ``ratio`` of s3fs's time at every
    kind of command, and these ``failures`` were answered; nothing else measured."""
    return PeerResult(
        backend=backend,
        implementations=[S3MEMORY, S3MEMORY_F2, S3FS],
        seconds={},
        totals={},
        ratio_s3fs=dict.fromkeys(KINDS, ratio),
        ratio_total=None,
        requests={},
        request_totals={},
        failures=failures or {},
        ratio_s3fs_f2=dict.fromkeys(KINDS, ratio),
    )
