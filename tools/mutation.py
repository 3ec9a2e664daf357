#!/usr/bin/env python3
"""Mutation testing of the core modules: ``make mutation`` (all of them) and ``make mutation-sample``.

    python tools/mutation.py [--sample N] [--seed S] [--max-children K] [--report FILE]

mutmut (configured in ``pyproject.toml``'s ``[tool.mutmut]``) changes the modules one small edit at a
time and runs the tests that reach the changed function. A mutant the tests let through (a survivor)
must be killed by a test, or listed with its reason in ``mutation/survivors/<module>.toml``; this
script runs mutmut in a fresh ``mutants/`` folder, prints each module's score and every survivor that
is not listed, with its diff, and fails if there is one. On a whole run it also fails on a listed
survivor that no longer survives (its entry is out of date). ``--sample N`` runs N mutants drawn at
random (the seed is printed, so a failure can be run again), which is what CI runs.

Exit status: 0 every mutant killed or listed; 1 a survivor is not listed, a mutant was not run, or a
listed entry is out of date; 2 usage; 3 mutmut itself failed (its log is named).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import random
import shutil
import subprocess
import sys
import tomllib
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SURVIVORS = REPO_ROOT / "mutation" / "survivors"
MUTANTS = REPO_ROOT / "mutants"
LOG = MUTANTS / "mutmut-run.log"
KINDS = ("equivalent", "unreachable", "performance")
"""Why a listed survivor cannot be killed: no input tells it apart, its code cannot run, or only speed
or memory change (benchmarks measure those)."""
KILLED = {"killed", "timeout", "caught by type check", "segfault"}


@dataclass(frozen=True)
class Change:
    """What a mutant changes: the function and its removed and added lines (stripped)."""

    module: str
    function: str
    removed: str
    added: str


@dataclass(frozen=True)
class Mutant:
    """One mutant of mutmut's run: its name, module, verdict and change."""

    name: str
    module: str
    status: str


def modules() -> list[str]:
    """The modules ``[tool.mutmut]`` mutates, as paths from the repository's root."""
    config = tomllib.loads((REPO_ROOT / "pyproject.toml").read_text("utf-8"))["tool"]["mutmut"]
    return list(config["only_mutate"])


def dotted(module: str) -> str:
    """``s3memory/core/text.py`` → ``s3memory.core.text`` (mutmut's and the survivor file's name)."""
    return module.removesuffix(".py").replace("/", ".")


def function_of(name: str) -> str:
    """The function a mutant's name names: ``x_insert_at`` → ``insert_at``, ``xǁCǁm`` → ``C.m``."""
    mangled = name.rpartition("__mutmut_")[0].rpartition(".")[2]
    if mangled.startswith("xǁ"):
        return ".".join(mangled[2:].split("ǁ"))
    return mangled.removeprefix("x_")


def change_of(module: str, function: str, diff: str) -> Change:
    """A mutant's :class:`Change` from its unified diff (``mutmut show``)."""
    lines = diff.splitlines()[2:]  # the ---/+++ header
    removed = [line[1:].strip() for line in lines if line.startswith("-")]
    added = [line[1:].strip() for line in lines if line.startswith("+")]
    return Change(module, function, "\n".join(removed), "\n".join(added))


def listed(module: str) -> dict[Change, str]:
    """The reviewed survivors of one module, each with its kind and reason; a malformed entry exits 2."""
    path = SURVIVORS / f"{dotted(module)}.toml"
    if not path.exists():
        return {}
    entries: dict[Change, str] = {}
    for index, entry in enumerate(tomllib.loads(path.read_text("utf-8")).get("survivor", []), 1):
        fields = ("function", "removed", "added", "kind", "reason")
        missing = [field for field in fields if not isinstance(entry.get(field), str)]
        if missing or entry["kind"] not in KINDS or not entry["reason"].strip():
            sys.exit(
                f"mutation/survivors/{path.name}: survivor {index} needs function, removed, added, reason "
                f"and a kind of {', '.join(KINDS)} (missing or bad: {', '.join(missing) or 'kind/reason'})"
            )
        change = Change(module, entry["function"], entry["removed"].strip(), entry["added"].strip())
        entries[change] = f"{entry['kind']}: {entry['reason']}"
    return entries


def mutmut(arguments: Sequence[str], max_children: int) -> None:
    """Run ``mutmut run`` (its progress goes to :data:`LOG`); exit 3 if it fails."""
    command = [sys.executable, "-m", "mutmut", "run", "--max-children", str(max_children), *arguments]
    with LOG.open("ab") as log:
        done = subprocess.run(command, cwd=REPO_ROOT, stdout=log, stderr=subprocess.STDOUT, check=False)
    if done.returncode != 0:
        hint = ""
        if "BadTestExecutionCommandsException" in LOG.read_text("utf-8", errors="replace"):
            hint = (
                "; pytest could not select a test by its id: an id given with ids= or id= that holds a"
                " backslash cannot be selected twice in one process, so give it one without"
            )
        sys.exit(
            f"mutmut failed (exit {done.returncode}): its output is in {LOG.relative_to(REPO_ROOT)}{hint}"
        )


def generate(max_children: int) -> None:
    """Write every mutant into ``mutants/`` without running a test (what a sample is drawn from)."""
    from mutmut.__main__ import create_mutants
    from mutmut.mutation.trampoline import set_mutant_under_test
    from mutmut.utils.file_utils import copy_also_copy_files, copy_src_dir, setup_source_paths

    set_mutant_under_test("mutant_generation")
    with LOG.open("a") as log, contextlib.redirect_stdout(log):  # mutmut prints each file it copies
        copy_src_dir()
        copy_also_copy_files()
        setup_source_paths()
        create_mutants(max_children)


def verdicts(chosen: list[str], names: Iterable[str] | None = None) -> list[Mutant]:
    """The mutants of the ``chosen`` modules in ``mutants/``'s records, with their verdicts (only
    ``names``, if given)."""
    from mutmut.mutation.data import SourceFileMutationData
    from mutmut.stats import status_by_exit_code

    wanted = None if names is None else set(names)
    found: list[Mutant] = []
    for module in chosen:
        data = SourceFileMutationData(path=Path(module))
        data.load()
        for name, exit_code in sorted(data.exit_code_by_key.items()):
            if wanted is None or name in wanted:
                found.append(Mutant(name, module, status_by_exit_code[exit_code]))
    return found


def diff_of(mutant: Mutant) -> str:
    """The mutant's unified diff, as ``mutmut show`` prints it."""
    from mutmut.mutation.diff_apply import get_diff_for_mutant

    return get_diff_for_mutant(mutant.name, path=Path(mutant.module))


def report(
    mutants: list[Mutant], chosen: list[str], whole: bool, diff: Callable[[Mutant], str] = diff_of
) -> tuple[str, bool]:
    """The score table of the ``chosen`` modules and the survivors that are not listed; True if nothing
    needs a person."""
    rows = ["| module | mutants | killed | listed | left | killed or listed |", "|---|--:|--:|--:|--:|--:|"]
    problems: list[str] = []
    for module in chosen:
        reviewed = listed(module)
        matched: set[Change] = set()
        own = [mutant for mutant in mutants if mutant.module == module]
        killed = sum(mutant.status in KILLED for mutant in own)
        left = 0
        timed_out: set[Change] = set()
        for mutant in own:
            if mutant.status in KILLED and mutant.status != "timeout":
                continue
            shown = diff(mutant)
            change = change_of(module, function_of(mutant.name), shown)
            if mutant.status == "timeout":  # killed; a listed one made the tests slow, not wrong
                timed_out.add(change)
                continue
            if mutant.status == "survived" and change in reviewed:
                matched.add(change)
                continue
            left += 1
            problems.append(f"{mutant.name}: {mutant.status}\n{shown}\n")
        if whole:
            for change in reviewed.keys() - matched - timed_out:
                problems.append(
                    f"{dotted(module)}.toml lists a survivor that no longer survives (remove it): "
                    f"{change.function}: {change.removed!r} -> {change.added!r}\n"
                )
        total = len(own)
        score = f"{100 * (total - left) / total:.1f}%" if total else "-"
        rows.append(f"| `{module}` | {total} | {killed} | {len(matched)} | {left} | {score} |")
    return "\n".join(rows) + "\n" + "".join(f"\n{problem}" for problem in problems), not problems


def main(argv: Sequence[str] | None = None) -> int:
    """Run mutmut over the core modules (or a sample), check the survivors against the lists, report."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sample", type=int, metavar="N", help="run N mutants drawn at random")
    parser.add_argument("--seed", type=int, help="the sample's seed (default: drawn, and printed)")
    parser.add_argument("--max-children", type=int, default=os.cpu_count() or 2, metavar="K")
    parser.add_argument(
        "--module",
        action="append",
        default=[],
        metavar="PATH",
        help="only this module (repeatable), e.g. s3memory/core/text.py",
    )
    parser.add_argument("--report", type=Path, metavar="FILE", help="also write the score table here")
    arguments = parser.parse_args(argv)
    if arguments.sample is not None and arguments.sample < 1:
        parser.error("--sample takes a positive number of mutants")
    unknown = [module for module in arguments.module if module not in modules()]
    if unknown:
        parser.error(
            f"--module {unknown[0]} is not one of [tool.mutmut]'s only_mutate: {', '.join(modules())}"
        )
    chosen = arguments.module or modules()
    os.chdir(REPO_ROOT)
    shutil.rmtree(MUTANTS, ignore_errors=True)  # a verdict mutmut kept would outlive the tests it came from
    MUTANTS.mkdir()
    names: list[str] | None = None
    if arguments.sample is not None:
        generate(arguments.max_children)
        everything = [mutant.name for mutant in verdicts(chosen)]
        seed = arguments.seed if arguments.seed is not None else random.SystemRandom().randrange(2**32)
        names = sorted(random.Random(seed).sample(everything, min(arguments.sample, len(everything))))
        print(f"sample: {len(names)} of {len(everything)} mutants, --seed {seed}", flush=True)
    patterns = [f"{dotted(module)}.*" for module in arguments.module]
    mutmut(names or patterns, arguments.max_children)
    table, clean = report(verdicts(chosen, names), chosen, whole=names is None)
    print(table)
    if arguments.report is not None:
        arguments.report.write_text(table.split("\n\n")[0] + "\n", "utf-8")
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
