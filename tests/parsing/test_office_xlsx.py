"""XlsxParser: golden output, sheets as heading + table, hidden sheets and rows flagged, the
shared table chunker's row-wise split with the header repeated, and streaming (a large sheet
is read row by row, never whole)."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker
from tessera.errors import DocumentError
from tessera.parsing.base import get_parser, parser_for_path
from tessera.parsing.office_locate import cited_text, parts_match
from tessera.parsing.office_xlsx import XlsxParser
from tessera.parsing.office_xlsx_read import open_book, rows
from tessera.parsing.office_zip import Package
from tessera.types import ParsedDocument
from tests import office_fixtures as F


def _parse(raw: bytes, parser: XlsxParser | None = None) -> ParsedDocument:
    return (parser or XlsxParser()).parse(F.source("book.xlsx", raw, F.XLSX), raw)


def test_registered_by_content_type_and_extension() -> None:
    assert parser_for_path("rates.xlsx") == F.XLSX
    assert isinstance(get_parser(F.XLSX), XlsxParser) and XlsxParser.version == "tessera-xlsx/1"


def test_golden() -> None:
    raw = F.xlsx_sample()
    assert raw == F.xlsx_sample()
    F.check_golden("sample.xlsx", _parse(raw))


def test_sheets_dates_and_hidden_content_are_flagged() -> None:
    raw = F.xlsx_sample()
    parsed = _parse(raw)
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == ["Rates", "Margins", "Secrets"]
    rates = parsed.text[parsed.blocks[1].start : parsed.blocks[1].end].split("\n")
    assert rates[:3] == [
        "| Zone | Country | Price | Valid from | Cost |",
        "|---|---|---|---|---|",
        "| Z1 | France | 1.5 | 2026-01-01 | 0.9 |",
    ]
    assert rates[-1] == "|  |  |  |  |  | note \\| far right |"  # gap cells kept empty, | escaped
    assert "hidden_rows: Rates: 1 rows (3; kept, flagged)" in parsed.warnings
    assert "hidden_sheet: Margins (hidden; kept, flagged)" in parsed.warnings
    assert "hidden_sheet: Secrets (veryHidden; kept, flagged)" in parsed.warnings
    assert "hidden_columns: Rates: E (kept, flagged)" in parsed.warnings
    spans = [parsed.text[a:b].strip() for a, b in parsed.trust.hidden_spans]
    assert spans[:3] == ["Cost", "0.9", "| Z2 | Spain | 3 | 2026-01-02 |"]  # column E's cells, row 3
    assert spans[3].startswith("Margins") and spans[3].endswith("| token | abc |")  # both hidden sheets


def test_cells_cite_their_a1_reference() -> None:
    raw = F.xlsx_sample()
    parsed = _parse(raw)
    assert parsed.structure is not None
    refs = {(r.part, r.locator) for r in parsed.structure.runs}
    assert ("xl/worksheets/sheet1.xml", "B3") in refs and ("xl/workbook.xml", "sheet2") in refs
    spans = parsed.structure.spans(parsed.text, 0, len(parsed.text))
    assert cited_text(raw, spans) == parsed.text


def test_long_sheet_is_split_by_rows_with_the_header_in_every_part(
    chunk_ctx: Callable[..., ChunkContext],
) -> None:
    raw = F.xlsx_rows(300)
    doc = F.source("big.xlsx", raw, F.XLSX)
    parsed = _parse(raw)
    chunks = StructuralChunker().chunk(doc, parsed, chunk_ctx(max_tokens=128, target_tokens=96))
    tables = [c for c in chunks if c.kind == "table"]
    assert len(tables) >= 5
    header = "| col0 | col1 | col2 | col3 |"
    seen = []
    for c in tables:
        assert header in c.embedding_text  # repeated as context in every part
        lines = [line for line in c.text.split("\n") if line not in ("S1", "", "|---|---|---|---|")]
        assert all(line.startswith("| ") and line.endswith(" |") for line in lines)  # whole rows
        seen += [line for line in lines if line.startswith("| item ")]
        assert parts_match(raw, c.parts, c.text)
    assert len(seen) == 300 and len(set(seen)) == 300  # every row once, in order
    assert seen[0].startswith("| item 2 |") and seen[-1].startswith("| item 301 |")


def test_a_large_sheet_is_streamed_not_loaded_whole() -> None:
    """100,000 rows: reading the first row inflates at most a few 64 KiB blocks of the 10 MB
    sheet part (the XML is iterparsed and each row cleared), and the whole parse keeps every
    row. Bounded by bytes read, not by time."""
    n = 100_000
    raw = F.xlsx_rows(n)
    pkg = Package("big.xlsx", raw)
    book = open_book(pkg, "xl/workbook.xml")
    size = pkg.infos["xl/worksheets/sheet1.xml"].file_size
    assert size > 8_000_000
    before = pkg._read_total
    it = rows(pkg, book.sheets[0], book)
    first = next(it)
    assert first.number == 1 and first.cells[0][2] == "col0"
    assert pkg._read_total - before <= 4 * 65536  # a few blocks, not the part
    it.close()
    start = time.perf_counter()
    parsed = _parse(raw)
    took = time.perf_counter() - start
    assert parsed.text.count("\n| item ") == n
    print(f"XLSX streaming: {n} rows x 4 cells in {took:.1f} s ({n / took:,.0f} rows/s)")


def test_cell_limits_are_typed() -> None:
    with pytest.raises(DocumentError) as e:
        _parse(F.xlsx_rows(300), XlsxParser(max_cells=1000))
    assert e.value.reason == "too_large"
    far = F.workbook({"xl/worksheets/sheet1.xml": (
        b'<worksheet xmlns="http://schemas.openxmlformats.org/spreadsheetml/2006/main"><sheetData>'
        b'<row r="1"><c r="XFD1048576"><v>1</v></c></row></sheetData></worksheet>'
    )})  # fmt: skip
    with pytest.raises(DocumentError) as e:
        _parse(far)
    assert e.value.reason == "too_large" and "column 16384" in str(e.value)
