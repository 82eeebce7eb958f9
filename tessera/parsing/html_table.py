"""Data tables as Markdown-like rows: ``| h | h |``, ``| --- | --- |``, ``| c | c |``.

colspan and rowspan are expanded (the cell's text repeated into every position it spans;
the first appearance maps to the cell's bytes, the copies are width-0 chars), the first row
is the header (the structural chunker repeats it with the rule when it splits a table by
rows). Pipes, padding and the rule are width-0 chars too, and a ``|`` inside a cell gets a
width-0 ``\\`` before it (as GFM escapes it), so the table chunker reads it as text. A
table with nested tables, headings, ``<pre>``, huge cells or a single column is layout, not
data: the emitter walks it as ordinary blocks.

Rows are padded with empty cells to the widest row only while the padded grid stays within
:data:`MAX_TABLE_CELLS`; a larger grid (one very wide row over many short ones) keeps each
row's own cells, so the text grows with the page, not with rows times columns (a 157 KB
page padded to 74 MB of text and 15 GB of memory).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

from tessera.parsing.budget import Deadline
from tessera.parsing.html_content import BLOCK
from tessera.parsing.html_inline import BlockRec, Exit, Inline, Op, op_end
from tessera.parsing.html_text import DecodedSource
from tessera.parsing.html_tree import HEADINGS, Node, Text

MAX_COLSPAN = 100
MAX_ROWSPAN = 1000
MAX_TABLE_CELLS = 200_000
"""Expanded cells per table; spans past this budget are not expanded, and rows are padded
to the widest row only while the padded grid stays within it."""


@dataclass
class _Row:
    start: int
    """Source byte of the ``<tr>`` (or first cell)."""
    end: int
    """Source byte after the row."""
    cells: list[tuple[list[Op], int, int]] = field(default_factory=list)  # (ops, colspan, rowspan)


def table_records(
    src: DecodedSource, table: Node, deadline: Deadline | None = None
) -> tuple[list[BlockRec], int]:
    """A data table as a caption paragraph (if any) and a ``table`` block; (records, invalid bytes)."""
    invalid = 0
    records: list[BlockRec] = []
    caption = Inline(src)
    rows: list[_Row] = []
    stack: list[Node | Text | Exit] = list(reversed(table.children))
    target: Inline | None = None
    while stack:
        if deadline is not None:
            deadline.tick()
        item = stack.pop()
        if isinstance(item, tuple):
            if target is not None:
                target.text(item[0], item[1])
            continue
        if isinstance(item, Exit):
            node = item.node
            if node.tag in ("td", "th") and target is not None:
                invalid += target.invalid
                colspan = _span(node.get("colspan"), MAX_COLSPAN)
                rowspan = _span(node.get("rowspan"), MAX_ROWSPAN)
                rows[-1].cells.append((target.take(), colspan, rowspan))
                rows[-1].end = src.byte(node.end)
            elif node.tag == "tr" and rows:
                rows[-1].end = max(rows[-1].end, src.byte(node.end))
            target = None
            continue
        if item.drop:
            continue
        if item.tag == "caption":
            target = caption
            stack.append(Exit(item))
        elif item.tag == "tr":
            start = src.byte(item.start)
            rows.append(_Row(start, start))
            stack.append(Exit(item))
        elif item.tag in ("td", "th"):
            if not rows:
                start = src.byte(item.start)
                rows.append(_Row(start, start))
            target = Inline(src)
            stack.append(Exit(item))
        elif target is not None and (item.tag in BLOCK or item.tag == "br"):
            target.space(item.start, item.start)  # a line or block break inside a cell
        stack.extend(reversed(item.children))
    invalid += caption.invalid
    cap = caption.take()
    if cap:
        records.append(BlockRec("paragraph", [cap]))
    rows = [r for r in rows if r.cells]
    if rows:
        records.append(BlockRec("table", _table_lines(rows, deadline)))
    return records, invalid


def _span(value: str, cap: int) -> int:
    try:
        n = int(value.strip() or "1")
    except ValueError:
        return 1
    return min(max(n, 1), cap)


def _table_lines(rows: list[_Row], deadline: Deadline | None = None) -> list[list[Op]]:
    """Grid with spans expanded: header line, ``| --- |`` rule, one line per row.

    Byte positions never go backwards along the text (so no chunk range is inverted): a
    cell's first appearance keeps its exact bytes; its copies in spanned positions, the
    pipes and the padding are width-0 chars at the current position in the row.
    """
    grid: list[tuple[_Row, list[tuple[list[Op], bool]]]] = []  # cells as (ops, is_copy)
    carry: dict[int, tuple[int, list[Op]]] = {}  # column -> (rows left, ops) for rowspans
    budget = MAX_TABLE_CELLS
    last = -1  # the rightmost column in carry (-1: none), kept without a scan of carry
    for row in rows:
        out: list[tuple[list[Op], bool]] = []
        queue = deque(row.cells)
        while queue or last >= len(out):
            if deadline is not None:
                deadline.tick()
            col = len(out)
            if col in carry:  # a cell spanning down from a row above
                left, ops = carry[col]
                out.append((ops, True))
                if left > 1:
                    carry[col] = (left - 1, ops)
                else:
                    del carry[col]
                    if col == last:
                        last = max(carry, default=-1)
                continue
            if not queue:
                out.append(([], True))  # a gap before a cell spanning down further right
                continue
            ops, colspan, rowspan = queue.popleft()
            if budget <= 0:
                colspan = rowspan = 1
            budget -= colspan * rowspan
            for k in range(colspan):
                if rowspan > 1:
                    carry[len(out)] = (rowspan - 1, ops)
                    last = max(last, len(out))
                out.append((ops, k > 0))
        grid.append((row, out))
    width = max(len(cells) for _r, cells in grid)
    pad = width * len(grid) <= MAX_TABLE_CELLS
    lines: list[list[Op]] = []
    for k, (row, cells) in enumerate(grid):
        pos = row.start
        line: list[Op] = []
        for c in range(width if pad else len(cells)):
            line.append(("|", pos, 0))
            line.append((" ", pos, 0))
            ops, copy = cells[c] if c < len(cells) else ([], True)
            if copy:
                line.extend((ch, pos, 0) for t, _b, _w in _escape_pipes(ops) for ch in t)
            elif ops:
                line.extend(_escape_pipes(ops))
                pos = max(pos, op_end(ops[-1]))
            line.append((" ", pos, 0))
        line.append(("|", max(pos, row.end), 0))
        lines.append(line)
        if k == 0:
            end = max(pos, row.end)
            rule: list[Op] = [(ch, end, 0) for ch in "| ---"]
            for _c in range(1, width):
                rule.extend((ch, end, 0) for ch in " | ---")
            rule.extend((ch, end, 0) for ch in " |")
            lines.append(rule)
    return lines


def _escape_pipes(ops: list[Op]) -> list[Op]:
    """``ops`` with a width-0 ``\\`` before every ``|``; plain runs (width -1, one UTF-8
    byte sequence from ``byte``) are split there, other ops are single characters."""
    out: list[Op] = []
    for text, byte, width in ops:
        if "|" not in text:
            out.append((text, byte, width))
        elif width >= 0:  # a decoded entity (``&#124;``) or a copy: one character
            out.extend([("\\", byte, 0), (text, byte, width)])
        else:
            pos = byte
            for piece in re.split(r"(\|)", text):
                if piece == "|":
                    out.append(("\\", pos, 0))
                if piece:
                    out.append((piece, pos, -1))
                    pos += len(piece.encode("utf-8"))
    return out


def is_data_table(table: Node) -> bool:
    """A table of data (rendered as rows) rather than a layout grid (walked as blocks)."""
    if table.get("role").lower() in ("presentation", "none"):
        return False
    cols = rows = 0
    stack = list(table.children)
    while stack:
        item = stack.pop()
        if isinstance(item, tuple) or item.drop:
            continue
        if item.tag == "table" or item.tag in HEADINGS or item.tag in ("pre", "blockquote"):
            return False
        if item.tag == "tr":
            rows += 1
            cols = max(cols, sum(1 for c in item.children if isinstance(c, Node) and c.tag in ("td", "th")))
        if item.tag in ("td", "th") and item.text > 2000:
            return False
        stack.extend(item.children)
    return rows >= 1 and cols >= 2
