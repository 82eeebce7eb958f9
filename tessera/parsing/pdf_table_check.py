"""Validating a detected table, and rows from cell lines (banded tables).

A detected grid is checked row by row against the text it holds (:func:`check_rows`). A row
is *cut* when its cell edges cut words (:data:`CUT_WORDS` or more, and at least
:data:`CUT_SHARE` of its words; text-aligned columns through a paragraph do that). A row is
*prose* when

* it is cut and holds running text: :data:`PROSE_LINES` or more lines of :data:`PROSE_WORDS`
  or more words each on average (a paragraph between a page's header rule and a small
  booktabs table);
* or most of its non-empty cells hold running prose: :data:`PROSE_LINES` or more lines of
  :data:`PROSE_WORDS` or more words each on average;
* or the table covers :data:`PAGE_SHARE` of the page or more while holding more than
  :data:`CHARS_PER_CELL` characters per cell: few rows and columns for that much text.

(a heavy row of such a table is prose). The caller detects each run of rows that are not
prose again in its own area and keeps what comes back without cut words (or, for a run
without cut rows, the run itself); the text of everything else stays body text.

Rows from lines: a ruled row that holds several text lines (rules every five rows) is split
into one row per line when the columns are aligned line by line: the row's line fragments
are clustered into bands by vertical centre, and the row is split when

* two or more, and more than half, of its non-empty cells have exactly one line in every
  band (lines aligned across columns; the lines of a lone filled cell are just its lines);
* no non-empty cell has a single line (beside multi-line columns, a one-line cell is the
  label of the whole ruled row, as in a row group "6 | 6 | OTSL / HTML | ...", or a header
  row with wrapped titles; splitting would leave the later lines without it);
* no cell wraps text: a line break is a *wrap* when the line holds two or more words and the
  next line's first word would have run past the cell's right edge after it, which is how
  running text is broken into lines (a banded column's values fit side by side).

Otherwise each cell keeps its lines in order, joined by ``<br>`` (GFM's line break inside a
cell), never by a plain space.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass

from tessera.parsing.pdf_model import Box, Cell, union
from tessera.parsing.pdf_table_cells import Frag, Grid, TableChars

CUT_WORDS = 2
CUT_SHARE = 0.05
PROSE_LINES = 3
PROSE_WORDS = 7
PAGE_SHARE = 0.5
CHARS_PER_CELL = 250
LINE_BREAK = "<br>"
_WS = re.compile(r"\s+")


def cell_text(text: str) -> str:
    """One line of Markdown: newlines collapsed, pipes escaped."""
    return _WS.sub(" ", text).strip().replace("|", "\\|")


@dataclass(frozen=True, slots=True)
class RowCheck:
    prose: bool = False
    """Running text: never a table row."""
    cut: bool = False
    """Cell edges cut its words: a table row only if detected again without cuts."""
    why: str = ""


def check_rows(k: int, grid: Grid, chars: TableChars, page_area: float) -> list[RowCheck]:
    """For each row of table ``k``: is it prose, does the grid cut its words, and why."""
    bbox, rows, _ = grid
    out: list[RowCheck] = []
    sizes: list[int] = []
    for i, row in enumerate(rows):
        words, cut = chars.words.get((k, i), 0), chars.cut.get((k, i), 0)
        frags = [chars.frags.get((k, i, j), []) for j in range(len(row))]
        sizes.append(sum(len(f.text) for fs in frags for f in fs))
        filled = [fs for fs in frags if fs]
        lines = len(_lines([f for fs in frags for f in fs]))
        if cut >= CUT_WORDS and cut >= CUT_SHARE * words:
            prose = lines >= PROSE_LINES and words >= PROSE_WORDS * lines
            out.append(RowCheck(prose, True, f"{cut} of {words} words cut at cell edges"))
        elif filled and sum(1 for fs in filled if _running_prose(fs)) * 2 > len(filled):
            out.append(RowCheck(True, False, "cells hold running prose"))
        else:
            out.append(RowCheck())
    area = (bbox[2] - bbox[0]) * (bbox[3] - bbox[1])
    cells, total = sum(len(r) for r in rows), sum(sizes)
    if area >= PAGE_SHARE * page_area and total > CHARS_PER_CELL * cells:
        why = f"covers {area / page_area:.0%} of the page with {total} characters in {cells} cells"
        for i, n in enumerate(sizes):
            if n > CHARS_PER_CELL * len(rows[i]):
                out[i] = RowCheck(True, out[i].cut, out[i].why or why)
    return out


def _running_prose(frags: list[Frag]) -> bool:
    lines = _lines(frags)
    if len(lines) < PROSE_LINES:
        return False
    return sum(len(t.split()) for t, _ in lines) >= PROSE_WORDS * len(lines)


def runs(checks: list[RowCheck]) -> list[tuple[int, int]]:
    """The runs ``[i, j)`` of consecutive rows that are not prose."""
    out: list[tuple[int, int]] = []
    i = 0
    while i < len(checks):
        if checks[i].prose:
            i += 1
            continue
        j = i
        while j < len(checks) and not checks[j].prose:
            j += 1
        out.append((i, j))
        i = j
    return out


def _lines(frags: list[Frag]) -> list[tuple[str, Box]]:
    """A cell's text lines top to bottom; fragments on one baseline are one line."""
    bands: list[list[Frag]] = []
    for f in sorted(frags, key=lambda f: ((f.bbox[1] + f.bbox[3]) / 2, f.bbox[0])):
        if not cell_text(f.text):
            continue
        if bands and _same_band(union([g.bbox for g in bands[-1]]), f.bbox):
            bands[-1].append(f)
        else:
            bands.append([f])
    out: list[tuple[str, Box]] = []
    for band in bands:  # left to right within a line (a raised glyph sorts apart by centre)
        band.sort(key=lambda f: f.bbox[0])
        out.append((" ".join(cell_text(f.text) for f in band), union([f.bbox for f in band])))
    return out


def _wraps(lines: list[tuple[str, Box]], box: Box) -> bool:
    """Whether a break between two of the cell's lines is where running text wrapped."""
    for (text, b), (nxt, nb) in itertools.pairwise(lines):
        words = text.split()
        if len(words) < 2 or not nxt:
            continue
        per_char = (nb[2] - nb[0]) / max(len(nxt), 1)
        first = len(nxt.split()[0]) + 1  # the word and the space before it
        if b[2] + first * per_char > box[2]:
            return True
    return False


def _same_band(a: Box, b: Box) -> bool:
    h = max(min(a[3] - a[1], b[3] - b[1]), 1.0)
    return abs((a[1] + a[3]) - (b[1] + b[3])) / 2 < 0.5 * h


def table_rows(k: int, grid: Grid, chars: TableChars) -> list[list[Cell]]:
    """The rows of table ``k`` as cells, banded rows split into one row per line."""
    _, rows, row_boxes = grid
    out: list[list[Cell]] = []
    for i, row in enumerate(rows):
        boxes = [box or row_boxes[i] for box in row]
        lines = [_lines(chars.frags.get((k, i, j), [])) for j in range(len(row))]
        out.extend(_split_row(boxes, lines))
    return [r for r in out if any(c.text for c in r)]


def _split_row(boxes: list[Box], lines: list[list[tuple[str, Box]]]) -> list[list[Cell]]:
    every = [b for cell in lines for _, b in cell]
    bands: list[Box] = []
    for b in sorted(every, key=lambda b: (b[1] + b[3]) / 2):
        if bands and _same_band(bands[-1], b):
            last = bands[-1]
            bands[-1] = (last[0], min(last[1], b[1]), last[2], max(last[3], b[3]))
        else:
            bands.append(b)
    filled = [cell for cell in lines if cell]
    full = sum(1 for cell in filled if len(cell) == len(bands))
    if (
        len(bands) < 2
        or full < 2
        or full * 2 <= len(filled)
        or any(len(cell) == 1 for cell in filled)
        or any(_wraps(cell, box) for cell, box in zip(lines, boxes, strict=True))
    ):
        cells = zip(lines, boxes, strict=True)
        return [[Cell(LINE_BREAK.join(t for t, _ in cell), box) for cell, box in cells]]
    out: list[list[Cell]] = []
    for band in bands:
        row = []
        for cell, box in zip(lines, boxes, strict=True):
            texts = [t for t, b in cell if _same_band(band, b)]
            row.append(Cell(" ".join(texts), (box[0], band[1], box[2], band[3])))
        out.append(row)
    return out
