"""Strategy ``recursive``: split at the strongest separator that works, then merge greedily.

Separators, strongest first: blank lines (paragraphs), single newlines, sentence
boundaries (:mod:`tessera.chunking.sentences`), clause punctuation (``; : ,``), whitespace
(words), and finally model tokens (inside a word longer than a chunk). A piece larger than
the size is split at the next separator down; the resulting atoms are then merged greedily
in document order while a chunk stays within the size, like LangChain's
``RecursiveCharacterTextSplitter`` but measured in the model's own tokens and with exact
offsets (separators and surrounding whitespace lie between chunks, nothing is rewritten).

* Size: ``target_tokens`` content tokens, but never more than ``max_tokens`` less the
  prefix and special tokens; ``max_tokens`` is the hard budget of the embedding text.
* Overlap: each chunk after the first starts up to ``overlap_tokens`` tokens before the end
  of the previous one, at a sentence start when one gives at least half the overlap, else
  at the word start that gives the most overlap within the limit (never more).
* Speed: the document is encoded once (:class:`TokenIndex`); a range's tokens are counted
  by bisection over token offsets, so nothing is re-tokenized while splitting or merging.
  The final chunks are recounted in one batch (:func:`fit`); a chunk that re-tokenizes over
  ``max_tokens`` (rare: a cut inside a word) is split again with a smaller size.
* Coverage: every non-whitespace character of the document lies in at least one chunk.
"""

from __future__ import annotations

import re
from bisect import bisect_left

from tessera.chunking import versions
from tessera.chunking.assemble import assemble
from tessera.chunking.base import ChunkContext
from tessera.chunking.sentences import ESCAPED_BLANK_LINE, ESCAPED_BREAKS, sentence_spans
from tessera.chunking.token import Span, plain_drafts, window_size
from tessera.chunking.windows import _char_windows
from tessera.types import Chunk, ParsedDocument, SourceDocument

PARAGRAPH, LINE, SENTENCE, CLAUSE, WORD, TOKEN = range(6)
_SEPARATOR = {
    PARAGRAPH: re.compile(rf"\n[^\S\n]*\n\s*|(?P<esc>{ESCAPED_BLANK_LINE})\s*"),
    LINE: re.compile(rf"\n\s*|(?P<esc>{ESCAPED_BREAKS})\s*"),
    CLAUSE: re.compile(r"(?<=[;:,])\s+"),
    WORD: re.compile(r"\s+"),
}
_LEADING = frozenset({PARAGRAPH, LINE})
r"""Levels whose separator also takes the spaces and tabs before its first newline. They are
found by scanning back from the newline: a pattern that starts with ``[^\S\n]*`` is retried
at every space of a run, quadratic in the run (deep list indentation: 18 s for 1 MB)."""


class TokenIndex:
    """One encode of the document: counts the tokens starting inside any character range."""

    def __init__(self, text: str, ctx: ChunkContext) -> None:
        offs, _ = ctx.counter.spans(text)
        self.starts = [s for s, _ in offs]

    def at(self, pos: int) -> int:
        """Index of the first token starting at or after ``pos``."""
        return bisect_left(self.starts, pos)

    def count(self, a: int, b: int) -> int:
        return bisect_left(self.starts, b) - bisect_left(self.starts, a)


def _pieces(text: str, a: int, b: int, level: int) -> list[tuple[int, int]]:
    """``text[a:b]`` (trimmed) cut at separators of one level, as trimmed ranges."""
    if level == SENTENCE:
        return sentence_spans(text, a, b)
    out: list[tuple[int, int]] = []
    prev = a
    leading = level in _LEADING
    for m in _SEPARATOR[level].finditer(text, a, b):
        if m.lastgroup == "esc":  # escaped line breaks are text: they end the piece before them
            if m.end("esc") > prev:
                out.append((prev, m.end("esc")))
            prev = m.end()
            continue
        start = m.start()
        if leading:
            while start > prev and text[start - 1] != "\n" and text[start - 1].isspace():
                start -= 1
        if start > prev:
            out.append((prev, start))
        prev = m.end()
    if prev < b:
        out.append((prev, b))
    return out


def atoms(
    text: str, a: int, b: int, idx: TokenIndex, size: int, level: int = PARAGRAPH
) -> list[tuple[int, int]]:
    """Trimmed ranges of at most ``size`` tokens covering every non-space char of ``[a, b)``."""
    out: list[tuple[int, int]] = []
    stack = [(a, b, level)]
    while stack:
        s, e, lvl = stack.pop()
        if idx.count(s, e) <= size:
            out.append((s, e))
            continue
        while lvl < TOKEN:
            parts = _pieces(text, s, e, lvl)
            if len(parts) > 1:
                stack.extend((ps, pe, lvl + 1) for ps, pe in reversed(parts))
                break
            lvl += 1
        else:  # one word over the size: cut it every ``size`` tokens
            first = idx.at(s)
            cuts = [idx.starts[k] for k in range(first + size, idx.at(e), size)]
            out.extend(zip([s, *cuts], [*cuts, e], strict=True))
    return out


def _overlap_start(text: str, idx: TokenIndex, cs: int, ce: int, e: int, size: int, overlap: int) -> int:
    """Where the chunk ending at ``e`` starts to overlap the previous ``[cs, ce)``; -1: none."""
    if overlap <= 0:
        return -1
    end_tok = idx.at(ce)
    lo = max(idx.at(cs) + 1, end_tok - overlap, idx.at(e) - size)
    if lo >= end_tok:
        return -1
    starts = idx.starts
    lo_pos = starts[lo]
    for s, _ in sentence_spans(text, cs, ce):  # the earliest sentence start within the limit
        if s >= lo_pos:
            if idx.count(s, ce) * 2 >= overlap:
                return s
            break
    for t in range(lo, end_tok):
        p = starts[t]
        if text[p - 1].isspace():
            return p
    return -1


def merge(
    text: str, pieces: list[tuple[int, int]], idx: TokenIndex, size: int, overlap: int
) -> list[tuple[int, int]]:
    """Greedy merge of consecutive atoms up to ``size`` tokens, with up to ``overlap``."""
    out: list[tuple[int, int]] = []
    if not pieces:
        return out
    cs, ce = pieces[0]
    for s, e in pieces[1:]:
        if idx.count(cs, e) <= size:
            ce = e
            continue
        out.append((cs, ce))
        p = _overlap_start(text, idx, cs, ce, e, size, overlap)
        cs, ce = (p if p >= 0 else s), e
    out.append((cs, ce))
    return out


def fit(
    text: str, spans: list[tuple[int, int]], ctx: ChunkContext, idx: TokenIndex, refit: set[int] | None = None
) -> list[Span]:
    """Exact token counts for ``spans`` (one batch); over-budget spans are split again.

    The starts of the re-split pieces are added to ``refit``. The result is in document
    order with starts and ends increasing: a re-split piece that lies inside an overlapping
    neighbour is dropped (the neighbour covers it).
    """
    limit, prefix = ctx.config.max_tokens, ctx.document_prefix
    counts = ctx.counter.count_many([prefix + text[a:b] for a, b in spans])
    out: list[Span] = []
    resplit = False
    for (a, b), c in zip(spans, counts, strict=True):
        if c <= limit:
            out.append((a, b, c))
            continue
        smaller = idx.count(a, b) - (c - limit)
        if smaller < 1:
            parts = [(s, e, -1) for s, e in _char_windows(text, a, b, ctx, str)]
        else:
            parts = fit(text, merge(text, atoms(text, a, b, idx, smaller), idx, smaller, 0), ctx, idx)
        if refit is not None:
            refit.update(p[0] for p in parts)
        out.extend(parts)
        resplit = True
    if not resplit:
        return out
    kept: list[Span] = []  # drop pieces inside another chunk (an overlapping neighbour)
    for x in sorted(out, key=lambda x: (x[0], -x[1])):
        if not kept or x[1] > kept[-1][1]:
            kept.append(x)
    return kept


def recursive_spans(text: str, ctx: ChunkContext, refit: set[int] | None = None) -> list[Span]:
    """The ``recursive`` chunks of ``text`` (see the module docstring)."""
    idx = TokenIndex(text, ctx)
    size, overlap = window_size(ctx)
    s, e = len(text) - len(text.lstrip()), len(text.rstrip())
    if s >= e:
        return []
    chunks = merge(text, atoms(text, s, e, idx, size), idx, size, overlap)
    ctx.stats.text_tokens += len(idx.starts)
    ctx.stats.indexed_tokens += sum(idx.count(a, b) for a, b in chunks)
    return fit(text, chunks, ctx, idx, refit)


class RecursiveChunker:
    name = "recursive"
    version = versions.RECURSIVE

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        refit: set[int] = set()
        spans = recursive_spans(parsed.text, ctx, refit)
        flags = [("recursive", "refit") if s in refit else ("recursive",) for s, _, _ in spans]
        drafts = plain_drafts(parsed, spans, "text", flags)
        return assemble(doc, parsed, ctx, drafts, self.version)
