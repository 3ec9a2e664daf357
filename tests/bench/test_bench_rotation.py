"""The bench's section 8 (``bench/rotation.py``): ``rotate --all --wait`` on a small store, on moto's
server with its KMS. The wait is injected (asked for once, never slept), every report is complete, the
numbers add up and the report and its target render them. No timing is asserted."""

from __future__ import annotations

import json

import pytest

from bench.results_model import rotation_target
from bench.rotation import FILES, FleetRotation, InjectedWait, rotation_lines, run
from bench.servers import Backend
from s3memory.ops.rotation import ROTATION_WAIT_SECONDS

pytestmark = [pytest.mark.slow, pytest.mark.bench]

USERS = 3


@pytest.fixture(scope="module")
def rotated(moto_endpoint: str) -> FleetRotation:
    backend = Backend("moto", moto_endpoint, "moto's threaded server (the tests')", has_kms=True)
    return run(backend, USERS)


def test_the_fleet_waits_once_and_every_memory_finishes(rotated: FleetRotation) -> None:
    assert (rotated.users, rotated.listed, rotated.reports, rotated.complete) == (USERS, USERS, USERS, USERS)
    assert rotated.all_complete
    assert len(rotated.waits) == 1  # one key-cache wait for the fleet
    assert 0 < rotated.waited <= ROTATION_WAIT_SECONDS
    assert rotated.files == rotated.reencrypted == USERS * len(FILES)
    assert rotated.records == USERS  # each user's access record
    assert rotated.retired == USERS  # each user's v1
    assert rotated.requests > 0 and rotated.list_requests > 0
    assert rotated.kms_requests.get("GenerateDataKey") == USERS  # a new version per user, once
    assert rotated.s3_requests.get("DeleteObjects", 0) >= USERS  # the old wrapped keys removed
    assert rotated.seconds == pytest.approx(rotated.first_pass_seconds + rotated.second_pass_seconds)
    assert rotated.projected_seconds == pytest.approx(rotated.work_seconds + rotated.waited)
    assert rotated.per_user_wait_seconds == pytest.approx(
        rotated.work_seconds + USERS * ROTATION_WAIT_SECONDS
    )


def test_the_report_and_the_target_show_it(rotated: FleetRotation) -> None:
    json.dumps(rotated.as_dict())
    text = "\n".join(rotation_lines(rotated))
    assert "## 8. Key rotation at fleet scale" in text
    assert f"| {USERS} | {USERS * len(FILES)} |" in text
    assert "Not measured in this run." in rotation_lines(None)
    target = rotation_target(rotated)
    assert (target.status, target.goal) == ("PASS", "1 wait, every report complete")
    assert target.target.startswith(f"rotate --all --wait on {USERS} users")


@pytest.mark.parametrize(
    ("waits", "complete", "status"),
    [
        ([420.0], USERS, "PASS"),
        ([420.0] * USERS, USERS, "FAIL"),
        ([420.0], USERS - 1, "FAIL"),
        ([], USERS, "FAIL"),
    ],
)
def test_the_target_is_met_only_with_one_wait_and_every_report_complete(
    waits: list[float], complete: int, status: str
) -> None:
    found = FleetRotation("moto", USERS, waits=waits, reports=USERS, complete=complete)
    assert rotation_target(found).status == status


def test_the_injected_wait_moves_the_clock_without_sleeping() -> None:
    wait = InjectedWait()
    before = wait.clock()
    wait.sleep(ROTATION_WAIT_SECONDS)
    assert wait.waits == [ROTATION_WAIT_SECONDS] and len(wait.asked) == 1
    assert ROTATION_WAIT_SECONDS <= wait.clock() - before < ROTATION_WAIT_SECONDS + 5
