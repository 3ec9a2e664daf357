#!/usr/bin/env python3
"""Write ``s3memory/core/confusables.tsv``, the prototypes of the confusable skeleton (Unicode TR39,
section 4), from Unicode's ``confusables.txt`` (``tools/unicode/confusables.txt``).

    python tools/confusables_table.py

Unicode's file (760 kB, a line of comment for each mapping) takes 60 to 100 ms to parse; the table
(55 kB: for each character that has a prototype, the character, a tab and its prototype, one line
each) loads in about 5 ms, once per process and only where mounts are (``s3memory/core/confusables.py``).
It starts with the header of Unicode's file (its version, copyright and terms) and a line saying how
it was derived. tests/core/test_confusables.py checks that the table is the one this writes.
"""

from __future__ import annotations

import re
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
SOURCE = REPO_ROOT / "tools" / "unicode" / "confusables.txt"
TABLE = REPO_ROOT / "s3memory" / "core" / "confusables.tsv"
_MAPPING = re.compile(r"^([0-9A-F]{4,6}) ;\t([0-9A-F]{4,6}(?: [0-9A-F]{4,6})*) ;\tMA\t", re.MULTILINE)


def prototypes(source: str) -> dict[str, str]:
    """Each character ``confusables.txt`` maps, and its prototype."""
    return {
        chr(int(character, 16)): "".join(chr(int(code, 16)) for code in prototype.split())
        for character, prototype in _MAPPING.findall(source)
    }


def table(source: str) -> str:
    """The text of ``confusables.tsv`` for the text of ``confusables.txt``."""
    header = []
    for line in source.lstrip("\ufeff").split("\n"):
        if not line.startswith("#"):
            break
        header.append(line)
    header.append(
        "# Derived by tools/confusables_table.py: for each character that has a prototype, the character,"
    )
    header.append(
        "# a tab and its prototype, a line each. Licence: confusables-license.txt beside this file."
    )
    mapped = prototypes(source)
    if any(
        character in "\t\n" or "\t" in prototype or "\n" in prototype
        for character, prototype in mapped.items()
    ):
        raise ValueError("a tab or a line feed is mapped: the table cannot hold it")
    return (
        "\n".join([*header, *(f"{character}\t{prototype}" for character, prototype in mapped.items())]) + "\n"
    )


def main() -> None:
    TABLE.write_text(table(SOURCE.read_text(encoding="utf-8")), encoding="utf-8", newline="\n")


if __name__ == "__main__":
    main()
