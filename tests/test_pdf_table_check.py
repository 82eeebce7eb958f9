"""Tables that validate themselves (issue 15): prose stays prose, banded rows stay rows, a
grid that cuts words is no table; ruled tables keep working."""

from __future__ import annotations

import re

import pytest

from tessera.parsing.pdf import PdfParser
from tessera.parsing.pdf_table_cells import Frag, TableChars
from tessera.parsing.pdf_table_check import LINE_BREAK, table_rows
from tessera.types import ParsedDocument, SourceDocument, sha256_hex
from tests import pdf_fixtures as F


def parse(raw: bytes) -> ParsedDocument:
    doc = SourceDocument("acme", "t.pdf", "file://t.pdf", sha256_hex(raw), "application/pdf", (), ("staff",))
    return PdfParser(ocr=False).parse(doc, raw)


def tables(p: ParsedDocument) -> list[str]:
    return [p.text[b.start : b.end] for b in p.blocks if b.kind == "table"]


def small_table() -> str:
    head, *rows = F.SMALL_TABLE
    lines = ["| " + " | ".join(head) + " |", "|---|---|---|", *("| " + " | ".join(r) + " |" for r in rows)]
    return "\n".join(lines)


def flat(s: str) -> str:
    return " ".join(s.split())


@pytest.mark.parametrize("grid", [False, True])
def test_prose_page_with_a_small_table_keeps_prose_as_prose(grid: bool) -> None:
    p = parse(F.prose_small_table_pdf(grid=grid))
    assert tables(p) == [small_table()]  # only the real table region is a table
    (table,) = [b for b in p.blocks if b.kind == "table"]
    prose = p.text[: table.start]
    for s in F.sentences("prose", 40, 14):  # every sentence whole, words uncut, in order
        assert s in flat(prose)
    assert "|" not in prose
    assert sum(b.end - b.start for b in p.blocks if b.kind == "table") < 0.05 * len(p.text)
    assert grid or any(w.startswith("table_trimmed: page 1") for w in p.warnings)
    assert p.layout is not None
    k = p.text.index("| pear |")  # the kept rows map to the table's place at the bottom
    assert all(r.bbox[1] >= 655 for r in p.layout.touching(k, k + 10))


def test_a_grid_that_cuts_words_is_rejected_and_its_text_kept() -> None:
    p = parse(F.cutting_grid_pdf())
    assert tables(p) == []
    assert any(w.startswith("table_rejected: page 1") and "cut at cell edges" in w for w in p.warnings)
    for s in F.sentences("cut", 16, 14):
        assert s in flat(p.text)


def test_banded_table_gives_one_row_per_text_line() -> None:
    p = parse(F.banded_table_pdf(rows=20, band=5))
    (table,) = tables(p)
    lines = table.split("\n")
    assert lines[0] == "| " + " | ".join(F.BANDED_COLUMNS) + " |"
    assert lines[2:] == ["| " + " | ".join(r) + " |" for r in F.banded_rows(20)]


@pytest.mark.parametrize("band", [2, 7])
def test_banded_rows_at_other_band_heights(band: int) -> None:
    (table,) = tables(parse(F.banded_table_pdf(rows=14, band=band)))
    assert table.split("\n")[2:] == ["| " + " | ".join(r) + " |" for r in F.banded_rows(14)]


def test_banded_row_with_a_wrapped_note_keeps_each_value_on_its_row() -> None:
    (table,) = tables(parse(F.banded_table_pdf(rows=10, band=5, wrap=True)))
    rows = table.split("\n")[2:]
    assert len(rows) == 10
    for k, row in enumerate(rows):
        code, city, units, share = F.banded_rows(10)[k]
        assert row.startswith(f"| {code} | {city} | {units} | {share} |")
    assert rows[0].endswith("| note00 first line |") and rows[1].endswith("| then second00 |")


def _chars(cells: dict[tuple[int, int], list[tuple[str, float]]]) -> TableChars:
    """One table row of cells (column -> [(text, y)] lines at x = 100 * column)."""
    out = TableChars()
    for (i, j), lines in cells.items():
        out.frags[(0, i, j)] = [Frag(t, (100.0 * j, y, 100.0 * j + 60, y + 10)) for t, y in lines]
    return out


def test_unaligned_cell_lines_stay_in_one_cell_in_order() -> None:
    # a name with a three-line description: the description wraps, the row is one row
    boxes = [(0.0, 0.0, 90.0, 40.0), (100.0, 0.0, 190.0, 40.0)]
    grid = ((0.0, 0.0, 190.0, 40.0), [boxes], [(0.0, 0.0, 190.0, 40.0)])
    chars = _chars({(0, 0): [("widget", 1.0)], (0, 1): [("tail b", 25.0), ("a long", 1.0), ("mid |", 13.0)]})
    ((name, desc),) = table_rows(0, grid, chars)  # type: ignore[arg-type]
    assert name.text == "widget"
    assert desc.text == LINE_BREAK.join(["a long", "mid \\|", "tail b"])


def test_aligned_cell_lines_split_into_rows_with_line_boxes() -> None:
    boxes = [(0.0, 0.0, 90.0, 40.0), (100.0, 0.0, 190.0, 40.0)]
    grid = ((0.0, 0.0, 190.0, 40.0), [boxes], [(0.0, 0.0, 190.0, 40.0)])
    chars = _chars({(0, 0): [("b", 14.0), ("a", 1.0)], (0, 1): [("2", 14.0), ("1", 1.0)]})
    rows = table_rows(0, grid, chars)  # type: ignore[arg-type]
    assert [[c.text for c in r] for r in rows] == [["a", "1"], ["b", "2"]]
    assert rows[0][1].bbox == (100.0, 1.0, 190.0, 11.0) and rows[1][0].bbox == (0.0, 14.0, 90.0, 24.0)


def test_ruled_tables_keep_their_cells() -> None:
    p = parse(F.table_pdf(60))
    (table,) = tables(p)
    body = table.split("\n")[2:]
    assert body == [f"| {a} | {b} | {c} | {d} |" for a, b, c, d in F.table_rows(60)]
    assert not any(re.match(r"table_(trimmed|rejected)", w) for w in p.warnings)


def test_ruled_rows_of_wrapped_text_stay_one_row_each() -> None:
    # every cell wraps to two aligned lines: a banded look, but the breaks are wraps of running text
    p = parse(F.wrapped_cells_table_pdf(4))
    (table,) = tables(p)
    lines = table.split("\n")
    assert lines[0] == "| " + " | ".join(F.WRAPPED_COLUMNS) + " |"
    body = lines[2:]
    assert len(body) == 4
    for row, cells in zip(body, F.wrapped_cells(4), strict=True):
        got = [c.strip() for c in row.strip("|").split("|")]
        assert all(LINE_BREAK in c for c in got)  # the line structure is kept inside the cell
        assert [flat(c.replace(LINE_BREAK, " ")) for c in got] == list(cells)


def test_one_line_cells_beside_aligned_lines_keep_the_ruled_row() -> None:
    # a row group: "6 | OTSL / HTML | 0.965 / 0.969": the one-line label belongs to both lines
    boxes = [(0.0, 0.0, 90.0, 40.0), (100.0, 0.0, 190.0, 40.0), (200.0, 0.0, 290.0, 40.0)]
    grid = ((0.0, 0.0, 290.0, 40.0), [boxes], [(0.0, 0.0, 290.0, 40.0)])
    chars = _chars(
        {
            (0, 0): [("6", 1.0)],
            (0, 1): [("OTSL", 1.0), ("HTML", 14.0)],
            (0, 2): [("0.965", 1.0), ("0.969", 14.0)],
        }
    )
    ((label, lang, score),) = table_rows(0, grid, chars)  # type: ignore[arg-type]
    assert (label.text, lang.text, score.text) == ("6", f"OTSL{LINE_BREAK}HTML", f"0.965{LINE_BREAK}0.969")
