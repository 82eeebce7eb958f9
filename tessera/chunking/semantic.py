"""Strategy ``semantic``: cut where neighbouring sentences stop being similar.

1. The document is split into sentences (:mod:`tessera.chunking.sentences`); a sentence
   over the chunk size is first split into pieces with the recursive chunker's logic, so
   every unit fits the model.
2. Every unit is embedded once through ``ctx.embed`` (the run's embedder; a missing hook is
   a :class:`ChunkingError`). For the boundary after unit ``i`` the mean of the ``window``
   units ending at ``i`` is compared with the mean of the ``window`` units after it; the
   cosine distance is ``1 - cos``.
3. Cut where the distance is above the document's ``threshold`` percentile
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

from tessera.chunking.assemble import assemble
from tessera.chunking.base import ChunkContext
from tessera.chunking.recursive import LINE, TokenIndex, atoms, fit, merge
from tessera.chunking.sentences import sentence_spans
from tessera.chunking.token import Span, plain_drafts, window_size
from tessera.config_chunking import SemanticConfig
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


def cut_points(distances: Floats, cfg: SemanticConfig) -> list[int]:
    """Boundaries (index ``i``: after unit ``i``) whose distance exceeds the threshold."""
    if len(distances) == 0:
        return []
    limit = cfg.threshold
    if cfg.threshold_kind == "percentile":
        limit = float(np.percentile(distances, cfg.threshold))
    return [int(i) for i in np.flatnonzero(distances > limit)]


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
    name = "semantic"
    version = "semantic/1"

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        spans = self.spans(parsed.text, ctx)
        drafts = plain_drafts(parsed, spans, "text", [("semantic",)] * len(spans))
        return assemble(doc, parsed, ctx, drafts, self.version)

    def spans(self, text: str, ctx: ChunkContext) -> list[Span]:
        if ctx.embed is None:
            raise ChunkingError(
                "the semantic strategy needs an embedder: ChunkContext.embed is None "
                "(pass embed=<Embedder>.embed_documents)"
            )
        idx = TokenIndex(text, ctx)
        size, _ = window_size(ctx)
        units: list[tuple[int, int]] = []
        for s, e in sentence_spans(text):
            units.extend(atoms(text, s, e, idx, size, LINE))
        if not units:
            return []
        unit_tokens = [idx.count(s, e) for s, e in units]
        distances: Floats = np.zeros(0)
        cuts: list[int] = []
        if len(units) > 1:
            texts = [text[s:e] for s, e in units]
            vectors = np.asarray(ctx.embed(texts), dtype=np.float64)
            if vectors.shape[0] != len(texts):
                raise ChunkingError(f"embedder returned {vectors.shape[0]} vectors for {len(texts)} texts")
            ctx.stats.sentences_embedded += len(texts)
            prefix = ctx.document_prefix
            ctx.stats.embed_tokens += sum(ctx.counter.count_many([prefix + t for t in texts]))
            distances = boundary_distances(vectors, ctx.config.semantic.window)
            cuts = cut_points(distances, ctx.config.semantic)
        bounds = [0, *(c + 1 for c in cuts), len(units)]
        groups = list(itertools.pairwise(bounds))
        tokens = [sum(unit_tokens[a:b]) for a, b in groups]
        groups = merge_slivers(groups, tokens, distances, ctx.config.semantic.min_tokens, size)
        chunks: list[tuple[int, int]] = []
        for a, b in groups:
            chunks.extend(merge(text, units[a:b], idx, size, 0))
        ctx.stats.text_tokens += len(idx.starts)
        ctx.stats.indexed_tokens += sum(idx.count(a, b) for a, b in chunks)
        return fit(text, chunks, ctx, idx)
