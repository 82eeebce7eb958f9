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

:func:`limit_malloc_arenas` caps glibc's arenas. glibc gives each new thread a heap of its own
up to 8 per core, and Lance's builders run on many threads: memory a thread freed in the middle
of its arena stays with the process even after ``malloc_trim``. One cycle of a publish's index
builds on a 400,000-row table, in a fresh process (152 MB at the start), measured in isolation:

    arenas       text index   vector index   recall check   after the cycle
    default      peak 299     peak 462       peak 534       480 MB
    4            peak 298     peak 400       peak 438       324 MB
    2            peak 294     peak 357       peak 410       286 MB
    1            peak 280     peak 328       peak 422       269 MB

(build times within their run-to-run spread). A run's process therefore keeps 2 arenas
(``execution.malloc_arenas``).

:func:`fix_mmap_threshold` stops glibc's sliding mmap threshold. glibc maps a block of 128 KiB
or more on its own, but each such block freed raises the threshold to its size (up to 32 MiB),
so once Lance's large buffers have come and gone the next ones are carved from the arena
heaps, where small blocks that outlive them in between can keep pages resident that
``malloc_trim`` cannot hand back. A run's process keeps the threshold at 4 MiB
(``execution.mmap_threshold``). The publish step alone on the staged rows of 100,000 documents
(400,005 rows), each in a fresh process: peak 597 / 600 MB with the sliding threshold, 551 MB
with 4 MiB and 532 / 549 MB with 1 MiB, the floor between vector segments 445 against 419-429
MB; the step took 130 s against 140 s (4 MiB) and 133 s (1 MiB).

:func:`use_arrow_pool` moves pyarrow's allocations to the C heap. Its default pool, mimalloc,
keeps what Arrow's reader threads freed in those threads' heaps, which ``release_unused`` (run
on the calling thread) does not reach. Publishing 400,000 staged rows (no index builds) in a
fresh process at 183-191 MB, 2 arenas either way:

    Arrow's pool   staged-row check: peak, after release   append: peak, after release
    mimalloc       358-382, 300-342 MB                     642-668, 449-535 MB
    jemalloc       288, 290 MB                             527, 462 MB
    system         319, 256-262 MB                         479, 347-390 MB

with the check and the append no slower (2.9 s and 6.4 s against 3.4 s and 9.9 s). A run's
process therefore allocates Arrow memory from the C heap (``execution.arrow_pool``).

That switch reaches only what pyarrow allocates itself. Arrow C++ code handed no pool (the
Parquet reader's page buffers, I/O, Acero's group-by) takes the C++ default pool, which pyarrow
chooses once, when it loads, from ``ARROW_DEFAULT_MEMORY_POOL`` (stop 54, on the staged rows of
100,000 documents): with this function alone the staged-row check peaked at 390-415 MB and kept
310-336 MB after release, 78-83 MB of it in mimalloc's reserved region; with the variable set to
``system`` before pyarrow loads, 325 and 245 MB. Whole runs with the variable: peaks 384-399
against 462 MB at 10,000 documents and 598-613 against 688 MB at 100,000, but Acero's group-bys
on the C heap made a 10,000-document no-op that re-hashes 5,800 files 0.477 s against 0.424 s
(6 alternated pairs; the manifest fold 59 against 40 ms). It is the operator's choice
(README, *Configuration*); the default keeps the faster no-op.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import logging
import os
import sys
from typing import Any

from tessera.config_execution import ARROW_POOLS, MMAP_THRESHOLD_MAX


def _libc() -> Any | None:
    if not sys.platform.startswith("linux"):
        return None
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
    except OSError:
        return None
    return libc if hasattr(libc, "malloc_trim") else None  # musl has none


_LIBC = _libc()
M_ARENA_MAX = -8  # glibc's mallopt parameters (malloc.h)
M_MMAP_THRESHOLD = -3
log = logging.getLogger(__name__)


def use_arrow_pool(name: str) -> bool:
    """Make ``name`` pyarrow's pool for the rest of the process; whether it changed. "system"
    is the C heap (``malloc_trim`` hands its freed memory back), "default" keeps pyarrow's
    choice, and so does an ``ARROW_DEFAULT_MEMORY_POOL`` set in the environment (the
    operator's choice wins). Buffers already allocated go back to the pool that made them."""
    if name not in ARROW_POOLS:
        raise ValueError(f"unknown Arrow memory pool {name!r}, expected one of {ARROW_POOLS}")
    if name == "default" or "ARROW_DEFAULT_MEMORY_POOL" in os.environ:
        return False
    import pyarrow as pa

    if pa.default_memory_pool().backend_name == name:
        return False
    pa.set_memory_pool(pa.system_memory_pool())
    return True


def limit_malloc_arenas(arenas: int) -> bool:
    """Let the process's threads share at most ``arenas`` glibc heaps from now on; whether the
    limit was set. 0 leaves the C library's default, and so does a ``MALLOC_ARENA_MAX`` set in
    the environment (glibc has read it; the operator's choice wins). glibc fixes its limit the
    first time a ninth arena is wanted, so a call before a process's threads multiply caps
    them all; a later one still stops new arenas. No effect off glibc."""
    operator = "MALLOC_ARENA_MAX" in os.environ
    return _mallopt(M_ARENA_MAX, "M_ARENA_MAX", arenas, operator, "its default arenas")


def fix_mmap_threshold(nbytes: int) -> bool:
    """Serve every C-heap block of at least ``nbytes`` from a mapping of its own, unmapped when
    it is freed; whether the threshold was set. 0 leaves glibc's sliding threshold, and so does
    a threshold the operator set in the environment (``MALLOC_MMAP_THRESHOLD_`` or the
    ``glibc.malloc.mmap_threshold`` tunable: glibc has read it). No effect off glibc.

    glibc starts at 128 KiB and raises the threshold to the size of each mapped block that is
    freed (up to 32 MiB), so after the first large buffers the next ones come from the arena
    heaps, where long-lived small blocks in between can keep their pages resident through
    ``malloc_trim``. A fixed threshold keeps large buffers out of the heaps for good."""
    if not 0 <= nbytes <= MMAP_THRESHOLD_MAX:
        raise ValueError(f"mmap threshold {nbytes} is outside 0 to glibc's limit of {MMAP_THRESHOLD_MAX}")
    operator = "MALLOC_MMAP_THRESHOLD_" in os.environ or "glibc.malloc.mmap_threshold" in os.environ.get(
        "GLIBC_TUNABLES", ""
    )
    return _mallopt(M_MMAP_THRESHOLD, "M_MMAP_THRESHOLD", nbytes, operator, "its sliding threshold")


def _mallopt(param: int, name: str, value: int, operator: bool, otherwise: str) -> bool:
    """``mallopt(param, value)``; whether it was set. Nothing for a value of 0 or less, off
    glibc, or when the operator set the parameter in the environment (glibc has read it)."""
    if value <= 0 or operator or _LIBC is None or not hasattr(_LIBC, "mallopt"):
        return False
    done = bool(_LIBC.mallopt(param, value))
    if not done:
        log.warning("mallopt(%s, %d) refused: the C heap keeps %s", name, value, otherwise)
    return done


def release_memory() -> None:
    """Return the freed memory of Arrow's pool and of the C heap to the operating system (where
    the platform can). No garbage collection: refcounting has already freed what a step
    dropped, and a full collection in a long-lived process with a large heap (a test session,
    an in-process Dagster run) cost seconds per call, 6 calls per run."""
    import pyarrow as pa

    pa.default_memory_pool().release_unused()
    if _LIBC is not None:
        _LIBC.malloc_trim(0)
