"""Ranking under the principal's prefilter: dense, BM25, or both fused by reciprocal rank fusion.

Every candidate list is produced with the principal's filter as a prefilter, so k results are
never starved by post-filtering and no foreign row is ranked. Candidate lists carry ids and
scores only (``tessera.search.candidates``); the dense and BM25 lists of a hybrid search are
queried at once, and the columns of a hit are read for the rows that rank
(``tessera.search.rows``).

Duplicates are folded after that filter (``tessera.search.collapse``): rows with the same text
always fold into the best-ranked one, and near duplicates fold into their group under the
``drop`` policy. Candidates are widened (x4, at most 1000) until k distinct results remain;
then one more query under the same filter adds the copies that ranked below the cut-off.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from functools import partial
from typing import Any

from tessera.embedding.base import Embedder
from tessera.errors import InvalidArgument
from tessera.search import candidates
from tessera.search.collapse import MAX_CANDIDATES, collapse, copy_ids, with_all_copies
from tessera.search.dataset import dataset, pin
from tessera.search.masks import one_search
from tessera.search.options import SearchOptions, row_columns
from tessera.search.rows import full_rows
from tessera.search.shared import copies_possible

RRF_K = 20
LEXICAL_WEIGHT = 1.25
"""Weighted reciprocal rank fusion: a row scores ``1 / (RRF_K + dense rank)`` plus
``LEXICAL_WEIGHT / (RRF_K + BM25 rank)``. Chosen by leave-one-corpus-out over the eight
development corpora (``tessera eval chunking``, fusion study): K = 20 with BM25 weighted 1.25
was the choice of 5 of 8 folds (the other folds chose K 40 or weight 1.5); held out it scored
87.3 % hybrid recall against 86.8 % for the plain K = 60 fusion, +0.9 points per question
(95 % bootstrap +0.1 to +1.7), IoU 7.85 against 7.81, with two corpora lower (chatlogs -0.8,
doc2dial_dmv -3.0)."""


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses; the default is the product's. The other settings exist so the
    evaluation can compare them on the same code path (``tessera.evaluation.chunking.fusion``).

    ``depth``: candidates per list (None: :func:`fusion_depth`); ``fts_column``: the column BM25
    ranks; ``rrf_k`` and ``lexical_weight``: the fusion's constant and the BM25 list's weight
    (the dense list weighs 1); ``lancedb``: LanceDB's own hybrid query with its
    ``RRFReranker`` instead (it fetches ``limit`` rows per list and fuses them with K = 60)."""

    depth: int | None = None
    fts_column: str = "embedding_text"
    lancedb: bool = False
    rrf_k: int = RRF_K
    lexical_weight: float = LEXICAL_WEIGHT

    def __post_init__(self) -> None:
        if self.rrf_k < 0:
            raise InvalidArgument("rrf_k", f"must be >= 0, got {self.rrf_k}")
        if not self.lexical_weight > 0:
            raise InvalidArgument("lexical_weight", f"must be > 0, got {self.lexical_weight}")


PRODUCT_FUSION = Fusion()


def fusion_depth(k: int) -> int:
    """Candidates per list (dense and BM25) that hybrid search fuses for a top ``k``."""
    return max(k, 20) * 2


def rrf(
    lists: list[list[dict[str, Any]]],
    k: int,
    weights: tuple[float, ...] = (1.0, LEXICAL_WEIGHT),
    rrf_k: int = RRF_K,
) -> list[dict[str, Any]]:
    """Weighted reciprocal rank fusion of ``lists`` (dense first, then BM25, as search fuses
    them): score = sum of weight / (``rrf_k`` + rank) over the lists a row is in; exact ties by
    id. One weight per list."""
    if len(weights) != len(lists):
        raise InvalidArgument("weights", f"{len(weights)} weights for {len(lists)} ranked lists")
    scores: dict[str, float] = {}
    rows: dict[str, dict[str, Any]] = {}
    for weight, ranked in zip(weights, lists, strict=True):
        for rank, row in enumerate(ranked, 1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + weight / (rrf_k + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: (-scores[i], i))[:k]
    return [{**rows[i], "_score": scores[i]} for i in order]


def _lancedb_hybrid(
    table: Any, query: str, vector: list[float], where: str, n: int, column: str
) -> list[Any]:
    from lancedb.rerankers import RRFReranker

    q = (
        table.search(query_type="hybrid", vector_column_name="vector", fts_columns=column)
        .vector(vector)
        .text(query)
        .where(where, prefilter=True)
        .rerank(RRFReranker())
    )
    rows: list[dict[str, Any]] = q.select(row_columns(table.schema.names)).limit(n).to_arrow().to_pylist()
    for r in rows:
        r["_score"] = float(r.pop("_relevance_score"))
    return rows


@one_search()  # its two candidate queries sight a claims' mask once
def retrieve(
    table: Any,
    embedder: Embedder | None,
    query: str,
    where: str,
    opts: SearchOptions,
    vector: list[float] | None = None,
    fusion: Fusion = PRODUCT_FUSION,
) -> list[dict[str, Any]]:
    """The ranked rows of one query: ``embedder`` may be None when ``vector`` is given."""
    table = pin(table)
    return full_rows(table, where, _ranked(table, embedder, query, where, opts, vector, fusion))


def _ranked(
    table: Any,
    embedder: Embedder | None,
    query: str,
    where: str,
    opts: SearchOptions,
    vector: list[float] | None,
    fusion: Fusion,
) -> list[dict[str, Any]]:
    """The ranked candidates (ids, row ids, groups and scores; full rows from LanceDB's own
    hybrid query and the exact-BM25 fallback)."""
    depth = fusion.depth or fusion_depth(opts.k)
    if opts.mode == "lexical":
        return candidates.lexical(table, query, where, opts.k)
    if vector is None:
        if embedder is None:
            raise InvalidArgument("vector", "a dense or hybrid search needs a query vector or an embedder")
        vector = embedder.embed_query(query).tolist()
    if opts.mode == "dense":
        return candidates.dense(table, vector, where, opts.k)
    if fusion.lancedb:
        return _lancedb_hybrid(table, query, vector, where, opts.k, fusion.fts_column)
    dense, lexical = candidates.both(
        lambda: candidates.dense(table, vector, where, depth),
        lambda: candidates.lexical(table, query, where, depth, fusion.fts_column),
    )
    return rrf([dense, lexical], opts.k, (1.0, fusion.lexical_weight), fusion.rrf_k)


@one_search()
def ranked_rows(
    table: Any,
    embedder: Embedder | None,
    query: str,
    where: str,
    opts: SearchOptions,
    vector: list[float] | None,
    fusion: Fusion = PRODUCT_FUSION,
) -> list[dict[str, Any]]:
    """Top-k after ``collapse``, widening the candidates while duplicates eat into k; then
    every readable copy of each result joins its ``_sources`` (``with_all_copies``). The
    copies of the ranked rows' groups are queried while their columns are read, when any may
    exist (``tessera.search.shared``).

    This is the ranking :func:`tessera.search.query.search` returns (before expansion);
    ``tessera eval chunking`` calls it with the query vector it already has, so the
    evaluation is the product."""
    n, table = opts.k, pin(table)
    while True:
        ranked = _ranked(table, embedder, query, where, replace(opts, k=n), vector, fusion)
        groups = {r["dup_group"] for r in ranked if r.get("dup_group")}
        if groups and copies_possible(dataset(table), ranked, groups):
            rows, copies = candidates.both(
                partial(full_rows, table, where, ranked), partial(copy_ids, table, where, groups)
            )
        else:
            rows, copies = full_rows(table, where, ranked), None
        kept = collapse(rows, opts.near_duplicates)
        if len(kept) >= opts.k or len(rows) < n or n >= MAX_CANDIDATES:
            return with_all_copies(table, where, rows, kept[: opts.k], opts.near_duplicates, copies)
        n = min(n * 4, MAX_CANDIDATES)
