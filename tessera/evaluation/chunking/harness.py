"""Evaluate one chunking configuration: chunk the corpus, embed, retrieve top-k, score.

The corpus is parsed and chunked exactly as a tenant run would do it (same parsers, same
chunker registry, same ``ChunkContext``), and each chunk's source byte range is mapped back
to code points of the corpus file, the unit of the reference spans. Chunks of every corpus

share one collection, as in the Chroma study. Retrieval is the product's
(:class:`tessera.evaluation.chunking.collection.Collection`): the hits ``tessera search``
returns, exact duplicates folded into one hit whose every source range counts as retrieved.
Each question is scored on its own (:func:`evaluate`), so scores can be averaged per corpus
as well as over the pool.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import numpy as np

from tessera.chunking.base import ChunkContext
from tessera.chunking.probes import sentence_probes
from tessera.chunking.registry import chunker_for
from tessera.chunking.tokens import TokenCounter
from tessera.config import ChunkingConfig
from tessera.errors import EvaluationError
from tessera.evaluation.chunking.collection import Collection, EvalChunk, Hit
from tessera.evaluation.chunking.corpus import Corpus
from tessera.golden.metrics import Span, TokenGrid, intact, precision_omega, score
from tessera.golden.questions import Question
from tessera.golden.retriever import Retriever, code_points
from tessera.parsing.base import parser_for_path
from tessera.parsing.dispatch import parse_document
from tessera.search.query import PRODUCT_FUSION, Fusion, fusion_depth
from tessera.types import SourceDocument, sha256_hex

__all__ = ["EvalChunk", "Retriever", "budget_hits", "chunk_corpus", "evaluate", "locate", "peer_chunks"]


def _doc(corpus_id: str, path: Path, raw: bytes) -> SourceDocument:
    content_type = parser_for_path(path.name)
    if content_type is None:
        raise EvaluationError(f"no parser for corpus file {path.name}")
    return SourceDocument(
        "eval", corpus_id, path.resolve().as_uri(), sha256_hex(raw), content_type, ("eval",), ()
    )


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
            out.append(EvalChunk(span, c.embedding_text, c.token_count, tuple(probes), c.text, c.id, c.kind))
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
            out.append(EvalChunk(Span(corpus_id, s, e), piece, n, extra, piece))
    return out


def budget_hits(hits: Sequence[Hit], budget: int) -> list[Hit]:
    """The best-ranked hits whose tokens fit ``budget`` together (skipping ones that overflow)."""
    out, used = [], 0
    for h in hits:
        if used + h.tokens <= budget:
            out.append(h)
            used += h.tokens
    return out


BUDGET_DEPTH = 16
"""Hits fetched for the equal-token-budget recall: enough to fill the budget with small chunks."""


def evaluate(
    collection: Collection,
    questions: Sequence[Question],
    qvecs: np.ndarray,
    k: int,
    mode: str,
    token_budget: int,
    grids: dict[str, TokenGrid] | None = None,
    fusion: Fusion = PRODUCT_FUSION,
    budget: bool = True,
) -> list[dict[str, float | str]]:
    """One record per question, in percent (tokens as counts): character-level recall,
    precision, IoU, precision-Ω and intact references; with ``grids``, the same recall and IoU
    counted in model tokens (the unit of the Chroma study's definitions)."""
    spans = [c.span for c in collection.chunks]
    out: list[dict[str, float | str]] = []
    depth = max(BUDGET_DEPTH, k)
    omega = {id(q): 100 * precision_omega(spans, q.references) for q in questions}  # of the chunking alone
    for q, qv in zip(questions, qvecs, strict=True):
        wide = collection.search(q.text, qv, depth if budget else k, mode, fusion)
        # Without sentence vectors the top k is the prefix of the top ``depth`` (exact search,
        # the same fused lists: ``fusion_depth`` is 40 for both); with them the rescored set
        # depends on k, so the top k is searched on its own.
        prefix = (
            not collection.has_sentences
            and fusion_depth(k) == fusion_depth(depth)
            and fusion.depth is None
            and not fusion.lancedb
        )
        hits = wide[:k] if prefix or not budget else collection.search(q.text, qv, k, mode, fusion)
        got = [s for h in hits for s in h.spans]
        s = score(got, q.references)
        within = [sp for h in budget_hits(wide, token_budget) for sp in h.spans]
        rec: dict[str, float | str] = {
            "corpus": q.corpus,
            "recall": 100 * s.recall,
            "precision": 100 * s.precision,
            "iou": 100 * s.iou,
            "precision_omega": omega[id(q)],
            "intact_retrieved": 100 * float(np.mean([intact(got, r) for r in q.references])),
            "retrieved_tokens": float(sum(h.tokens for h in hits)),
            "recall_at_budget": 100 * score(within, q.references).recall if budget else float("nan"),
        }
        if grids is not None:
            grid = grids[q.corpus]
            t = score([grid.tokens(x) for x in got], [grid.tokens(r) for r in q.references])
            rec["token_recall"], rec["token_iou"] = 100 * t.recall, 100 * t.iou
        out.append(rec)
    return out


def summarize(records: Sequence[dict[str, float | str]], corpus: str | None = None) -> dict[str, float]:
    """Means of the per-question records (of one corpus, or all); ``n`` questions."""
    mine = [r for r in records if corpus is None or r["corpus"] == corpus]
    keys = [key for key in (mine[0] if mine else {}) if key != "corpus"]
    out = {key: round(float(np.mean([float(r[key]) for r in mine])), 2) for key in keys}
    out["n"] = len(mine)
    return out


def intact_coverage(chunks: Sequence[EvalChunk], questions: Sequence[Question]) -> float:
    """Share of references (percent) lying whole inside some chunk of the collection."""
    spans = [c.span for c in chunks]
    refs = [r for q in questions for r in q.references]
    return round(100 * float(np.mean([intact(spans, r) for r in refs])), 2) if refs else 0.0
