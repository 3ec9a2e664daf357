"""Write the vector file of each case in ``cases.py`` that has none yet: ONLY for adding a new vector.

Never regenerate an existing vector: the files pin the bytes s3memory has written to storage, and
a vector that fails means the code no longer writes or reads what stores already hold. This script
never overwrites a file; to add a vector, add its case to ``cases.py`` and run, from the repository
root::

    PYTHONPATH=. python tests/vectors/generate.py
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from tests.vectors.cases import CASES

HERE = Path(__file__).parent


def main() -> int:
    for case in CASES:
        path = HERE / f"{case.name}.json"
        if path.exists():
            print(f"kept {path.name} (frozen)")
            continue
        vector = {"about": case.about, "inputs": case.inputs, "expected": case.seal(case.inputs)}
        path.write_text(json.dumps(vector, indent=2, sort_keys=True) + "\n", encoding="utf-8")
        print(f"wrote {path.name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
