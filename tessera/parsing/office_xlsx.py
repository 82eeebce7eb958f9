"""XLSX parser: every sheet as a heading plus one table, streamed row by row.

* Elements: a sheet's name is ``sheet<n>`` of ``xl/workbook.xml`` (its position in the
  workbook); a cell is its A1 reference in the sheet's part (``xl/worksheets/sheet1.xml``
  ``B7``), its text as :func:`~tessera.parsing.office_xlsx_read.cell_text` defines it.
* Blocks: the sheet name is a level-1 heading; its rows with text are one ``table`` block,
  the first such row the header (``| a | b |``, then ``|---|---|``), each row one line with
  the cells from column A to its last cell with text (empty cells in between kept empty). The
  shared table chunker splits a long sheet at row boundaries and repeats the header row in
  every part (:func:`tessera.chunking.tables.split_table`).
* Streaming: rows are read with ``iterparse`` and cleared (:func:`rows`); the parse holds
  the text it emits, never the sheet's XML tree. Limits: :data:`MAX_CELLS` cells with text
  per workbook and :data:`~tessera.parsing.office_xlsx_read.MAX_COLUMNS` columns, else
  ``too_large``.
* Hidden sheets (``state="hidden"``/``"veryHidden"``), hidden rows and the cells of hidden
  columns are kept, their ranges marked hidden (chunks flagged ``hidden_text``) and named in
  ``hidden_sheet`` / ``hidden_rows`` / ``hidden_columns`` warnings.
"""

from __future__ import annotations

from tessera.errors import DocumentError
from tessera.parsing import versions
from tessera.parsing.base import SandboxLimits
from tessera.parsing.office_text import Emitter, Piece, finish
from tessera.parsing.office_xlsx_read import Book, Sheet, column_letters, open_book, rows
from tessera.parsing.office_zip import Package
from tessera.types import ParsedDocument, SourceDocument, TrustReport

MAX_CELLS = 5_000_000
WORKBOOK_SHEET = "sheet{}"


class XlsxParser:
    name = "xlsx"
    version = versions.XLSX
    content_types: tuple[str, ...] = ("application/vnd.openxmlformats-officedocument.spreadsheetml.sheet",)
    sandbox = SandboxLimits(wall_seconds=120, memory_mb=2048)

    def __init__(self, max_cells: int = MAX_CELLS) -> None:
        self.max_cells = max_cells

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        pkg = Package(doc.doc_id, raw)
        main = pkg.main_part("workbook.xml")
        book = open_book(pkg, main)
        out, warnings = Emitter(), []
        cells = 0
        for sheet in book.sheets:
            if not sheet.part or not pkg.has(sheet.part):
                warnings.append(f"missing_sheet: {sheet.name}: no worksheet part (a chart sheet?)")
                continue
            start = out.pos
            hidden_rows, hidden_cols, n = _sheet(out, pkg, main, sheet, book, self.max_cells - cells)
            cells += n
            if sheet.state != "visible" and out.pos > start:
                out.hidden.append((start, out.pos))
                warnings.append(f"hidden_sheet: {sheet.name} ({sheet.state}; kept, flagged)")
            if hidden_rows:
                shown = ", ".join(map(str, hidden_rows[:20])) + (" ..." if len(hidden_rows) > 20 else "")
                warnings.append(
                    f"hidden_rows: {sheet.name}: {len(hidden_rows)} rows ({shown}; kept, flagged)"
                )
            if hidden_cols:
                names = ", ".join(column_letters(c) for c in hidden_cols)
                warnings.append(f"hidden_columns: {sheet.name}: {names} (kept, flagged)")
        trust = TrustReport(hidden_spans=_merged(out.hidden))
        return finish(
            doc,
            (self.name, self.version),
            out,
            warnings,
            trust,
            pkg.has_macros(),
            "cell text",
            "no cell has text",
        )


def _sheet(
    out: Emitter, pkg: Package, main: str, sheet: Sheet, book: Book, budget: int
) -> tuple[list[int], list[int], int]:
    """Emit one sheet; its hidden row numbers, hidden columns with text, cells with text."""
    hidden: list[int] = []
    columns: set[int] = set()
    cells, table_start = 0, -1
    for row in rows(pkg, sheet, book):
        cells += len(row.cells)
        if cells > budget:
            raise DocumentError(pkg.doc_id, "too_large", "over the limit of cells with text per workbook")
        if table_start < 0:
            out.gap("\n\n")
            head = out.pos
            out.piece(Piece(main, WORKBOOK_SHEET.format(sheet.number), 0, sheet.name))
            out.block("heading", head, level=1, title=" ".join(out.text()[head:].split()))
            out.sep("\n\n")
            table_start = out.pos
        else:
            out.sep("\n")
        line = out.pos
        spans = out.row(_cells(sheet.part, row.cells), header=line == table_start)
        if row.hidden:
            hidden.append(row.number)
            out.hidden.append((line, out.pos))
        elif row.hidden_columns:
            columns.update(row.hidden_columns)
            out.hidden.extend(spans[col - 1] for col in sorted(row.hidden_columns))
    if table_start >= 0:
        out.block("table", table_start)
    return hidden, sorted(columns), cells


def _cells(part: str, cells: tuple[tuple[int, str, str], ...]) -> list[list[Piece | str]]:
    """The row's cells from column A, gaps as empty cells."""
    out: list[list[Piece | str]] = []
    for col, ref, text in cells:
        while len(out) < col - 1:
            out.append([])
        out.append([Piece(part, ref, 0, text)])
    return out


def _merged(spans: list[tuple[int, int]]) -> tuple[tuple[int, int], ...]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(spans):
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return tuple(out)
