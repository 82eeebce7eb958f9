"""Token windows over a character range, measured with the model's tokenizer.

Windows start at word boundaries where possible, cover every character of the range
(non-token characters go to the preceding window), overlap by ``overlap`` tokens, and each
rendered window is verified with the real tokenizer, then shrunk until it fits.
"""

from __future__ import annotations

from collections.abc import Callable

from tessera.chunking.base import ChunkContext
from tessera.errors import ChunkingError


def trim(text: str, start: int, end: int) -> tuple[int, int]:
    """Shrink ``[start, end)`` to exclude surrounding whitespace (may become empty)."""
    while start < end and text[start].isspace():
        start += 1
    while end > start and text[end - 1].isspace():
        end -= 1
    return start, end


def token_windows(
    text: str,
    start: int,
    end: int,
    ctx: ChunkContext,
    size: int,
    overlap: int,
    render: Callable[[str], str],
) -> list[tuple[int, int]]:
    """Split ``text[start:end]`` into trimmed, non-empty windows whose rendering fits."""
    if size < 1:
        raise ChunkingError(f"window size must be >= 1 token, got {size} (context too long for max_tokens)")
    sub = text[start:end]
    offs, boundary = ctx.counter.spans(sub)
    n = len(offs)
    if n == 0:
        s, e = trim(text, start, end)
        return [(s, e)] if s < e else []
    out: list[tuple[int, int]] = []
    i = 0
    while i < n:
        limit = min(n, i + size)
        fallback = False
        while True:
            j = limit
            while i + 1 < j < n and not boundary[j]:
                j -= 1
            if j < n and not boundary[j]:
                j = limit  # one word longer than the window: cut inside it
            cs = 0 if i == 0 else offs[i][0]
            ce = offs[j][0] if j < n else len(sub)
            if ctx.fits(render(sub[cs:ce].strip())):
                break
            if j - i <= 1:
                # A word piece re-tokenized alone can need more tokens than in context:
                # cut this one token's characters instead.
                fallback = True
                break
            limit = i + max(1, (j - i) * 9 // 10)
        if fallback:
            out.extend(_char_windows(text, start + cs, start + ce, ctx, render))
        else:
            s, e = trim(text, start + cs, start + ce)
            if s < e:
                out.append((s, e))
        if j >= n:
            break
        nxt = j - overlap
        while nxt > i and not boundary[nxt]:
            nxt -= 1
        i = nxt if nxt > i else j
    return out


def _char_windows(
    text: str, start: int, end: int, ctx: ChunkContext, render: Callable[[str], str]
) -> list[tuple[int, int]]:
    """Greedy character windows over ``[start, end)``, each the longest that fits."""
    out: list[tuple[int, int]] = []
    a = start
    while a < end:
        if not ctx.fits(render(text[a : a + 1].strip())):
            raise ChunkingError(f"the character at {a} does not fit max_tokens with its context")
        lo, hi = a + 1, end
        while lo < hi:  # the largest b in [lo, hi] whose window fits
            mid = (lo + hi + 1) // 2
            if ctx.fits(render(text[a:mid].strip())):
                lo = mid
            else:
                hi = mid - 1
        s, e = trim(text, a, lo)
        if s < e:
            out.append((s, e))
        a = lo
    return out
