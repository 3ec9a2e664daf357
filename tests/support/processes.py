"""Running Python in a fresh interpreter: a cold start, with nothing imported yet."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

_REPO = Path(__file__).resolve().parents[2]


def run_python_json(script: str, **environment: str) -> Any:
    """Run ``script`` in a fresh interpreter (no ``S3MEMORY_*`` settings inherited, ``environment``
    added) and return the JSON its last printed line holds."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("S3MEMORY_")}
    env.update(environment)
    result = subprocess.run(
        [sys.executable, "-c", script],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=_REPO,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return json.loads(result.stdout.strip().splitlines()[-1])
