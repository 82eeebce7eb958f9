"""Document-level layout for the PDF parser: running headers/footers, headings, reading order.

Reading order (per page, on blocks, never ``sort=True``):

1. Column gutters are found from the *narrow* lines (narrower than 55% of the text width):
   an x-interval where their summed height ("coverage") is near zero, at least
   :data:`MIN_GUTTER` wide, with a real column on each side. Full-width lines (titles,
   abstracts, footnotes) are left out, so they cannot hide a gutter.
2. Each block (or table) lies in one column, or spans columns. A block that crosses a
   gutter only because PyMuPDF glued two columns' lines together is split by lines.
3. Spanning items cut the page into horizontal sections; a section is read column by
   column, top to bottom, then the spanning item below it.

Running headers and footers are lines in the top or bottom 12% of a page whose text,
lower-cased with digits folded to ``#`` ("Page 3 of 9" == "Page 4 of 9"), recurs on at
least 40% of the pages (and on two or more).

Headings: a block of at most 3 short lines whose font is at least 15% larger than the body
size (the char-weighted median), or a single bold line at body size. Levels 1..3 follow the
distinct heading sizes, largest first; bold body-size headings come last.
"""

from __future__ import annotations

import re
from collections import Counter, defaultdict

from tessera.parsing.pdf_extract import BAND
from tessera.parsing.pdf_model import Box, Item, Line, PageContent, Table, TextBlock, union

MIN_GUTTER = 6.0
NARROW = 0.55
_DIGITS = re.compile(r"\d+")
_SPACES = re.compile(r"\s+")


# -- running headers and footers ---------------------------------------------------------


def _norm(text: str) -> str:
    return _SPACES.sub(" ", _DIGITS.sub("#", text.lower())).strip()


def remove_running_lines(pages: list[PageContent]) -> int:
    """Drop repeated header/footer lines from every page; returns how many were removed."""
    if len(pages) < 2:
        return 0
    found: list[tuple[TextBlock, Line, tuple[str, str]]] = []
    seen: dict[tuple[str, str], set[int]] = defaultdict(set)
    for page in pages:
        top, bottom = page.height * BAND, page.height * (1 - BAND)
        for block in page.blocks:
            if top < block.bbox[1] and block.bbox[3] < bottom:
                continue
            for line in block.lines:
                zone = "top" if line.bbox[3] <= top else "bottom" if line.bbox[1] >= bottom else ""
                if zone:
                    key = (zone, _norm(line.text))
                    seen[key].add(page.number)
                    found.append((block, line, key))
    need = max(2, int(0.4 * len(pages) + 0.999))
    running = {key for key, where in seen.items() if len(where) >= need}
    drop: dict[int, set[int]] = defaultdict(set)
    for block, line, key in found:
        if key in running:
            drop[id(block)].add(id(line))
    if not drop:
        return 0
    for page in pages:
        kept_blocks = []
        for block in page.blocks:
            gone = drop.get(id(block))
            if gone:
                block.lines = [ln for ln in block.lines if id(ln) not in gone]
                if not block.lines:
                    continue
                block.refresh()
            kept_blocks.append(block)
        page.blocks = kept_blocks
    return sum(len(v) for v in drop.values())


# -- headings ----------------------------------------------------------------------------


def body_size(pages: list[PageContent]) -> float:
    weights: Counter[float] = Counter()
    for page in pages:
        for block in page.blocks:
            for line in block.lines:
                if line.size > 0:
                    weights[int(line.size * 2 + 0.5) / 2] += len(line.text)
    if not weights:
        return 0.0
    total, acc = sum(weights.values()), 0
    for size in sorted(weights):
        acc += weights[size]
        if acc * 2 >= total:
            return size
    return 0.0


def _heading_size(block: TextBlock, body: float) -> float:
    """The block's size if it looks like a heading (0 if not); bold body text gives ``body``."""
    if body <= 0 or len(block.lines) > 3:
        return 0.0
    text = " ".join(ln.text for ln in block.lines)
    if len(text) > 160 or not any(c.isalpha() for c in text):
        return 0.0
    size = max(ln.size for ln in block.lines)
    if size >= body * 1.15:
        return size
    if (
        len(block.lines) == 1
        and block.lines[0].bold
        and size >= body * 0.95
        and len(text) <= 90
        and not text.endswith((".", ":", ","))
    ):
        return body
    return 0.0


def _split_leading_heading(block: TextBlock, body: float) -> list[TextBlock]:
    """A block whose first line is a heading (bold or larger, then plain body lines) as two."""
    lines = block.lines
    if len(lines) < 2 or body <= 0:
        return [block]
    first, second = lines[0], lines[1]
    stands_out = first.size >= body * 1.15 and first.size >= second.size * 1.1
    bold = first.bold and not second.bold and first.size >= body * 0.95
    if (stands_out or bold) and len(first.text) <= 90 and not first.text.endswith((".", ",", ":")):
        return [TextBlock([first], first.bbox), TextBlock(lines[1:], union([ln.bbox for ln in lines[1:]]))]
    return [block]


def mark_headings(pages: list[PageContent]) -> None:
    body = body_size(pages)
    for page in pages:
        page.blocks = [part for block in page.blocks for part in _split_leading_heading(block, body)]
    found: list[tuple[TextBlock, float]] = []
    for page in pages:
        for block in page.blocks:
            size = _heading_size(block, body)
            if size > 0:
                found.append((block, round(size * 2) / 2))
    sizes = sorted({s for _, s in found if s > body}, reverse=True)
    rank = {s: min(3, k + 1) for k, s in enumerate(sizes)}
    for block, size in found:
        block.kind = "heading"
        block.level = rank.get(size, min(3, len(sizes) + 1))


# -- reading order -----------------------------------------------------------------------


def _coverage(intervals: list[tuple[float, float, float]]) -> list[tuple[float, float, float]]:
    """Piecewise-constant summed weight of ``(x0, x1, w)`` intervals: ``[(xa, xb, weight)]``."""
    events: list[tuple[float, float]] = []
    for x0, x1, w in intervals:
        events.append((x0, w))
        events.append((x1, -w))
    events.sort()
    out, cur, last = [], 0.0, None
    for x, dw in events:
        if last is not None and x > last:
            out.append((last, x, cur))
        cur += dw
        last = x
    return out


def gutters(lines: list[Box], x0: float, x1: float) -> list[tuple[float, float]]:
    width = x1 - x0
    if width <= 0:
        return []
    narrow = [(b[0], b[2], b[3] - b[1]) for b in lines if b[2] - b[0] < NARROW * width]
    if len(narrow) < 6:
        return []
    segments = _coverage(narrow)
    peak = max(w for _, _, w in segments)
    low = 0.05 * peak
    gaps: list[tuple[float, float]] = []
    for a, b, w in segments:
        if w <= low:
            if gaps and abs(gaps[-1][1] - a) < 1e-6:
                gaps[-1] = (gaps[-1][0], b)
            else:
                gaps.append((a, b))
    inner = [(a, b) for a, b in gaps if b - a >= MIN_GUTTER and a > x0 + 0.1 * width and b < x1 - 0.1 * width]
    out = []
    bounds = [x0, *[g for gap in inner for g in gap], x1]
    for k, gap in enumerate(inner):
        left = (bounds[2 * k], bounds[2 * k + 1])
        right = (bounds[2 * k + 2], bounds[2 * k + 3])
        if _column_mass(narrow, left, peak) and _column_mass(narrow, right, peak):
            out.append(gap)
    return out


def _column_mass(narrow: list[tuple[float, float, float]], col: tuple[float, float], peak: float) -> bool:
    members = [w for a, b, w in narrow if a >= col[0] - 1 and b <= col[1] + 1]
    return len(members) >= 3 and sum(members) >= 0.25 * peak


def _column_of(box: Box, cols: list[tuple[float, float]]) -> int:
    """Index of the one column ``box`` lies in, or -1 when it spans two or more."""
    hits = []
    for k, (a, b) in enumerate(cols):
        overlap = min(box[2], b) - max(box[0], a)
        if overlap > min(0.2 * (b - a), 0.5 * (box[2] - box[0])) or overlap > 0.9 * (box[2] - box[0]):
            hits.append(k)
    if len(hits) == 1:
        return hits[0]
    if not hits:  # inside a gutter: the nearest column
        cx = (box[0] + box[2]) / 2
        return min(range(len(cols)), key=lambda k: min(abs(cx - cols[k][0]), abs(cx - cols[k][1])))
    return -1


def order_page(page: PageContent) -> None:
    """Fill ``page.items`` with blocks and tables in reading order."""
    units: list[Item] = [*page.blocks, *page.tables]
    if len(units) <= 1:
        page.items = units
        return
    x0 = min(u.bbox[0] for u in units)
    x1 = max(u.bbox[2] for u in units)
    line_boxes = [ln.bbox for b in page.blocks for ln in b.lines]
    gaps = gutters(line_boxes, x0, x1)
    if not gaps:
        page.items = sorted(units, key=_yx)
        return
    edges = [x0, *[g for gap in gaps for g in gap], x1]
    cols = [(edges[2 * k], edges[2 * k + 1]) for k in range(len(gaps) + 1)]
    placed: list[tuple[int, Item]] = []
    for u in units:
        col = _column_of(u.bbox, cols)
        if col < 0 and isinstance(u, TextBlock):
            parts = _split_block(u, cols)
            if parts:
                placed.extend(parts)
                continue
        placed.append((col, u))
    spanning = sorted((u for c, u in placed if c < 0), key=_yx)
    cuts = [(u.bbox[1] + u.bbox[3]) / 2 for u in spanning]
    sections: list[list[tuple[int, Item]]] = [[] for _ in range(len(spanning) + 1)]
    for c, u in placed:
        if c >= 0:
            cy = (u.bbox[1] + u.bbox[3]) / 2
            sections[sum(1 for y in cuts if y < cy)].append((c, u))
    items: list[Item] = []
    for k, sec in enumerate(sections):
        sec.sort(key=lambda cu: (cu[0], cu[1].bbox[1], cu[1].bbox[0]))
        items.extend(u for _, u in sec)
        if k < len(spanning):
            items.append(spanning[k])
    page.items = items


def _yx(u: Item) -> tuple[float, float]:
    return (round(u.bbox[1] / 3), u.bbox[0])


def _split_block(block: TextBlock, cols: list[tuple[float, float]]) -> list[tuple[int, Item]]:
    """A block whose lines each sit in one column, cut into one block per column."""
    by_col: dict[int, list[Line]] = {}
    for ln in block.lines:
        c = _column_of(ln.bbox, cols)
        if c < 0:
            return []
        by_col.setdefault(c, []).append(ln)
    if len(by_col) < 2:
        return []
    return [(c, TextBlock(lines, union([ln.bbox for ln in lines]))) for c, lines in by_col.items()]


# -- tables across page breaks -----------------------------------------------------------


def _row_key(row: list[str]) -> tuple[str, ...]:
    return tuple(_norm(c) for c in row)


def merge_tables(pages: list[PageContent]) -> int:
    """Join a table that ends page N with one that starts page N+1 (same column count)."""
    merged = 0
    tail: Item | None = None
    for page in pages:
        if page.items:
            head = page.items[0]
            if (
                isinstance(tail, Table)
                and isinstance(head, Table)
                and tail.columns == head.columns
                and tail.row_pages[-1] == page.number - 1
            ):
                rows, row_pages = head.rows, head.row_pages
                if _row_key([c.text for c in rows[0]]) == _row_key([c.text for c in tail.rows[0]]):
                    rows, row_pages = rows[1:], row_pages[1:]  # the header, repeated
                tail.rows.extend(rows)
                tail.row_pages.extend(row_pages)
                page.items = page.items[1:]
                merged += 1
            if page.items:
                tail = page.items[-1]
    return merged
