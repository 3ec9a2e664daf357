"""How much each section measures: the full run (~22 minutes on 2 cores, 26 under load) and ``--quick`` (~1 minute)."""

from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class BatchPlan:
    """Directory rename/delete sizes, repetitions per size, and the sizes also run serially."""

    sizes: list[int]
    rename_reps: dict[int, int]
    delete_reps: dict[int, int]
    rename_serial: set[int]
    delete_serial: set[int]
    one_by_one_reps: dict[int, int] = field(default_factory=dict)
    """Deletes without batches (one request per file), per size: the baseline of serial deletion."""


@dataclass(frozen=True)
class Plan:
    name: str
    command_reps: int
    command_warmup: int
    view_flat: list[int]
    view_deep: list[int]
    view_reps: int
    batches: BatchPlan
    latency_ms: float
    latency_command_reps: int
    latency_batches: BatchPlan
    coldstart_reps: int
    peer_reps: int
    latency_peer_reps: int
    seaweed_command_reps: int
    seaweed_peer_reps: int
    seaweed_batches: BatchPlan
    """Also run on SeaweedFS with client-side latency."""
    seaweed_view_deep: list[int] = field(default_factory=list)
    format_view_files: int = 1000
    """``view /memories`` of a tree of this many files in format 1 and format 2, side by side."""
    format_view_reps: int = 15
    rename_peer_sizes: list[int] = field(default_factory=lambda: [100])
    """Directory renames of these many files on the loopback endpoints: s3memory format 1, format 2
    and the s3fs peer."""
    latency_rename_sizes: list[int] = field(default_factory=lambda: [100, 1000])
    """The same on the endpoints with 10 ms per request (``moto+10ms``, ``seaweedfs+10ms``)."""
    rename_peer_reps: dict[int, int] = field(default_factory=lambda: {100: 5, 1000: 3})
    """Measured moves per size, after one unmeasured."""
    rename_format1_files: int = 100
    """Format 1 is measured on renames of up to this many files (it reads and writes every file)."""
    mcp_calls: int = 200
    """Calls of each command over MCP stdio and through the library, pair by pair (section 7)."""
    mcp_warmup: int = 10
    mcp_starts: int = 5
    """Start-ups of ``s3memory mcp`` timed (spawn until connected); the last one serves the calls."""
    mcp_lambda_calls: int = 200
    """Calls of each command through the MCP function and the memory function, pair by pair (after
    ``mcp_warmup`` unmeasured)."""
    mcp_lambda_cold_reps: int = 5
    """Cold starts of each Lambda handler (a new interpreter serving its first request)."""
    rotation_users: int = 200
    """Users of the store that ``rotate --all --wait`` rotates (section 8)."""
    cpu_share_rounds: int = 12
    """Rounds of the priced commands per CPU share, measured (section 10)."""
    cpu_share_warmup: int = 2
    cpu_share_cold: int = 5
    """Cold starts per CPU share."""
    cpu_share_renames: int = 2
    """Directory renames per CPU share, measured after one unmeasured (none at 0)."""
    sync_files: int = 1000
    """Files of the memory and the folders sync rounds work on (section 11)."""
    sync_quiet_reps: int = 3
    """Rounds with no change measured, each beside an export then import."""
    sync_first_reps: int = 2
    """First rounds (push, pull) measured, each beside an import, an export."""


FULL = Plan(
    name="full",
    command_reps=40,
    command_warmup=3,
    view_flat=[10, 100, 1000, 10000],
    view_deep=[2000, 10000],
    view_reps=4,
    batches=BatchPlan(
        sizes=[100, 1000, 5000],
        rename_reps={100: 5, 1000: 2, 5000: 2},
        delete_reps={100: 5, 1000: 4, 5000: 3},
        rename_serial={100},
        delete_serial={100, 1000, 5000},
        one_by_one_reps={1000: 2},
    ),
    latency_ms=10.0,
    latency_command_reps=15,
    latency_batches=BatchPlan(
        sizes=[1000, 5000],
        rename_reps={1000: 2},
        delete_reps={1000: 3, 5000: 2},
        rename_serial={1000},
        delete_serial={1000, 5000},
        one_by_one_reps={1000: 1},
    ),
    coldstart_reps=10,
    peer_reps=8,
    latency_peer_reps=5,
    seaweed_command_reps=20,
    seaweed_peer_reps=6,
    seaweed_batches=BatchPlan(
        sizes=[1000],
        rename_reps={1000: 2},
        delete_reps={1000: 2},
        rename_serial={1000},
        delete_serial={1000},
        one_by_one_reps={1000: 2},
    ),
    format_view_files=1000,
    format_view_reps=15,
    rename_peer_sizes=[100],
    latency_rename_sizes=[100, 1000],
    rename_peer_reps={100: 5, 1000: 3},
    rename_format1_files=100,
    mcp_calls=200,
    mcp_warmup=10,
    mcp_starts=5,
    mcp_lambda_calls=200,
    mcp_lambda_cold_reps=5,
    rotation_users=200,
    cpu_share_rounds=12,
    cpu_share_warmup=2,
    cpu_share_cold=5,
    cpu_share_renames=2,
    sync_files=1000,
    sync_quiet_reps=3,
    sync_first_reps=2,
)

QUICK = Plan(
    name="quick",
    command_reps=5,
    command_warmup=1,
    view_flat=[10, 100, 1000],
    view_deep=[1200, 3000],
    view_reps=3,
    batches=BatchPlan(
        sizes=[50, 200],
        rename_reps={50: 2, 200: 1},
        delete_reps={50: 2, 200: 2},
        rename_serial={50, 200},
        delete_serial={50, 200},
        one_by_one_reps={200: 1},
    ),
    latency_ms=10.0,
    latency_command_reps=3,
    latency_batches=BatchPlan(
        sizes=[100],
        rename_reps={100: 1},
        delete_reps={100: 1},
        rename_serial={100},
        delete_serial={100},
    ),
    coldstart_reps=3,
    peer_reps=2,
    latency_peer_reps=1,
    seaweed_command_reps=3,
    seaweed_peer_reps=2,
    seaweed_batches=BatchPlan(
        sizes=[100],
        rename_reps={100: 1},
        delete_reps={100: 1},
        rename_serial={100},
        delete_serial={100},
        one_by_one_reps={100: 1},
    ),
    format_view_files=200,
    format_view_reps=3,
    rename_peer_sizes=[20],
    latency_rename_sizes=[20],
    rename_peer_reps={20: 2},
    rename_format1_files=20,
    mcp_calls=20,
    mcp_warmup=3,
    mcp_starts=2,
    mcp_lambda_calls=20,
    mcp_lambda_cold_reps=2,
    rotation_users=10,
    cpu_share_rounds=1,
    cpu_share_warmup=1,
    cpu_share_cold=1,
    cpu_share_renames=0,
    sync_files=100,
    sync_quiet_reps=2,
    sync_first_reps=1,
)
