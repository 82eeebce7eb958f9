"""Duplicate marks on staged chunk batches, column by column.

The chunk step stages each worker's chunks as they come (duplicate columns empty), decides
the duplicates over the whole run, then streams the staged batches once more to set each
row's ``dup_group`` and ``dup_bands`` and to flag the near duplicates. That second pass works
on the Arrow columns: the rows are not turned back into :class:`~tessera.types.Chunk`
objects and built again (what it did), which cost the step's own process, the one every
worker waits on, about as much Python work as writing the chunks in the first place.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

import pyarrow as pa
import pyarrow.compute as pc

from tessera.chunking.base import flag_name
from tessera.errors import InternalError

Outcome = tuple[str, bool, Sequence[str]]
"""``(dup_group, near duplicate, band keys)`` of one staged chunk (``ColumnReport.outcome``)."""


def marked(batch: pa.RecordBatch, outcomes: Sequence[Outcome], mark: Sequence[str]) -> pa.RecordBatch:
    """``batch`` with row ``i``'s group and band keys from ``outcomes[i]``, and the flags in
    ``mark`` added (each once, after the chunk's own) to every near duplicate's flags."""
    if len(outcomes) != batch.num_rows:
        raise InternalError(f"{len(outcomes)} duplicate outcomes for a batch of {batch.num_rows} chunks")
    names = batch.schema.names
    cols = {name: batch.column(name) for name in names}
    cols["dup_group"] = pa.array([g for g, _, _ in outcomes], pa.string())
    cols["dup_bands"] = pa.array([list(b) for _, _, b in outcomes], pa.list_(pa.string()))
    near = [i for i, (_, is_near, _) in enumerate(outcomes) if is_near]
    if near:
        flags = cols["flags"].to_pylist()
        for i in near:
            flags[i] = list(dict.fromkeys([*(flags[i] or ()), *mark]))
        cols["flags"] = pa.array(flags, pa.list_(pa.string()))
    return pa.RecordBatch.from_arrays([cols[n] for n in names], schema=batch.schema)


def flag_counts(batch: pa.RecordBatch) -> Counter[str]:
    """Chunks per flag name in ``batch``: ``rows:3-9`` and ``part:2/5`` count by their name."""
    counts: Counter[str] = Counter()
    flat = pc.list_flatten(batch.column("flags"))
    if len(flat):
        for item in pc.value_counts(flat).to_pylist():
            counts[flag_name(str(item["values"]))] += int(item["counts"])
    return counts
