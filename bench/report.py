"""``latest.md``: the run's header and its targets, then each section's part, which the section's
module renders (``per_command_lines`` ... ``cpu_share_lines``); this module only assembles them."""

from __future__ import annotations

from .adversarial import adversarial_lines
from .coldstart import coldstart_lines
from .cost import cost_lines
from .cpu_share import cpu_share_lines
from .mcp_lambda import McpLambda, mcp_lambda_lines
from .mcp_overhead import McpOverhead, mcp_stdio_lines
from .peers_session import peers_lines
from .per_command import per_command_lines
from .results_model import REPORTED, Results, evaluate
from .rotation import rotation_lines
from .scaling import scaling_lines, speedup_lines
from .sync import sync_lines
from .tables import table


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
    out += table(
        ["target", "endpoint", "measured", "goal", "result"],
        [[t.target, t.where, t.measured, t.goal, _mark(t.status, t.note)] for t in targets],
    )

    out += per_command_lines(results.commands, results.kms)
    out += scaling_lines(results.views, results.format_views, results.batches)
    out += speedup_lines(results.speedups)
    out += coldstart_lines(results.coldstart)
    out += peers_lines(results.peers, results.renames)
    out += adversarial_lines(results.adversarial)
    out += mcp_section(results.mcp, results.mcp_lambda)
    out += rotation_lines(results.rotation)
    out += cost_lines(results.cost, results.cpu_shares)
    out += cpu_share_lines(results.cpu_shares)
    out += sync_lines(results.sync)
    return "\n".join(out).rstrip() + "\n"


def mcp_section(measured: McpOverhead | None, on_lambda: McpLambda | None = None) -> list[str]:
    """Section 7 of ``latest.md``: the memory tool over MCP stdio against the library, per call, then
    the MCP function against the memory function on Lambda."""
    return [*mcp_stdio_lines(measured), *mcp_lambda_lines(on_lambda)]


def _mark(status: str, note: str) -> str:
    text = {"PASS": "✅ pass", "FAIL": "❌ **miss**", REPORTED: "📋 reported"}.get(status, status)
    return f"{text} ({note})" if note else text
