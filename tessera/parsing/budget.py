"""Per-file budgets of the in-process parsers (Markdown, HTML): wall time and input size.

A parser that exceeds its budget raises a typed quarantine, never a crash:
``DocumentError(doc_id, "too_large", ...)`` before parsing when the file is over
``max_bytes``, ``DocumentError(doc_id, "timeout", ...)`` when parsing runs past
``wall_seconds``. The document keeps its published chunks; the run goes on.

Why in process and not in the sandbox child (:mod:`tessera.parsing.sandbox`, used for PDF and
code): both parsers are pure Python, so the only way they "hang" is a loop that runs too
long, and a loop can look at a clock. Measured on 2,000 Markdown files of 3 KB, the sandbox
round trip (request, JSON of the parsed document back, a parser built per request) cost
more than the parse itself (``bench/parse_linearity.py``, ``sandbox_overhead``), while a
clock check every :data:`CHECK_EVERY` steps costs nothing measurable. Native parsers, which
can crash or hang inside C, stay in the sandbox.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from tessera.errors import DocumentError

CHECK_EVERY = 256
"""Steps between two clock reads of :meth:`Deadline.tick`."""


@dataclass(frozen=True)
class ParseBudget:
    """What one file may cost a parser: seconds of wall time and bytes of input."""

    wall_seconds: float = 30.0
    max_bytes: int = 16 * 1024 * 1024

    def __post_init__(self) -> None:
        if not self.wall_seconds > 0:
            raise ValueError(f"wall_seconds must be > 0, got {self.wall_seconds}")
        if self.max_bytes < 1:
            raise ValueError(f"max_bytes must be >= 1, got {self.max_bytes}")


def check_size(doc_id: str, raw: bytes, budget: ParseBudget) -> None:
    """``too_large`` for a file over the budget, before any parsing."""
    if len(raw) > budget.max_bytes:
        raise DocumentError(doc_id, "too_large", f"{len(raw)} bytes > {budget.max_bytes}")


class Deadline:
    """The end of one file's parse. :meth:`tick` is cheap enough for an inner loop."""

    __slots__ = ("_left", "doc_id", "end", "seconds")

    def __init__(self, doc_id: str, seconds: float) -> None:
        self.doc_id = doc_id
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self._left = CHECK_EVERY

    def tick(self) -> None:
        """Count one step; every :data:`CHECK_EVERY` steps, :meth:`check` the clock."""
        self._left -= 1
        if self._left <= 0:
            self._left = CHECK_EVERY
            self.check()

    def check(self) -> None:
        if time.monotonic() > self.end:
            raise DocumentError(self.doc_id, "timeout", f"parsing took more than {self.seconds:g} s")
