"""Tables on pages that look tabular, with PyMuPDF's ``find_tables(use_layout=False)``.

The table pass is the slow part of PDF parsing (tens of milliseconds a page), so it runs only
on pages with ruling lines: a grid (3+ horizontal and 2+ vertical rules) uses the ``lines``
strategy; horizontal rules only (booktabs-style) use lines for rows and text alignment for
columns. Cell geometry comes from PyMuPDF; cell *text* is rebuilt from ``rawdict`` characters
with the same visibility filter as the body text, so hidden text cannot enter through a table
(and word spaces survive, which ``Table.extract()`` drops on some files).
"""

from __future__ import annotations

import re
from typing import Any

from tessera.parsing.pdf_extract import FLAGS, PageContext, PageStats, center, inside, visibility
from tessera.parsing.pdf_model import Box, Cell, Page, Table, union

_WS = re.compile(r"\s+")


def strategy(stats: PageStats) -> dict[str, str] | None:
    """``find_tables`` keyword arguments for this page, or None when it does not look tabular."""
    if stats.grid_rows >= 3:
        return {"strategy": "lines"}
    if stats.h_rules >= 3:
        return {"horizontal_strategy": "lines", "vertical_strategy": "text"}
    return None


def cell_text(text: str) -> str:
    """One line of Markdown: newlines collapsed, pipes escaped."""
    return _WS.sub(" ", text).strip().replace("|", "\\|")


Grid = tuple[Box, list[list[Box | None]], list[Box]]
"""A table's bbox, its cell boxes by row (None: covered by a spanning cell) and row boxes."""


def find_tables(page: Page, number: int, kwargs: dict[str, str], ctx: PageContext) -> list[Table]:
    found = page.find_tables(use_layout=False, **kwargs)
    grids: list[Grid] = []
    for t in found.tables:  # (``t.header`` is not used: it re-extracts text, ~0.1 s a table)
        if t.row_count < 2 or t.col_count < 2:
            continue
        rows: list[list[Box | None]] = []
        row_boxes: list[Box] = []
        for r in t.rows:
            rows.append([tuple(c) if c else None for c in r.cells])
            row_boxes.append(tuple(r.bbox))
        if len({len(r) for r in rows}) == 1:
            grids.append((union(row_boxes), rows, row_boxes))
    if not grids:
        return []
    texts = _cell_chars(page, ctx, grids)
    tables = []
    for k, (bbox, rows, row_boxes) in enumerate(grids):
        cells = [
            [
                Cell(cell_text("".join(texts.get((k, i, j), ()))), box or row_boxes[i])
                for j, box in enumerate(row)
            ]
            for i, row in enumerate(rows)
        ]
        cells = [row for row in cells if any(c.text for c in row)]
        if len(cells) >= 2:
            tables.append(Table(cells, bbox, [number] * len(cells)))
    return tables


def _cell_chars(page: Page, ctx: PageContext, grids: list[Grid]) -> dict[tuple[int, int, int], list[str]]:
    """Visible characters of each cell ``(table, row, column)``, a space between text lines."""
    out: dict[tuple[int, int, int], list[str]] = {}
    last_line: dict[tuple[int, int, int], int] = {}
    line_no = 0
    boxes = [g[0] for g in grids]
    clip = union(boxes)
    blocks: list[dict[str, Any]] = page.get_text("rawdict", flags=FLAGS, clip=clip)["blocks"]
    for b in blocks:
        if b["type"] != 0:
            continue
        for ln in b["lines"]:
            line_no += 1
            for s in ln["spans"]:
                sb = s["bbox"]
                if not any(
                    sb[0] <= g[2] and g[0] <= sb[2] and sb[1] <= g[3] and g[1] <= sb[3] for g in boxes
                ):
                    continue  # not in any table
                if visibility(s, ctx) == "hidden":
                    continue
                for ch in s["chars"]:
                    key = _locate(center(tuple(ch["bbox"])), grids)
                    if key is None:
                        continue
                    bucket = out.setdefault(key, [])
                    if bucket and last_line.get(key) != line_no:
                        bucket.append(" ")
                    last_line[key] = line_no
                    bucket.append(ch["c"])
    return out


def _locate(pt: tuple[float, float], grids: list[Grid]) -> tuple[int, int, int] | None:
    for k, (bbox, rows, _) in enumerate(grids):
        if not inside(pt, bbox, 1.0):
            continue
        for i, row in enumerate(rows):
            for j, cell in enumerate(row):
                if cell is not None and inside(pt, cell):
                    return k, i, j
    return None
