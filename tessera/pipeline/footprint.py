"""What a step did to its process's memory, reported with the step.

A run's peak memory is set by one of its steps, and which one moves with the corpus: on the
generated benchmark corpus the publish sets it at both 10,000 and 100,000 documents, at 100,000
in one of three rises of about the same height (``bench/HISTORY.md``, stop 62). Each step's
summary therefore carries a ``memory`` entry (:class:`Footprint`): the process's peak RSS when
the step ended, how much the step raised it (0 when an earlier step had set it higher), and
what was resident at the end. The same is logged at DEBUG, and :func:`peak_step` names the
step that set a run's peak (``make run`` prints it when a tenant is done):

    acme publish: peak RSS 582 MB (raised by 97 MB in this step), 410 MB resident at its end

The peak is the kernel's high-water mark of the process's memory, which never falls: a process
that runs several steps (the CLI's ``run_tenant``, Dagster's in-process executor) learns which
step raised it; a process per step (Dagster's multiprocess executor) learns each step's own.
"""

from __future__ import annotations

import os
import resource
from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any, TypeVar

from tessera.pipeline.progress import log as progress_log

T = TypeVar("T")
STATUS = Path("/proc/self/status")
_HIGHEST: dict[int, float] = {}
"""The highest peak read, by process id (a forked child reads its own; see :func:`peak_rss_mb`)."""


def peak_rss_mb() -> float:
    """This process's peak resident memory so far: the kernel's high-water mark of its memory
    (``VmHWM``), else ``ru_maxrss``, never lower than a peak read before.

    Linux keeps ``ru_maxrss`` across ``exec``, and a forked child starts from its parent's
    resident size: a child of the test run, holding 96 MB, reported the test run's size and no
    rise; ``VmHWM`` is the process's own. The kernel updates its mark lazily (a read adds the
    resident size at that moment, which is not kept): two reads 0.1 MB apart went down."""
    hwm_kb = _status_kb("VmHWM")
    peak = (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss if hwm_kb is None else hwm_kb) / 1024.0
    pid = os.getpid()
    _HIGHEST[pid] = max(_HIGHEST.get(pid, 0.0), peak)
    return _HIGHEST[pid]


def _status_kb(field: str) -> int | None:
    """A ``kB`` field of ``/proc/self/status`` (None without ``/proc``)."""
    try:
        text = STATUS.read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return None


def resident_mb() -> float | None:
    """Resident memory now (None without ``/proc`` to say)."""
    rss_kb = _status_kb("VmRSS")
    return None if rss_kb is None else rss_kb / 1024.0


@dataclass(frozen=True)
class Footprint:
    """A step's mark on its process's memory, in MB."""

    peak_rss_mb: float
    raised_peak_mb: float
    rss_mb: float | None

    def as_dict(self) -> dict[str, float | None]:
        return {k: (None if v is None else round(v, 1)) for k, v in asdict(self).items()}


def with_footprint(tenant: str, name: str, work: Callable[[], T]) -> tuple[T, Footprint]:
    """``work()``'s result and its :class:`Footprint`, logged."""
    before = peak_rss_mb()
    result = work()
    peak = peak_rss_mb()
    footprint = Footprint(peak, max(0.0, peak - before), resident_mb())
    _log_footprint(tenant, name, footprint)
    return result, footprint


def measured(tenant: str, name: str, step: Callable[[], dict[str, Any]]) -> dict[str, Any]:
    """``step()``'s summary, a new dict with its :class:`Footprint` under ``memory``, logged."""
    summary, footprint = with_footprint(tenant, name, step)
    return {**summary, "memory": footprint.as_dict()}


def _log_footprint(tenant: str, name: str, f: Footprint) -> None:
    resident = "" if f.rss_mb is None else f", {f.rss_mb:.0f} MB resident at its end"
    progress_log.debug(
        "%s %s: peak RSS %.0f MB (raised by %.0f MB in this step)%s",
        tenant, name, f.peak_rss_mb, f.raised_peak_mb, resident,
    )  # fmt: skip


SAME_PEAK_MB = 1.0
"""Later steps that raised the peak by less than this in all did not set it (the kernel's mark
moves by a fraction of a MB without a step holding more)."""


def peak_step(memory: Mapping[str, Mapping[str, Any]]) -> tuple[str, float] | None:
    """Of the steps' ``memory`` entries of one process's run, in the order they ran: the step
    that set the run's peak (the first to end within :data:`SAME_PEAK_MB` of it), and the peak;
    None when no step raised it (the process had peaked before the run)."""
    if not memory or not any(m["raised_peak_mb"] > 0 for m in memory.values()):
        return None
    peak = max(float(m["peak_rss_mb"]) for m in memory.values())
    name = next(n for n, m in memory.items() if float(m["peak_rss_mb"]) >= peak - SAME_PEAK_MB)
    return name, peak
