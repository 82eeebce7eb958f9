"""The quality gate: a tenant's golden questions must not lose recall@k in a new version.

The candidate snapshot is what the tenant would serve after this run: the live rows of
documents this run does not touch plus the staged chunks and vectors. The published
snapshot is the live table. Both are scored with the chunking evaluation harness (same
retrieval, same metrics) and the gate blocks when candidate recall is lower than the
published recall by more than ``quality.max_recall_drop`` (a fraction: 0.05 = 5 points).

References are code point offsets into the current text of document ``corpus_id``; a
reference that no longer matches it makes the golden set stale, which blocks too (a
gate that cannot measure must not pass). Questions on a document whose published revision
differs from the current one are left out of both scores (the old ranges cannot be compared),
and reported. Reading the live snapshot costs one scan of the tenant's rows (vectors included).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass
from statistics import mean
from typing import Any

import numpy as np

from tessera.config_quality import QualityGateConfig
from tessera.embedding.base import Embedder
from tessera.errors import EvaluationError
from tessera.golden.metrics import Span, score
from tessera.golden.questions import Question, read_questions
from tessera.golden.retriever import EvalChunk, Retriever, code_points
from tessera.pipeline.context import RunContext
from tessera.pipeline.staging import VECTORS, read_vectors
from tessera.search.fusion import SentenceVectors
from tessera.store.index import document_revisions
from tessera.types import Chunk

_COLUMNS = ["doc_id", "revision", "byte_start", "byte_end", "embedding_text", "token_count", "vector"]


@dataclass(frozen=True)
class GateResult:
    status: str  # "passed", "blocked" or "skipped"
    reason: str
    candidate_recall: float | None = None
    published_recall: float | None = None
    max_drop: float = 0.0
    questions: int = 0
    left_out: int = 0

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def _questions(rc: RunContext, q: QualityGateConfig, current: dict[str, str]) -> list[Question]:
    out: list[Question] = []
    for text, doc_id, refs in read_questions(q.questions):
        if doc_id not in current:
            raise EvaluationError(f"golden question on {doc_id!r}, which the tenant does not have")
        body = rc.blobs.get(rc.tenant, current[doc_id]).decode("utf-8")
        spans = []
        for ref in refs:
            s, e = int(ref["start_index"]), int(ref["end_index"])  # type: ignore[call-overload]
            if body[s:e] != ref["content"]:
                raise EvaluationError(
                    f"golden set is stale: reference [{s}:{e}] no longer matches {doc_id!r}"
                )
            spans.append(Span(doc_id, s, e))
        out.append(Question(text, doc_id, tuple(spans)))
    return out


class _Mapper:
    """Byte ranges of rows to code point spans, for the golden documents' revisions."""

    def __init__(self, rc: RunContext, golden: set[str]) -> None:
        self.rc, self.golden = rc, golden
        self.maps: dict[str, Any] = {}

    def span(self, doc_id: str, revision: str, b0: int, b1: int) -> Span:
        if doc_id not in self.golden:
            return Span(doc_id, 0, max(0, b1 - b0))  # scores nothing; only its length counts
        if b0 < 0:
            raise EvaluationError(f"golden document {doc_id!r} is paginated; its chunks have no text range")
        if revision not in self.maps:
            self.maps[revision] = code_points(self.rc.blobs.get(self.rc.tenant, revision))
        at = self.maps[revision]
        return Span(doc_id, at(b0), at(b1))

    def chunk(self, row: dict[str, Any]) -> EvalChunk:
        """A published row as an evaluation chunk."""
        span = self.span(row["doc_id"], row["revision"], row["byte_start"], row["byte_end"])
        return EvalChunk(span, row["embedding_text"], row["token_count"])


def _live_rows(table: Any) -> list[dict[str, Any]]:
    """Every row of a published table with what the gate needs (sentence vectors when stored)."""
    cols = _COLUMNS + (["sentence_vectors"] if "sentence_vectors" in table.schema.names else [])
    rows: list[dict[str, Any]] = table.search().select(cols).limit(None).to_arrow().to_pylist()
    return rows


def _recall(
    chunks: list[EvalChunk],
    vectors: np.ndarray,
    sentences: list[Any],
    questions: list[Question],
    embedder: Embedder,
    q: QualityGateConfig,
) -> float:
    """Golden recall@k of one snapshot; ``sentences``: each chunk's sentence vectors or None."""
    has = any(m is not None for m in sentences)
    retriever = Retriever(chunks, vectors, SentenceVectors.of(sentences, vectors.shape[1]) if has else None)
    try:
        scores = []
        for question in questions:
            top = retriever.top(question.text, embedder.embed_query(question.text), q.k, q.mode)
            scores.append(score([chunks[i].span for i in top], question.references).recall)
    finally:
        retriever.close()
    return 100 * mean(scores)


def quality_gate(rc: RunContext, scope: set[str], load_staged: Callable[[], list[Chunk]]) -> GateResult:
    """Score the candidate against the published snapshot.

    ``scope``: documents the run replaces or removes; ``load_staged``: the run's chunks, in the
    order of ``vectors.npy`` in the run workspace, read only when golden questions are
    configured (every staged chunk in memory: 1.2 GB at 400,000 chunks)."""
    q = rc.config.tenant(rc.tenant).quality
    if q is None:
        return GateResult("skipped", "no golden questions configured")
    staged = load_staged()
    current = rc.listing()[1].revisions()
    try:
        questions = _questions(rc, q, current)
    except EvaluationError as e:
        return GateResult("blocked", f"golden set unusable: {e}", max_drop=q.max_recall_drop)
    mapper = _Mapper(rc, {x.corpus for x in questions})
    table = rc.index.table()
    live = _live_rows(table) if table is not None else []
    live_rev = {r["doc_id"]: r["revision"] for r in live}

    vectors = read_vectors(rc.workspace / VECTORS)[:]  # the gate scores the whole candidate
    staged_sentences = rc.staged_sentences(len(staged)) or [None] * len(staged)
    keep = [r for r in live if r["doc_id"] not in scope]
    cand_chunks = [mapper.chunk(r) for r in keep] + [
        EvalChunk(
            mapper.span(c.doc_id, c.revision, c.byte_start, c.byte_end), c.embedding_text, c.token_count
        )
        for c in staged
        if c.doc_id in scope
    ]
    cand_vecs = [np.asarray(r["vector"], np.float32) for r in keep]
    cand_vecs += [vectors[i] for i, c in enumerate(staged) if c.doc_id in scope]
    cand_sents = [r.get("sentence_vectors") for r in keep]
    cand_sents += [staged_sentences[i] for i, c in enumerate(staged) if c.doc_id in scope]
    if not cand_chunks:
        return GateResult("blocked", "the candidate has no chunks", max_drop=q.max_recall_drop)
    cand = np.stack(cand_vecs)
    comparable = [x for x in questions if live_rev.get(x.corpus) == current[x.corpus]]
    left_out = len(questions) - len(comparable)
    if not live or not comparable:
        candidate = _recall(cand_chunks, cand, cand_sents, questions, rc.embedder, q)
        return GateResult(
            "passed",
            "no comparable published version",
            candidate,
            None,
            q.max_recall_drop,
            len(questions),
            left_out,
        )
    live_vecs = np.stack([np.asarray(r["vector"], np.float32) for r in live])
    live_sents = [r.get("sentence_vectors") for r in live]
    published = _recall([mapper.chunk(r) for r in live], live_vecs, live_sents, comparable, rc.embedder, q)
    candidate = _recall(cand_chunks, cand, cand_sents, comparable, rc.embedder, q)
    drop = (published - candidate) / 100
    status = "blocked" if drop > q.max_recall_drop else "passed"
    reason = (
        f"recall@{q.k} {candidate:.1f} vs published {published:.1f} "
        f"(drop {drop:.1%}, allowed {q.max_recall_drop:.1%})"
    )
    return GateResult(status, reason, candidate, published, q.max_recall_drop, len(questions), left_out)


def _table_recall(
    rc: RunContext, table: Any, embedder: Embedder, questions: list[Question], q: QualityGateConfig
) -> float:
    rows = _live_rows(table)
    mapper = _Mapper(rc, {x.corpus for x in questions})
    chunks = [mapper.chunk(r) for r in rows]
    vectors = np.stack([np.asarray(r["vector"], np.float32) for r in rows])
    return _recall(chunks, vectors, [r.get("sentence_vectors") for r in rows], questions, embedder, q)


def cutover_gate(rc: RunContext, active_table: Any, active_embedder: Embedder) -> GateResult:
    """Golden recall@k of the new model's table (``rc.index``) against the active model's table,
    each queried with its own model: a backfill may not cut over to a worse model."""
    q = rc.config.tenant(rc.tenant).quality
    new_table = rc.index.table()
    if q is None or new_table is None:
        return GateResult("skipped", "no golden questions configured" if q is None else "no new table")
    current = rc.listing()[1].revisions()
    try:
        questions = _questions(rc, q, current)
    except EvaluationError as e:
        return GateResult("blocked", f"golden set unusable: {e}", max_drop=q.max_recall_drop)

    new_rev, old_rev = document_revisions(new_table), document_revisions(active_table)
    comparable = [x for x in questions if new_rev.get(x.corpus) == old_rev.get(x.corpus) == current[x.corpus]]
    left_out = len(questions) - len(comparable)
    if not comparable:
        return GateResult(
            "passed", "no comparable question", None, None, q.max_recall_drop, len(questions), left_out
        )
    candidate = _table_recall(rc, new_table, rc.embedder, comparable, q)
    published = _table_recall(rc, active_table, active_embedder, comparable, q)
    drop = (published - candidate) / 100
    status = "blocked" if drop > q.max_recall_drop else "passed"
    reason = f"new model recall@{q.k} {candidate:.1f} vs active {published:.1f}"
    reason += f" (allowed drop {q.max_recall_drop:.1%})"
    return GateResult(status, reason, candidate, published, q.max_recall_drop, len(questions), left_out)
