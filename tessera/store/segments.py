"""How many segments of an index a publish's fold merges, and the rows outside an index's base.

An index folds a publish's rows in as a delta segment, or merges them with its newest segments
(Lance ``optimize_indices``, ``num_indices_to_merge``: the newest n). Queries pay for every
segment, the full-text index most: on the 100k-chunk benchmark an unfiltered BM25 top 160 of
three words took 2.0 ms with one segment, 3.1-3.4 ms with two and 3.9-4.4 ms with three (base
and two 400-row deltas), about 1 ms a segment for three words and 2 ms for eight, whatever the
delta's size. So the full-text index keeps at most two segments, its base and one delta: a
publish's rows join the delta (merging two deltas of 400 rows took 0.04 s), and the delta joins
the base once it holds more than ``TEXT_DELTA_SHARE`` of the table, so a rewrite of the base
comes once per that share of new rows, and a rewrite of the delta costs at most that share of
the base's. The scalar indexes (each asked once per table version and claims, for a mask) and
the vector index keep their own caps (``tessera.store.indexes``).
"""

from __future__ import annotations

from typing import Any

TEXT_DELTA_SHARE = 0.05
"""The share of the table's rows outside the full-text index's base (its delta and the rows it
lacks) above which a fold merges every segment into one."""


def outside_largest(table: Any, name: str) -> int:
    """Rows outside the index's largest segment (its base: the build or the last merge into
    one), by the fragments each segment covers; rows no segment covers count too."""
    ds = table.to_lance()
    per_fragment: dict[int, int] = {f.fragment_id: int(f.count_rows()) for f in ds.get_fragments()}
    segments = next(d for d in ds.describe_indices() if d.name == name).segments
    base = max(sum(per_fragment.get(i, 0) for i in s.fragment_ids) for s in segments)
    return sum(per_fragment.values()) - base


def text_merge(table: Any, name: str, segments: int, rows: int) -> int:
    """``num_indices_to_merge`` for folding new rows into the full-text index ``name`` of
    ``segments`` segments: every segment (one again) when the rows outside the base, the new
    ones included, pass ``TEXT_DELTA_SHARE`` of ``rows``; else the deltas, so the new rows
    join the delta (or, beside a lone base, become it: 0)."""
    if outside_largest(table, name) > TEXT_DELTA_SHARE * rows:
        return segments
    return segments - 1
