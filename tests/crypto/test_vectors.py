"""Frozen test vectors (``tests/vectors/*.json``): the bytes s3memory writes to storage, fixed.

Each vector holds fixed inputs (keys, the random salts and nonces drawn, plaintexts) and the bytes
the code wrote from them when the vector was made. Today's code must read every vector back to its
inputs, and write exactly the same bytes again from them: a change to any byte of a format (a label,
a field, an order, an encoding) fails here before it reaches a store. ``tests/vectors/generate.py``
adds a vector for a new case; it never rewrites one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from s3memory.crypto import HEADER_BYTES, MAGIC, TAG_BYTES
from tests.vectors.cases import CASES, Case

VECTORS = Path(__file__).parents[1] / "vectors"
READABLE = [case for case in CASES if case.read is not None]


def stored(case: Case) -> dict[str, Any]:
    vector: dict[str, Any] = json.loads((VECTORS / f"{case.name}.json").read_text(encoding="utf-8"))
    return vector


def test_every_case_has_its_vector_and_every_vector_a_case() -> None:
    assert sorted(path.stem for path in VECTORS.glob("*.json")) == sorted(case.name for case in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_vector_keeps_the_inputs_it_was_made_from(case: Case) -> None:
    assert stored(case)["inputs"] == case.inputs


@pytest.mark.parametrize("case", READABLE, ids=lambda case: case.name)
def test_a_vector_reads_back_to_its_inputs(case: Case) -> None:
    vector = stored(case)
    assert case.read is not None and case.read_gives is not None
    assert case.read(vector["inputs"], vector["expected"]) == case.read_gives(vector["inputs"])


@pytest.mark.parametrize("case", CASES, ids=lambda case: case.name)
def test_a_vector_is_written_again_byte_for_byte(case: Case) -> None:
    vector = stored(case)
    assert case.seal(vector["inputs"]) == vector["expected"]


@pytest.mark.parametrize(("name", "format_byte"), [("format-1-file", 1), ("format-2-file", 2)])
def test_a_file_vector_has_the_documented_header(name: str, format_byte: int) -> None:
    """``docs/format.md``: magic, format, key version (u32), salt, commitment, nonce, ciphertext, tag."""
    vector = stored(next(case for case in CASES if case.name == name))
    inputs, body = vector["inputs"], bytes.fromhex(vector["expected"]["body"])
    salt, nonce = (bytes.fromhex(draw) for draw in inputs["draws"][:2])
    assert body[:9] == MAGIC + bytes([format_byte]) + inputs["master_version"].to_bytes(4, "big")
    assert body[9:41] == salt
    assert body[73:HEADER_BYTES] == nonce
    assert len(body) == HEADER_BYTES + len(bytes.fromhex(inputs["plaintext"])) + TAG_BYTES
