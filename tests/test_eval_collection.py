"""The evaluation searches what ``tessera search`` returns: exact duplicates folded into one hit
with every copy's range, exact ties broken by chunk id (never toward the first copy)."""

from __future__ import annotations

import numpy as np
import pytest

from tessera.errors import EvaluationError, InvalidArgument
from tessera.evaluation.chunking.collection import Collection, EvalChunk
from tessera.golden.metrics import Span, score
from tessera.search.query import SearchOptions, fusion_depth, ranked_rows

DIM = 8


def unit(seed: int) -> np.ndarray:
    v = np.random.default_rng(seed).normal(size=DIM).astype(np.float32)
    return v / np.linalg.norm(v)


def build(pairs: int) -> tuple[list[EvalChunk], np.ndarray]:
    """``pairs`` passages, each at two places of one corpus (same text, same vector), plus fillers."""
    chunks, vecs = [], []
    for p in range(pairs):
        text = f"passage {p} repeats the same five or more words here"
        for copy in (0, 1):
            start = 1000 * copy + 10 * p
            chunks.append(EvalChunk(Span("doc", start, start + 9), text, 12, text=text))
            vecs.append(unit(p))
    for f in range(6):
        text = f"filler {f} says something else entirely about weather"
        chunks.append(EvalChunk(Span("doc", 5000 + 10 * f, 5009 + 10 * f), text, 12, text=text))
        vecs.append(unit(100 + f))
    return chunks, np.stack(vecs)


def test_duplicates_fold_into_one_hit_with_every_copy() -> None:
    chunks, vecs = build(3)
    col = Collection(chunks, vecs, None, "m")
    try:
        for mode in ("dense", "hybrid"):
            hits = col.search("passage 1 repeats", vecs[2], 3, mode)
            assert len(hits) == 3  # widened past the folded copy: k distinct results
            top = hits[0]
            assert sorted(top.spans, key=lambda s: s.start) == [Span("doc", 10, 19), Span("doc", 1010, 1019)]
            assert all(len({s.start % 1000 for s in h.spans}) == 1 for h in hits)  # copies of one text
            # a reference on either copy is found, and both copies count as retrieved
            for ref in (Span("doc", 10, 19), Span("doc", 1010, 1019)):
                s = score(list(top.spans), [ref])
                assert s.recall == 1.0 and s.precision == pytest.approx(0.5)
    finally:
        col.close()


def test_the_top_k_is_the_prefix_of_a_deeper_search_without_sentence_vectors() -> None:
    """``evaluate`` relies on it to search once per question (exact search, same fused lists)."""
    chunks, vecs = build(8)
    col = Collection(chunks, vecs, None, "m")
    try:
        for mode in ("dense", "hybrid"):
            for p in range(8):
                query = f"passage {p} weather"
                assert col.search(query, vecs[2 * p], 3, mode) == col.search(query, vecs[2 * p], 16, mode)[:3]
    finally:
        col.close()


def test_ties_do_not_favour_the_first_copy() -> None:
    chunks, vecs = build(24)
    col = Collection(chunks, vecs, None, "m")
    try:
        own = [col.search(f"passage {p}", vecs[2 * p], 1, "dense")[0].spans[0] for p in range(24)]
    finally:
        col.close()
    first = sum(s.start < 1000 for s in own)
    assert 0 < first < 24  # the hit's own row is decided by chunk id, so both copies lead sometimes
    # and the one that leads is the copy whose id sorts first
    keys = {c.span: c.key for c in chunks}
    for s in own:
        twin = Span(
            "doc",
            s.start + 1000 if s.start < 1000 else s.start - 1000,
            s.end + (1000 if s.start < 1000 else -1000),
        )
        assert keys[s] < keys[twin]


def test_the_product_ranking_needs_a_vector_or_an_embedder() -> None:
    chunks, vecs = build(1)
    col = Collection(chunks, vecs, None, "m")
    try:
        with pytest.raises(InvalidArgument):
            ranked_rows(col.table, None, "passage", col.where, SearchOptions(k=2, mode="dense"), None)
        lexical = ranked_rows(
            col.table, None, "filler 3", col.where, SearchOptions(k=2, mode="lexical"), None
        )
        assert "filler 3" in lexical[0]["text"]  # lexical needs neither
    finally:
        col.close()
    assert fusion_depth(5) == 40 and fusion_depth(30) == 60


def test_mismatched_inputs_are_refused() -> None:
    chunks, vecs = build(1)
    with pytest.raises(EvaluationError):
        Collection(chunks, vecs[:-1], None, "m")
    with pytest.raises(EvaluationError):
        Collection(chunks, vecs, [None], "m")
