"""Handing memory that a finished phase freed back to the operating system.

Freed memory otherwise stays in the process: Arrow's allocator (mimalloc) keeps its pages for
reuse, and glibc keeps freed heap, Python's and Lance's alike (Lance allocates through it),
until the top of its arena is free. A run's steps then each started from the previous step's
high-water mark, so its peak was closer to the sum of what the steps used than to the largest
of them. Measured on a 100,000-document run (400,000 chunks): releasing after the chunk step
took the process from 502 to 343 MB, after the embed step from 661 to 449 MB, and after the
append, before the indexes are built, from 1,017 to 652 MB.

:func:`release_memory` asks Arrow's pool to release unused memory and, on glibc, calls
``malloc_trim(0)``. It is called between the steps of a run and between a publish's commit and
its index builds, and after each index phase (each on a connection of its own). It runs no
garbage collection (see the function). The step figures above were measured with a collection
in each call; the whole run's peak was measured again without one: 1,090 MB at 100,000
documents, 572 MB at 10,000 (the latest figures are in ``bench/results/memory_scaling.json``).
"""

from __future__ import annotations

import ctypes
import ctypes.util
import sys
from typing import Any


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None  # musl has none


_LIBC = _libc()


def release_memory() -> None:
    """Return the freed memory of Arrow's pool and of the C heap to the operating system (where
    the platform can). No garbage collection: refcounting has already freed what a step
    dropped, and a full collection in a long-lived process with a large heap (a test session,
    an in-process Dagster run) cost seconds per call, 6 calls per run."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
