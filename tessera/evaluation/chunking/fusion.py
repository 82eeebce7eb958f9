"""Why hybrid fusion scores what it scores: the product's fusion against its variants and
LanceDB's own hybrid query, on the same chunks, questions and code path.

Variants (:class:`tessera.search.query.Fusion`): the candidate depth per list (LanceDB's
hybrid query fetches only ``limit`` rows per list, the product ``fusion_depth(k)``), the
column BM25 ranks (``embedding_text``, with the breadcrumb, or the bare ``text``), and
LanceDB's hybrid query with its ``RRFReranker``. Scores are per corpus and pooled, as for the
profiles; the winner by leave-one-corpus-out is what search should use.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from tessera.evaluation.chunking.collection import Collection
from tessera.evaluation.chunking.harness import evaluate, summarize
from tessera.golden.questions import Question
from tessera.search.query import Fusion, fusion_depth

VARIANTS: tuple[tuple[str, Fusion], ...] = (
    ("depth-k", Fusion(depth=-1)),  # -1: k itself, LanceDB's depth
    ("bm25-on-text", Fusion(fts_column="text")),
    ("lancedb-hybrid", Fusion(lancedb=True)),
)


def study(
    collection: Collection,
    questions: Sequence[Question],
    qvecs: np.ndarray,
    k: int,
    token_budget: int,
    corpora: Sequence[str],
) -> dict[str, Any]:
    """Hybrid scores of every variant, pooled and per corpus (``depth-k`` fuses k per list); the
    product's own scores are the profile's hybrid row (``report["fusion_study"]["product"]``)."""
    collection.index_text()
    out: dict[str, Any] = {"product_depth": fusion_depth(k), "variants": {}}
    for name, fusion in VARIANTS:
        f = Fusion(k, fusion.fts_column, fusion.lancedb) if fusion.depth == -1 else fusion
        records = evaluate(collection, questions, qvecs, k, "hybrid", token_budget, None, f, budget=False)
        out["variants"][name] = {
            "fusion": {"depth": f.depth, "fts_column": f.fts_column, "lancedb": f.lancedb},
            "pooled": summarize(records),
            "per_corpus": {c: summarize(records, c) for c in corpora},
        }
    return out
