"""Tables on pages that look tabular, with PyMuPDF's ``find_tables(use_layout=False)``.

The table pass is the slow part of PDF parsing (tens of milliseconds a page), so it runs only
on pages with ruling lines: a grid (3+ horizontal and 2+ vertical rules) uses the ``lines``
strategy; horizontal rules only (booktabs-style) use lines for rows and text alignment for
columns. Cell geometry comes from PyMuPDF; cell *text* is rebuilt from ``rawdict`` characters
with the same visibility filter as the body text, so hidden text cannot enter through a table
(and word spaces survive, which ``Table.extract()`` drops on some files).

Every detected table validates itself (:mod:`~tessera.parsing.pdf_table_check`): rows whose
cell edges cut words or that hold running prose are not table rows. A table with such rows
keeps its longest run of real rows, re-detected in that area alone (the columns of a
text-aligned table then come from the table's own text), and is reported as
``table_trimmed``; a table without such a run is dropped as ``table_rejected``. The text of
rows that are not kept stays body text.
"""

from __future__ import annotations

from typing import Any

from tessera.parsing.pdf_extract import PageContext, PageStats
from tessera.parsing.pdf_model import Box, Page, Table, union
from tessera.parsing.pdf_table_cells import Grid, cell_chars
from tessera.parsing.pdf_table_check import cell_text, check_rows, runs, table_rows

__all__ = ["cell_text", "find_tables", "strategy"]
PAD = 2.0
"""Points added around a kept run of rows when it is detected again on its own."""


TEXT_EDGE_REACH = 10
"""Points a text-aligned column edge may stop short of a horizontal rule and still meet it
(``intersection_y_tolerance``; the default 3 loses the rows between the first and last rule
of a booktabs table, whose text starts several points below the rule)."""


def strategy(stats: PageStats) -> dict[str, str | int] | None:
    """``find_tables`` keyword arguments for this page, or None when it does not look tabular."""
    if stats.grid_rows >= 3:
        return {"strategy": "lines"}
    if stats.h_rules >= 3:
        return {
            "horizontal_strategy": "lines",
            "vertical_strategy": "text",
            "intersection_y_tolerance": TEXT_EDGE_REACH,
        }
    return None


def _grids(found: Any) -> list[Grid]:
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
    return grids


def find_tables(
    page: Page, number: int, kwargs: dict[str, str | int], ctx: PageContext, notes: list[str] | None = None
) -> list[Table]:
    """The page's validated tables; what was trimmed or rejected is appended to ``notes``."""
    notes = [] if notes is None else notes
    area = max(float(page.rect.width * page.rect.height), 1.0)
    grids = _grids(page.find_tables(use_layout=False, **kwargs))
    chars = cell_chars(page, ctx, grids)
    tables: list[Table] = []
    for k, grid in enumerate(grids):
        checks = check_rows(k, grid, chars, area)
        bad = [c.why for c in checks if c.why]
        if not bad:
            tables.extend(_table(k, grid, chars, number))
            continue
        kept: list[Table] = []
        for i, j in runs(checks):
            found = _redetect(page, number, kwargs, ctx, union(grid[2][i:j]), area)
            if found is None and j - i >= 2 and not any(c.cut for c in checks[i:j]):
                sub: Grid = (union(grid[2][i:j]), grid[1][i:j], grid[2][i:j])  # the run, same columns
                found = _table(0, sub, cell_chars(page, ctx, [sub]), number)
            kept.extend(found or [])
        tables.extend(kept)
        what = "table_trimmed" if kept else "table_rejected"
        notes.append(f"{what}: page {number}: {len(bad)} of {len(checks)} rows are not a table ({bad[0]})")
    return tables


def _redetect(
    page: Page, number: int, kwargs: dict[str, str | int], ctx: PageContext, box: Box, area: float
) -> list[Table] | None:
    clip = (box[0] - PAD, box[1] - PAD, box[2] + PAD, box[3] + PAD)
    grids = _grids(page.find_tables(use_layout=False, clip=clip, **kwargs))
    chars = cell_chars(page, ctx, grids)
    out: list[Table] = []
    for k, grid in enumerate(grids):
        if any(c.why for c in check_rows(k, grid, chars, area)):
            return None
        out.extend(_table(k, grid, chars, number))
    return out or None


def _table(k: int, grid: Grid, chars: Any, number: int) -> list[Table]:
    rows = table_rows(k, grid, chars)
    if len(rows) < 2:
        return []
    return [Table(rows, grid[0], [number] * len(rows))]
