"""How a tenant's parse and chunk steps run (``execution:``): in the step's own process, in a
local process pool, or on a Ray cluster. Every executor runs the same step code on the same
batches and returns results in input order, so the staged rows are identical whichever runs
them; the tenant still publishes in one commit, from the step's process."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields
from typing import Any

from tessera.config_values import boolean, check_keys, choice, integer, mapping, string

EXECUTORS = ("inline", "process", "ray")
ARROW_POOLS = ("system", "default")
MMAP_THRESHOLD_MAX = 32 << 20
"""The largest mmap threshold glibc accepts on a 64-bit system (half its 64 MiB arena heap)."""


@dataclass(frozen=True)
class ExecutionConfig:
    """``workers``: processes (or Ray tasks in flight); 0 means one per CPU core.
    ``min_documents``: below this many documents a step runs inline (a worker start costs
    more than it saves). ``batch_documents``: the most documents a task takes. ``batch_bytes``:
    the most source bytes a task takes (a larger document is a task of its own); 0: documents
    are counted only (see :func:`tessera.pipeline.executors.document_batches`).
    ``ray_address``: an existing cluster (``ray://host:10001`` or ``auto``); empty starts a
    local one. ``malloc_arenas``: the most C heaps (glibc malloc arenas) a run's process
    keeps; 0 leaves the C library's default (see :func:`tessera.store.memory.limit_malloc_arenas`).
    ``mmap_threshold``: the size in bytes from which a run's process maps each C-heap block on
    its own and unmaps it when freed; 0 leaves glibc's sliding threshold (see
    :func:`tessera.store.memory.fix_mmap_threshold`).
    ``arrow_pool``: where a run's process allocates Arrow memory, "system" (the C heap) or
    "default" (pyarrow's own choice; see :func:`tessera.store.memory.use_arrow_pool`).
    ``embed_during_chunk``: when the chunk step runs on workers, its own process embeds the
    staged texts meanwhile (see :mod:`tessera.pipeline.embed_ahead`); false leaves all
    embedding to the embed step."""

    executor: str = "process"
    workers: int = 0
    min_documents: int = 200
    batch_documents: int = 64
    batch_bytes: int = 131072
    ray_address: str = ""
    malloc_arenas: int = 2
    mmap_threshold: int = 4 << 20
    arrow_pool: str = "system"
    embed_during_chunk: bool = True


def parse_execution(data: Mapping[str, Any] | None, key: str = "execution") -> ExecutionConfig:
    m = mapping(data, key)
    check_keys(m, key, {f.name for f in fields(ExecutionConfig)})
    d = ExecutionConfig()
    return ExecutionConfig(
        executor=choice(m, "executor", key, d.executor, EXECUTORS),
        workers=integer(m, "workers", key, d.workers, 0, 1024),
        min_documents=integer(m, "min_documents", key, d.min_documents, 0, 10**9),
        batch_documents=integer(m, "batch_documents", key, d.batch_documents, 1, 100_000),
        batch_bytes=integer(m, "batch_bytes", key, d.batch_bytes, 0, 1 << 40),
        ray_address=string(m, "ray_address", key, d.ray_address),
        malloc_arenas=integer(m, "malloc_arenas", key, d.malloc_arenas, 0, 1024),
        mmap_threshold=integer(m, "mmap_threshold", key, d.mmap_threshold, 0, MMAP_THRESHOLD_MAX),
        arrow_pool=choice(m, "arrow_pool", key, d.arrow_pool, ARROW_POOLS),
        embed_during_chunk=boolean(m, "embed_during_chunk", key, d.embed_during_chunk),
    )
