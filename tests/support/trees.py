"""Directory trees for tests of the listing, built as a listing builds them (``Tree.add_file``,
``Tree.add_directory``) from the files and common prefixes it would find."""

from __future__ import annotations

from collections.abc import Iterable

from s3memory.core.listing import Tree


def tree_from(files: Iterable[tuple[tuple[str, ...], int]], directories: Iterable[tuple[str, ...]]) -> Tree:
    """The tree of ``files`` (segments below the listed directory, and a size) and ``directories``
    (common prefixes, one or two segments deep)."""
    tree = Tree()
    for relative, size in files:
        tree.add_file(relative, size)
    for relative in directories:
        tree.add_directory(relative)
    return tree
