"""Section 6: each command on adversarial inputs of growing size, and how its cost grows.

Every case runs one command on inputs of a few geometric sizes n. Per size: the CPU time of this
process (``time.process_time``: the client's work on all its threads; the S3 server is another
process), median and IQR over repetitions; the S3 requests, exactly; and the answer's length.
The growth exponent of a quantity is the least-squares slope of its log against log(n) over the
sizes that ran. CPU time growing with an exponent of at most ``LINEAR_MAX`` is linear, above it
super-linear: a growth rate, not a timed test, so a loaded machine that slows every size alike
leaves the verdict alone. Below ``CPU_FLOOR`` at the largest size, timer noise outweighs any
slope, and the time is called linear. Some cases must also not grow their requests (the count at
the largest size is at most the count at the size before) or their answer (at most
``ANSWER_MAX`` characters).

No case may hang the bench: from the third size on, a size whose run is predicted (from the two
sizes before it, growing at least linearly) to take longer than the plan's budget is skipped with
every larger one, and so is every size after one whose first run took longer than that.

    python -m bench.adversarial --quick     # this section alone, on its own moto server
"""

from __future__ import annotations

import argparse
import math
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from s3memory.errors import CommandError

from .metrics import RequestCounter, Summary, describe, print_alone, quiet_gc
from .servers import Backend, fake_credentials, moto_backend
from .tables import table
from .workload import Tenant, s3memory_client

BUCKET = "bench-adversarial"
LINEAR_MAX = 1.25
"""The largest growth exponent of CPU time still called linear."""
CPU_FLOOR = 0.002
"""CPU seconds at the largest size below which any growth is called linear."""
ANSWER_MAX = 17_000
"""The longest answer still called bounded: the view cap (16,000 characters) and room for its note."""
PEM_HEADER = "-----BEGIN RSA PRIVATE KEY-----\n"
PADDING_FILES = 1000
"""Files deep in one more directory beside the top-level directories: the namespace then fills more
than one listing page, as it does for any user with over 1,000 files."""
DIRECTORY_NAME_CHARS = 800
"""Long names fill the view cap with few directories: about ten are shown."""
DEEP_DIRECTORY = "/memories/a/b/c/d/e"

_ZW = "\u200b\u200c\u200d\u2060\ufeff\u00ad"  # zero-width space, non-joiner, joiner, word joiner, BOM, soft hyphen
_NEAR_MISSES = (
    "AKIA{z}IOSFO{z}DNN7EXAMP{z}L ",  # AKIA and 15 characters: one short
    "sk-ant-{z}abcdefghij{z}klmnopqrs ",  # 19 characters: one short
    "ghp_{z}" + "x" * 17 + "{z}" + "y" * 18 + " ",  # 35 characters: one short
    "xoxb-{z}123456789 ",  # 9 characters: one short
    "AIza{z}" + "k" * 20 + "{z}" + "m" * 14 + " ",  # 34 characters: one short
    "4111 {z}1111 1111 1112 ",  # fails the Luhn check
    "aws secret = {z}" + "A" * 39 + " ",  # 39 characters: one short
    "-----BEGIN RSA PUBLIC{z} KEY----- ",  # not a private key
)
NEAR_MISS_UNIT = _ZW * 4 + "".join(miss.replace("{z}", _ZW) for miss in _NEAR_MISSES) + "\n"
"""Near misses of every detector, with format characters inside them and between them: each is
still a miss once the format characters are removed."""


@dataclass(frozen=True)
class Case:
    """One adversarial input: the files a size needs (seeded untimed; each size's files include
    the smaller sizes'), the tool input of a run, and what must stay bounded besides CPU growth."""

    key: str
    about: str
    unit: str
    tool_input: Callable[[int, int], dict[str, Any]]
    """The raw input for size n and run number (a create's path differs run by run)."""
    files: Callable[[int], dict[str, str]] = lambda n: {}
    bounded_requests: bool = False
    bounded_answer: bool = False


def _create(path: str, text: str) -> dict[str, Any]:
    return {"command": "create", "path": path, "file_text": text}


def _replace(old: str) -> dict[str, Any]:
    return {"command": "str_replace", "path": "/memories/big.txt", "old_str": old, "new_str": "b"}


def _view(path: str) -> dict[str, Any]:
    return {"command": "view", "path": path}


def _top_level_directories(n: int) -> dict[str, str]:
    files = {f"/memories/zz-padding/x/y/f-{i:04d}.md": "note\n" for i in range(PADDING_FILES)}
    for i in range(n):
        name = f"d{i:05d}-".ljust(DIRECTORY_NAME_CHARS, "x")
        files[f"/memories/{name}/note.md"] = "note\n"
    return files


def _deep_files(n: int) -> dict[str, str]:
    return {f"{DEEP_DIRECTORY}/f-{i:06d}.md": "note\n" for i in range(n)}


def _deep_path(depth: int, run: int) -> str:
    return "/memories/" + "".join(f"l{level}/" for level in range(depth)) + f"f-{run}.md"


CASES = (
    Case(
        "create-pem",
        "create: file_text of unmatched `-----BEGIN RSA PRIVATE KEY-----` headers",
        "bytes",
        lambda n, run: _create(f"/memories/pem-{run}.md", PEM_HEADER * (n // len(PEM_HEADER))),
    ),
    Case(
        "create-zero-width",
        "create: zero-width characters and near-miss secrets",
        "bytes",
        lambda n, run: _create(
            f"/memories/zw-{run}.md", NEAR_MISS_UNIT * (n // len(NEAR_MISS_UNIT.encode("utf-8")))
        ),
    ),
    Case(
        "replace-a",
        "str_replace: old_str `a` in a file of n `a`",
        "characters",
        lambda n, run: _replace("a"),
        lambda n: {"/memories/big.txt": "a" * n},
        bounded_answer=True,
    ),
    Case(
        "replace-newline",
        "str_replace: old_str `\\n` in a file of n newlines",
        "characters",
        lambda n, run: _replace("\n"),
        lambda n: {"/memories/big.txt": "\n" * n},
        bounded_answer=True,
    ),
    Case(
        "replace-periodic",
        "str_replace: old_str of n/2 `a` in a file of n `a`",
        "characters",
        lambda n, run: _replace("a" * (n // 2)),
        lambda n: {"/memories/big.txt": "a" * n},
        bounded_answer=True,
    ),
    Case(
        "view-directories",
        f"view /memories: n top-level directories ({DIRECTORY_NAME_CHARS}-character names) of one "
        f"file each, beside {PADDING_FILES:,} files deep in one more",
        "directories",
        lambda n, run: _view("/memories"),
        _top_level_directories,
        bounded_requests=True,
        bounded_answer=True,
    ),
    Case(
        "view-root-deep",
        f"view /memories: n files in {DEEP_DIRECTORY} (depth 5)",
        "files",
        lambda n, run: _view("/memories"),
        _deep_files,
        bounded_requests=True,
        bounded_answer=True,
    ),
    Case(
        "view-deep-directory",
        f"view {DEEP_DIRECTORY}: a directory of n files",
        "files",
        lambda n, run: _view(DEEP_DIRECTORY),
        _deep_files,
        bounded_requests=True,
        bounded_answer=True,
    ),
    Case(
        "create-depth",
        "create at depth d: /memories/l0/l1/…/f.md",
        "levels",
        lambda n, run: _create(_deep_path(n, run), "note\n"),
        bounded_requests=True,
    ),
    Case(
        "path-length",
        "create with a path of n bytes (limit 1,024): refused",
        "bytes",
        lambda n, run: _create("/memories/" + "abcdefg/" * (n // 8) + "f.md", "note\n"),
        bounded_requests=True,
        bounded_answer=True,
    ),
    Case(
        "view-lines",
        "view a file of n lines",
        "lines",
        lambda n, run: _view("/memories/lines.txt"),
        lambda n: {"/memories/lines.txt": "".join(f"row {i:07d}\n" for i in range(n))},
        bounded_requests=True,
        bounded_answer=True,
    ),
)


@dataclass(frozen=True)
class Scale:
    """Repetitions per size, the wall-time budget of one size, and each case's sizes."""

    reps: int
    budget: float
    sizes: dict[str, tuple[int, ...]]


K = 1024
SCALES = {
    "full": Scale(
        reps=5,
        budget=5.0,
        sizes={
            "create-pem": (8 * K, 16 * K, 32 * K, 64 * K, 128 * K),
            "create-zero-width": (64 * K, 128 * K, 256 * K, 512 * K, 1000 * K),
            "replace-a": (8 * K, 16 * K, 32 * K, 64 * K, 128 * K),
            "replace-newline": (8 * K, 16 * K, 32 * K, 64 * K, 128 * K),
            "replace-periodic": (8 * K, 16 * K, 32 * K, 64 * K, 128 * K),
            "view-directories": (16, 32, 64, 128, 256),
            "view-root-deep": (1250, 2500, 5000, 10000, 20000),
            "view-deep-directory": (1250, 2500, 5000, 10000, 20000),
            "create-depth": (8, 16, 32, 64, 128),
            "path-length": (64 * K, 128 * K, 256 * K, 512 * K, 1024 * K),
            "view-lines": (4 * K, 8 * K, 16 * K, 32 * K, 64 * K),
        },
    ),
    "quick": Scale(
        reps=3,
        budget=1.0,
        sizes={
            "create-pem": (4 * K, 8 * K, 16 * K, 32 * K),
            "create-zero-width": (16 * K, 32 * K, 64 * K, 128 * K),
            "replace-a": (4 * K, 8 * K, 16 * K, 32 * K),
            "replace-newline": (4 * K, 8 * K, 16 * K, 32 * K),
            "replace-periodic": (4 * K, 8 * K, 16 * K, 32 * K),
            "view-directories": (16, 32, 64, 128),
            "view-root-deep": (1100, 2200, 4400),
            "view-deep-directory": (1100, 2200, 4400),
            "create-depth": (4, 8, 16, 32),
            "path-length": (16 * K, 32 * K, 64 * K, 128 * K),
            "view-lines": (2 * K, 4 * K, 8 * K, 16 * K),
        },
    ),
}


@dataclass
class Point:
    """One size: CPU and wall time, the requests of its last run, and that run's answer."""

    n: int
    cpu: Summary
    wall: Summary
    requests: int
    breakdown: str
    answer_chars: int
    refused: bool
    answer_head: str

    def as_dict(self) -> dict[str, Any]:
        return {**self.__dict__, "cpu": self.cpu.as_dict(), "wall": self.wall.as_dict()}


def exponent(points: list[tuple[int, float]]) -> float | None:
    """Least-squares slope of log(value) against log(n); values below 1e-9 count as 1e-9."""
    if len({n for n, _ in points}) < 2:
        return None
    xs = [math.log(n) for n, _ in points]
    ys = [math.log(max(value, 1e-9)) for _, value in points]
    mean_x, mean_y = sum(xs) / len(xs), sum(ys) / len(ys)
    spread = sum((x - mean_x) ** 2 for x in xs)
    return sum((x - mean_x) * (y - mean_y) for x, y in zip(xs, ys, strict=True)) / spread


@dataclass
class Growth:
    """One case on one endpoint: the sizes that ran, the sizes skipped, and the verdicts."""

    backend: str
    case: str
    about: str
    unit: str
    bounded_requests: bool
    bounded_answer: bool
    points: list[Point] = field(default_factory=list)
    skipped: list[int] = field(default_factory=list)
    skip_reason: str = ""

    @property
    def cpu_exponent(self) -> float | None:
        return exponent([(p.n, p.cpu.median) for p in self.points])

    @property
    def request_exponent(self) -> float | None:
        """Counts below 1 (a refusal before any request) count as 1."""
        return exponent([(p.n, max(1, p.requests)) for p in self.points])

    @property
    def answer_exponent(self) -> float | None:
        return exponent([(p.n, max(1, p.answer_chars)) for p in self.points])

    @property
    def linear(self) -> bool:
        """CPU time grows at most linearly (a case cut short at its first size is not)."""
        found = self.cpu_exponent
        return found is not None and (found <= LINEAR_MAX or self.points[-1].cpu.median < CPU_FLOOR)

    @property
    def requests_flat(self) -> bool:
        """The largest size sent no more requests than the size before it."""
        return len(self.points) >= 2 and self.points[-1].requests <= self.points[-2].requests

    @property
    def answer_capped(self) -> bool:
        return bool(self.points) and max(p.answer_chars for p in self.points) <= ANSWER_MAX

    def as_dict(self) -> dict[str, Any]:
        return {
            "backend": self.backend,
            "case": self.case,
            "about": self.about,
            "unit": self.unit,
            "points": [point.as_dict() for point in self.points],
            "skipped": self.skipped,
            "skip_reason": self.skip_reason,
            "cpu_exponent": self.cpu_exponent,
            "request_exponent": self.request_exponent,
            "answer_exponent": self.answer_exponent,
            "linear": self.linear,
            "requests_flat": self.requests_flat if self.bounded_requests else None,
            "answer_capped": self.answer_capped if self.bounded_answer else None,
        }


@dataclass
class _Run:
    cpu: float
    wall: float
    requests: Counter[str]
    answer: str
    refused: bool


def _once(tenant: Tenant, counter: RequestCounter, raw: dict[str, Any]) -> _Run:
    """One command: CPU and wall seconds (collector paused), requests, and the answer or refusal."""
    with quiet_gc(), counter.window() as seen:
        wall, cpu = time.perf_counter(), time.process_time()
        try:
            answer, refused = tenant.run(raw), False
        except CommandError as error:
            answer, refused = error.message, True
        cpu = time.process_time() - cpu
        wall = time.perf_counter() - wall
    return _Run(cpu, wall, Counter(seen), answer, refused)


def _predicted(points: list[Point], n: int) -> float:
    """Wall seconds of one run at size n, from the sizes before it, growing at least linearly."""
    if not points:
        return 0.0
    last = points[-1]
    slope = 1.0
    if len(points) >= 2:
        slope = max(slope, exponent([(p.n, p.wall.median) for p in points[-2:]]) or slope)
    return float(last.wall.median * (n / last.n) ** slope)


class _Seeder:
    """Seeds a case's files into its namespace, only those not there already with the same text."""

    def __init__(self, tenant: Tenant) -> None:
        self.tenant = tenant
        self.stored: dict[str, str] = {}

    def ensure(self, files: dict[str, str]) -> None:
        missing = {path: text for path, text in files.items() if self.stored.get(path) != text}
        if missing:
            self.tenant.seed(missing)
            self.stored.update(missing)


def run_case(
    case: Case, sizes: tuple[int, ...], scale: Scale, tenant: Tenant, counter: RequestCounter
) -> Growth:
    """Run ``case`` at each size in turn (after one discarded run at the smallest)."""
    growth = Growth(
        tenant.backend.name, case.key, case.about, case.unit, case.bounded_requests, case.bounded_answer
    )
    seeder = _Seeder(tenant)
    runs = 0

    def tool_input(n: int) -> dict[str, Any]:
        nonlocal runs
        runs += 1
        return case.tool_input(n, runs)

    seeder.ensure(case.files(sizes[0]))
    _once(tenant, counter, tool_input(sizes[0]))
    for index, n in enumerate(sizes):
        predicted = _predicted(growth.points, n)
        if index >= 2 and predicted > scale.budget:
            growth.skipped = list(sizes[index:])
            growth.skip_reason = f"predicted {predicted:.1f} s a run, over the {scale.budget:g} s budget"
            break
        seeder.ensure(case.files(n))
        found: list[_Run] = []
        while len(found) < scale.reps and (not found or sum(run.wall for run in found) < scale.budget):
            found.append(_once(tenant, counter, tool_input(n)))
        last = found[-1]
        growth.points.append(
            Point(
                n=n,
                cpu=Summary.of([run.cpu for run in found]),
                wall=Summary.of([run.wall for run in found]),
                requests=max(sum(run.requests.values()) for run in found),
                breakdown=describe(last.requests),
                answer_chars=max(len(run.answer) for run in found),
                refused=last.refused,
                answer_head=last.answer[:120],
            )
        )
        if found[0].wall > scale.budget and index + 1 < len(sizes):
            growth.skipped = list(sizes[index + 1 :])
            growth.skip_reason = f"a run took {found[0].wall:.1f} s, over the {scale.budget:g} s budget"
            break
    return growth


def run(backend: Backend, scale: Scale) -> list[Growth]:
    """Every case on ``backend``, each in a bucket of its own (moto's LIST scans the whole bucket).

    A case's objects are left for the server to drop when it stops: deleting them one batch at a
    time would take moto longer than the case.
    """
    client = s3memory_client(backend)
    counter = RequestCounter(client)
    found = []
    for case in CASES:
        bucket = f"{BUCKET}-{case.key}"
        backend.create_bucket(bucket)
        tenant = Tenant(backend, client, bucket, "adversary")
        tenant.clear()
        found.append(run_case(case, scale.sizes[case.key], scale, tenant, counter))
    return found


def _exponent(value: float | None) -> str:
    return "\u2013" if value is None else f"n^{value:.2f}"


def _span(values: list[int]) -> str:
    return f"{values[0]:,}" if len(set(values)) == 1 else f"{values[0]:,} \u2192 {values[-1]:,}"


def adversarial_lines(growths: list[Growth]) -> list[str]:
    """Section 6 of ``latest.md``: a verdict per case, then every size measured."""
    out = [
        "## 6. Adversarial inputs: growth rates",
        "",
        "Each command on hostile inputs of growing size n (`bench/adversarial.py`). *CPU growth* is the "
        "least-squares slope of log(CPU time) against log(n) over the sizes that ran: the bench process's "
        "CPU (`time.process_time`, every thread; the S3 server is another process), median per size. At most "
        f"n^{LINEAR_MAX:g} is linear, and so is any growth that stays under {CPU_FLOOR * 1000:g} ms at the "
        "largest size (timer noise). Requests are exact; where they must not grow with data the answer does "
        "not show, they are *flat* when the largest size sent no more than the size before it. Answers must "
        f"stay within {ANSWER_MAX:,} characters (the view cap and its note). A size predicted to take "
        "longer than the budget (from the third size on) is skipped with every larger one; the slope is then "
        "fitted over the sizes that ran.",
        "",
    ]
    if not growths:
        return [*out, "Not measured in this run.", ""]
    rows = []
    for growth in growths:
        points = growth.points
        requests = _span([p.requests for p in points]) if points else "\u2013"
        answers = _span([p.answer_chars for p in points]) if points else "\u2013"
        rows.append(
            [
                growth.case,
                growth.about,
                f"{points[0].n:,}\u2013{points[-1].n:,} {growth.unit}" if points else "\u2013",
                _exponent(growth.cpu_exponent),
                "linear" if growth.linear else "**super-linear**",
                f"{requests} ({_exponent(growth.request_exponent)})",
                ("flat" if growth.requests_flat else "**grows**") if growth.bounded_requests else "",
                f"{answers} ({_exponent(growth.answer_exponent)})",
                ("bounded" if growth.answer_capped else "**unbounded**") if growth.bounded_answer else "",
            ]
        )
    out += [f"**{growths[0].backend}**", ""]
    out += table(
        ["case", "input", "n", "CPU growth", "verdict", "requests", "verdict", "answer chars", "verdict"],
        rows,
    )
    skipped = [g for g in growths if g.skipped]
    if skipped:
        out += [
            f"- {g.case}: n = {', '.join(f'{n:,}' for n in g.skipped)} skipped ({g.skip_reason})."
            for g in skipped
        ] + [""]
    out += ["Every size measured:", ""]
    out += table(
        ["case", "n", "CPU ms", "wall ms", "runs", "requests", "which", "answer chars", "answer"],
        [
            [
                growth.case,
                f"{p.n:,}",
                p.cpu.ms(1),
                p.wall.ms(1),
                str(p.cpu.n),
                str(p.requests),
                p.breakdown,
                f"{p.answer_chars:,}",
                "refused" if p.refused else "done",
            ]
            for growth in growths
            for p in growth.points
        ],
    )
    return out


def main(argv: list[str] | None = None) -> int:
    """Run this section alone on a moto server of its own and print its part of ``latest.md``."""
    parser = argparse.ArgumentParser(prog="python -m bench.adversarial", description=main.__doc__)
    parser.add_argument("--quick", action="store_true", help="the small sizes of `python -m bench --quick`")
    parser.add_argument("--json", help="also write the results to this JSON file")
    arguments = parser.parse_args(argv)
    fake_credentials()
    with moto_backend() as backend:
        found = run(backend, SCALES["quick" if arguments.quick else "full"])
    print_alone(adversarial_lines(found), arguments.json, [growth.as_dict() for growth in found])
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
