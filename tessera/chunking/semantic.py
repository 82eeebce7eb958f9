"""Strategy ``semantic``: cut where neighbouring sentences stop being similar.

1. The document is cut into heading sections (as the structural chunker does; each chunk's
   ``embedding_text`` carries the section's breadcrumb), and each section into sentences
   (:mod:`tessera.chunking.sentences`); a sentence over the chunk size is first split into
   pieces with the recursive chunker's logic, so every unit fits the model.
2. Every unit is embedded once through ``ctx.embed`` (the run's embedder; a missing hook is
   a :class:`ChunkingError`). For the boundary after unit ``i`` the mean of the ``window``
   units ending at ``i`` is compared with the mean of the ``window`` units after it; the
   cosine distance is ``1 - cos``.
3. Cut where the distance (within a section) is above the document's ``threshold`` percentile
   (``threshold_kind: percentile``, ``numpy.percentile``) or above ``threshold``
   (``absolute``).
4. A group under ``min_tokens`` is merged into the neighbour it is more similar to (the
   smaller distance), when the merged group still fits the size; a group over the size
   (``target_tokens``, within ``max_tokens``) is split by greedy packing of its units, as
   the recursive chunker does. No overlap. Final chunks are recounted in one batch.

Deterministic for a fixed model: the same units give the same vectors and the same cuts.
The embedding cost is added to ``ctx.stats`` (units embedded, tokens the model saw,
prefix and special tokens included).
"""

from __future__ import annotations

import itertools

import numpy as np
import numpy.typing as npt

from tessera.chunking import versions
from tessera.chunking.base import ChunkContext
from tessera.chunking.headings import Section, sections
from tessera.chunking.profile import SemanticConfig
from tessera.chunking.recursive import LINE, TokenIndex, atoms, fit, merge
from tessera.chunking.sentences import sentence_spans
from tessera.chunking.structural import Piece, build_chunks, section_budget
from tessera.errors import ChunkingError
from tessera.types import Chunk, ParsedDocument, SourceDocument

Floats = npt.NDArray[np.float64]


def boundary_distances(vectors: Floats, window: int) -> Floats:
    """Cosine distance across each of the ``len(vectors) - 1`` boundaries, windows averaged."""
    n = len(vectors)
    total = np.vstack([np.zeros((1, vectors.shape[1])), np.cumsum(vectors, axis=0)])
    b = np.arange(n - 1)
    left = total[b + 1] - total[np.maximum(0, b + 1 - window)]
    right = total[np.minimum(n, b + 1 + window)] - total[b + 1]
    left /= np.maximum(np.linalg.norm(left, axis=1, keepdims=True), 1e-12)
    right /= np.maximum(np.linalg.norm(right, axis=1, keepdims=True), 1e-12)
    dist: Floats = 1.0 - np.einsum("ij,ij->i", left, right)
    return dist


def merge_slivers(
    groups: list[tuple[int, int]], tokens: list[int], distances: Floats, min_tokens: int, size: int
) -> list[tuple[int, int]]:
    """Merge groups (unit ranges) under ``min_tokens`` into their more similar neighbour.

    ``tokens[g]`` is group ``g``'s token count, kept up to date as groups merge (counts
    taken on one encode of the document add up).
    """
    groups, tokens = list(groups), list(tokens)
    g = 0
    while g < len(groups):
        if tokens[g] >= min_tokens or len(groups) == 1:
            g += 1
            continue
        options = []
        if g > 0 and tokens[g - 1] + tokens[g] <= size:
            options.append((float(distances[groups[g][0] - 1]), g - 1))
        if g + 1 < len(groups) and tokens[g] + tokens[g + 1] <= size:
            options.append((float(distances[groups[g][1] - 1]), g + 1))
        if not options:
            g += 1
            continue
        _, other = min(options)
        a, b = min(g, other), max(g, other)
        groups[a : b + 1] = [(groups[a][0], groups[b][1])]
        tokens[a : b + 1] = [tokens[a] + tokens[b]]
        g = a
    return groups


class SemanticChunker:
    """Semantic cuts inside heading sections, with the section's breadcrumb in ``embedding_text``
    (as the structural chunker does): the percentile threshold is taken over the whole
    document's distances, so a short section is cut only where the document's topics shift."""

    name = "semantic"
    version = versions.SEMANTIC

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        if ctx.embed is None:
            raise ChunkingError(
                "the semantic strategy needs an embedder: ChunkContext.embed is None "
                "(pass embed=<Embedder>.embed_documents)"
            )
        text = parsed.text
        idx = TokenIndex(text, ctx)
        plan: list[tuple[Section, ChunkContext, int, list[tuple[int, int]]]] = []
        for sec in sections(parsed):
            sctx, size = section_budget(sec, ctx)
            units = [
                u
                for s, e in sentence_spans(text, sec.start, sec.end)
                for u in atoms(text, s, e, idx, size, LINE)
            ]
            if units:
                plan.append((sec, sctx, size, units))
        all_units = [u for *_, units in plan for u in units]
        vectors = self._embed(text, all_units, ctx)
        per_section, k = [], 0
        for *_, units in plan:
            per_section.append(boundary_distances(vectors[k : k + len(units)], ctx.config.semantic.window))
            k += len(units)
        limit = _threshold(per_section, ctx.config.semantic)
        pieces: list[Piece] = []
        for (sec, sctx, size, units), distances in zip(plan, per_section, strict=True):
            cuts = [int(i) for i in np.flatnonzero(distances > limit)]
            bounds = [0, *(c + 1 for c in cuts), len(units)]
            groups = list(itertools.pairwise(bounds))
            tokens = [idx.count(units[a][0], units[b - 1][1]) for a, b in groups]
            groups = merge_slivers(groups, tokens, distances, ctx.config.semantic.min_tokens, size)
            chunks = [c for a, b in groups for c in merge(text, units[a:b], idx, size, 0)]
            ctx.stats.indexed_tokens += sum(idx.count(a, b) for a, b in chunks)
            pieces += [
                Piece(a, b, sec, "text", flags=("semantic",)) for a, b, _ in fit(text, chunks, sctx, idx)
            ]
        ctx.stats.text_tokens += len(idx.starts)
        return build_chunks(doc, parsed, ctx, pieces, self.version)

    @staticmethod
    def _embed(text: str, units: list[tuple[int, int]], ctx: ChunkContext) -> Floats:
        if len(units) < 2 or ctx.embed is None:
            return np.zeros((len(units), 1))
        texts = [text[s:e] for s, e in units]
        vectors = np.asarray(ctx.embed(texts), dtype=np.float64)
        if vectors.shape[0] != len(texts):
            raise ChunkingError(f"embedder returned {vectors.shape[0]} vectors for {len(texts)} texts")
        ctx.stats.sentences_embedded += len(texts)
        ctx.stats.embed_tokens += sum(ctx.counter.count_many([ctx.document_prefix + t for t in texts]))
        return vectors


def _threshold(per_section: list[Floats], cfg: SemanticConfig) -> float:
    distances = np.concatenate(per_section) if per_section else np.zeros(0)
    if cfg.threshold_kind == "absolute" or len(distances) == 0:
        return cfg.threshold if cfg.threshold_kind == "absolute" else float("inf")
    return float(np.percentile(distances, cfg.threshold))
