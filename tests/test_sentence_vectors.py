"""Sentence vectors: probe texts, their storage, and the fused dense score in search and eval."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.chunking.probes import MIN_WORDS, sentence_probes
from tessera.chunking.profile import parse_chunking
from tessera.chunking.sentences import sentence_spans
from tessera.errors import ConfigError, EvaluationError
from tessera.evaluation.chunking.harness import EvalChunk, Retriever
from tessera.golden.metrics import Span
from tessera.search import principal_from_config, search
from tessera.search.fusion import SENTENCE_WEIGHT, SentenceVectors, candidate_depth, fuse, row_score, split
from tessera.search.query import SearchOptions
from tessera.store.schema import sentence_column

WORDS = st.sampled_from(["alpha", "beta", "gamma", "delta", "echo", "river", "stone", "cloud", "amber"])
SENTENCE = st.lists(WORDS, min_size=1, max_size=9).map(lambda ws: " ".join(ws).capitalize() + ".")


# ----------------------------------------------------------------------------- probes


@given(st.lists(SENTENCE, min_size=1, max_size=8), st.sampled_from(["", "Guide > Setup\n\n", "A\n\n"]))
@settings(max_examples=200, deadline=None)
def test_probes_are_the_prefix_plus_each_long_enough_sentence(sentences: list[str], prefix: str) -> None:
    text = " ".join(sentences)
    probes = sentence_probes(text, prefix + text)
    spans = sentence_spans(text)
    if len(spans) < 2:
        assert probes == []  # a one-sentence chunk: its own vector already is that sentence
        return
    expected = [text[a:b] for a, b in spans if len(re.findall(r"\w+", text[a:b])) >= MIN_WORDS]
    assert [p[len(prefix) :] for p in probes] == expected
    assert all(p.startswith(prefix) and len(p) <= len(prefix + text) for p in probes)


def test_probes_skip_code_tables_and_foreign_embedding_texts() -> None:
    text = "First sentence has five words. Second sentence also has words."
    assert len(sentence_probes(text, "Crumb\n\n" + text)) == 2
    assert sentence_probes(text, text, "code") == []
    assert sentence_probes(text, text, "table") == []
    # an embedding text that does not end with the chunk text gives no prefix, not a wrong one
    assert sentence_probes(text, "header row\n" + text + " trailer") == [
        "First sentence has five words.",
        "Second sentence also has words.",
    ]


# ----------------------------------------------------------------------------- scoring


def test_fused_score_rewards_the_best_sentence_but_never_lowers_a_chunk() -> None:
    q = np.array([1.0, 0.0], np.float32)
    assert row_score(q, [0.6, 0.8], None) == pytest.approx(0.6)
    assert row_score(q, [0.6, 0.8], []) == pytest.approx(0.6)
    # best sentence 1.0: (1 - w) * 0.6 + w * 1.0
    assert row_score(q, [0.6, 0.8], [[0.0, 1.0], [1.0, 0.0]]) == pytest.approx(
        (1 - SENTENCE_WEIGHT) * 0.6 + SENTENCE_WEIGHT
    )
    # a sentence worse than the chunk does not pull it down
    assert row_score(q, [0.6, 0.8], [[0.0, 1.0]]) == pytest.approx(0.6)
    sv = SentenceVectors.of([None, np.array([[0.0, 1.0], [1.0, 0.0]]), np.zeros((0, 2))], 2)
    best = sv.best(q)
    assert best[0] == -np.inf and best[1] == pytest.approx(1.0) and best[2] == -np.inf
    assert fuse(np.array([0.3, 0.3, 0.3]), best) == pytest.approx([0.3, 0.65, 0.3])


def test_split_checks_counts() -> None:
    flat = np.arange(6, dtype=np.float32).reshape(3, 2)
    parts = split(flat, [2, 0, 1])
    assert parts[1] is None and parts[0] is not None and parts[2] is not None
    assert parts[0].tolist() == [[0, 1], [2, 3]] and parts[2].tolist() == [[4, 5]]
    with pytest.raises(ValueError, match="counts add up to 2"):
        split(flat, [1, 1])


def test_sentence_column_is_null_for_chunks_without() -> None:
    col = sentence_column([None, np.ones((2, 3)), np.zeros((0, 3))], 3)
    assert col.to_pylist() == [None, [[1.0] * 3, [1.0] * 3], None]
    assert sentence_column([], 3).to_pylist() == []


def test_config_flag_is_validated_and_changes_the_profile() -> None:
    # off by default since issue 16: no gain out of sample, twice the embedded tokens
    assert parse_chunking({}).sentence_vectors is False
    on = parse_chunking({"sentence_vectors": True})
    off = parse_chunking({"sentence_vectors": False})
    assert on.as_dict()["sentence_vectors"] is True and off.as_dict()["sentence_vectors"] is False
    assert off.as_dict() != on.as_dict()  # part of every chunk id
    with pytest.raises(ConfigError, match=r"chunking\.sentence_vectors"):
        parse_chunking({"sentence_vectors": "yes"})


def test_harness_refuses_mismatched_sentence_vectors() -> None:
    chunks = [EvalChunk(Span("d", 0, 1), "a", 1), EvalChunk(Span("d", 1, 2), "b", 1)]
    with pytest.raises(EvaluationError, match="sentence vectors for 1"):
        Retriever(chunks, np.eye(2, dtype=np.float32), SentenceVectors.of([None], 2))


# ----------------------------------------------------------------------------- end to end

# One chunk says many things, one of its sentences answers the query word for word; the other
# chunk shares half the query and little else. The chunk vector alone prefers the short one.
QUERY = "harbour lighthouse keeper logbook entries"
LONG = (
    "The village council met on Tuesday about parking. Bakers sold rye bread at the market. "
    "Harbour lighthouse keeper logbook entries were digitised. Farmers planted barley in spring. "
    "The choir rehearsed hymns for the festival. Cyclists raced along the coastal road at dawn. "
    "Students painted murals near the old station building."
)
SHORT = "Lighthouse keeper visits."


def _setup(ws: Any, sentence_vectors: bool) -> Any:
    ws.chunking = {"max_tokens": 256, "target_tokens": 200, "overlap_tokens": 0}
    ws.chunking["sentence_vectors"] = sentence_vectors
    ws.tenant("acme", {"long.md": LONG + "\n", "short.md": SHORT + "\n"})
    return ws.run("acme", "r1")


@pytest.mark.parametrize("sentence_vectors", [True, False])
def test_dense_search_ranks_a_chunk_by_its_best_sentence(ws: Any, sentence_vectors: bool) -> None:
    out = _setup(ws, sentence_vectors)
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert len(rows) == 2  # one chunk each
    alice = principal_from_config(ws.config(), "acme", "alice")
    opts = SearchOptions(k=2, mode="dense")
    hits = search(ws.config().store.uri, ws.embedder, alice, QUERY, options=opts)
    if sentence_vectors:
        assert out["embed"]["sentences"]["texts"] == 7  # the long chunk's sentences; the short has one
        assert len(rows["long.md"]["sentence_vectors"]) == 7
        assert rows["short.md"]["sentence_vectors"] is None
        assert [h.doc_id for h in hits] == ["long.md", "short.md"]
    else:
        assert "sentences" not in out["embed"]
        assert all(r["sentence_vectors"] is None for r in rows.values())
        assert [h.doc_id for h in hits] == ["short.md", "long.md"]
    # the scores are the fused scores of the stored vectors
    q = ws.embedder.embed_query(QUERY)
    for h in hits:
        r = rows[h.doc_id]
        assert h.score == pytest.approx(row_score(q, r["vector"], r["sentence_vectors"]), abs=1e-5)


def test_evaluation_harness_ranks_like_search(ws: Any) -> None:
    """The harness's exact dense ranking equals the production search on the same rows."""

    def text(i: int) -> str:
        # every sentence differs between documents (no exact duplicates fold), and by its length
        # too: equal scores would leave the order of ties, which no two engines share, to decide
        tag = " ".join([f"case{i}"] * (i + 1))
        body = " ".join(f"{s.rstrip('.')} {tag}." for s in re.findall(r"[^.]+\.", LONG + " " + SHORT))
        return f"# Topic {i}\n\n{body}\n"

    files = {f"d{i}.md": text(i) for i in range(20)}
    ws.chunking = {"max_tokens": 256, "target_tokens": 48, "overlap_tokens": 0, "sentence_vectors": True}
    ws.tenant("acme", files)
    ws.run("acme", "r1")
    rows = ws.rows("acme")
    assert any(r["sentence_vectors"] for r in rows) and any(r["sentence_vectors"] is None for r in rows)
    assert len(rows) > candidate_depth(8)  # some chunks are never rescored, in both
    chunks = [EvalChunk(Span(r["doc_id"], r["start"], r["end"]), r["embedding_text"], 1) for r in rows]
    retriever = Retriever(
        chunks,
        np.stack([np.asarray(r["vector"], np.float32) for r in rows]),
        SentenceVectors.of([r["sentence_vectors"] for r in rows], ws.embedder.identity.dimension),
    )
    plain = Retriever(chunks, retriever.vectors)
    alice = principal_from_config(ws.config(), "acme", "alice")
    differs = 0
    try:
        for query in (QUERY, "students painted murals", "rye bread market case3", "topic 4 case4"):
            qv = ws.embedder.embed_query(query)
            want = [rows[i]["id"] for i in retriever.dense(qv, 8)]
            opts = SearchOptions(k=8, mode="dense")
            got = [h.chunk_id for h in search(ws.config().store.uri, ws.embedder, alice, query, options=opts)]
            assert got == want, query
            differs += want != [rows[i]["id"] for i in plain.dense(qv, 8)]
    finally:
        retriever.close()
        plain.close()
    assert differs  # the sentence vectors did change rankings, and search followed them


def test_a_table_from_before_sentence_vectors_serves_and_upgrades(ws: Any) -> None:
    _setup(ws, True)
    ws.table("acme").drop_columns(["sentence_vectors"])  # as an older release wrote it
    alice = principal_from_config(ws.config(), "acme", "alice")
    opts = SearchOptions(k=2, mode="dense")

    def order() -> list[str]:
        return [h.doc_id for h in search(ws.config().store.uri, ws.embedder, alice, QUERY, options=opts)]

    assert order() == ["short.md", "long.md"]  # chunk vectors only, nothing fails
    assert "sentence_vectors" not in ws.table("acme").schema.names  # reading never alters a table
    ws.chunking["target_tokens"] = 190  # a new profile (as the new default is): re-indexed
    out = ws.run("acme", "r2")
    assert out["publish"]["docs_changed"] == 2 and out["embed"]["sentences"]["cache_hits"] == 7
    assert order() == ["long.md", "short.md"]


def test_a_re_executed_embed_step_follows_the_profile(ws: Any) -> None:
    from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step

    ws.chunking = {"max_tokens": 256, "target_tokens": 200, "overlap_tokens": 0, "sentence_vectors": True}
    ws.tenant("acme", {"long.md": LONG + "\n"})
    rc = ws.context("acme", "r1")
    list_step(rc), parse_step(rc), chunk_step(rc), embed_step(rc)
    staged = rc.staged_sentences(1)
    assert staged is not None and staged[0] is not None and len(staged[0]) == 7
    ws.chunking["sentence_vectors"] = False  # the same workspace, re-executed with them off
    rc = ws.context("acme", "r1")
    assert "sentences" not in embed_step(rc)
    assert rc.staged_sentences(1) is None
