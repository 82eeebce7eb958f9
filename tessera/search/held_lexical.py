"""A BM25 list under a held mask, from the unfiltered list: exact, or no answer.

Lance ranks a full-text query under a row allowlist more slowly than without one when the
allowlist admits a tenth of the table. On the 100k-chunk benchmark (a principal admitted to
9,749 rows, the hybrid list's top 160) a three-word query took 3.9 ms under the allowlist and
2.5 ms unfiltered 2,500 deep, 5.6 and 3.7 ms after six small publishes; eight words 5.2 / 3.3
and 6.9 / 5.0 ms; twenty words 5.9 / 4.8 ms, while 4,000 deep took 6.5 ms. BM25 statistics are
the index's, not the allowlist's: a row scores the same in both lists (checked on 200 queries,
every score equal).

So when a mask's rows are held (``tessera.search.flat``), its BM25 list is read unfiltered,
``OVERFETCH`` times as deep as the mask's share of the table suggests, and cut to the mask's
rows. That list is the mask's exact top when it is every row the query matches (shorter than
asked), or when at least ``depth`` of the mask's rows in it score above its last row by more
than ``TIE``: a row past the list scores no higher than that one, so every row tied with the
``depth``-th is in the list and kept, for the caller's cut to order by id (Lance's own top
under the allowlist cuts a tie wherever its index lists it). Otherwise there is no answer and
the caller asks Lance under the allowlist, as it does for masks whose share would need a list
deeper than ``MAX_DEPTH``. On the benchmark a three-word query matched about 2,400 rows: the
list is every one of them.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from tessera.search.flat import FlatSet
from tessera.search.fusion import TIE

OVERFETCH = 1.5
"""How many times deeper than the mask's share of the table needs the unfiltered list is read
(a mask of a tenth of the table and a top 160: 2,400 deep, where 240 of the mask's rows are
expected, 160 needed)."""
MAX_DEPTH = 3000
"""The deepest unfiltered list read: past it the unfiltered list cost more than the allowlist's."""


def held_top(ds: Any, fts: dict[str, Any], depth: int, held: FlatSet, table_rows: int) -> pa.Table | None:
    """``_score`` and ``_rowid`` of the ``depth`` best rows of ``held`` for the full-text query
    ``fts`` (and every row tied with the last of them), best first; None when the unfiltered
    list does not prove them."""
    share = held.rows.num_rows / max(table_rows, 1)
    if share <= 0 or depth <= 0:
        return None
    limit = math.ceil(OVERFETCH * depth / share)
    if limit > MAX_DEPTH:
        return None
    hits = ds.scanner(
        columns=["_score"],
        full_text_query=fts,
        with_row_id=True,
        limit=limit,
        disable_scoring_autoprojection=True,
    ).to_table()
    scores = np.asarray(hits.column("_score").to_numpy(zero_copy_only=False), np.float64)
    inside = held.holds(hits.column("_rowid").to_numpy())
    kept = scores[inside]
    if hits.num_rows >= limit:  # rows past the list score at most its last one
        floor = float(scores.min())
        if int(np.count_nonzero(kept > floor + TIE)) < depth:
            return None
    if len(kept) > depth:  # the best ``depth`` and every row tied with the last of them
        nth = float(np.sort(kept)[::-1][depth - 1])
        inside &= scores >= nth - TIE
    chosen = np.flatnonzero(inside)
    return hits.take(pa.array(chosen[np.argsort(-scores[chosen], kind="stable")], pa.int64()))
