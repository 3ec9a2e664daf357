"""The bench's targets (``bench/results_model.py``): a comparison whose command answered an error is
never judged, and a create behind s3fs says what it is made of. No timing is measured."""

from __future__ import annotations

import math

from bench.metrics import Summary
from bench.peers_session import S3FS, S3MEMORY, S3MEMORY_F2, CreateCosts, PeerResult
from bench.results_model import _answered_an_error, _create_costs_note
from tests.support.peer_results import peer_session


def session(failures: dict[str, list[str]]) -> PeerResult:
    """A session on ``seaweedfs+10ms`` in which s3memory was ahead of s3fs at every kind of command and
    these ``failures`` were answered."""
    return peer_session(Summary.of([0.8, 0.9, 0.85]), failures=failures)


def test_a_kind_that_answered_an_error_is_named_and_only_that_kind() -> None:
    """SeaweedFS keeps the directories an earlier run emptied: s3fs's rename then answered "already
    exists" after two requests, which made s3memory look 2x behind."""
    peer = session({S3FS: ["rename dir: /memories/project"], S3MEMORY: ["create: /memories/a.md"]})
    assert _answered_an_error(peer, "rename dir") == "s3fs answered an error: not comparable"
    assert _answered_an_error(peer, "create") == "s3memory answered an error: not comparable"
    assert _answered_an_error(peer, "rename") == ""
    assert _answered_an_error(session({}), "rename dir") == ""


def test_a_creates_cost_names_the_time_and_the_client_and_server_cpu_of_each_side() -> None:
    peer = session({})
    assert _create_costs_note(peer) == ""  # not measured
    peer.create_costs = CreateCosts(
        seconds={S3MEMORY_F2: Summary.of([0.0169, 0.0171]), S3FS: Summary.of([0.0159])},
        client_cpu={S3MEMORY_F2: Summary.of([0.0058]), S3FS: Summary.of([0.0032])},
        server_cpu={S3MEMORY_F2: Summary.of([0.0043]), S3FS: Summary.of([math.nan])},
    )
    assert _create_costs_note(peer) == (
        "per create, alone, s3memory f2 17.0 ms, 5.8 + 4.3 ms CPU; s3fs 15.9 ms, 3.2 + ? ms CPU"
    )
