"""Creates the s3fs peer's virtualenv, ``bench/.venv-peer``, from ``bench/peer-requirements.txt``.

    python -m bench.peer_env [--force]

s3fs needs aiobotocore, and every aiobotocore release pins botocore below the one the project's boto3
needs, so the peer cannot share the project's environment; the bench runs it in a worker process.
"""

from __future__ import annotations

import argparse
import shutil
import subprocess
import sys
import venv
from pathlib import Path

HERE = Path(__file__).resolve().parent
TARGET = HERE / ".venv-peer"
REQUIREMENTS = HERE / "peer-requirements.txt"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.peer_env", description=__doc__.split("\n\n")[0])
    parser.add_argument("--force", action="store_true", help="recreate the virtualenv if it exists")
    arguments = parser.parse_args(argv)
    python = TARGET / "bin" / "python"
    if python.exists() and not arguments.force:
        probe = subprocess.run([str(python), "-c", "import s3fs, cryptography"], check=False)
        if probe.returncode == 0:
            print(f"{TARGET} is ready")
            return 0
    if TARGET.exists():
        shutil.rmtree(TARGET)
    venv.EnvBuilder(with_pip=True).create(TARGET)
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", "-r", str(REQUIREMENTS)], check=True)
    print(f"created {TARGET}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
