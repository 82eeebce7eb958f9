"""Strategy ``token``: fixed windows over the model's own tokens, with exact offsets.

The text is encoded once (``ctx.counter.spans``: the token offsets). With ``s`` content
tokens per window and ``o`` tokens of overlap, window ``k`` covers the token indices
``[k*(s-o), k*(s-o) + s)`` (half-open, the last one clipped at the end), so consecutive
windows share exactly ``o`` tokens and the index holds ``s/(s-o)`` tokens per token of text
(:func:`inflation`; the measured factor is added to ``ctx.stats``).

``s`` is ``target_tokens`` but never more than ``max_tokens`` less the tokens of an empty
embedding text (``ctx.document_prefix`` and the special tokens); ``o`` is
``overlap_tokens``, at most ``s - 1``. A window's text is the source slice from its first
token's start to its last token's end (whitespace between windows lies outside; characters
the tokenizer drops, such as control characters, are taken into the neighbouring window so
that every non-whitespace character is in some chunk).

Every window's count is the exact count of its embedding text as the model sees it
(``ctx.document_prefix`` + slice, special tokens included): re-tokenizing a slice that
starts inside a word can need more tokens than the slice had in context. Only a window that
then exceeds ``max_tokens`` is shrunk (flag ``shrunk``): its end moves back by the excess
until it fits, and if the next window no longer reaches the cut, the tokens in between get a
window of their own. Nothing is ever truncated.

How the counts are obtained (:meth:`TokenWindows.counts`). With a BERT WordPiece tokenizer
(``counter.local_wordpiece``) the text is not encoded again. Call token ``k`` a *boundary*
when it starts a word (pre-token) and its characters are not shared with token ``k-1``
(one character normalized into several pieces, e.g. Hangul under NFD). Normalization is per
character and pre-tokenization splits only at whitespace and punctuation, so a slice from
boundary ``i`` re-tokenizes every whole word as in context, and a slice that ends after a
word's first pieces re-tokenizes them alike (greedy longest-match-first from the left: the
longest vocabulary prefix of the cut word is the one of the whole word, piece after piece),
provided the end cut is clean (token ``j`` shares no character with token ``j-1``). Hence:

* window ``[i, j)`` starting at a boundary, when the prefix ends in a split (``prefix + "x"``
  puts ``x`` in a word of its own): ``count(prefix) + (j - i)``, no tokenizer call;
* otherwise, ``w`` being its first boundary after ``i``: ``count(prefix + text[cs:h]) +
  (j - w)`` with ``h`` the start of token ``w``, the short head recounted in one batch
  (the whole window when it holds no boundary or its end cut is not clean).

With any other tokenizer every window is recounted in full (``count_many``).
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence

from tessera.chunking import versions
from tessera.chunking.assemble import Draft, assemble
from tessera.chunking.base import ChunkContext
from tessera.chunking.headings import sections
from tessera.chunking.windows import _char_windows
from tessera.errors import ChunkingError
from tessera.types import Chunk, ParsedDocument, SourceDocument

Span = tuple[int, int, int]
"""``(start, end, tokens)``: a chunk's range and its exact token count as embedded."""


def inflation(size: int, overlap: int) -> float:
    """Tokens indexed per token of text by windows of ``size`` overlapping by ``overlap``."""
    if not 0 <= overlap < size:
        raise ValueError(f"need 0 <= overlap < size, got size={size}, overlap={overlap}")
    return size / (size - overlap)


def configured_inflation(ctx: ChunkContext) -> float:
    """The nominal factor ``s/(s-o)`` of this context (``ctx.stats.inflation``: the measured one)."""
    return inflation(*window_size(ctx))


def window_size(ctx: ChunkContext) -> tuple[int, int]:
    """``(s, o)``: content tokens per window and overlap, within the hard budget."""
    room = ctx.config.max_tokens - ctx.tokens("")
    size = min(ctx.config.target_tokens, room)
    if size < 1:
        raise ChunkingError(f"no room for text: the document prefix alone uses {ctx.tokens('')} tokens")
    return size, min(ctx.config.overlap_tokens, size - 1)


class TokenWindows:
    """The windows of one text (see the module docstring); ``spans()`` returns them."""

    def __init__(self, text: str, ctx: ChunkContext) -> None:
        self.text, self.ctx = text, ctx
        self.offs, self.starts = ctx.counter.spans(text)
        self.size, self.overlap = window_size(ctx)
        self.shrunk: set[int] = set()  # starts of the windows that had to shrink

    def _range(self, i: int, j: int) -> tuple[int, int]:
        """Characters of tokens ``[i, j)``, plus dropped non-space characters up to the next token."""
        text, offs, n = self.text, self.offs, len(self.offs)
        cs = offs[i][0]
        if i == 0:
            cs = min(cs, len(text) - len(text.lstrip()))
        ce = offs[j - 1][1]
        nxt = offs[j][0] if j < n else len(text)
        if nxt > ce and not text[ce:nxt].isspace():
            ce += len(text[ce:nxt].rstrip())
        return cs, ce

    def spans(self) -> list[Span]:
        text, n, ctx = self.text, len(self.offs), self.ctx
        if n == 0:  # nothing the tokenizer keeps: one chunk, if any non-space text
            s, e = len(text) - len(text.lstrip()), len(text.rstrip())
            return [(s, e, ctx.tokens(text[s:e]))] if s < e else []
        step, windows = self.size - self.overlap, []
        for i in range(0, n, step):
            windows.append((i, min(i + self.size, n)))
            if i + self.size >= n:
                break
        ranges = [self._range(i, j) for i, j in windows]
        counts, limit = self.counts(windows, ranges), ctx.config.max_tokens
        out: list[Span] = []
        for k, (i, j) in enumerate(windows):
            if counts[k] <= limit:
                out.append((*ranges[k], counts[k]))
            else:
                need = windows[k + 1][0] if k + 1 < len(windows) else n
                parts = self._shrink(i, j, need)
                self.shrunk.update(p[0] for p in parts)
                out.extend(parts)
        ctx.stats.text_tokens += n
        ctx.stats.indexed_tokens += sum(j - i for i, j in windows)
        return out

    def counts(self, windows: list[tuple[int, int]], ranges: list[tuple[int, int]]) -> list[int]:
        """Exact tokens of ``prefix + text[cs:ce]`` for each window (see the module docstring)."""
        text, ctx, prefix = self.text, self.ctx, self.ctx.document_prefix
        if getattr(ctx.counter, "local_wordpiece", False) is not True:
            return ctx.counter.count_many([prefix + text[cs:ce] for cs, ce in ranges])
        offs, starts, n = self.offs, self.starts, len(self.offs)

        def boundary(k: int) -> bool:
            return starts[k] and (k == 0 or offs[k - 1][1] <= offs[k][0])

        base = ctx.tokens("") if _prefix_splits(ctx) else -1
        counts = [0] * len(windows)
        heads: list[str] = []
        rests: list[tuple[int, int]] = []  # (window, tokens after its head)
        for k, ((i, j), (cs, ce)) in enumerate(zip(windows, ranges, strict=True)):
            if j < n and offs[j - 1][1] > offs[j][0]:  # end cut inside a character: recount all
                heads.append(prefix + text[cs:ce])
                rests.append((k, 0))
                continue
            if base >= 0 and boundary(i):
                counts[k] = base + j - i
                continue
            w = i + 1
            while w < j and not boundary(w):
                w += 1
            heads.append(prefix + text[cs : offs[w][0] if w < j else ce])
            rests.append((k, j - w))
        for (k, rest), c in zip(rests, ctx.counter.count_many(heads) if heads else [], strict=True):
            counts[k] = c + rest
        return counts

    def _shrink(self, i: int, j: int, need: int) -> list[Span]:
        """Windows from token ``i`` that fit, together reaching at least token ``need``."""
        out: list[Span] = []
        a, b = i, j
        while a < need:
            while b > a:
                cs, ce = self._range(a, b)
                c = self.ctx.tokens(self.text[cs:ce])
                if c <= self.ctx.config.max_tokens:
                    out.append((cs, ce, c))
                    break
                b -= c - self.ctx.config.max_tokens
            if b <= a:  # one token that does not fit alone: cut its characters
                cs, ce = self._range(a, a + 1)
                out.extend((s, e, -1) for s, e in _char_windows(self.text, cs, ce, self.ctx, str))
                b = a + 1
            a, b = b, min(b + self.size, need)
        return out


def _prefix_splits(ctx: ChunkContext) -> bool:
    """Whether a word always starts right after ``ctx.document_prefix`` (``x`` stands alone)."""
    prefix = ctx.document_prefix
    if not prefix:
        return True
    offs, starts = ctx.counter.spans(prefix + "x")
    return bool(offs) and tuple(offs[-1]) == (len(prefix), len(prefix) + 1) and starts[-1]


def plain_drafts(
    parsed: ParsedDocument, spans: list[Span], kind: str, flags: Sequence[tuple[str, ...]]
) -> list[Draft]:
    """Drafts whose embedding text is the chunk text itself; ``flags`` aligned with ``spans``.

    Heading path and anchor are those of the heading section where the chunk starts; the
    parent is that section when it holds the whole chunk, else the whole document.
    """
    text, secs = parsed.text, sections(parsed)
    starts = [s.start for s in secs]
    out: list[Draft] = []
    for (s, e, n), fl in zip(spans, flags, strict=True):
        k = bisect_right(starts, s) - 1
        sec = secs[k] if k >= 0 else None
        inside = sec is not None and e <= sec.end
        out.append(
            Draft(
                start=s,
                end=e,
                embedding_text=text[s:e],
                heading_path=sec.path if sec else (),
                anchor=sec.anchor if sec else "",
                parent=(sec.start, sec.end) if sec is not None and inside else (0, len(text)),
                kind=kind,
                flags=fl,
                tokens=n,
            )
        )
    return out


class TokenChunker:
    name = "token"
    version = versions.TOKEN

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        windows = TokenWindows(parsed.text, ctx)
        spans = windows.spans()
        flags = [
            ("token_window", "shrunk") if s in windows.shrunk else ("token_window",) for s, _, _ in spans
        ]
        drafts = plain_drafts(parsed, spans, "text", flags)
        return assemble(doc, parsed, ctx, drafts, self.version)
