"""Span metrics of retrieved chunks against reference excerpts (character level).

Definitions follow the Chroma chunking study ("Evaluating Chunking Strategies for
Retrieval", Smith & Troynikov, 2024), computed on code point ranges of one corpus:

- ``hit``: the union of the overlaps between retrieved chunks and reference ranges.
- **recall** = |hit| / Σ|reference|.
- **precision** = |hit| / Σ|retrieved chunk| (retrieved chunks summed, not merged: an
  overlapping pair counts twice, which is the cost of overlap).
- **IoU** = |hit| / (Σ|retrieved chunk| + |reference not hit|).
- **precision-omega** = |hit over all chunks| / |union of every chunk touching a reference
  ∪ reference not covered|: the best precision any retriever could reach with this chunking.

Retrieved chunks of another corpus score nothing but still count in the denominators.
Also here: **intact**, whether a reference lies whole inside one chunk, and
:class:`TokenGrid`, which turns character spans into spans of model tokens, so the same
definitions can be computed at the token level (the study states them over tokens): a token
belongs to a span when its characters overlap it.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

Range = tuple[int, int]


@dataclass(frozen=True)
class Span:
    corpus: str
    start: int
    end: int

    @property
    def length(self) -> int:
        return self.end - self.start


def merge(ranges: Iterable[Range]) -> list[Range]:
    """Union of half-open ranges as sorted, disjoint, non-touching ranges."""
    out: list[Range] = []
    for s, e in sorted(r for r in ranges if r[1] > r[0]):
        if out and s <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], e))
        else:
            out.append((s, e))
    return out


def total(ranges: Iterable[Range]) -> int:
    return sum(e - s for s, e in ranges)


def overlaps(a: Range, refs: Sequence[Range]) -> list[Range]:
    return [(max(a[0], s), min(a[1], e)) for s, e in refs if max(a[0], s) < min(a[1], e)]


@dataclass(frozen=True)
class Scores:
    recall: float
    precision: float
    iou: float


def score(retrieved: Sequence[Span], references: Sequence[Span]) -> Scores:
    """Recall, precision and IoU of one question's retrieved chunks."""
    corpus = references[0].corpus
    refs = [(r.start, r.end) for r in references]
    hit = merge(o for c in retrieved if c.corpus == corpus for o in overlaps((c.start, c.end), refs))
    hit_len = total(hit)
    ref_total = sum(r.length for r in references)
    retrieved_total = sum(c.length for c in retrieved)
    missed = total(merge(refs)) - hit_len
    return Scores(
        recall=hit_len / ref_total if ref_total else 0.0,
        precision=hit_len / retrieved_total if retrieved_total else 0.0,
        iou=hit_len / (retrieved_total + missed) if retrieved_total + missed else 0.0,
    )


def precision_omega(chunks: Sequence[Span], references: Sequence[Span]) -> float:
    """Precision with every chunk that touches a reference retrieved, and nothing else."""
    corpus = references[0].corpus
    refs = [(r.start, r.end) for r in references]
    touching = [(c.start, c.end) for c in chunks if c.corpus == corpus and overlaps((c.start, c.end), refs)]
    hit = merge(o for c in touching for o in overlaps(c, refs))
    uncovered = total(merge(refs)) - total(hit)
    denom = total(merge(touching)) + uncovered
    return total(hit) / denom if denom else 0.0


def intact(chunks: Sequence[Span], ref: Span) -> bool:
    """Whether the reference lies whole inside at least one of the chunks."""
    return any(c.corpus == ref.corpus and c.start <= ref.start and ref.end <= c.end for c in chunks)


class TokenGrid:
    """The model-token offsets of one corpus text: :meth:`tokens` maps a code point span to
    the half-open range of token indices whose characters overlap it (a span of whitespace
    only, between tokens, maps to an empty range)."""

    def __init__(self, corpus: str, offsets: Sequence[tuple[int, int]]) -> None:
        self.corpus = corpus
        self._starts = [a for a, _ in offsets]
        self._ends = [b for _, b in offsets]

    def tokens(self, span: Span) -> Span:
        if span.corpus != self.corpus:
            return Span(span.corpus, span.start, span.end)  # another corpus scores nothing anyway
        first = bisect_right(self._ends, span.start)  # the first token ending after the start
        last = bisect_left(self._starts, span.end)  # tokens starting before the end
        return Span(span.corpus, first, max(first, last))
