"""Secondary indexes of a chunk table, created or refreshed at publish.

FTS (BM25) on ``embedding_text`` for lexical and hybrid search; LABEL_LIST on ``readers`` and
``groups`` and BTREE on the effective-date and document columns for the prefilters, BTREE on
``dup_group`` for the query that finds a hit's copies (a scan of the column cost ~60 ms on
100k chunks, the lookup ~1 ms); an
IVF_HNSW_SQ vector index once the table is large enough, built in segments of bounded size
(``tessera.store.vector_build``: its base), kept only if its recall@10 against exact
search on sampled queries is at least 0.95. Index builds are commits of their own; publish
tags the version that has them.

A publish pays for its change, not for the table: rows it adds are folded into the existing
indexes (Lance ``optimize_indices``), each as a delta segment of its own: the FTS and scalar
indexes index only the new rows (BM25 statistics stay global: a row scores the same in a delta
as merged), the vector index assigns them to its trained partitions, no retraining. Merging
the new rows into the FTS index instead rewrote it: 0.17 s of a 1 % change's publish at 40,000
rows, against 0.04 s for all seven text and scalar deltas. Lance's default for the vector
index merged the first new rows into the trained segment, rewriting the whole HNSW graph:
20.6 s for 400 rows at 100,000 (then 0.03 s as a delta). A vector index with
``MAX_VECTOR_SEGMENTS`` segments (its base counted as one) merges its deltas with the next
publish's rows, never the trained base (0.46 s for six deltas at 100,000 rows); a text or
scalar index keeps at most its base and one delta, which every publish's rows join, and
merges into one when the delta outgrows 5 % of the table (``tessera.store.segments``: each
full-text segment cost a BM25 query about 1 ms; the seven merged at once took 0.29 s at
40,000 rows). So queries never search more than that many. An index is built from scratch
only when it is missing, when more than ``REBUILD_FRACTION`` of the rows are outside it, or,
for the vector index, outside its trained base (its partitions no longer describe the
table). Either way no row is left unindexed, which is what ``tessera doctor`` checks.
"""

from __future__ import annotations

import logging
import math
from typing import Any

import numpy as np
import pyarrow as pa

from tessera.errors import PublishError
from tessera.store.index_builds import create_beside_text
from tessera.store.memory import release_memory
from tessera.store.segments import fold_merges, vector_base
from tessera.store.vector_build import ROWS_PER_PARTITION as ROWS_PER_PARTITION  # re-exported
from tessera.store.vector_build import VECTOR_INDEX, build_vector_index
from tessera.store.vector_build import partitions_for as partitions_for  # re-exported

log = logging.getLogger(__name__)

VECTOR_INDEX_MIN_ROWS = 50_000
RECALL_TARGET = 0.95
NPROBES = 20
REFINE = 2
EF = 64
EF_ROWS = 100_000
"""Query-time settings of the vector index (``tuned``, ``nearest``); the recall check uses the
same ones. Measured on the 100k-chunk benchmark against exact search: refine 5 (no ``ef``) gave
recall@5 0.987 on near-data queries and 1.0 under the ACL prefilter at depth 40, at 41 ms a
prefiltered query; refine 2 with HNSW ``ef`` 64 (at least ``2 * limit``) 1.0 and 1.0 at ~31 ms
and 1.0 on the publish check's self-queries; refine 1 only 0.94 on those (SQ-quantized order,
too few candidates re-ranked) and without ``ef`` 0.80 at recall@5 (HNSW searched ``k`` wide).

Past ``EF_ROWS`` rows the HNSW width grows with the square root of the table (:func:`ef_for`).
At 1,000,000 rows (160 partitions) ``ef`` 64 gave recall@10 0.76 on near-data queries, and
probing more partitions did not help (0.76 with all 160); ``ef`` 128 / 192 / 256 / 384 gave
0.93 / 0.97 / 0.985 / 1.0 (40 queries, nprobes 20, refine 2), each at 14-23 ms a query."""


def ef_for(rows: int, limit: int) -> int:
    """The HNSW search width for a table of ``rows`` rows and a top ``limit``: ``EF`` up to
    ``EF_ROWS`` rows, then ``EF * sqrt(rows / EF_ROWS)`` (203 at 1M); never below the
    ``limit * REFINE`` candidates HNSW must return."""
    grown = math.ceil(EF * math.sqrt(max(rows, 0) / EF_ROWS)) if rows > EF_ROWS else EF
    return max(grown, limit * REFINE)


REBUILD_FRACTION = 0.25
"""Above this fraction of unindexed rows an index is rebuilt rather than updated."""
MAX_VECTOR_SEGMENTS = 4
"""A vector index with this many segments, counting its base (the build's segments) as one,
merges its deltas into one.
Deltas cost queries: on the 100,000-row benchmark hybrid p50 was 26.3 ms fresh and 31.5-33.3
ms after six small publishes (three or four segments per index); 35.0 ms after seven with a
cap of 8."""
SCALAR = {
    "readers": "label_list",
    "groups": "label_list",
    "effective_from_us": "btree",
    "effective_to_us": "btree",
    "doc_id": "btree",
    "dup_group": "btree",
}
OPTIONAL = frozenset({"dup_group"})
"""Indexed only where the table has the column (search needs it, bare test tables lack it)."""


def index_state(table: Any) -> dict[str, tuple[str, int]]:
    """column -> (index type, unindexed rows)."""
    return {column: (kind, unindexed) for column, (_, kind, unindexed, _) in _indexes(table).items()}


def _indexes(table: Any) -> dict[str, tuple[str, str, int, int]]:
    """column -> (index name, index type, unindexed rows, segments)."""
    state: dict[str, tuple[str, str, int, int]] = {}
    for idx in table.list_indices():
        stats = table.index_stats(idx.name)
        unindexed = int(getattr(stats, "num_unindexed_rows", 0) or 0)
        segments = int(getattr(stats, "num_indices", 1) or 1)
        state[idx.columns[0]] = (idx.name, str(idx.index_type), unindexed, segments)
    return state


def _needs_rebuild(unindexed: int, rows: int) -> bool:
    return unindexed > REBUILD_FRACTION * rows


def ensure_indexes(
    table: Any, vector_min_rows: int = VECTOR_INDEX_MIN_ROWS, check_recall: bool = True
) -> dict[str, str]:
    """Create missing indexes, update stale ones with the rows they lack (rebuild them when
    too much is missing); returns what was done per column ("created", "updated", "rebuilt").

    A vector index built here has its recall checked (:func:`check_vector_index`) unless
    ``check_recall`` is false: then its entry is ``UNCHECKED`` and the caller must check it."""
    rows = int(table.count_rows())
    done: dict[str, str] = {}
    if rows == 0:
        return done
    state = _indexes(table)
    names = set(table.schema.names)
    wanted = {c: k for c, k in {"embedding_text": "fts", **SCALAR}.items() if c in names or c not in OPTIONAL}
    stale: dict[str, tuple[int, int]] = {}  # index name -> (segments, unindexed rows)
    try:
        creates: list[tuple[str, str]] = []
        for column, kind in wanted.items():
            current = state.get(column)
            if current is None or _needs_rebuild(current[2], rows):
                creates.append((column, kind))
                done[column] = "created" if current is None else "rebuilt"
            elif current[2] > 0:
                stale[current[0]] = (current[3], current[2])
                done[column] = "updated"
        create_beside_text(table, creates, rows)
        by_merge: dict[int, list[str]] = {}
        for name, merge in fold_merges(table, stale, rows).items():
            by_merge.setdefault(merge, []).append(name)
        for merge, group in sorted(by_merge.items()):  # one commit, unless the indexes differ
            _fold(table, sorted(group), num_indices_to_merge=merge)
        if rows >= vector_min_rows:
            current = state.get("vector")
            base, outside = vector_base(table, current[0]) if current is not None else (0, rows)
            if current is None or _needs_rebuild(current[2], rows) or _needs_rebuild(outside, rows):
                done["vector"] = _vector_index(table, rows, check_recall)
            elif current[2] > 0:
                deltas = current[3] - base
                merge = deltas if 1 + deltas >= MAX_VECTOR_SEGMENTS else 0
                _fold(table, [current[0]], num_indices_to_merge=merge)
                done["vector"] = "updated"
    except PublishError:
        raise
    except Exception as e:
        raise PublishError(f"building indexes failed: {e}") from e
    return done


def merge_segments(table: Any) -> dict[str, int]:
    """Merge the text and scalar indexes' delta segments into one each, and the vector index's
    deltas into one delta (maintenance): a query searches every segment of an index (on 100k
    chunks, the BM25 list after six publishes took ~5 ms more with 3 segments than with one;
    merging them took 0.45 s). The vector index keeps its trained base: merging into it
    rewrites its whole HNSW graph (20.6 s at 100k rows), where the deltas hold only the rows
    published since it was built. Returns the segments each merged index had."""
    state = _indexes(table)
    merged = {column: entry[3] for column, entry in state.items() if column != "vector" and entry[3] > 1}
    try:
        if merged:
            _fold(table, sorted(state[c][0] for c in merged), num_indices_to_merge=max(merged.values()))
        vector = state.get("vector")
        if vector is not None and (deltas := vector[3] - vector_base(table, vector[0])[0]) > 1:
            _fold(table, [vector[0]], num_indices_to_merge=deltas)
            merged["vector"] = vector[3]
    except Exception as e:
        raise PublishError(f"merging index segments failed: {e}") from e
    return merged


def _fold(table: Any, names: list[str], **options: int) -> None:
    """Add the rows the named indexes lack to them, in one commit, without rebuilding them
    (``num_indices_to_merge``: 0 for a delta segment, n to merge the last n segments too)."""
    table.to_lance().optimize.optimize_indices(index_names=names, **options)
    table.checkout_latest()  # the handle moves to the version that has the updated indexes


UNCHECKED = "built IVF_HNSW_SQ, recall not checked yet"


def _vector_index(table: Any, rows: int, check_recall: bool) -> str:
    # IVF_HNSW_SQ: on 100k clustered 384-d vectors it reached recall@10 1.0 at ~13 ms/query
    # (build 21 s); IVF_PQ reached 0.39 (nprobes 20, refine 5) and is not used. Built in
    # segments of bounded size (tessera.store.vector_build); ``rows`` is the table's.
    build_vector_index(table)
    return check_vector_index(table) if check_recall else UNCHECKED


def check_vector_index(table: Any) -> str:
    """Keep the vector index only if its recall@10 reaches ``RECALL_TARGET``; what was done."""
    try:
        recall = vector_recall(table)
        if recall < RECALL_TARGET:
            table.drop_index(VECTOR_INDEX)
            return f"dropped (recall@10 {recall:.3f} < {RECALL_TARGET})"
    except Exception as e:
        raise PublishError(f"building indexes failed: checking the vector index: {e}") from e
    return f"created IVF_HNSW_SQ (recall@10 {recall:.3f})"


def recheck_vector_index(table: Any) -> str | None:
    """The vector index's recall measured again after maintenance compacted the table, and the
    index rebuilt (then checked as a publish checks it) when it is under ``RECALL_TARGET``;
    what was done, None without a vector index.

    Maintenance used to end in lancedb's ``optimize`` index refresh, which merged every vector
    segment into one and rebuilt the HNSW graphs: on the 1,000,000-row benchmark table recall@10
    went from 0.96 to 0.73 / 0.745 unfiltered and 1.0 to 0.82 / 0.78 under a 10 % prefilter
    (two seeds of 20 near-data questions), where the index as built had passed its check at
    0.970; at 100,000 rows 0.984 to 0.966. (This was first put down to compaction's remap;
    compaction alone kept recall on a 102,400-row copy.) Maintenance no longer merges into
    the trained segment (``tessera.store.maintenance.compact``), and this check stays as the
    guard: Lance may change how it remaps. Rebuilding at 1M took 208 s."""
    if "vector" not in index_state(table):
        return None
    try:
        recall = vector_recall(table)
    except Exception as e:
        raise PublishError(f"checking the vector index after compaction: {e}") from e
    if recall >= RECALL_TARGET:
        return f"kept (recall@10 {recall:.3f})"
    log.warning("vector index recall@10 %.3f after compaction (under %.2f): rebuilt", recall, RECALL_TARGET)
    return f"rebuilt after recall@10 {recall:.3f}: " + _vector_index(table, int(table.count_rows()), True)


def tuned(query: Any, limit: int, rows: int) -> Any:
    """A LanceDB vector query with the index settings above and ``limit`` on a table of
    ``rows`` rows. HNSW refuses an ``ef`` below the number of candidates it returns
    (``limit * REFINE``)."""
    return query.nprobes(NPROBES).refine_factor(REFINE).ef(ef_for(rows, limit)).limit(limit)


def nearest(vector: Any, limit: int, rows: int) -> dict[str, Any]:
    """The same settings as ``tuned`` for a Lance dataset scan (``LanceDataset.to_table``)."""
    return {
        "column": "vector",
        "q": np.asarray(vector, np.float32),
        "k": limit,
        "metric": "cosine",
        "nprobes": NPROBES,
        "refine_factor": REFINE,
        "ef": ef_for(rows, limit),
    }


SCAN_ROWS = 4_096
"""Rows per batch of the recall check's exact pass over the vector column, read one batch and
one data file ahead. At 400,000 rows of 64 dimensions the pass peaked at +120-126 MB, against
+210-217 MB with 16,384 rows and Lance's default read-ahead, in the same time (0.4 s; distances
alike): the batch's float64 copies and the scan's read-ahead were most of it."""
TIE = 1e-5
"""An approximate hit this close to the k-th exact distance counts as one of the k nearest."""


RECALL_QUESTIONS = 64
"""Questions of the vector index's recall check, each seeded by a row drawn across the table.
The check used to ask 20, seeded by the table's first 20 rows (one document's chunks, say):
builds of the 100k-row benchmark table scored 0.945, 0.950, 0.990 and 1.000, and the one at
0.945 was dropped against the 0.95 floor (the next publish built it again in 33 s; searches
meanwhile scanned every vector, 227 ms against 7.6 ms). On another build of that table, eight
seeds each: 20 questions from rows across it scored 0.98-1.0, 64 scored 0.981-1.0 (1.0-1.3 s
for the check at 100k rows; the first 20 rows: 0.995); on a table whose vector index had merged
six deltas, 0.90-1.0 and 0.903-0.984 (the first 20 rows: 0.95). More questions narrow the
draw's spread (by about √3.2) and no row order biases it; an index whose recall is near the
floor stays a close call. Their exact answers still take one pass over the vectors."""


def vector_recall(table: Any, queries: int = RECALL_QUESTIONS, k: int = 10) -> float:
    """recall@k of the vector index against exact search, on queries near the data: the vector
    of a row drawn across the table plus Gaussian noise of the same norm (cosine about 0.7 to
    the row, as a question is to its passage), rows and noise drawn from a fixed seed.

    A row's own vector as the query (what this checked before) finds its row in its own
    partition whatever the search width: at 1,000,000 rows it scored 0.98 where near-data
    queries scored 0.76 with the width of 100k rows.

    The exact answers come from one pass over the vector column for all questions at once
    (:func:`exact_distances`), where a flat LanceDB search per question read the whole column
    once per question: 2.4 -> 1.0 s at 400,000 rows of 64 dimensions (peak RSS about the same
    then, when Lance's scan read ahead about the column's size either way; see ``SCAN_ROWS``).
    An approximate hit counts when its exact distance is within ``TIE`` of the k-th nearest, so
    a copy of a repeated vector counts as well as the copy exact search listed."""
    rows = int(table.count_rows())
    rng = np.random.default_rng(0)
    at = [int(i) for i in np.sort(rng.choice(rows, min(queries, rows), replace=False))] if rows else []
    drawn = table.to_lance().take(at, columns=["vector"]).column("vector")
    sample = [v for v in drawn.to_pylist() if v is not None]
    if not sample:
        return 0.0
    asked = []
    for vec in sample:
        v = np.asarray(vec, dtype=np.float32)
        noise = np.asarray(rng.standard_normal(v.shape[0]), dtype=np.float32)
        scale = float(np.linalg.norm(v)) / max(float(np.linalg.norm(noise)), 1e-12)
        asked.append(v + noise * scale)
    questions = np.stack(asked)
    kth = exact_distances(table, questions, k)[:, -1]
    release_memory()  # the scan's read-ahead, before the searches load the index (-56 MB at 400k rows)
    hits = 0
    for q, bound in zip(questions, kth, strict=True):
        approx = (
            tuned(table.search(q.tolist(), vector_column_name="vector").distance_type("cosine"), k, rows)
            .select(["vector", "_distance"])
            .to_arrow()
            .column("vector")
        )
        found = _cosine(q[None, :], _matrix(approx))[0]
        hits += int(np.count_nonzero(found <= bound + TIE))
    return hits / (len(sample) * k)


def exact_distances(table: Any, questions: Any, k: int) -> Any:
    """The ``k`` smallest cosine distances from each question (rows of ``questions``) to the
    table's vectors, ascending (``inf`` where the table has fewer rows): one streaming pass,
    ``SCAN_ROWS`` rows at a time, keeping ``k`` distances per question between batches."""
    q = np.asarray(questions, np.float32)
    best = np.full((len(q), k), np.inf)
    scan = table.to_lance().to_batches(
        columns=["vector"], batch_size=SCAN_ROWS, batch_readahead=1, fragment_readahead=1
    )
    for batch in scan:
        vectors = batch.column("vector")
        if vectors.null_count:
            vectors = vectors.drop_null()
        if len(vectors):
            merged = np.concatenate([best, _cosine(q, _matrix(vectors))], axis=1)
            best = np.partition(merged, k - 1, axis=1)[:, :k] if merged.shape[1] > k else merged
    return np.sort(best, axis=1)


def _matrix(vectors: Any) -> Any:
    """A fixed-size-list column (no nulls) as a float32 matrix, without a Python list per row."""
    if isinstance(vectors, pa.ChunkedArray):
        vectors = vectors.combine_chunks()
    width = vectors.type.list_size
    return np.asarray(vectors.flatten().to_numpy(zero_copy_only=False), np.float32).reshape(-1, width)


def _cosine(questions: Any, vectors: Any) -> Any:
    """Cosine distances (1 - cos) between each question and each vector, in float64; a zero
    vector is at distance 1 from everything."""
    qn = np.linalg.norm(questions, axis=1, keepdims=True)
    vn = np.linalg.norm(vectors, axis=1, keepdims=True)
    q = np.asarray(questions, np.float64) / np.maximum(qn, 1e-12)
    v = np.asarray(vectors, np.float64) / np.maximum(vn, 1e-12)
    return 1.0 - q @ v.T
