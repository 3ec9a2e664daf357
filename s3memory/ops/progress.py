"""How a long operator operation reports its progress: a small interface the library calls and the
command line draws (with tqdm); the library never draws anything itself."""

from __future__ import annotations

from typing import Protocol


class Progress(Protocol):
    """Told how much work there is, when known, and as each part is done."""

    def expect(self, total: int) -> None:
        """There are ``total`` parts in all."""

    def advance(self, count: int = 1) -> None:
        """``count`` more parts are done."""


class Silent:
    """Progress that nobody watches."""

    def expect(self, total: int) -> None:
        """Nothing to show."""

    def advance(self, count: int = 1) -> None:
        """Nothing to show."""


SILENT: Progress = Silent()
