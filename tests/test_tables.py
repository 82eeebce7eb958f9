"""The table chunker shared by every format (tessera.chunking.tables).

A Markdown pipe table, an HTML data table and a ruled PDF table, each parsed by the
project's own parser, are split under a small budget: every part carries the header, holds
whole rows only, the rows are covered once and in order, and each chunk cites its exact
text. A property test does the same over generated Markdown tables; single rows bigger
than the budget are cut and flagged, never truncated; cell ranges slice to the cells.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import pymupdf
import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker, render
from tessera.chunking.tables import HEADER, CellSpan, TableLayout, TablePart, split_table, table_rows
from tessera.chunking.tokens import TokenCounter
from tessera.chunking.windows import trim
from tessera.config import ChunkingConfig
from tessera.parsing.dispatch import parse_document
from tessera.types import Block, Chunk, ParsedDocument, SourceDocument, sha256_hex

MD, HTML, PDF = "text/markdown", "text/html", "application/pdf"


def source(raw: bytes, content_type: str) -> SourceDocument:
    name = {MD: "t.md", HTML: "t.html", PDF: "t.pdf"}[content_type]
    return SourceDocument("acme", name, f"file:///{name}", sha256_hex(raw), content_type, (), ("staff",))


def parse(raw: bytes, content_type: str) -> tuple[SourceDocument, ParsedDocument]:
    doc = source(raw, content_type)
    return doc, parse_document(doc, raw)


def the_table(parsed: ParsedDocument) -> Block:
    tables = [b for b in parsed.blocks if b.kind == "table"]
    assert len(tables) == 1, parsed.blocks
    return tables[0]


def plain(context: str, body: str) -> str:
    """The embedding text of a part outside any section (no breadcrumb)."""
    return render("", context, body)


def cell_texts(text: str, layout: TableLayout, row: int) -> list[str]:
    return [text[a:b] for a, b in layout.row_cells(row)]


# --- the contract, checked on split_table's parts and on the chunks ----------------------------


def check_parts(
    text: str,
    block: Block,
    parts: list[TablePart],
    ctx: ChunkContext,
    r: Callable[[str, str], str],
    lead: int | None = None,
) -> None:
    """Budget, header context, whole rows, coverage once and in order, no text lost, cells."""
    layout = table_rows(text, block)
    header = text[layout.header[0] : layout.header[1]]
    repeat = 2 * ctx.tokens(r(header, "")) <= ctx.config.max_tokens
    start = layout.header[0] if lead is None else lead
    assert parts and parts[0].header
    seen: list[int] = []
    prev_end = start
    for p in parts:
        body = text[p.start : p.end]
        assert body and body == body.strip()
        assert ctx.fits(r(p.context, body)), (p, ctx.tokens(r(p.context, body)))
        assert "table_split" in p.flags
        assert prev_end <= p.start, "parts overlap or go backwards"
        assert not text[prev_end : p.start].strip(), "text between parts is lost"
        prev_end = p.end
        if p.header:
            assert p.context == "" and p.rows[0] == 0
        else:
            assert p.context == (header if repeat else "")
        covered = ([HEADER] if p.header else []) + list(range(*p.rows))
        if "row_split" in p.flags:  # a piece of one row (or of the header)
            assert len(covered) == 1
            row = (start, layout.header[1]) if p.header else layout.rows[p.rows[0]]
            assert row[0] <= p.start < p.end <= row[1]
        else:  # whole rows: the range is exactly the union of its rows (and the lead)
            first = trim(text, start, block.end)[0] if p.header else layout.rows[p.rows[0]][0]
            last = layout.rows[p.rows[1] - 1][1] if p.rows[1] > p.rows[0] else layout.header[1]
            assert (p.start, p.end) == (first, last)
            want = [CellSpan(k, j, a, b) for k in covered for j, (a, b) in enumerate(layout.row_cells(k))]
            assert list(p.cells) == want
        for c in p.cells:
            assert p.start <= c.start <= c.end <= p.end
        for k in covered:
            if k != HEADER and not ("row_split" in p.flags and seen and seen[-1] == k):
                seen.append(k)
    assert not text[prev_end : block.end].strip()
    assert seen == list(range(len(layout.rows))), "rows not covered once and in order"
    squash = re.compile(r"\s+")
    joined = "".join(text[p.start : p.end] for p in parts)
    assert squash.sub("", joined) == squash.sub("", text[start : block.end])


ROWS_FLAG = re.compile(r"rows:(\d+)-(\d+)")


def check_chunks(parsed: ParsedDocument, chunks: list[Chunk]) -> list[Chunk]:
    """The table's chunks: exact text, header in every embedding, whole rows once and in order."""
    text, block = parsed.text, the_table(parsed)
    layout = table_rows(text, block)
    header = text[layout.header[0] : layout.header[1]]
    parts = [c for c in chunks if c.kind == "table"]
    assert len(parts) >= 3 and all("table_split" in c.flags for c in parts)
    rows: list[int] = []
    for c in parts:
        assert parsed.text[c.start : c.end] == c.text
        assert header in c.embedding_text
        assert "row_split" not in c.flags
        m = [ROWS_FLAG.fullmatch(f) for f in c.flags]
        a, b = next((int(x[1]), int(x[2])) for x in m if x)
        assert c.end == layout.rows[b - 1][1]  # ends with a whole row ...
        if c is not parts[0]:
            assert c.start == layout.rows[a - 1][0]  # ... and starts with one
            assert c.embedding_text.endswith(header + "\n" + c.text)
        else:
            assert c.start <= layout.header[0]
        rows.extend(range(a - 1, b))
    assert rows == list(range(len(layout.rows)))
    return parts


@pytest.fixture
def small(chunk_ctx: Callable[..., ChunkContext]) -> ChunkContext:
    return chunk_ctx(max_tokens=64, target_tokens=48, overlap_tokens=8)


# --- one table of each format ----------------------------------------------------------------


def test_markdown_table_is_split_by_whole_rows(small: ChunkContext) -> None:
    body = "".join(f"| {k} | widget {k} | {k * 3} kg \\| boxed |\n" for k in range(40))
    raw = f"# Stock\n\nIntro line.\n\n| id | item | weight |\n|:--|---|--:|\n{body}\nAfter.\n".encode()
    doc, parsed = parse(raw, MD)
    block = the_table(parsed)
    chunks = StructuralChunker().chunk(doc, parsed, small)
    parts = check_chunks(parsed, chunks)
    assert parts[0].heading_path == ("Stock",)
    check_parts(parsed.text, block, split_table(parsed.text, block, small, plain), small, plain)
    layout = table_rows(parsed.text, block)
    assert cell_texts(parsed.text, layout, 7) == ["7", "widget 7", "21 kg \\| boxed"]


def test_html_table_is_split_by_whole_rows(small: ChunkContext) -> None:
    body = "".join(
        f"<tr><td>row {k}</td><td>{k}&amp;{k + 1}</td><td>note <b>{k}</b></td></tr>" for k in range(40)
    )
    raw = (
        "<html><body><main><h1>Report</h1><p>Some words before the table.</p>"
        f"<table><caption>Quarterly</caption><thead><tr><th>Name</th><th>Pair</th><th>Note</th></tr></thead>"
        f"<tbody>{body}</tbody></table><p>After the table.</p></main></body></html>"
    ).encode()
    doc, parsed = parse(raw, HTML)
    block = the_table(parsed)
    chunks = StructuralChunker().chunk(doc, parsed, small)
    parts = check_chunks(parsed, chunks)
    assert parsed.text[parts[0].start :].startswith("| Name | Pair | Note |\n| --- | --- | --- |\n| row 0 |")
    check_parts(parsed.text, block, split_table(parsed.text, block, small, plain), small, plain)
    layout = table_rows(parsed.text, block)
    assert cell_texts(parsed.text, layout, HEADER) == ["Name", "Pair", "Note"]
    assert cell_texts(parsed.text, layout, 12) == ["row 12", "12&13", "note 12"]
    for c in parts[1:]:  # a part's source bytes start at its first row's <tr>
        assert raw[c.byte_start : c.byte_end].startswith(b"<tr>")


PDF_HEADER = ("Item", "Qty", "Price", "Remark")


def grid_pdf(rows: int) -> bytes:
    """One page: a paragraph, then a fully ruled table with a header row."""
    doc = pymupdf.open()
    page = doc.new_page(width=595, height=842)
    page.insert_text((50, 60), "Inventory sheet for the northern depot.", fontsize=11)
    data = [
        PDF_HEADER,
        *((f"part{k:02d}", str(k + 1), f"{k * 5}.50", f"bin {k % 7} shelf") for k in range(rows)),
    ]
    xs, top, h = [50.0, 150.0, 210.0, 290.0, 450.0], 90.0, 18.0
    for i, row in enumerate(data):
        for j, cell in enumerate(row):
            page.insert_text((xs[j] + 4, top + (i + 1) * h - 5), cell, fontsize=9)
    for i in range(len(data) + 1):
        page.draw_line((xs[0], top + i * h), (xs[-1], top + i * h), width=0.8)
    for x in xs:
        page.draw_line((x, top), (x, top + len(data) * h), width=0.8)
    out: bytes = doc.tobytes()
    return out


def test_pdf_table_is_split_by_whole_rows(small: ChunkContext) -> None:
    raw = grid_pdf(36)
    doc, parsed = parse(raw, PDF)
    block = the_table(parsed)
    layout = table_rows(parsed.text, block)
    assert len(layout.rows) == 36
    assert (
        parsed.text[layout.header[0] : layout.header[1]]
        == "| Item | Qty | Price | Remark |\n|---|---|---|---|"
    )
    chunks = StructuralChunker().chunk(doc, parsed, small)
    parts = check_chunks(parsed, chunks)
    assert all(c.pages and c.pages[0].page == 1 for c in parts)
    check_parts(parsed.text, block, split_table(parsed.text, block, small, plain), small, plain)
    # cell provenance: each cell range maps to the page, inside the chunk's own bbox
    assert parsed.layout is not None
    for p in split_table(parsed.text, block, small, plain):
        chunk = next(c for c in parts if c.start <= p.start and p.end <= c.end)
        box = chunk.pages[0].bbox
        for cell in p.cells:
            want = PDF_HEADER if cell.row == HEADER else (f"part{cell.row:02d}", str(cell.row + 1))
            if cell.col < len(want):
                assert parsed.text[cell.start : cell.end] == want[cell.col]
            (span,) = parsed.layout.spans(cell.start, cell.end)
            assert span.page == 1
            assert box[0] <= span.bbox[0] and span.bbox[2] <= box[2] + 0.01
            assert box[1] <= span.bbox[1] and span.bbox[3] <= box[3] + 0.01


# --- generated Markdown tables ----------------------------------------------------------------

BUDGETS = [(32, 24), (40, 40), (64, 48), (96, 64)]
cell_text = st.one_of(
    st.text(alphabet="abcxyz 0123456789éß東😀-_.:", max_size=14),
    st.sampled_from(["\\|", "a \\| b", "**b**", "`c`", "x\\\\y"]),
    st.lists(st.sampled_from(["word", "tenant", "longer", "élan", "東京"]), min_size=20, max_size=70).map(
        " ".join
    ),
)


@st.composite
def md_table(draw: st.DrawFn) -> tuple[str, list[list[str]]]:
    cols = draw(st.integers(1, 4))
    head = draw(
        st.lists(st.sampled_from(["id", "name", "qty", "note", "Größe"]), min_size=cols, max_size=cols)
    )
    rows = draw(st.lists(st.lists(cell_text, min_size=cols, max_size=cols), max_size=25))
    outer = draw(st.booleans())

    def line(cells: list[str]) -> str:
        inner = " | ".join(c.strip() or " " for c in cells)
        piped = outer or cols == 1 or not cells[-1].strip() or not cells[0].strip()[:1].isalpha()
        return f"| {inner} |" if piped else inner

    delim = line([draw(st.sampled_from(["---", ":--", "--:", ":-:"])) for _ in range(cols)])
    return "\n".join([line(head), delim, *map(line, rows)]) + "\n", [head, *rows]


@settings(
    max_examples=120,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(table=md_table(), budget=st.sampled_from(BUDGETS), heading=st.booleans())
def test_generated_markdown_tables(
    counter: TokenCounter, table: tuple[str, list[list[str]]], budget: tuple[int, int], heading: bool
) -> None:
    ctx = ChunkContext(ChunkingConfig("structural", budget[0], budget[1], 0), counter, "test-model")
    md, cells = table
    raw = (("# Heading\n\n" if heading else "") + md).encode()
    _, parsed = parse(raw, MD)
    block = the_table(parsed)
    text = parsed.text
    layout = table_rows(text, block)
    assert len(layout.rows) == len(cells) - 1
    for k, want in enumerate(cells):  # every cell range slices to its cell text
        assert cell_texts(text, layout, k - 1 if k else HEADER) == [c.strip() for c in want]
    lead = 0 if heading else None
    parts = split_table(text, block, ctx, plain, lead=lead)
    check_parts(text, block, parts, ctx, plain, lead=lead)
    event(f"parts: {min(len(parts), 4)}{'+' if len(parts) >= 4 else ''}")
    event("row_split" if any("row_split" in p.flags for p in parts) else "whole rows only")
    event("header cut" if "row_split" in parts[0].flags else "header whole")
    event("header repeated" if any(p.context for p in parts) else "header not repeated")
    header = text[layout.header[0] : layout.header[1]]
    if 2 * ctx.tokens(render("", header, "")) <= ctx.config.max_tokens:
        assert all(header in render("", p.context, text[p.start : p.end]) for p in parts)


# --- a row bigger than the budget --------------------------------------------------------------


def test_a_row_too_big_alone_is_cut_and_flagged_not_truncated(small: ChunkContext) -> None:
    long_cell = " ".join(f"clause{k} of the lengthy remark" for k in range(60))
    wide = " | ".join(f"col{k} value" for k in range(30))
    raw = (
        "| a | b |\n|---|---|\n| 1 | short |\n"
        f"| 2 | {long_cell} |\n| 3 | short |\n| {wide} |\n| 5 | short |\n"
    ).encode()
    doc, parsed = parse(raw, MD)
    text, block = parsed.text, the_table(parsed)
    layout = table_rows(text, block)
    parts = split_table(text, block, small, plain)
    check_parts(text, block, parts, small, plain)
    for k in (1, 3):
        cut = [p for p in parts if p.rows == (k, k + 1) and "row_split" in p.flags]
        assert len(cut) >= 2
        assert all(p.context == "| a | b |\n|---|---|" for p in cut)
        assert cut[0].start == layout.rows[k][0] and cut[-1].end == layout.rows[k][1]
        squash = re.compile(r"\s+")
        assert squash.sub("", "".join(text[p.start : p.end] for p in cut)) == squash.sub(
            "", text[slice(*layout.rows[k])]
        )
    starts = {a for a, _b in layout.cells[3]}
    assert all(p.start in starts | {layout.rows[3][0]} for p in parts if p.rows == (3, 4))  # cut at cells
    assert not any("row_split" in p.flags for p in parts if p.rows[0] in (0, 2, 4))
    chunks = StructuralChunker().chunk(doc, parsed, small)
    assert all(parsed.text[c.start : c.end] == c.text and c.token_count <= 64 for c in chunks)
    assert sum("row_split" in c.flags for c in chunks) == sum("row_split" in p.flags for p in parts)


def test_a_header_too_long_to_repeat_is_not_repeated(small: ChunkContext) -> None:
    head = " | ".join(f"heading number {k}" for k in range(8))
    body = "".join(f"| {k} |\n" for k in range(30))
    text = f"| {head} |\n{body}"  # no delimiter row: the first row is the header
    block = Block("table", 0, len(text))
    layout = table_rows(text, block)
    assert layout.header == (0, text.index("\n")) and len(layout.rows) == 30
    parts = split_table(text, block, small, plain)
    check_parts(text, block, parts, small, plain)
    assert all(p.context == "" for p in parts)


# --- cell provenance ---------------------------------------------------------------------------


def test_cell_ranges_slice_to_cell_texts() -> None:
    text = "x\n\n  a | b \\| c |  d\n --- | :-: | ---\n 1 |  | 東京 😀 \n|\\|x|y\\\\|\n"
    block = Block("table", 3, len(text))
    layout = table_rows(text, block)
    assert text[slice(*layout.header)] == "a | b \\| c |  d\n --- | :-: | ---"
    assert cell_texts(text, layout, HEADER) == ["a", "b \\| c", "d"]
    assert [text[a:b] for a, b in layout.rows] == ["1 |  | 東京 😀", "|\\|x|y\\\\|"]
    assert cell_texts(text, layout, 0) == ["1", "", "東京 😀"]
    # as markdown-it splits: a backslash right before a pipe escapes it, even after another one
    assert cell_texts(text, layout, 1) == ["\\|x", "y\\\\|"]
    assert layout.cells[0][1][0] == layout.cells[0][1][1]  # an empty cell is an empty range


def test_html_cells_expand_spans_and_map_to_text() -> None:
    raw = (
        b"<table><tr><th>K</th><th>V</th><th>W</th></tr><tr><td colspan=2>wide &lt;x&gt;</td><td>3</td></tr>"
        b"<tr><td>a<br>b</td><td></td><td>z</td></tr></table>"
    )
    _, parsed = parse(raw, HTML)
    layout = table_rows(parsed.text, the_table(parsed))
    assert cell_texts(parsed.text, layout, HEADER) == ["K", "V", "W"]
    assert cell_texts(parsed.text, layout, 0) == ["wide <x>", "wide <x>", "3"]
    assert cell_texts(parsed.text, layout, 1) == ["a b", "", "z"]


def test_html_cells_with_pipes_stay_one_cell() -> None:
    raw = (
        "<table><tr><th>K</th><th>V | W</th></tr>"
        "<tr><td>a|b é|c</td><td>x &#124; y</td></tr>"
        "<tr><td colspan=2>p|q</td></tr></table>"
    ).encode()
    _, parsed = parse(raw, HTML)
    text = parsed.text
    layout = table_rows(text, the_table(parsed))
    assert cell_texts(text, layout, HEADER) == ["K", "V \\| W"]  # escaped as GFM does
    assert cell_texts(text, layout, 0) == ["a\\|b é\\|c", "x \\| y"]
    assert cell_texts(text, layout, 1) == ["p\\|q", "p\\|q"]  # a colspan copy, escaped too
    # the escapes are width-0: each cell still maps to its exact source bytes
    for (a, b), want in zip(layout.cells[0], ["a|b é|c".encode(), b"x &#124; y"], strict=True):
        b0, b1 = parsed.offsets.span(text, a, b)
        assert raw[b0:b1] == want


def test_a_table_without_rows_is_refused() -> None:
    from tessera.errors import ChunkingError

    with pytest.raises(ChunkingError):
        table_rows("x\n\n  \n", Block("table", 2, 5))
