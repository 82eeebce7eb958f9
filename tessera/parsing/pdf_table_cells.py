"""The visible characters of detected table cells, by text line, and the words the cells cut.

One ``rawdict`` pass over the tables' area. Each character goes to the cell that holds its
centre; the characters of one text line inside one cell form a :class:`Frag` (so a cell keeps
its line structure). A *word* (non-space characters of one line without a gap wider than
:data:`WORD_GAP` of the font size) whose characters land in two cells, or partly in a cell and
partly outside every cell, is *cut*: a table whose cell edges cut words is laid over prose.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tessera.parsing.pdf_extract import PageContext, center, inside, text_flags, visibility
from tessera.parsing.pdf_model import Box, Page, union

WORD_GAP = 0.3
CellKey = tuple[int, int, int]
"""(table, row, column) in the detected grids."""
RowKey = tuple[int, int]
Grid = tuple[Box, list[list[Box | None]], list[Box]]
"""A table's bbox, its cell boxes by row (None: covered by a spanning cell) and row boxes."""


@dataclass(slots=True)
class Frag:
    """The characters of one text line that fall in one cell."""

    text: str
    bbox: Box


@dataclass(slots=True)
class TableChars:
    frags: dict[CellKey, list[Frag]] = field(default_factory=dict)
    """Each cell's line fragments, in extraction order."""
    words: dict[RowKey, int] = field(default_factory=dict)
    cut: dict[RowKey, int] = field(default_factory=dict)
    """Words of each table row whose glyphs straddle a cell edge."""


class _Word:
    __slots__ = ("keys", "x1")

    def __init__(self) -> None:
        self.keys: set[CellKey | None] = set()
        self.x1 = -1e9


def _close_word(word: _Word, out: TableChars) -> None:
    cells = {k for k in word.keys if k is not None}
    if not cells:
        return
    rows = {(k[0], k[1]) for k in cells}
    first = min(rows)
    out.words[first] = out.words.get(first, 0) + 1
    if len(word.keys) > 1:
        for r in rows:
            out.cut[r] = out.cut.get(r, 0) + 1


def cell_chars(page: Page, ctx: PageContext, grids: list[Grid]) -> TableChars:
    out = TableChars()
    boxes = [g[0] for g in grids]
    if not boxes:
        return out
    blocks: list[dict[str, Any]] = page.get_text("rawdict", flags=text_flags(), clip=union(boxes))["blocks"]
    for b in blocks:
        if b["type"] != 0:
            continue
        for ln in b["lines"]:
            _line(ln, ctx, grids, boxes, out)
    return out


def _line(ln: dict[str, Any], ctx: PageContext, grids: list[Grid], boxes: list[Box], out: TableChars) -> None:
    pending: dict[CellKey, tuple[list[str], list[Box]]] = {}
    word = _Word()
    for s in ln["spans"]:
        sb = s["bbox"]
        if not any(sb[0] <= g[2] and g[0] <= sb[2] and sb[1] <= g[3] and g[1] <= sb[3] for g in boxes):
            continue  # not in any table
        if visibility(s, ctx) == "hidden":
            continue
        gap = WORD_GAP * max(float(s["size"]), 1.0)
        for ch in s["chars"]:
            box: Box = tuple(ch["bbox"])
            key = _locate(center(box), grids)
            c = ch["c"]
            if c.isspace() or box[0] - word.x1 > gap:
                _close_word(word, out)
                word = _Word()
            if not c.isspace():
                word.keys.add(key)
                word.x1 = box[2]
            if key is not None:
                texts, bxs = pending.setdefault(key, ([], []))
                texts.append(c)
                bxs.append(box)
    _close_word(word, out)
    for key, (texts, bxs) in pending.items():
        text = "".join(texts)
        if text.strip():
            out.frags.setdefault(key, []).append(Frag(text, union(bxs)))


def _locate(pt: tuple[float, float], grids: list[Grid]) -> CellKey | None:
    for k, (bbox, rows, _) in enumerate(grids):
        if not inside(pt, bbox, 1.0):
            continue
        for i, row in enumerate(rows):
            for j, cell in enumerate(row):
                if cell is not None and inside(pt, cell):
                    return k, i, j
    return None
