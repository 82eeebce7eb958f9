"""Why hybrid fusion scores what it scores: the product's fusion against its variants and
LanceDB's own hybrid query, on the same chunks, questions and code path.

Variants (:class:`tessera.search.query.Fusion`): the candidate depth per list (LanceDB's
hybrid query fetches only ``limit`` rows per list, the product ``fusion_depth(k)``), the
column BM25 ranks (``embedding_text``, with the breadcrumb, or the bare ``text``), the fusion's
constant and the BM25 list's weight, and LanceDB's hybrid query with its ``RRFReranker``.
Scores are per corpus and pooled, as for the profiles; :func:`select` picks by
leave-one-corpus-out among the product and the variants, which is what search should use.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, replace
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
    ("rrf-60-equal", Fusion(rrf_k=60, lexical_weight=1.0)),  # the product's fusion before issue 16
    ("rrf-20-equal", Fusion(rrf_k=20, lexical_weight=1.0)),
    ("rrf-40-bm25x1.25", Fusion(rrf_k=40, lexical_weight=1.25)),
    ("rrf-20-bm25x1.5", Fusion(rrf_k=20, lexical_weight=1.5)),
)
PRODUCT = "product"


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
        f = replace(fusion, depth=k) if fusion.depth == -1 else fusion
        records = evaluate(collection, questions, qvecs, k, "hybrid", token_budget, None, f, budget=False)
        out["variants"][name] = {
            "fusion": asdict(f),
            "pooled": summarize(records),
            "per_corpus": {c: summarize(records, c) for c in corpora},
        }
    return out


def select(report: dict[str, Any], corpora: Sequence[str]) -> dict[str, Any]:
    """Leave-one-corpus-out among the product's fusion (``report["product"]``) and the
    variants: for each corpus, the one with the best mean hybrid recall over the other corpora
    (the product on a tie), scored on the held-out corpus beside the product's own score."""
    scores = {PRODUCT: report["product"]["per_corpus"]}
    scores.update({n: v["per_corpus"] for n, v in report["variants"].items()})
    folds = []
    for held in corpora:
        rest = [c for c in corpora if c != held]
        mean = {n: float(np.mean([v[c]["recall"] for c in rest])) for n, v in scores.items()}
        choice = max(scores, key=lambda n: (mean[n], n == PRODUCT))
        folds.append(
            {
                "held_out": held,
                "choice": choice,
                "recall": scores[choice][held]["recall"],
                "iou": scores[choice][held]["iou"],
                "product_recall": scores[PRODUCT][held]["recall"],
                "product_iou": scores[PRODUCT][held]["iou"],
            }
        )
    chosen = [f["choice"] for f in folds]
    return {
        "folds": folds,
        "held_out_recall": round(float(np.mean([f["recall"] for f in folds])), 2),
        "held_out_iou": round(float(np.mean([f["iou"] for f in folds])), 2),
        "product_recall": round(float(np.mean([f["product_recall"] for f in folds])), 2),
        "product_iou": round(float(np.mean([f["product_iou"] for f in folds])), 2),
        "most_chosen": max(sorted(set(chosen)), key=chosen.count) if chosen else None,
    }
