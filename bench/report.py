"""``latest.md``: the targets first, then one table per section."""

from __future__ import annotations

import math
from collections import defaultdict

from s3memory.ops.rotation import ROTATION_WAIT_SECONDS

from .adversarial import ANSWER_MAX, CPU_FLOOR, LINEAR_MAX, Growth
from .mcp_lambda import McpLambda
from .mcp_overhead import McpCommand, McpOverhead
from .peers_session import (
    CREATES,
    KINDS,
    LOCAL,
    S3FS,
    S3MEMORY,
    S3MEMORY_F2,
    SESSION,
    CreateCosts,
    RenameComparison,
)
from .results_model import FORMAT_VIEW_TARGET, REPORTED, Results, evaluate
from .rotation import FILES, FleetRotation


def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(" --- " for _ in header) + "|"]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return [*lines, ""]


def _ms(seconds: float, digits: int = 1) -> str:
    return f"{seconds * 1000:.{digits}f}"


def render(results: Results) -> str:
    out: list[str] = []
    env = results.environment
    out += [
        "# s3memory benchmark: latest run",
        "",
        f"Plan **{results.plan.name}**, started {results.started}, took {results.seconds / 60:.1f} min. "
        f"Machine: {env.get('cores')} cores, load average {env.get('load_before')} at the start and "
        f"{env.get('load_after')} at the end (other work on the machine shows up as spread).",
        "",
        "Versions: "
        + ", ".join(f"{name} {version}" for name, version in env.items() if name.startswith("v:")),
        "",
        "Endpoints (all on 127.0.0.1):",
        "",
    ]
    out += [f"- **{name}**: {description}" for name, description in results.backends]
    out += [""]
    if results.notes:
        out += [f"- {note}" for note in results.notes] + [""]
    out += [
        "Every time is a median over repetitions with its interquartile range (p25\u2013p75) in brackets; every "
        "ratio is taken pair by pair from the two things measured back to back in this run (alternating "
        "which goes first), then summarised the same way. Requests are counted with botocore "
        "`request-created` hooks on the clients (every HTTP attempt, retries included).",
        "",
        "## Targets",
        "",
    ]
    targets = evaluate(results)
    failed = [t for t in targets if t.status == "FAIL"]
    reported = [t for t in targets if t.status == REPORTED]
    judged = len(targets) - len(reported)
    out += [
        f"{judged - len(failed)} of {judged} met; missed: {len(failed)}; reported, not judged: {len(reported)}.",
        "",
    ]
    out += _table(
        ["target", "endpoint", "measured", "goal", "result"],
        [[t.target, t.where, t.measured, t.goal, _mark(t.status, t.note)] for t in targets],
    )

    # 1. Per command
    out += [
        "## 1. Per command",
        "",
        "Requests of each command on a warm tool (one user, a small tree), with a local master key and with "
        "KMS envelope keys (moto's KMS). The budget column is the issue's target.",
        "",
    ]
    first_backend = results.commands[0].backend if results.commands else ""
    rows = []
    for command in results.commands:
        if command.backend != first_backend:
            continue
        rows.append(
            [
                command.command,
                str(command.requests),
                command.breakdown,
                f"≤ {command.budget}",
                "\u2013" if command.kms_s3_requests is None else str(command.kms_s3_requests),
                "\u2013" if command.kms_requests_warm is None else str(command.kms_requests_warm),
            ]
        )
    out += _table(
        ["command", "S3 requests", "which", "budget", "S3 requests (KMS keys)", "KMS requests (warm)"], rows
    )
    for backend, cold in results.kms.items():
        out += [
            f"KMS on {backend}: the first command for a **new user** (a create) sends {cold.new_user_kms} and "
            f"S3 {cold.new_user_s3}, of which a GET and a PUT (IfNoneMatch) are the wrapped key object. The "
            f"first command of a **new process** for an existing user (a view) sends {cold.new_process_kms} and "
            f"S3 {cold.new_process_s3} (the file and the wrapped key). Warm commands send no KMS request.",
            "",
        ]
    out += [
        "Wall time against the **floor**: the bare boto3 requests the command minimally needs, sent by the same "
        "client on objects of the same size, measured back to back with the command.",
        "",
    ]
    by_backend: dict[str, list] = defaultdict(list)
    for command in results.commands:
        by_backend[command.backend].append(command)
    for backend, commands in by_backend.items():
        out += [f"**{backend}** ({commands[0].seconds.n} pairs per command)", ""]
        out += _table(
            ["command", "floor", "s3memory ms", "floor ms", "s3memory / floor"],
            [[c.command, c.floor, c.seconds.ms(), c.floor_seconds.ms(), c.ratio.ratio()] for c in commands],
        )

    # 2. Scaling
    out += [
        "## 2. Scaling",
        "",
        "`view /memories` over trees of N objects. *flat-N*: N notes in ten directories, all within two "
        "levels (all listed). *deep-H*: ten directories of ten subdirectories (the visible levels) with H "
        "objects below level 2, which the listing never shows; the deep trees share one bucket.",
        "",
    ]
    for backend in sorted({v.backend for v in results.views}):
        views = [v for v in results.views if v.backend == backend]
        out += [f"**{backend}** ({views[0].seconds.n} runs per tree)", ""]
        out += _table(
            ["tree", "objects", "below level 2", "requests", "which", "time ms", "answer chars"],
            [
                [
                    v.tree,
                    f"{v.objects:,}",
                    f"{v.below_level_2:,}",
                    str(v.requests),
                    v.breakdown,
                    v.seconds.ms(0),
                    f"{v.output_chars:,}",
                ]
                for v in views
            ],
        )
    if results.format_views:
        out += [
            "**Private names.** `view /memories` of one tree in storage format 1 (plain keys) and format 2 "
            "(private names: every key segment an AES-SIV token that `view` decrypts), two users in one "
            "bucket, measured pair by pair (alternating which goes first); the ratio is format 2 / format 1 "
            f"per pair (target ≤ {FORMAT_VIEW_TARGET:.2f}\u00d7, the same requests). The tree: about one file "
            "in 25 at the top level, the rest in directories of 20, all within two levels; the answer is "
            "cut at the view cap in both. *Bench CPU* is this process's CPU time per view (the client: "
            "botocore parsing the listing, and on format 2 the names' decryption).",
            "",
        ]
        rows = []
        for compared in results.format_views:
            for side in (compared.format1, compared.format2):
                rows.append(
                    [
                        compared.backend,
                        f"{compared.files:,} ({compared.directories} directories, "
                        f"{compared.top_level_files} top-level)",
                        str(side.storage_format),
                        str(side.requests),
                        side.breakdown,
                        side.seconds.ms(0),
                        side.cpu_seconds.ms(1),
                        f"{side.output_chars:,}",
                        compared.ratio.ratio() if side is compared.format2 else "",
                        str(compared.ratio.n) if side is compared.format2 else "",
                    ]
                )
        out += _table(
            [
                "endpoint",
                "files",
                "format",
                "requests",
                "which",
                "time ms",
                "bench CPU ms",
                "answer chars",
                "format 2 / format 1",
                "pairs",
            ],
            rows,
        )
    out += [
        "Directory `delete` and `rename` (to a path one directory deep) of N files, with s3memory's bounded "
        "parallelism (`concurrency.in_flight`: 16 in flight, more where a round trip is long, up to 64; "
        "threads sharing one client).",
        "",
    ]
    rows = []
    for batch in results.batches:
        if batch.mode != "parallel":
            continue
        rows.append(
            [
                batch.backend,
                batch.operation,
                f"{batch.files:,}",
                f"{batch.requests:,}",
                f"{batch.budget:,}",
                batch.breakdown,
                batch.seconds.seconds(2),
                _per_request(batch.cpu_seconds.median, batch.requests),
                _per_request(batch.server_cpu_seconds.median, batch.requests),
                str(batch.seconds.n),
            ]
        )
    out += _table(
        [
            "endpoint",
            "operation",
            "files",
            "requests",
            "budget",
            "which",
            "time s",
            "bench CPU ms/request",
            "server CPU ms/request",
            "runs",
        ],
        rows,
    )

    # 3. Parallel vs serial
    out += [
        "## 3. Parallel batches against serial",
        "",
        "The same command with both bounds of `s3memory.storage.concurrency.in_flight` at 1 (serial), "
        "interleaved run by run with the default (16 in flight, up to 64 where a round trip is long). The speedup is serial/parallel per pair. On a loopback endpoint with no latency "
        "both are bound by CPU (the bench, the server and anything else on 2 cores); the endpoint with an "
        "added per-request delay shows what bounded parallelism buys against a real round trip. *CPU "
        "ceiling* is serial time over the least time the parallel run's CPU work needs on this machine: the "
        "bench's threads share one interpreter lock, moto's server has its own, and both share the cores "
        "(the larger of bench CPU, server CPU, and their sum over the cores). A `+10ms` endpoint whose "
        "delay is the clients' (SeaweedFS) models a real endpoint, whose own work does not share these "
        "cores. A delete of up to 1,000 files is one `DeleteObjects` request in either mode, so delete is "
        "also set against serial deletion without batches (*one request per file*: the same client lists "
        "the directory and deletes each object in turn).",
        "",
    ]
    out += _table(
        [
            "endpoint",
            "operation",
            "files",
            "serial is",
            "serial s",
            "parallel s",
            "speedup",
            "CPU ceiling",
            "pairs",
        ],
        [
            [
                s.backend,
                s.operation,
                f"{s.files:,}",
                s.baseline,
                s.serial.seconds(2),
                s.parallel.seconds(2),
                s.speedup.ratio(1),
                f"{s.cpu_ceiling:.1f}\u00d7",
                str(s.speedup.n),
            ]
            for s in results.speedups
        ],
    )

    # 4. Cold start
    out += ["## 4. Cold start", ""]
    cold = results.coldstart
    if cold is None:
        out += ["Not measured in this run.", ""]
    else:
        out += [
            f"A new interpreter serving its first command (`view /memories`, local key) through `{cold.entry}`, "
            "against one importing boto3 and sending the same bare LIST; spawn to exit, alternating, "
            f"{cold.ratio.n} of each. `anthropic` imported by the s3memory process: {cold.import_anthropic}.",
            "",
        ]
        out += _table(
            ["process", "spawn to exit s", "import + first command s", "modules loaded"],
            [
                [
                    "s3memory",
                    cold.s3memory_process.seconds(3),
                    cold.s3memory_in_process.seconds(3),
                    str(cold.s3memory_modules),
                ],
                [
                    "boto3 + LIST",
                    cold.boto3_process.seconds(3),
                    cold.boto3_in_process.seconds(3),
                    str(cold.boto3_modules),
                ],
            ],
        )
        out += [f"Ratio s3memory / boto3 (spawn to exit, per pair): **{cold.ratio.ratio()}**.", ""]

    # 5. Peers
    out += [
        "## 5. Peers on an agent session",
        "",
        "One conversation's worth of memory work, from the same 12 starting files in a fresh namespace each "
        f"repetition ({len(SESSION)} commands: "
        + ", ".join(f"{sum(1 for k, _ in SESSION if k == kind)} {kind}" for kind in KINDS)
        + "). A kind's time is the mean over its commands in one session. *s3memory*: storage format 1; "
        "*s3memory f2*: storage format 2 (private names; a rename copies on the server). *s3fs*: "
        "`bench/peers/s3fs_memory.py`, what a user would write with s3fs + `cryptography`; *local (SDK)*: "
        "`BetaLocalFilesystemMemoryTool` on local disk, the floor with no network.",
        "",
    ]
    for peer in results.peers:
        names = peer.implementations
        ours = [name for name in (S3MEMORY, S3MEMORY_F2) if name in names]
        ratios = {S3MEMORY: peer.ratio_s3fs, S3MEMORY_F2: peer.ratio_s3fs_f2}
        totals = {S3MEMORY: peer.ratio_total, S3MEMORY_F2: peer.ratio_total_f2}
        compared = [name for name in ours if S3FS in names and ratios[name]]
        header = ["command", *[f"{name} ms" for name in names]]
        header += [f"{name} / s3fs" for name in compared]
        header += [f"requests {name}" for name in names if name != LOCAL]
        rows = []
        for kind in KINDS:
            row = [kind, *[peer.seconds[name][kind].ms(1 if name != LOCAL else 2) for name in names]]
            row += [ratios[name][kind].ratio() for name in compared]
            row += [peer.requests[name][kind] for name in names if name != LOCAL]
            rows.append(row)
        total = ["whole session", *[peer.totals[name].ms(0 if name != LOCAL else 1) for name in names]]
        total += [totals[name].ratio() if totals[name] is not None else "\u2013" for name in compared]
        total += [str(peer.request_totals[name]) for name in names if name != LOCAL]
        rows.append(total)
        versions = ", ".join(f"{k} {v}" for k, v in peer.versions.items())
        runs = peer.totals[names[0]].n
        out += [f"**{peer.backend}** ({runs} sessions each{'; ' + versions if versions else ''})", ""]
        out += _table(header, rows)
        if peer.failures:
            out += [
                "Commands that answered an error: "
                + "; ".join(f"{name}: {', '.join(items)}" for name, items in peer.failures.items()),
                "",
            ]
        if peer.skipped:
            out += [peer.skipped, ""]
        out += _create_costs_lines(peer.create_costs)
    out += _renames_section(results)

    out += adversarial_section(results.adversarial)
    out += mcp_section(results.mcp, results.mcp_lambda)
    out += rotation_lines(results.rotation)
    return "\n".join(out).rstrip() + "\n"


def _create_costs_lines(costs: CreateCosts | None) -> list[str]:
    """One line: what a create costs each S3 implementation, from creates in a row."""
    if costs is None:
        return []
    made_of = "; ".join(f"{name} {costs.made_of(name)}" for name in costs.seconds)
    runs = next(iter(costs.seconds.values())).n
    return [
        f"*create alone*, {CREATES} new notes in a row in a directory that exists "
        f"({runs} run{'s' if runs != 1 else ''} each), "
        f"per create: time, client + server CPU: {made_of}.",
        "",
    ]


def _renames_section(results: Results) -> list[str]:
    """Section 5's directory renames of N files: s3memory in either format against s3fs."""
    if not results.renames:
        return []
    return renames_lines(results.renames)


def renames_lines(renames: list[RenameComparison]) -> list[str]:
    """The directory renames' table: time, requests and CPU per file of each implementation."""
    out = [
        "**Directory rename of N files**, alone: `/memories/a/batch` (ten subdirectories) moved to "
        "`/memories/moved-0/batch`, then on to `moved-1` ..., every move a sample, the implementations one "
        "after another in rotating order, in one bucket. s3memory format 1 reads and writes every file (GET + "
        "PUT, sealed again for its new path); format 2 copies on the server (a CopyObject with a new "
        "place record; a HEAD first only for a file this process did not read, write or copy itself: here "
        "the unmeasured first move); s3fs copies on the server and deletes (`fs.copy(recursive=True)` + "
        "`fs.rm(recursive=True)`, up to its batch of concurrent requests; s3memory keeps as many in flight "
        "as `concurrency.in_flight` asks: 16, more where a round trip is long, up to 64). Each s3memory "
        "rename also writes and removes its job record (crash safety). *CPU ms/file*: the client's process "
        "(the bench's for s3memory, the s3fs worker's for s3fs) and the server's, per file moved; *CPU / "
        "s3fs*: client + server CPU over s3fs's, per repetition.",
        "",
    ]
    rows = []
    notes = []
    for renamed in renames:
        if renamed.left_out:
            notes.append(f"{renamed.backend}, {renamed.files:,} files: {renamed.left_out}.")
        for name in renamed.implementations:
            ratio = renamed.ratio_s3fs.get(name)
            cpu_ratio = renamed.cpu_ratio_s3fs.get(name)
            per_file = 1000 / renamed.files
            rows.append(
                [
                    renamed.backend,
                    f"{renamed.files:,}",
                    name,
                    renamed.seconds[name].ms(0),
                    ratio.ratio() if ratio is not None else "",
                    f"{renamed.requests[name]:,}",
                    renamed.breakdown[name],
                    f"{renamed.client_cpu[name].median * per_file:.2f}",
                    f"{renamed.server_cpu[name].median * per_file:.2f}",
                    cpu_ratio.ratio() if cpu_ratio is not None else "",
                    str(renamed.seconds[name].n),
                ]
            )
    out += _table(
        [
            "endpoint",
            "files",
            "implementation",
            "time ms",
            "/ s3fs",
            "requests",
            "which",
            "client CPU ms/file",
            "server CPU ms/file",
            "CPU / s3fs",
            "runs",
        ],
        rows,
    )
    if notes:
        out += [" ".join(notes), ""]
    return out


def _exponent(value: float | None) -> str:
    return "\u2013" if value is None else f"n^{value:.2f}"


def _span(values: list[int]) -> str:
    return f"{values[0]:,}" if len(set(values)) == 1 else f"{values[0]:,} \u2192 {values[-1]:,}"


def adversarial_section(growths: list[Growth]) -> list[str]:
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
    out += _table(
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
    out += _table(
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


def mcp_section(measured: McpOverhead | None, on_lambda: McpLambda | None = None) -> list[str]:
    """Section 7 of ``latest.md``: the memory tool over MCP stdio against the library, per call, then
    the MCP function against the memory function on Lambda."""
    return [*_mcp_stdio_lines(measured), *mcp_lambda_lines(on_lambda)]


def _mcp_stdio_lines(measured: McpOverhead | None) -> list[str]:
    out = [
        "## 7. The memory tool over MCP stdio",
        "",
        "What `s3memory mcp` adds to a call: one `s3memory mcp --user ID` server (a child process) with the "
        "official `mcp` client over stdio in the bench process, against `S3Memory.run` in the bench "
        "process on the same store and user, built from the same `S3MEMORY_*` settings; each call timed "
        "from send to answer, the two back to back (alternating which goes first). *Overhead* is MCP "
        "minus library per pair, *ratio* MCP / library per pair.",
        "",
    ]
    if measured is None or measured.skipped:
        return [*out, *_not_run(measured)]
    out += [
        f"**{measured.backend}**, storage format {measured.storage_format}, local key; mcp "
        f"{measured.mcp_version}, protocol {measured.protocol_version}; {measured.calls} pairs per "
        f"command after {measured.warmup} unmeasured. `view file` views one note of 40 lines; `create` "
        "writes a new note of 10 lines one directory deep on each call.",
        "",
    ]
    out += _mcp_table(measured.commands, "MCP", "library")
    out += [
        f"Server start-up (spawn until the client is connected): **{measured.startup.ms(0)} ms** over "
        f"{measured.startup.n} start(s); the first call after it (a `view file`): "
        f"{_ms(measured.first_call, 1)} ms.",
        "",
    ]
    return out


def _not_run(found: McpOverhead | McpLambda | None) -> list[str]:
    """What stands for a part of section 7 that did not run."""
    why = found.skipped if found is not None else ""
    return [f"Skipped: {why}." if why else "Not measured in this run.", ""]


def _mcp_table(commands: list[McpCommand], mcp: str, other: str) -> list[str]:
    """Per command: each side's median (IQR) and p90, the overhead and the ratio, per pair."""
    return _table(
        [
            "command",
            f"{mcp} ms",
            f"{mcp} p90 ms",
            f"{other} ms",
            f"{other} p90 ms",
            "overhead ms/call",
            f"{mcp} / {other}",
            "pairs",
        ],
        [
            [
                c.command,
                c.mcp.ms(2),
                _ms(c.mcp_p90, 2),
                c.library.ms(2),
                _ms(c.library_p90, 2),
                c.overhead.ms(2),
                c.ratio.ratio(),
                str(c.ratio.n),
            ]
            for c in commands
        ],
    )


LAMBDA_ABOUT = (
    "Both Lambda handlers in the bench process, with the same settings (the store above, a loopback "
    "token issuer, `S3MEMORY_MCP_URL`); every request an API Gateway HTTP API event (payload 2.0) "
    "with a bearer token that both functions verify. No Lambda service: the handlers are called "
    "directly, the store is the moto endpoint above.",
    "",
    "- *Warm*: `mcp_function.handle` serving a JSON-RPC `tools/call` of the memory tool on "
    "`ANY /mcp` (a new app and event loop per invocation) against `memory.handle` serving "
    '`{"input": ...}` on `POST /memory`, sharing one warm runtime; the same commands, pairs and '
    "alternation as above, each call timed around the handler. *Overhead* is MCP function minus "
    "memory function per pair.",
    "- *Cold*: a new interpreter (byte-code from a warm cache, as in section 4) that imports "
    "`s3memory.aws_lambda`, looks the handler up as the Lambda runtime does (for `mcp_handler` that "
    "imports `mcp_function` and the MCP SDK) and serves its first request, a `view file` (which "
    "also builds the runtime and fetches the issuer's keys over loopback); timed from spawn to exit, "
    "and inside the child. The two handlers alternate.",
)
"""What section 7's part on Lambda measures (``bench/mcp_lambda.py``)."""


def mcp_lambda_lines(found: McpLambda | None) -> list[str]:
    """Section 7's second part: the MCP function against the memory function, warm and cold."""
    out = ["### On Lambda: the MCP function against the memory function", "", *LAMBDA_ABOUT, ""]
    if found is None or found.skipped:
        return out + _not_run(found)
    out.append(
        f"**{found.backend}**, storage format {found.storage_format}, local key; mcp {found.mcp_version}, "
        f"`mcp-protocol-version: {found.protocol_version}`; {found.calls} pairs per command after "
        f"{found.warmup} unmeasured; {found.cold_reps} cold start(s) of each handler.\n"
    )
    out += _mcp_table(found.commands, "MCP function", "memory function")
    out += _table(
        [
            "cold start",
            "process ms",
            "import s3memory.aws_lambda ms",
            "handler import ms",
            "first request ms",
            "modules",
            "starts",
        ],
        [
            [
                f"`{cold.handler}`",
                cold.process.ms(0),
                cold.package_import.ms(0),
                cold.handler_import.ms(1),
                cold.first_request.ms(0),
                str(cold.modules),
                str(cold.process.n),
            ]
            for cold in found.cold
        ],
    )
    out += [
        f"Cold start, MCP function / memory function (process time, per pair): {found.cold_ratio.ratio()}. "
        "*Handler import* for `mcp_handler` is the import of `s3memory.aws_lambda.mcp_function` with the "
        "MCP SDK, which a Lambda container pays once, at init.",
        "",
    ]
    return out


def _duration(seconds: float) -> str:
    """``12.3 s``, ``7.1 min``, ``23.4 h`` or ``4.9 days``."""
    for unit, size in (("days", 86400.0), ("h", 3600.0), ("min", 60.0)):
        if seconds >= size * (2 if unit == "days" else 1):
            return f"{seconds / size:.1f} {unit}"
    return f"{seconds:.1f} s"


ROTATION_ABOUT = (
    "What `s3memory rotate --all --wait` does (`bench/rotation.py`; alone: `python -m bench.rotation "
    "[--quick]`), on a store of its own: N users in storage format 2 with envelope keys from the "
    f"endpoint's KMS, {len(FILES)} small files each and their access record, written through the "
    "product; a bucket with S3 versioning (as the Terraform module deploys it), rotated with "
    "`--drop-history`. A new operator's process (its own clients, an empty key cache) lists the "
    "memories, then `rotation.rotate_waiting` seals every memory again under a new key version (first "
    "pass), waits once until no serving process can still seal with an old version "
    f"(`ROTATION_WAIT_SECONDS` = {ROTATION_WAIT_SECONDS:.0f} s: the key cache and the clock margin), then "
    "rotates each again (second pass: every file read again, each earlier S3 version read, the old "
    "wrapped key removed).",
    "",
    "The wait is **injected, not slept**: the rotation's clock is the real one plus an offset, and its "
    "`sleep` records the seconds asked for and moves the offset on by as much, so the second pass sees "
    "the time it would see after a real wait and does all the work a real one does. *Work* is the wall "
    "time measured (the listing and both passes); *projected* adds the waits asked for. Beside it, what "
    "the command cost when it rotated one user at a time and waited for each: the same work and N "
    "waits (computed, not run). Requests are the rotation's, S3 and KMS, counted on its clients.",
)
"""What section 8 measures (``bench/rotation.py``)."""


def rotation_lines(found: FleetRotation | None) -> list[str]:
    """Section 8 of ``latest.md``: ``rotate --all --wait`` on a store of N users."""
    out = ["## 8. Key rotation at fleet scale", "", *ROTATION_ABOUT, ""]
    if found is None:
        return [*out, "Not measured in this run.", ""]
    out += [f"**{found.backend}**, {found.users:,} users, {found.files:,} files", ""]
    out += _table(
        [
            "users",
            "files",
            "sealed again",
            "records",
            "old keys retired",
            "complete",
            "requests",
            "per user",
            "which",
        ],
        [
            [
                f"{found.users:,}",
                f"{found.files:,}",
                f"{found.reencrypted:,}",
                f"{found.records:,}",
                f"{found.retired:,}",
                f"{found.complete:,} of {found.reports:,}",
                f"{found.requests:,}",
                f"{found.requests / found.users:.1f}" if found.users else "\u2013",
                found.breakdown,
            ]
        ],
    )
    server = "\u2013" if found.server_cpu is None else f"{found.server_cpu:.1f}"
    out += _table(
        [
            "listing s",
            "first pass s",
            "second pass s",
            "work s",
            "work per user ms",
            "bench CPU s",
            "server CPU s",
            "waits",
            "waited s",
            "projected",
            "a wait per user",
        ],
        [
            [
                f"{found.list_seconds:.2f}",
                f"{found.first_pass_seconds:.2f}",
                f"{found.second_pass_seconds:.2f}",
                f"{found.work_seconds:.2f}",
                f"{found.work_seconds / found.users * 1000:.0f}" if found.users else "\u2013",
                f"{found.bench_cpu:.1f}",
                server,
                str(len(found.waits)),
                ", ".join(f"{wait:.0f}" for wait in found.waits) or "0",
                _duration(found.projected_seconds),
                _duration(found.per_user_wait_seconds),
            ]
        ],
    )
    if found.call_ms:
        calls = {**found.s3_requests, **found.kms_requests}
        out += [
            "Where the work went: each operation's calls, from the client's call to its answer. A user's "
            "files are read and written in parallel, so the sums exceed the wall time. On moto a listing "
            "costs the server in proportion to the whole bucket: `ListObjectsV2` scans and sorts every key, "
            "and `ListObjectVersions` copies every version of every object (bodies too) before it filters "
            "by prefix, so the work per user grows with the store there; on S3 a listing is a round trip "
            "by prefix.",
            "",
        ]
        out += _table(
            ["operation", "requests", "median ms", "sum s"],
            [
                [
                    name,
                    f"{calls.get(name, 0):,}",
                    f"{found.call_ms[name]:.1f}",
                    f"{found.call_seconds[name]:.1f}",
                ]
                for name in sorted(found.call_seconds, key=lambda item: -found.call_seconds[item])
            ],
        )
    out += [
        f"`rotate --all --wait` on {found.users:,} users: {_duration(found.projected_seconds)}, of which "
        f"{_duration(found.waited)} waiting and {_duration(found.work_seconds)} of work; one wait per user "
        f"would have taken {_duration(found.per_user_wait_seconds)} "
        f"({found.users:,} \u00d7 {ROTATION_WAIT_SECONDS:.0f} s).",
        "",
    ]
    return out


def _per_request(seconds: float, requests: int) -> str:
    if math.isnan(seconds) or not requests:
        return "\u2013"
    return f"{seconds / requests * 1000:.2f}"


def _mark(status: str, note: str) -> str:
    text = {"PASS": "✅ pass", "FAIL": "❌ **miss**", REPORTED: "📋 reported"}.get(status, status)
    return f"{text} ({note})" if note else text
