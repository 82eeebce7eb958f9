"""How many segments of each text and scalar index a publish's fold merges, and the rows
outside an index's base (the vector index's: :func:`vector_base`).

An index folds a publish's rows in as a delta segment, or merges them with its newest segments
(Lance ``optimize_indices``, ``num_indices_to_merge``: the newest n). Queries pay for every
segment, the full-text index most: on the 100k-chunk benchmark an unfiltered BM25 top 160 of
three words took 2.0 ms with one segment, 3.1-3.4 ms with two and 3.9-4.4 ms with three (base
and two 400-row deltas), about 1 ms a segment for three words and 2 ms for eight, whatever the
delta's size. So a text or scalar index keeps at most two segments, its base and one delta: a
publish's rows join the delta, and the delta joins the base once it holds more than
``DELTA_SHARE`` of the table. A rewrite of the base comes once per that share of new rows, and
a rewrite of the delta costs at most that share of the base's. All of them fold in one commit:
on a 40,000-row table six 400-row publishes took 0.06-0.10 s each (the delta growing) and
0.28-0.35 s for the merge into one at the sixth, where a cap of 4 segments took 0.035-0.05 s
a delta and 0.31-0.38 s for its merge every third publish. The vector index keeps its own cap
(``tessera.store.indexes``).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

DELTA_SHARE = 0.05
"""The share of the table's rows outside an index's base (its delta and the rows it lacks)
above which a fold merges every segment into one."""


def fragment_rows(ds: Any) -> dict[int, int]:
    """Live rows of each data file (fragment id -> rows) of the Lance dataset ``ds``, in table
    order."""
    return {f.fragment_id: int(f.count_rows()) for f in ds.get_fragments()}


def outside_largest(table: Any, name: str) -> int:
    """Rows outside the index's largest segment (its base: the build or the last merge into
    one), by the fragments each segment covers; rows no segment covers count too."""
    return _outside(table, [name])[name]


def vector_base(table: Any, name: str) -> tuple[int, int]:
    """(segments in its base, rows outside them) of the vector index ``name``. Its base is
    what a build committed (``tessera.store.vector_build``: one segment or several, all
    updated at the build's dataset version); every delta a publish or a merge of deltas wrote
    is newer. Rows outside the base: the deltas' and those no segment covers."""
    ds = table.to_lance()
    per_fragment = fragment_rows(ds)
    for desc in ds.describe_indices():
        if desc.name == name:
            first = min(s.dataset_version_at_last_update for s in desc.segments)
            base = [s for s in desc.segments if s.dataset_version_at_last_update == first]
            covered = set().union(*(set(s.fragment_ids) for s in base))
            return len(base), sum(per_fragment.values()) - sum(per_fragment.get(i, 0) for i in covered)
    return 0, sum(per_fragment.values())


def _outside(table: Any, names: list[str]) -> dict[str, int]:
    ds = table.to_lance()
    per_fragment = fragment_rows(ds)
    total = sum(per_fragment.values())
    out: dict[str, int] = {}
    for desc in ds.describe_indices():
        if desc.name in names:
            base = max(sum(per_fragment.get(i, 0) for i in s.fragment_ids) for s in desc.segments)
            out[desc.name] = total - base
    return out


def fold_merges(table: Any, segments: Mapping[str, tuple[int, int]], rows: int) -> dict[str, int]:
    """``num_indices_to_merge`` per index for folding the rows each lacks, from ``segments``
    (index name -> (its segments, its unindexed rows)): every segment (one again) when the
    rows outside its base pass ``DELTA_SHARE`` of ``rows``; else its deltas, so the new rows
    join its delta (or, beside a lone base, become it: 0). A lone base's outside rows are its
    unindexed rows, so the fragments are read only for indexes that have a delta."""
    with_delta = [name for name, (count, _) in segments.items() if count > 1]
    outside = _outside(table, with_delta) if with_delta else {}
    merges: dict[str, int] = {}
    for name, (count, unindexed) in segments.items():
        beyond = outside[name] if count > 1 else unindexed
        merges[name] = count if beyond > DELTA_SHARE * rows else count - 1
    return merges
