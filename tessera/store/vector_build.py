"""Building a chunk table's vector index in segments of bounded size.

One IVF_HNSW_SQ build over a whole table holds memory that grows with the table (Lance's IVF
shuffle holds every row's partition, code and id). :func:`build_vector_index` builds one index
segment per group of consecutive data files of about ``SEGMENT_ROWS`` rows, each trained on
its own rows (``create_index_uncommitted`` over the group's fragments, ``partitions_for`` its
rows), the memory handed back between them, and commits them together as ONE index in one
commit. Files are written at most ``tessera.store.append.ROWS_PER_FILE`` rows (100,000), so a
first build's groups are its files; a table that is one large file (LanceDB's own ``add``)
is one segment. Measured in a fresh process with a run's settings (2 malloc arenas, Arrow on
the C heap), LanceDB's one build against these segments:

    vectors                 one build: anon peak, RSS peak, s    segments: anon, RSS, s
    200,000 x 384-d, 2 files     68 -> 568 MB, 671 MB, 88 s        68 -> 385 MB, 530 MB, 103 s
    400,000 x 64-d, 4 files      68 -> 258 MB, 366 MB, 130 s       68 -> 220 MB, 365 MB, 105 s

(the segments' RSS includes pylance's code, +41 MB, which a run has loaded for its append).
So the gain is with the model's 384-d vectors; at the benchmark's 64-d the build was not the
part that grew (in a 100,000-document run, 400,000 rows, each segment rose 35-50 MB over a
process holding 668 MB, whose floor crept to 727 MB by the last: the run's peak moved little).

What it costs queries: a search probes every segment. Each segment has ``partitions_for`` its
own rows (25,000 rows a partition), so up to ``NPROBES`` partitions a segment the graphs
searched are as many and as large as one build's; past that (a one-build table over 500,000
rows probes 20 of its partitions) the segments search more of them. On 400,000 64-d vectors
in 4 segments, 60 near-data queries (``ef`` 64, refine 2, Lance's default construction width,
another job running): recall@10 0.985 against 0.973 for one build, p50 25.8 against 21.1 ms.

The segments a build commits are the index's base; a publish's rows become deltas beside it
(``tessera.store.indexes``). The base is told from the deltas by the dataset version each
segment was last updated at: the build's segments share the build's, every delta is newer
(:func:`tessera.store.segments.vector_base`).
"""

from __future__ import annotations

import logging
import math
import uuid
from collections.abc import Sequence
from typing import Any

from tessera.store.memory import release_memory
from tessera.store.segments import fragment_rows

log = logging.getLogger(__name__)

VECTOR_INDEX = "vector_idx"
"""The vector index's name (LanceDB's default for the ``vector`` column, which older builds
used)."""
SEGMENT_ROWS = 100_000
"""A segment closes once its files hold this many rows; a last group of fewer than half of it
joins the group before."""
ROWS_PER_PARTITION = 25_000
"""Rows per IVF partition of the vector index (each partition is one HNSW graph). Every probed
partition is a graph search of its own: at 100,000 rows, 16 partitions of 6,250 rows (all of
them probed, ``NPROBES`` 20) cost 9.6 ms a prefiltered top 40, 4 partitions 6.2 ms, one 7.0 ms,
each at recall@40 1.0 against exact search (refine 2, ``ef`` 82). Larger graphs cost memory to
build: on 400,000 64-d vectors, 64 / 16 / 8 / 1 partitions built in 45 / 49 / 61 / 93 s at a
peak RSS of 406 / 428 / 512 / 1,122 MB. Lance's own default (2^20 rows a partition) is the
last of those; 25,000 keeps the build's memory and time where 6,250 had them."""
HNSW_M = 20
HNSW_EF_CONSTRUCTION = 300
"""HNSW's links per node and construction width: LanceDB's ``HnswSq`` defaults, which the
index was built with before the segments (Lance's own builder defaults to 150)."""


def partitions_for(rows: int) -> int:
    """IVF partitions of a vector index over ``rows`` rows: ``ROWS_PER_PARTITION`` each."""
    return max(1, math.ceil(rows / ROWS_PER_PARTITION))


def segment_groups(fragments: Sequence[tuple[int, int]], limit: int = SEGMENT_ROWS) -> list[list[int]]:
    """The fragment ids of each segment, from ``(fragment id, live rows)`` in table order:
    consecutive fragments, a group closed once it holds at least ``limit`` rows; a last group
    of fewer than ``limit / 2`` rows joins the one before. Fragments without live rows are
    left out (nothing of theirs can be searched)."""
    groups: list[list[int]] = []
    sizes: list[int] = []
    for fragment_id, rows in fragments:
        if rows <= 0:
            continue
        if not sizes or sizes[-1] >= limit:  # the open group is full: start the next
            groups.append([])
            sizes.append(0)
        groups[-1].append(fragment_id)
        sizes[-1] += rows
    if len(groups) > 1 and sizes[-1] < limit / 2:
        groups[-2].extend(groups.pop())
    return groups


def build_vector_index(table: Any) -> int:
    """Build the ``vector`` column's IVF_HNSW_SQ index of the LanceDB ``table`` in segments
    (:func:`segment_groups`), replacing any vector index it has, in one commit; the handle
    moves to that commit. Returns the segments built. A failed segment commits nothing."""
    ds = table.to_lance()
    rows = fragment_rows(ds)
    built = []
    for group in segment_groups(list(rows.items()), SEGMENT_ROWS):
        # a dataset of its own (the handle's version; a session without the last segment's
        # reads): over four 100,000-row segments a fresh process kept 107 MB after the build
        # against 137 MB on one dataset, its peak 358 against 365 MB (in a 100,000-document
        # run's probe the floor still crept from segment to segment: 679 -> 738 MB)
        ds = table.to_lance()
        built.append(
            ds.create_index_uncommitted(
                "vector",
                "IVF_HNSW_SQ",
                name=VECTOR_INDEX,
                metric="cosine",
                replace=True,
                num_partitions=partitions_for(sum(rows[f] for f in group)),
                fragment_ids=group,
                index_uuid=str(uuid.uuid4()),
                m=HNSW_M,
                ef_construction=HNSW_EF_CONSTRUCTION,
            )
        )
        release_memory()  # the next segment starts from what this one freed
    ds.commit_existing_index_segments(VECTOR_INDEX, "vector", built)
    table.checkout_latest()
    log.info("built vector index %s: %d segments over %d rows", VECTOR_INDEX, len(built), sum(rows.values()))
    return len(built)
