"""Section 9: what each command costs on AWS: S3 requests by price class, KMS requests, Lambda
duration, and dollars per million, from AWS's published us-east-1 prices (``cost_model``).

The requests are counted, not tabled: the real commands run on the bench's endpoint (moto, with its
KMS) for one user in storage format 2 with envelope keys from KMS (``KMSKeyProvider``), as the
Terraform module deploys them, each client's requests counted by ``RequestCounter``:

- *warm*: a round of ``cost_model.COMMANDS`` after an unmeasured one, in a process that has served the
  user (its data key cached);
- *cold*: the same commands, each the first of a new process (``forget_stores`` and a new key
  provider: what a new container, or one whose key cache has expired, sends first);
- the agent turn (``cost_model.TURN``) warm, counted as one sequence;
- a directory rename of ``RENAME_FILES`` files another process wrote (seeded), warm and cold.

Lambda's duration is section 10's (``cpu_share.durations``): the median warm time of each command at
512 MB and 1,769 MB, on the endpoint with 10 ms per request where it ran. Dollars per million assume
warm keys and one Lambda invocation and one HTTP API request per command.
"""

from __future__ import annotations

import argparse
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from s3memory.crypto import FORMAT_2, KMSKeyProvider
from s3memory.store import forget_stores

from .cost_model import (
    COMMANDS,
    PRICED_SIZES,
    PRICES,
    PRICES_READ,
    RENAME_DIR,
    RENAME_FILES,
    ROUND_ORDER,
    SEEDED,
    SOURCES,
    TURN,
    Usage,
    command_inputs,
    edit_path,
    edit_text,
    per_million,
    usage,
)
from .cpu_share import CpuShare, durations
from .metrics import RequestCounter, describe, print_alone
from .servers import REGION, Backend, fake_credentials, moto_backend, plain_client
from .tables import table
from .workload import Tenant, note_text, s3memory_client

BUCKET = "bench-cost"
USER = "priced"
TAG = "cost"
AGENT_TURN = "agent turn"


@dataclass
class Priced:
    """What one command (or the agent turn, or a directory rename) sent, warm and cold."""

    name: str
    invocations: int
    s3: dict[str, int]
    kms: int
    s3_cold: dict[str, int] = field(default_factory=dict)
    kms_cold: int | None = None

    def usage(self, seconds: list[float]) -> Usage:
        """Its ``Usage`` with warm keys, invocations lasting ``seconds`` each."""
        return usage(self.s3, self.kms, self.invocations, seconds)


@dataclass
class CostCounts:
    """Section 9's counts on one endpoint."""

    backend: str
    priced: list[Priced] = field(default_factory=list)

    def of(self, name: str) -> Priced | None:
        return next((item for item in self.priced if item.name == name), None)

    def as_dict(self) -> dict[str, Any]:
        return {"backend": self.backend, "priced": [item.__dict__ for item in self.priced]}


class _Counted:
    """One user's memory with counted S3 and KMS clients; ``fresh`` is a new process's view of it."""

    def __init__(self, backend: Backend) -> None:
        from s3memory.clients import make_kms_client

        self.backend = backend
        self.key_id = plain_client(backend.endpoint_url, "kms").create_key(Description="s3memory bench cost")[
            "KeyMetadata"
        ]["KeyId"]
        self.kms = make_kms_client(endpoint_url=backend.endpoint_url, region_name=REGION)
        self.s3 = s3memory_client(backend)
        self.s3_counter, self.kms_counter = RequestCounter(self.s3), RequestCounter(self.kms)
        self.tenant = self.fresh()

    def fresh(self) -> Tenant:
        """The user's memory as a new process first sees it: nothing learned of the store, no key cached."""
        forget_stores()
        provider = KMSKeyProvider(self.key_id, kms_client=self.kms)
        return Tenant(self.backend, self.s3, BUCKET, USER, key_provider=provider, storage_format=FORMAT_2)

    def count(self, action: Callable[[], object]) -> tuple[dict[str, int], int]:
        """The S3 requests (by operation) and the KMS requests ``action`` sent."""
        with self.s3_counter.window() as s3_seen, self.kms_counter.window() as kms_seen:
            action()
        return dict(s3_seen), sum(kms_seen.values())


def _ran(tenant: Tenant, tool_input: dict[str, Any]) -> Callable[[], object]:
    def action() -> object:
        answer = tenant.run(tool_input)
        if answer.startswith("Error"):
            raise RuntimeError(f"a priced command answered an error: {answer[:300]}")
        return answer

    return action


def count(backend: Backend) -> CostCounts:
    """Count each priced command's requests on ``backend`` (which must serve KMS); see the module."""
    backend.create_bucket(BUCKET)
    counted = _Counted(backend)
    tenant = counted.tenant
    tenant.clear()
    try:
        for index, (path, lines) in enumerate(SEEDED.items()):
            tenant.run({"command": "create", "path": path, "file_text": note_text(index, lines)})
        tenant.run({"command": "create", "path": edit_path(TAG), "file_text": edit_text()})
        found = CostCounts(backend.name)
        for name in ROUND_ORDER:  # round 0, unmeasured: every path of the process warm
            _ran(tenant, command_inputs(TAG, 0)[name])()
        warm = {name: counted.count(_ran(tenant, command_inputs(TAG, 1)[name])) for name in ROUND_ORDER}
        cold = {}
        for name in ROUND_ORDER:
            tenant = counted.fresh()
            cold[name] = counted.count(_ran(tenant, command_inputs(TAG, 2)[name]))
        for name in COMMANDS:
            found.priced.append(Priced(name, 1, *warm[name], *cold[name]))
        tenant = counted.fresh()
        for name in ROUND_ORDER:  # round 3, unmeasured: a new process made warm again
            _ran(tenant, command_inputs(TAG, 3)[name])()
        turn = command_inputs(TAG, 4)
        s3, kms = counted.count(lambda: [_ran(tenant, turn[name])() for name in TURN])
        found.priced.append(Priced(AGENT_TURN, len(TURN), s3, kms))
        found.priced.append(_rename(counted, tenant))
    finally:
        counted.tenant.clear()
    return found


def _rename(counted: _Counted, tenant: Tenant) -> Priced:
    """A directory rename of ``RENAME_FILES`` files another process wrote: warm, then cold."""
    seen: list[tuple[dict[str, int], int]] = []
    for number, renaming in enumerate((tenant, counted.fresh())):
        source = f"/memories/{TAG}/batch-{number}"
        renaming.seed({f"{source}/f-{index:03d}.md": note_text(index, 20) for index in range(RENAME_FILES)})
        move = {"command": "rename", "old_path": source, "new_path": f"/memories/{TAG}/moved-{number}"}
        seen.append(counted.count(_ran(renaming, move)))
    return Priced(RENAME_DIR, 1, *seen[0], *seen[1])


def _money(value: Decimal) -> str:
    return f"${value:,.2f}"


def _duration_row(
    priced: Priced, measured: dict[int, tuple[str, dict[str, float]]], memory_mb: int
) -> list[float] | None:
    """The seconds of each invocation of ``priced`` at ``memory_mb`` (section 10's medians), or None."""
    _, seconds = measured[memory_mb]
    names = TURN if priced.name == AGENT_TURN else (priced.name,)
    if not all(name in seconds for name in names):
        return None
    return [seconds[name] for name in names]


COST_ABOUT = (
    "What each command costs to run on AWS, from the requests it sent (counted on moto's S3 and KMS, "
    "storage format 2, envelope keys from KMS) and section 10's Lambda durations, at AWS's published "
    f"us-east-1 prices read on {PRICES_READ}: S3 Standard PUT, COPY, POST and LIST "
    f"${PRICES.s3_put_per_1000} per 1,000, GET, HEAD and other requests ${PRICES.s3_get_per_1000} per "
    f"1,000, DELETE free (a multi-object delete, a POST, is priced as one); KMS ${PRICES.kms_per_10000} per "
    f"10,000 requests; Lambda (x86) ${PRICES.lambda_per_gb_second} per GB-second, each invocation rounded "
    f"up to the millisecond, and ${PRICES.lambda_per_million} per million requests; API Gateway HTTP API "
    f"${PRICES.http_api_per_million} per million requests. Sources: "
    + ", ".join(f"{name} <{url}>" for name, url in SOURCES)
    + ". *Warm*: the process has served the user (its data key cached, for up to 300 s); *cold*: the "
    "command is a new process's first (a new container, or one whose key cache expired). Dollars per "
    "million are for warm commands, one Lambda invocation and one HTTP API request each; free tiers and "
    "storage are left out.",
)


def cost_lines(counts: CostCounts | None, shares: list[CpuShare]) -> list[str]:
    """Section 9 of ``latest.md``: requests by price class, KMS, Lambda duration, dollars per million."""
    out = ["## 9. Cost per command on AWS", "", *COST_ABOUT, ""]
    if counts is None:
        return [*out, "Not measured in this run.", ""]
    measured = {memory_mb: durations(shares, memory_mb) for memory_mb in PRICED_SIZES}
    where = sorted({backend for backend, seconds in measured.values() if seconds})
    out += [
        f"Requests counted on **{counts.backend}**; Lambda durations from section 10 on "
        + (", ".join(f"**{name}**" for name in where) if where else "no endpoint (not measured: no dollars)")
        + ".",
        "",
    ]
    rows = []
    for priced in counts.priced:
        warm = priced.usage([])
        cells = []
        for memory_mb in PRICED_SIZES:
            seconds = _duration_row(priced, measured, memory_mb)
            cells.append(
                ("\u2013", "\u2013")
                if seconds is None
                else (
                    str(priced.usage(seconds).billed_ms),
                    _money(per_million(priced.usage(seconds), memory_mb).total),
                )
            )
        rows.append(
            [
                priced.name,
                str(warm.put_class),
                str(warm.get_class),
                str(warm.free),
                describe(Counter(priced.s3)),
                str(priced.kms),
                "\u2013"
                if priced.kms_cold is None
                else f"{priced.kms_cold} (S3 {describe(Counter(priced.s3_cold))})",
                *[cell[0] for cell in cells],
                *[cell[1] for cell in cells],
            ]
        )
    sizes = [f"{memory_mb:,} MB" for memory_mb in PRICED_SIZES]
    out += table(
        [
            "command",
            "S3 PUT/COPY/POST/LIST",
            "S3 GET/HEAD",
            "S3 DELETE (free)",
            "which",
            "KMS warm",
            "KMS cold (and S3)",
            *[f"Lambda ms {size}" for size in sizes],
            *[f"$ per million {size}" for size in sizes],
        ],
        rows,
    )
    turn = counts.of(AGENT_TURN)
    if turn is not None:
        out += _breakdown(turn, measured)
    return out


def _breakdown(turn: Priced, measured: dict[int, tuple[str, dict[str, float]]]) -> list[str]:
    """A million agent turns, by what bills them."""
    rows = []
    for memory_mb in PRICED_SIZES:
        seconds = _duration_row(turn, measured, memory_mb)
        if seconds is None:
            continue
        dollars = per_million(turn.usage(seconds), memory_mb)
        rows.append(
            [
                f"{memory_mb:,} MB",
                _money(dollars.s3),
                _money(dollars.kms),
                _money(dollars.lambda_duration),
                _money(dollars.lambda_requests),
                _money(dollars.http_api),
                f"**{_money(dollars.total)}**",
            ]
        )
    if not rows:
        return []
    return [
        f"A million agent turns ({', '.join(TURN)}: {turn.invocations} invocations each), by what bills them:",
        "",
        *table(
            ["Lambda memory", "S3", "KMS (warm)", "Lambda duration", "Lambda requests", "HTTP API", "total"],
            rows,
        ),
    ]


def main(argv: list[str] | None = None) -> int:
    """Run sections 9 and 10 alone on a moto server of their own (10 ms per request unless
    ``--latency-ms`` says otherwise): the requests counted, the CPU shares measured, both printed as
    their parts of ``latest.md``."""
    from . import cpu_share
    from .plan import FULL, QUICK

    parser = argparse.ArgumentParser(prog="python -m bench.cost", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the size of `python -m bench --quick`")
    parser.add_argument("--latency-ms", type=float, default=10.0, help="added to every request by the server")
    parser.add_argument("--json", help="also write the results to this JSON file")
    options = parser.parse_args(argv)
    plan = QUICK if options.quick else FULL
    fake_credentials()
    with moto_backend(latency_ms=options.latency_ms) as backend:
        found = count(backend)
        shares = cpu_share.run(
            backend, plan.cpu_share_rounds, plan.cpu_share_warmup, plan.cpu_share_cold, plan.cpu_share_renames
        )
    lines = [*cost_lines(found, [shares]), *cpu_share.cpu_share_lines([shares])]
    print_alone(lines, options.json, {"cost": found.as_dict(), "cpu_shares": [shares.as_dict()]})
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
