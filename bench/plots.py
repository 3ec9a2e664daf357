"""``latest.png``: one figure, one panel per section (medians with p25-p75 error bars)."""

from __future__ import annotations

import math
from pathlib import Path

from .metrics import Summary
from .peers_session import KINDS, S3MEMORY, S3MEMORY_F2
from .per_command import TIME_TARGET
from .results_model import COLDSTART_TARGET, SPEEDUP_TARGET, Results
from .scaling import ONE_BY_ONE

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b"]


def _error(summary: Summary, scale: float = 1.0) -> list[float]:
    return [
        max(0.0, (summary.median - summary.p25) * scale),
        max(0.0, (summary.p75 - summary.median) * scale),
    ]


def _bars(axis, groups: list[str], series: dict[str, list[Summary | None]], scale: float = 1.0) -> None:  # type: ignore[no-untyped-def]
    width = 0.8 / max(1, len(series))
    for index, (name, values) in enumerate(series.items()):
        xs, heights, errors = [], [], [[], []]
        for position, value in enumerate(values):
            if value is None or math.isnan(value.median):
                continue
            xs.append(position + (index - (len(series) - 1) / 2) * width)
            heights.append(value.median * scale)
            low, high = _error(value, scale)
            errors[0].append(low)
            errors[1].append(high)
        axis.bar(xs, heights, width, yerr=errors, capsize=2, label=name, color=COLORS[index % len(COLORS)])
    axis.set_xticks(range(len(groups)))
    axis.set_xticklabels(groups, rotation=30, ha="right", fontsize=8)


def render(results: Results, path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(2, 4, figsize=(24, 10.5))
    figure.suptitle(
        f"s3memory benchmark ({results.plan.name} run, {results.started}); medians, bars p25\u2013p75",
        fontsize=13,
    )

    # 1. ratio to the floor per command, per backend
    axis = axes[0][0]
    commands = list(dict.fromkeys(c.command for c in results.commands))
    backends = list(dict.fromkeys(c.backend for c in results.commands))
    lookup = {(c.backend, c.command): c for c in results.commands}
    _bars(
        axis,
        commands,
        {b: [lookup[(b, c)].ratio if (b, c) in lookup else None for c in commands] for b in backends},
    )
    axis.axhline(TIME_TARGET, color="black", linestyle="--", linewidth=1, label=f"target {TIME_TARGET}\u00d7")
    axis.axhline(1.0, color="grey", linewidth=0.5)
    axis.set_ylabel("s3memory time / floor time")
    axis.set_title("1. Per command: wall time vs bare boto3 floor")
    axis.legend(fontsize=8)

    # 1b. requests per command vs budget
    axis = axes[0][1]
    first = backends[0] if backends else ""
    own = [lookup[(first, c)] for c in commands if (first, c) in lookup]
    positions = range(len(own))
    axis.bar(positions, [c.requests for c in own], 0.6, label="S3 requests", color=COLORS[0])
    axis.scatter(
        positions, [c.budget for c in own], marker="_", s=600, color="black", label="budget", zorder=3
    )
    axis.set_xticks(list(positions))
    axis.set_xticklabels([c.command for c in own], rotation=30, ha="right", fontsize=8)
    axis.set_ylabel("requests per command")
    axis.set_title("1. Per command: S3 requests vs budget")
    axis.legend(fontsize=8)

    # 2. scaling: time against N (log-log), requests annotated
    axis = axes[0][2]
    plotted = False
    for index, backend in enumerate(sorted({v.backend for v in results.views})):
        flat = [v for v in results.views if v.backend == backend and not v.below_level_2]
        deep = [v for v in results.views if v.backend == backend and v.below_level_2]
        if flat:
            axis.errorbar(
                [v.objects for v in flat],
                [v.seconds.median * 1000 for v in flat],
                yerr=list(zip(*[_error(v.seconds, 1000) for v in flat], strict=True)),
                marker="o",
                label=f"view /memories, flat ({backend})",
                color=COLORS[index],
            )
            for v in flat:
                axis.annotate(f"{v.requests} req", (v.objects, v.seconds.median * 1000), fontsize=7)
            plotted = True
        if deep:
            axis.errorbar(
                [v.objects for v in deep],
                [v.seconds.median * 1000 for v in deep],
                yerr=list(zip(*[_error(v.seconds, 1000) for v in deep], strict=True)),
                marker="s",
                linestyle=":",
                label=f"view /memories, N below level 2 ({backend})",
                color=COLORS[index],
            )
            plotted = True
    for index, compared in enumerate(results.format_views):
        for side, marker in ((compared.format1, "o"), (compared.format2, "D")):
            axis.errorbar(
                [compared.files * (1.08 if side is compared.format2 else 1)],
                [side.seconds.median * 1000],
                yerr=[[value] for value in _error(side.seconds, 1000)],
                marker=marker,
                linestyle="none",
                mfc="none" if side is compared.format2 else None,
                label=f"view /memories, named tree, format {side.storage_format} ({compared.backend})",
                color=COLORS[(5 + index) % len(COLORS)],
            )
        plotted = True
    for index, operation in enumerate(("delete dir", "rename dir")):
        rows = [
            b
            for b in results.batches
            if b.operation == operation and b.mode == "parallel" and b.backend == "moto"
        ]
        if rows:
            axis.errorbar(
                [b.files for b in rows],
                [b.seconds.median * 1000 for b in rows],
                yerr=list(zip(*[_error(b.seconds, 1000) for b in rows], strict=True)),
                marker="^",
                label=f"{operation} (moto)",
                color=COLORS[3 + index],
            )
            for b in rows:
                axis.annotate(f"{b.requests:,} req", (b.files, b.seconds.median * 1000), fontsize=7)
            plotted = True
    if plotted:
        axis.set_xscale("log")
        axis.set_yscale("log")
        axis.legend(fontsize=7)
    axis.set_xlabel("objects (N)")
    axis.set_ylabel("ms")
    axis.set_title("2. Scaling: time vs N (requests annotated)")

    # 3. parallel vs serial speedup
    axis = axes[1][0]
    labels = [
        f"{s.operation} {s.files:,}\n{s.backend}" + ("\nvs per file" if s.baseline == ONE_BY_ONE else "")
        for s in results.speedups
    ]
    if labels:
        _bars(axis, labels, {"serial / parallel": [s.speedup for s in results.speedups]})
        axis.scatter(
            range(len(labels)),
            [s.cpu_ceiling for s in results.speedups],
            marker="_",
            s=500,
            color="red",
            zorder=3,
            label="CPU ceiling on this machine",
        )
        axis.axhline(
            SPEEDUP_TARGET,
            color="black",
            linestyle="--",
            linewidth=1,
            label=f"target {SPEEDUP_TARGET:g}\u00d7",
        )
        axis.axhline(1.0, color="grey", linewidth=0.5)
        axis.legend(fontsize=8)
        for tick in axis.get_xticklabels():
            tick.set_fontsize(7)
    axis.set_ylabel("speedup (serial time / parallel time)")
    axis.set_title("3. Parallel batches vs serial")

    # 4. cold start
    axis = axes[1][1]
    cold = results.coldstart
    if cold is not None:
        _bars(
            axis,
            ["spawn to exit", "import + first command"],
            {
                "s3memory": [cold.s3memory_process, cold.s3memory_in_process],
                "boto3 + LIST": [cold.boto3_process, cold.boto3_in_process],
            },
            scale=1000,
        )
        axis.set_ylabel("ms")
        axis.legend(fontsize=8)
        axis.set_title(
            f"4. Cold start: ratio {cold.ratio.median:.2f}\u00d7 (target ≤ {COLDSTART_TARGET}\u00d7)"
        )
    else:
        axis.set_title("4. Cold start (not measured)")

    # 5. peers: s3memory / s3fs per command kind and endpoint
    axis = axes[1][2]
    series: dict[str, list[Summary | None]] = {}
    renames = {renamed.backend: renamed for renamed in results.renames if renamed.ratio_s3fs}
    groups = [*KINDS, "whole session"]
    if renames:
        files = max(renamed.files for renamed in renames.values())
        groups.append(f"rename dir\n{files:,} files alone")
    for peer in results.peers:
        for label, ratios, total, format_name in (
            (peer.backend, peer.ratio_s3fs, peer.ratio_total, S3MEMORY),
            (f"{peer.backend}, format 2", peer.ratio_s3fs_f2, peer.ratio_total_f2, S3MEMORY_F2),
        ):
            if ratios:
                alone = renames.get(peer.backend)
                extra = [alone.ratio_s3fs.get(format_name) if alone else None] if renames else []
                series[label] = [ratios[kind] for kind in KINDS] + [total, *extra]
    if series:
        _bars(axis, groups, series)
        axis.axhline(1.0, color="black", linestyle="--", linewidth=1, label="parity (target: below)")
        axis.set_yscale("log")
        axis.legend(fontsize=8)
    axis.set_ylabel("s3memory time / s3fs peer time (log)")
    axis.set_title("5. Agent session and directory rename: s3memory (formats 1 and 2) vs the s3fs peer")

    _growth(axes[0][3], axes[1][3], results)

    figure.tight_layout(rect=(0, 0, 1, 0.96))
    figure.savefig(path, dpi=110)
    plt.close(figure)


def _growth(cpu_axis, request_axis, results: Results) -> None:  # type: ignore[no-untyped-def]
    """Section 6: CPU time and requests against input size, each relative to the case's smallest
    size (log-log), with the slopes of linear and quadratic growth."""
    cases = [g for g in results.adversarial if len(g.points) >= 2]
    for axis, quantity in ((cpu_axis, "CPU time"), (request_axis, "requests")):
        widest = 1.0
        for index, growth in enumerate(cases):
            if quantity == "requests" and not growth.bounded_requests:
                continue
            first = growth.points[0]
            values = [p.cpu.median if quantity == "CPU time" else max(1, p.requests) for p in growth.points]
            sizes = [p.n / first.n for p in growth.points]
            widest = max(widest, sizes[-1])
            axis.plot(
                sizes,
                [value / values[0] for value in values],
                marker="o",
                label=growth.case,
                color=COLORS[index % len(COLORS)],
                linestyle="-" if index < len(COLORS) else "--",
            )
        for power, style in ((1, ":"), (2, "-.")):
            axis.plot([1, widest], [1, widest**power], color="black", linestyle=style, label=f"n^{power}")
        axis.set_xscale("log")
        axis.set_yscale("log")
        ticks = [2**power for power in range(int(math.log2(widest)) + 1)]
        axis.set_xticks(ticks, [f"{tick}\u00d7" for tick in ticks])
        axis.tick_params(axis="x", which="minor", labelbottom=False)
        axis.set_xlabel("n / smallest n")
        axis.set_ylabel(f"{quantity} / {quantity} at smallest n")
        axis.legend(fontsize=6)
    cpu_axis.set_title("6. Adversarial inputs: CPU time growth")
    request_axis.set_title("6. Adversarial inputs: requests that must not grow")
