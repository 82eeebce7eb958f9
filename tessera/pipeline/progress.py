"""Progress of a run's long steps, as log lines on the ``tessera.progress`` logger (INFO).

A step reports what it has done (``add``) and the reporter logs, at most every
:data:`EVERY` seconds and once at the end, how far it is and how fast:

    acme parse: 12/19 documents, 8.1 documents/s
    acme parse: 19 documents in 2.3 s (8.2 documents/s)

Log lines rather than a progress bar (tqdm is installed): a run executes in Dagster, whose run
log keeps lines, not terminal redraws, as well as in CI and on terminals; ``make run`` prints
them, and Dagster captures the ``tessera`` loggers into each run's log.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Literal

LOGGER = "tessera.progress"
EVERY = 2.0
"""Seconds between two progress lines of one step."""

log = logging.getLogger(LOGGER)


class Progress:
    """One step of one tenant's run: ``add(n)`` as work completes, ``finish()`` at the end."""

    def __init__(
        self,
        tenant: str,
        stage: str,
        unit: str,
        total: int | None = None,
        every: float = EVERY,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self.tenant, self.stage, self.unit, self.total = tenant, stage, unit, total
        self.every, self.clock = every, clock
        self.done = 0
        self.start = self.last = clock()

    def add(self, n: int) -> None:
        self.done += n
        now = self.clock()
        if now - self.last >= self.every:
            self.last = now
            of = f"/{self.total}" if self.total is not None else ""
            log.info("%s %s: %d%s %s, %s", self.tenant, self.stage, self.done, of, self.unit, self._rate(now))

    def finish(self, note: str = "") -> None:
        """The step's last line: how much, how long, how fast, and ``note`` (e.g. cache hits);
        a step that had nothing to do says only that."""
        now = self.clock()
        extra = f"; {note}" if note else ""
        if self.done == 0:
            log.info("%s %s: nothing to do", self.tenant, self.stage)
            return
        log.info(
            "%s %s: %d %s in %.1f s (%s)%s",
            self.tenant, self.stage, self.done, self.unit, now - self.start, self._rate(now), extra,
        )  # fmt: skip

    def _rate(self, now: float) -> str:
        seconds = now - self.start
        return f"{self.done / seconds:.1f} {self.unit}/s" if seconds > 0 else f"- {self.unit}/s"


@contextmanager
def printing_progress(to: Literal["stdout", "stderr"] = "stderr", enabled: bool = True) -> Iterator[None]:
    """Print the progress lines on ``sys.stdout`` or ``sys.stderr`` (as they are when the
    block starts), indented, while the block runs; nothing when not ``enabled``. The handler
    goes with the block, so no stream outlives the command that printed to it."""
    if not enabled:
        yield
        return
    progress = logging.getLogger(LOGGER)
    handler = logging.StreamHandler(getattr(sys, to))
    handler.setFormatter(logging.Formatter("  %(message)s"))
    level = progress.level
    progress.setLevel(logging.INFO)
    progress.addHandler(handler)
    try:
        yield
    finally:
        progress.removeHandler(handler)
        progress.setLevel(level)
