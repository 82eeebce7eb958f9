"""One table chunker for every format: rows, header rows, cells, and row-group parts.

Every parser renders a ``table`` block as Markdown-like lines of the normalized text, one
line per row: Markdown keeps its GFM source (``| a | b |`` then ``|---|---|``); HTML emits
``| h | h |``, ``| --- | --- |`` then the rows (its first row is the header); PDF emits
``| h | h |``, ``|---|---|`` then the rows. HTML and PDF escape a ``|`` inside a cell as
``\\|``. So:

* rows are the block's non-blank lines, trimmed; the *header* is the first row plus, when
  the second line is a delimiter row (only ``|``, ``:``, ``-`` and blanks), that line too;
  a table without a delimiter row takes its first row alone as header;
* cells are split at unescaped ``|`` (a ``\\`` right before a pipe escapes it, as in GFM);
  outer pipes are optional; a cell's range is trimmed, an empty cell is an empty range.

:func:`split_table` packs whole rows greedily up to ``target_tokens``; every part fits
``max_tokens`` as rendered. The first part starts with the header (its range includes it);
later parts repeat the header as ``context`` before their own rows, unless the header
alone takes more than half of ``max_tokens`` (then parts go without it). A row (or the
header) too big alone is cut at cell boundaries, a cell too big at token windows, and those
parts are flagged ``row_split``; nothing is ever truncated or dropped.
"""

from __future__ import annotations

import re
from bisect import bisect_left, bisect_right
from collections.abc import Callable
from dataclasses import dataclass
from typing import NamedTuple

from tessera.chunking.base import ChunkContext
from tessera.chunking.windows import token_windows, trim
from tessera.errors import ChunkingError
from tessera.types import Block

Span = tuple[int, int]
"""A half-open ``[start, end)`` range of the normalized text."""
Render = Callable[[str, str], str]
"""``render(context, body)``: the embedding text of a part (breadcrumb etc. are the caller's)."""
HEADER = -1
"""The row index of the header row in :class:`CellSpan`."""

_DELIMITER = re.compile(r"[ \t]*\|?[ \t]*:?-+:?[ \t]*(?:\|[ \t]*:?-+:?[ \t]*)*\|?[ \t]*")


@dataclass(frozen=True)
class TableLayout:
    """Rows and cells of one table block; every range is in the normalized text.

    ``header`` spans the header row and its delimiter line (if any); ``header_cells`` are
    the header row's cells. ``rows`` are the body rows in order (header excluded, each a
    trimmed line) and ``cells[i]`` the cell ranges of ``rows[i]``, left to right.
    """

    header: Span
    header_cells: tuple[Span, ...]
    rows: tuple[Span, ...]
    cells: tuple[tuple[Span, ...], ...]

    def row_cells(self, row: int) -> tuple[Span, ...]:
        """Cells of body row ``row``, or of the header row for :data:`HEADER`."""
        return self.header_cells if row == HEADER else self.cells[row]


class CellSpan(NamedTuple):
    """A cell (or, in a ``row_split`` part, the piece of it inside the part)."""

    row: int
    """Body row index, or :data:`HEADER`."""
    col: int
    start: int
    end: int


@dataclass(frozen=True)
class TablePart:
    """One chunk-to-be of a split table.

    ``[start, end)`` is trimmed and made of whole rows (the first part also holds the
    header, and any ``lead`` text before it), except in a ``row_split`` part, which holds a
    piece of one row. ``rows`` is the half-open range of body rows it touches (``(0, 0)``
    for a part of the header alone); ``header`` says whether the range holds header text.
    ``context`` is repeated before the part's text in its embedding text. ``cells`` lists
    every cell in the range, clipped to it.
    """

    start: int
    end: int
    rows: Span
    header: bool
    context: str
    flags: tuple[str, ...]
    cells: tuple[CellSpan, ...]


class _Run(NamedTuple):
    start: int
    end: int
    first: int
    stop: int
    cut: bool


def table_rows(text: str, block: Block) -> TableLayout:
    """The rows, header and cells of ``text[block.start:block.end]``.

    Raises :class:`ChunkingError` for a block without any non-blank line.
    """
    lines: list[Span] = []
    pos = block.start
    while pos < block.end:
        nl = text.find("\n", pos, block.end)
        end = block.end if nl < 0 else nl
        a, b = trim(text, pos, end)
        if a < b:
            lines.append((a, b))
        pos = end + 1
    if not lines:
        raise ChunkingError(f"table block [{block.start}:{block.end}] has no rows")
    head = 2 if len(lines) > 1 and _DELIMITER.fullmatch(text, *lines[1]) else 1
    rows = tuple(lines[head:])
    return TableLayout(
        header=(lines[0][0], lines[head - 1][1]),
        header_cells=_cells(text, *lines[0]),
        rows=rows,
        cells=tuple(_cells(text, a, b) for a, b in rows),
    )


def _cells(text: str, a: int, b: int) -> tuple[Span, ...]:
    """Trimmed cell ranges of the row ``[a, b)`` (trimmed itself), split at unescaped pipes."""
    pipes: list[int] = []
    i = text.find("|", a, b)
    while i >= 0:
        if i == a or text[i - 1] != "\\":
            pipes.append(i)
        i = text.find("|", i + 1, b)
    fields = list(zip([a, *(p + 1 for p in pipes)], [*pipes, b], strict=True))
    if pipes and pipes[0] == a:
        fields = fields[1:]
    if pipes and pipes[-1] == b - 1 and len(fields) > 1:
        fields = fields[:-1]
    return tuple(trim(text, s, e) for s, e in fields)


def split_table(
    text: str, block: Block, ctx: ChunkContext, render: Render, lead: int | None = None
) -> list[TablePart]:
    """Split a table block into row-group parts that each fit ``ctx.config.max_tokens``.

    ``lead`` (at most ``block.start``; default the header's start) is where the first part
    starts: text before the header, such as a section's heading line, goes with it. Every
    part is flagged ``table_split``; parts cover every row exactly once, in order.
    """
    layout = table_rows(text, block)
    first = layout.header[0] if lead is None else min(lead, layout.header[0])
    head_start = trim(text, first, block.end)[0]
    header = text[layout.header[0] : layout.header[1]]
    context = header if 2 * ctx.tokens(render(header, "")) <= ctx.config.max_tokens else ""
    units = [(head_start, layout.header[1]), *layout.rows]  # unit k > 0 is body row k - 1

    def render_for(k: int) -> Callable[[str], str]:
        ctx_text = "" if k == 0 else context
        return lambda body: render(ctx_text, body)

    def cut_row(k: int) -> list[Span]:
        a, b = units[k]
        bounds = [s for s, _e in layout.row_cells(k - 1 if k else HEADER)[1:] if a < s < b]
        r = render_for(k)
        size = ctx.config.max_tokens - ctx.tokens(r(""))
        segs = list(zip([a, *bounds], [*bounds, b], strict=True))

        def windows(j: int) -> list[Span]:
            return token_windows(text, *segs[j], ctx, size, 0, r)

        return [(run.start, run.end) for run in _pack(text, segs, ctx, lambda _j: r, windows)]

    parts: list[TablePart] = []
    index = _CellIndex(layout)
    for run in _pack(text, units, ctx, render_for, cut_row):
        rows = (max(run.first - 1, 0), run.stop - 1)
        covered = ([HEADER] if run.first == 0 else []) + list(range(*rows))
        cells = tuple(
            CellSpan(row, col, max(cs, run.start), min(ce, run.end))
            for row in covered
            for col, (cs, ce) in index.near(row, run.start, run.end)
            if (cs < run.end and ce > run.start) or (cs == ce and run.start <= cs <= run.end)
        )
        flags = ("table_split", "row_split") if run.cut else ("table_split",)
        ctx_text = "" if run.first == 0 else context
        parts.append(TablePart(run.start, run.end, rows, run.first == 0, ctx_text, flags, cells))
    return parts


class _CellIndex:
    """The cells of a row that may touch a range, found by bisection: every ``row_split`` part
    of a very wide row scanning all of its cells was quadratic in the row's width."""

    def __init__(self, layout: TableLayout) -> None:
        self.layout = layout
        self._bounds: dict[int, tuple[list[int], list[int]]] = {}

    def near(self, row: int, start: int, end: int) -> list[tuple[int, Span]]:
        """``(col, cell)`` for the cells with ``cell end >= start`` and ``cell start <= end``
        (cells are disjoint and in order, so they are one run of columns)."""
        cells = self.layout.row_cells(row)
        if len(cells) <= 32:
            return list(enumerate(cells))
        if row not in self._bounds:
            self._bounds[row] = ([a for a, _ in cells], [b for _, b in cells])
        starts, ends = self._bounds[row]
        lo, hi = bisect_left(ends, start), bisect_right(starts, end)
        return [(col, cells[col]) for col in range(lo, hi)]


def _pack(
    text: str,
    units: list[Span],
    ctx: ChunkContext,
    render_for: Callable[[int], Callable[[str], str]],
    cut: Callable[[int], list[Span]],
) -> list[_Run]:
    """Greedy packing of consecutive ``units`` while the rendering stays within ``target_tokens``.

    A group is rendered with ``render_for(first unit)``; a unit that does not fit
    ``max_tokens`` alone is replaced by ``cut(k)``'s pieces (runs with ``cut=True``).
    """
    cfg = ctx.config
    out: list[_Run] = []
    first = -1

    def close(stop: int) -> None:
        s, e = trim(text, units[first][0], units[stop - 1][1])
        if s < e:
            out.append(_Run(s, e, first, stop, False))

    for k, (a, b) in enumerate(units):
        if first >= 0:
            body = text[units[first][0] : b].strip()
            if ctx.tokens(render_for(first)(body)) <= cfg.target_tokens:
                continue
            close(k)
            first = -1
        if ctx.fits(render_for(k)(text[a:b].strip())):
            first = k
        else:
            out.extend(_Run(s, e, k, k + 1, True) for s, e in cut(k))
    if first >= 0:
        close(len(units))
    return out
