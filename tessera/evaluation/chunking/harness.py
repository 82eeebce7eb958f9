"""Evaluate one chunking configuration: chunk the corpus, embed, retrieve top-k, score.

The corpus is parsed and chunked exactly as a tenant run would do it (same parsers, same
chunker registry, same ``ChunkContext``), and each chunk's source byte range is mapped back
to code points of the corpus file, the unit of the reference spans. Chunks of every corpus
share one collection, as in the Chroma study. Retrieval:

- ``dense``: exact top-k by the production score (:mod:`tessera.search.fusion`: the chunk
  vector, and when the profile has ``sentence_vectors`` the nearest chunks rescored with
  their best sentence vector);
- ``hybrid``: the production fusion, :func:`tessera.search.query.rrf` over dense and LanceDB
  BM25 (the FTS index the publish step builds on ``embedding_text``), 40 candidates each.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np

from tessera.chunking.base import ChunkContext
from tessera.chunking.probes import sentence_probes
from tessera.chunking.registry import chunker_for
from tessera.chunking.tokens import TokenCounter
from tessera.config import ChunkingConfig
from tessera.errors import EvaluationError
from tessera.evaluation.chunking.corpus import Corpus, Question
from tessera.evaluation.chunking.metrics import Span, intact, precision_omega, score
from tessera.parsing.base import parse_document, parser_for_path
from tessera.search.fusion import SentenceVectors, candidate_depth, fuse
from tessera.types import SourceDocument, sha256_hex

DEPTH = 40  # candidates per list in hybrid fusion, as in tessera.search.query.retrieve


@dataclass(frozen=True)
class EvalChunk:
    span: Span
    embedding_text: str
    tokens: int
    probes: tuple[str, ...] = ()
    """Sentence probe texts (``tessera.chunking.probes``) when the profile embeds them."""


def _doc(corpus_id: str, path: Path, raw: bytes) -> SourceDocument:
    content_type = parser_for_path(path.name)
    if content_type is None:
        raise EvaluationError(f"no parser for corpus file {path.name}")
    return SourceDocument(
        "eval", corpus_id, path.resolve().as_uri(), sha256_hex(raw), content_type, ("eval",), ()
    )


def code_points(raw: bytes) -> Callable[[int], int]:
    """Map a byte offset of UTF-8 ``raw`` to the code point offset of the decoded text."""
    starts = np.cumsum([0] + [len(ch.encode("utf-8")) for ch in raw.decode("utf-8")])

    def at(byte: int) -> int:
        i = int(np.searchsorted(starts, byte))
        if i >= len(starts) or starts[i] != byte:
            raise EvaluationError(f"byte offset {byte} is inside a character")
        return i

    return at


def chunk_corpus(corpus: Corpus, cfg: ChunkingConfig, ctx: ChunkContext) -> list[EvalChunk]:
    out: list[EvalChunk] = []
    for corpus_id, path in corpus.files.items():
        raw = corpus.raw[corpus_id]
        doc = _doc(corpus_id, path, raw)
        parsed = parse_document(doc, raw)
        at = code_points(raw)
        for c in chunker_for(doc.content_type, cfg.strategy).chunk(doc, parsed, ctx):
            if c.byte_start < 0:
                raise EvaluationError(f"{corpus_id}: paginated chunks have no code point range")
            span = Span(corpus_id, at(c.byte_start), at(c.byte_end))
            probes = sentence_probes(c.text, c.embedding_text, c.kind) if cfg.sentence_vectors else []
            out.append(EvalChunk(span, c.embedding_text, c.token_count, tuple(probes)))
    return out


def locate(text: str, pieces: Sequence[str]) -> list[tuple[int, int]]:
    """Ranges of ``pieces`` (a splitter's strings, in order) in ``text``; raises if one is absent."""
    out: list[tuple[int, int]] = []
    pos = 0
    for piece in pieces:
        i = text.find(piece, pos)
        if i < 0:
            i = text.find(piece)
        if i < 0:
            raise EvaluationError(f"a chunk is not a substring of its corpus: {piece[:40]!r}…")
        out.append((i, i + len(piece)))
        pos = i + 1
    return out


def peer_chunks(
    corpus: Corpus, split: Callable[[str], list[tuple[int, int]]], counter: TokenCounter, probes: bool = False
) -> list[EvalChunk]:
    """Chunks of another library's splitter, given as code point ranges of each corpus text.

    The embedding text is the corpus slice itself, counted with the same tokenizer; with
    ``probes``, its sentences are probes too (for the sentence-vector ablation)."""
    out: list[EvalChunk] = []
    for corpus_id, text in corpus.texts.items():
        ranges = [(s, e) for s, e in split(text) if text[s:e].strip()]
        pieces = [text[s:e] for s, e in ranges]
        for (s, e), piece, n in zip(ranges, pieces, counter.count_many(pieces), strict=True):
            extra = tuple(sentence_probes(piece, piece)) if probes else ()
            out.append(EvalChunk(Span(corpus_id, s, e), piece, n, extra))
    return out


class Retriever:
    """Dense and hybrid top-k over one chunk collection."""

    def __init__(
        self, chunks: Sequence[EvalChunk], vectors: np.ndarray, sentences: SentenceVectors | None = None
    ) -> None:
        if len(chunks) != len(vectors) or not len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if sentences is not None and sentences.chunks != len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but sentence vectors for {sentences.chunks}")
        self.chunks = list(chunks)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.sentences = sentences
        self._tmp = tempfile.TemporaryDirectory(prefix="tessera-eval-")
        self._fts: Any = None

    def close(self) -> None:
        self._tmp.cleanup()

    def _lexical_table(self) -> Any:
        if self._fts is None:
            import lancedb
            import pyarrow as pa
            from lancedb.index import FTS

            db = lancedb.connect(self._tmp.name)
            data = pa.table(
                {
                    "id": pa.array([str(i) for i in range(len(self.chunks))]),
                    "embedding_text": pa.array([c.embedding_text for c in self.chunks]),
                }
            )
            self._fts = db.create_table("chunks", data)
            self._fts.create_index("embedding_text", config=FTS())
        return self._fts

    def dense(self, qvec: np.ndarray, n: int) -> list[int]:
        sims = self.vectors @ qvec
        if self.sentences is not None:  # as search does: rescore the nearest chunks
            m = min(candidate_depth(n), len(sims))
            near = np.argpartition(-sims, m - 1)[:m]
            fused = np.full(len(sims), -np.inf)
            fused[near] = fuse(sims[near], self.sentences.best(qvec)[near])
            sims = fused
        top = np.argpartition(-sims, min(n, len(sims) - 1))[:n]
        return [int(i) for i in sorted(top, key=lambda i: (-sims[i], i))]

    def lexical(self, query: str, n: int) -> list[int]:
        rows = (
            self._lexical_table().search(query, query_type="fts").select(["id", "_score"]).limit(n).to_list()
        )
        return [int(r["id"]) for r in rows]

    def top(self, query: str, qvec: np.ndarray, k: int, mode: str) -> list[int]:
        if mode == "dense":
            return self.dense(qvec, k)
        from tessera.search.query import rrf

        lists = [[{"id": str(i)} for i in self.dense(qvec, DEPTH)]]
        lists.append([{"id": str(i)} for i in self.lexical(query, DEPTH)])
        return [int(r["id"]) for r in rrf(lists, k)]


def budget_hits(order: Sequence[int], chunks: Sequence[EvalChunk], budget: int) -> list[int]:
    """The best-ranked chunks whose tokens fit ``budget`` together (skipping ones that overflow)."""
    out, used = [], 0
    for i in order:
        if used + chunks[i].tokens <= budget:
            out.append(i)
            used += chunks[i].tokens
    return out


def evaluate(
    retriever: Retriever,
    questions: Sequence[Question],
    qvecs: np.ndarray,
    k: int,
    mode: str,
    token_budget: int,
) -> dict[str, float]:
    """Means over questions, in percent (tokens as counts)."""
    chunks = retriever.chunks
    spans = [c.span for c in chunks]
    recall, precision, iou, omega, tokens, at_budget, intact_retrieved = [], [], [], [], [], [], []
    for q, qv in zip(questions, qvecs, strict=True):
        order = retriever.top(q.text, qv, max(k, 50), mode)
        top = order[:k]
        s = score([spans[i] for i in top], q.references)
        recall.append(s.recall)
        precision.append(s.precision)
        iou.append(s.iou)
        tokens.append(sum(chunks[i].tokens for i in top))
        within = budget_hits(order, chunks, token_budget)
        at_budget.append(score([spans[i] for i in within], q.references).recall)
        omega.append(precision_omega(spans, q.references))
        got = [spans[i] for i in top]
        intact_retrieved.append(mean(intact(got, r) for r in q.references))
    all_refs = [r for q in questions for r in q.references]
    return {
        "recall": 100 * mean(recall),
        "precision": 100 * mean(precision),
        "iou": 100 * mean(iou),
        "precision_omega": 100 * mean(omega),
        "intact_span_coverage": 100 * mean(intact(spans, r) for r in all_refs),
        "intact_retrieved": 100 * mean(intact_retrieved),
        "mean_retrieved_tokens": mean(tokens),
        f"recall_at_{token_budget}_tokens": 100 * mean(at_budget),
    }
