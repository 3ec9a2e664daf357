"""Names that look alike: the confusable skeleton of Unicode TR39 (UTS #39, section 4), by which a name
in a user's own memory that could pass for a mount point's is found (``mounts.MountedMemory``).

Pure. The prototypes (``confusables.tsv``, derived from Unicode's ``confusables.txt``, Version 18.0.0,
by ``tools/confusables_table.py``) are read once per process, on first use: only where mounts are.
"""

from __future__ import annotations

import functools
import re
import unicodedata
from pathlib import Path

DEFAULT_IGNORABLE: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),
    (0x034F, 0x034F),
    (0x061C, 0x061C),
    (0x115F, 0x1160),
    (0x17B4, 0x17B5),
    (0x180B, 0x180F),
    (0x200B, 0x200F),
    (0x202A, 0x202E),
    (0x2060, 0x206F),
    (0x3164, 0x3164),
    (0xFE00, 0xFE0F),
    (0xFEFF, 0xFEFF),
    (0xFFA0, 0xFFA0),
    (0xFFF0, 0xFFF8),
    (0x1BCA0, 0x1BCA3),
    (0x1D173, 0x1D17A),
    (0xE0000, 0xE0FFF),
)
"""The code points of Default_Ignorable_Code_Point (DerivedCoreProperties.txt; the same from Unicode
15.0 to 17.0), as ranges: invisible where they are not supported, so the skeleton drops them, and
no name a command makes holds one (``paths.check_new_name``)."""

_IGNORABLE = re.compile("[" + "".join(f"{chr(low)}-{chr(high)}" for low, high in DEFAULT_IGNORABLE) + "]")
_TABLE = Path(__file__).with_name("confusables.tsv")


@functools.cache
def _prototypes() -> dict[str, str]:
    """Each character that has a prototype, and its prototype."""
    lines = _TABLE.read_text(encoding="utf-8").split("\n")
    return {line[0]: line[2:] for line in lines if line[1:2] == "\t"}


def skeleton(text: str) -> str:
    """TR39's ``skeleton(text)``: its NFD form without default-ignorable code points, each character
    replaced by its prototype, in NFD again. Two strings whose skeletons are equal look alike."""
    prototypes = _prototypes()
    decomposed = _IGNORABLE.sub("", unicodedata.normalize("NFD", text))
    return unicodedata.normalize("NFD", "".join(prototypes.get(char, char) for char in decomposed))


@functools.lru_cache(maxsize=4096)
def lookalike_key(name: str) -> str:
    """What names that look alike share: the skeleton of the name's NFKC form, without the white space
    at either end (after NFKC and the skeleton, every space is U+0020), which no one sees where a name
    ends. ``t\\u0435am`` (a Cyrillic e), ``te\\uff41m`` (a fullwidth a), ``team\\u00a0`` and ``te\\u200bam``
    share ``team``'s."""
    return skeleton(unicodedata.normalize("NFKC", name)).strip()
