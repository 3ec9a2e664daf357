"""The ``s3memory`` console in a test: a command line run against given ``Operations``, with what it
wrote to standard output and standard error, and the audit record it logs."""

from __future__ import annotations

import io
import json
from collections.abc import Callable
from typing import Any

from s3memory.cli.console import Console
from s3memory.cli.main import Refusal, _parser, _refused
from s3memory.ops.operations import Operations


def run(
    operations: Operations | None,
    *argv: str,
    confirm: bool | Callable[[str], bool] = False,
    **environ: str,
) -> tuple[int, str, str]:
    """``s3memory *argv`` over ``operations`` (or those ``environ`` names), the operator answering
    ``confirm`` when asked (or what ``confirm(question)`` returns): the exit status, standard output
    and standard error (a command line refused: 2, and what ``main`` prints of it)."""
    out, err = io.StringIO(), io.StringIO()
    parser = _parser()
    try:
        arguments = parser.parse_args(list(argv))
    except Refusal as refusal:
        return 2, "", _refused(parser, argv, refusal)
    console = Console(
        arguments,
        environ=environ,
        out=out,
        err=err,
        confirm=confirm if callable(confirm) else lambda _: confirm,
        operations=operations,
    )
    return console.run(), out.getvalue(), err.getvalue()


def audit(err: str) -> dict[str, Any]:
    """The one audit record (a JSON line, ``"event": "s3memory.operator"``) among what a command
    wrote to standard error (which is no terminal here)."""
    (record,) = [
        json.loads(line)
        for line in err.splitlines()
        if line.startswith("{") and json.loads(line).get("event") == "s3memory.operator"
    ]
    return dict(record)
