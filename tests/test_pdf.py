"""PDF parsing: reading order, headers/footers, hyphenation, headings, tables, OCR, hidden text,
bad files, and the page/bbox provenance of chunks (checked against PyMuPDF's own word boxes)."""

from __future__ import annotations

import itertools
import re
import shutil
from collections.abc import Callable
from functools import cache
from typing import Any

import pymupdf
import pytest

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker
from tessera.errors import DocumentError
from tessera.parsing.base import get_parser, parser_for_path
from tessera.parsing.dispatch import parse_document
from tessera.parsing.pdf import PdfParser
from tessera.parsing.pdf_extract import garbage
from tessera.parsing.pdf_tables import cell_text
from tessera.pipeline.run import verify_step
from tessera.types import Chunk, ParsedDocument, SourceDocument, sha256_hex
from tests import pdf_fixtures as F

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")
MARKER = re.compile(r"\b[a-z][a-z0-9]*\d{2}\b")
TOL = 1.0


def src(raw: bytes, doc_id: str = "doc.pdf") -> SourceDocument:
    return SourceDocument(
        "acme", doc_id, f"file://{doc_id}", sha256_hex(raw), "application/pdf", (), ("staff",)
    )


@cache
def fixture(name: str) -> bytes:
    data: bytes = getattr(F, name)()
    return data


@cache
def parsed(name: str) -> ParsedDocument:
    raw = fixture(name)
    return PdfParser().parse(src(raw), raw)


def chunks_of(name: str, ctx: ChunkContext) -> list[Chunk]:
    raw = fixture(name)
    return StructuralChunker().chunk(src(raw), parsed(name), ctx)


def flat(s: str) -> str:
    return " ".join(s.split())


def page_words(raw: bytes) -> dict[int, list[tuple[str, tuple[float, float, float, float]]]]:
    doc = pymupdf.open(stream=raw)
    out = {}
    for i, page in enumerate(doc):
        out[i + 1] = [(w[4].strip(".,|"), (w[0], w[1], w[2], w[3])) for w in page.get_text("words")]
    return out


def contains(outer: tuple[float, ...], inner: tuple[float, ...], tol: float = TOL) -> bool:
    return (
        outer[0] - tol <= inner[0]
        and outer[1] - tol <= inner[1]
        and inner[2] <= outer[2] + tol
        and inner[3] <= outer[3] + tol
    )


# ----------------------------------------------------------------------------- registry


def test_pdf_parser_is_registered_and_sandboxed() -> None:
    assert parser_for_path("Report.PDF") == "application/pdf"
    parser = get_parser("application/pdf")
    assert isinstance(parser, PdfParser)
    assert parser.name == "pdf" and pymupdf.VersionBind in parser.version
    assert parser.sandbox.wall_seconds == 60 and parser.sandbox.memory_mb == 2048


# ----------------------------------------------------------------------------- reading order


def test_two_column_pages_read_column_by_column() -> None:
    p = parsed("two_column_pdf")
    text = p.text
    for page in range(3):
        left = [text.index(f"p{page}left{k:02d}") for k in range(10)]
        right = [text.index(f"p{page}right{k:02d}") for k in range(10)]
        assert left == sorted(left) and right == sorted(right)
        assert max(left) < min(right)
        if page:
            assert max(text.index(f"p{page - 1}right{k:02d}") for k in range(10)) < min(left)
    assert text.startswith("Quarterly Results Overview")  # the full-width title first


def test_three_column_page_reads_column_by_column() -> None:
    text = parsed("three_column_pdf").text
    pos = {p: [text.index(f"{p}{k:02d}") for k in range(8)] for p in ("first", "mid", "last")}
    assert all(v == sorted(v) for v in pos.values())
    assert max(pos["first"]) < min(pos["mid"]) and max(pos["mid"]) < min(pos["last"])


def test_running_header_and_footer_are_in_no_chunk(chunk_ctx: Callable[..., ChunkContext]) -> None:
    p = parsed("two_column_pdf")
    for boiler in (F.HEADER, "Confidential", "Page 1 of 3", "Page 3 of 3", "of 3"):
        assert boiler not in p.text
    assert any(w.startswith("running_header_footer: 9 lines") for w in p.warnings)
    chunks = chunks_of("two_column_pdf", chunk_ctx(max_tokens=128, target_tokens=100))
    assert len(chunks) > 3
    for c in chunks:
        assert F.HEADER not in c.embedding_text and "Page " not in c.text


def test_hyphenated_line_break_is_joined_and_maps_to_both_lines() -> None:
    raw, p = fixture("structured_pdf"), parsed("structured_pdf")
    assert "so that information retrieval results" in p.text and "infor-" not in p.text
    k = p.text.index("information")
    runs = p.layout.touching(k, k + len("information")) if p.layout else []
    assert len(runs) == 2 and runs[0].bbox[1] < runs[1].bbox[1]  # two lines, top one first
    words = dict(page_words(raw)[1])
    assert contains(runs[0].bbox, words["infor-"]) and contains(runs[1].bbox, words["mation"])


def test_headings_from_font_size_and_weight(chunk_ctx: Callable[..., ChunkContext]) -> None:
    p = parsed("structured_pdf")
    heads = [(b.level, b.title) for b in p.blocks if b.kind == "heading"]
    assert heads == [(1, "Retrieval Architecture"), (2, "Storage Layer")]
    chunks = chunks_of("structured_pdf", chunk_ctx(max_tokens=64, target_tokens=40))
    store = [c for c in chunks if "store01" in c.text]
    assert store and store[0].heading_path == ("Retrieval Architecture", "Storage Layer")
    assert store[0].embedding_text.startswith("Retrieval Architecture > Storage Layer\n\n")


# ----------------------------------------------------------------------------- layout map


@pytest.mark.parametrize("name", ["two_column_pdf", "structured_pdf", "table_pdf", "three_column_pdf"])
def test_every_character_maps_to_a_run_and_page_text(name: str) -> None:
    p = parsed(name)
    assert p.layout is not None and p.layout.runs
    runs = p.layout.runs
    assert runs[0].start == 0 and runs[-1].end == len(p.text)
    assert all(a.end == b.start for a, b in itertools.pairwise(runs))  # no gaps
    assert p.offsets.span(p.text, 0, len(p.text)) == (0, len(p.text.encode()))
    base: dict[int, int] = {}
    for r in runs:  # each page's text is one contiguous slice; page_start indexes into it
        assert base.setdefault(r.page, r.start - r.page_start) == r.start - r.page_start
    assert [r.page for r in runs] == sorted(r.page for r in runs)


@pytest.mark.parametrize("name", ["two_column_pdf", "structured_pdf", "table_pdf", "three_column_pdf"])
def test_each_run_bbox_contains_its_words_on_its_page(name: str) -> None:
    raw, p = fixture(name), parsed(name)
    words = page_words(raw)
    assert p.layout is not None
    checked = 0
    for r in p.layout.runs:
        for m in MARKER.findall(p.text[r.start : r.end]):
            boxes = [b for w, b in words[r.page] if w == m]
            assert boxes, (m, r.page)
            assert any(contains(r.bbox, b) for b in boxes), (m, r)
            checked += 1
    assert checked >= 4


@pytest.mark.parametrize("name", ["two_column_pdf", "structured_pdf", "table_pdf", "three_column_pdf"])
def test_chunk_pages_and_bboxes_contain_the_chunk_words(
    name: str, chunk_ctx: Callable[..., ChunkContext]
) -> None:
    raw = fixture(name)
    words = page_words(raw)
    chunks = chunks_of(name, chunk_ctx(max_tokens=96, target_tokens=64, overlap_tokens=8))
    assert len(chunks) >= 2
    for c in chunks:
        assert c.pages and c.byte_start == -1 and c.byte_end == -1
        spans = {s.page: s.bbox for s in c.pages}
        markers = MARKER.findall(c.text)
        for m in markers:
            where = [(pg, b) for pg, ws in words.items() for w, b in ws if w == m]
            assert where, m
            assert any(pg in spans and contains(spans[pg], b) for pg, b in where), (m, c.pages)
        for token in set(re.findall(r"[A-Za-z]{4,}", c.text)):  # every word is somewhere in the boxes
            where = [(pg, b) for pg, ws in words.items() for w, b in ws if token in w]
            if where:
                assert any(pg in spans and contains(spans[pg], b) for pg, b in where), (token, c.pages)


# ----------------------------------------------------------------------------- tables


def test_table_across_page_break_is_one_markdown_table() -> None:
    p = parsed("table_pdf")
    tables = [b for b in p.blocks if b.kind == "table"]
    assert len(tables) == 1
    body = p.text[tables[0].start : tables[0].end].split("\n")
    assert body[0] == "| Region | Quarter | Revenue | Notes |"
    assert body[1] == "|---|---|---|---|"
    assert body[2:] == [
        f"| {a} | {b} | {c} | {d} |" for a, b, c, d in F.table_rows(60)
    ]  # header not repeated
    assert p.text.index("before02") < tables[0].start and tables[0].end < p.text.index("after00")
    assert p.layout is not None
    pages = {r.page for r in p.layout.touching(tables[0].start, tables[0].end)}
    assert pages == {1, 2}


def test_table_cells_carry_cell_bboxes() -> None:
    p = parsed("table_pdf")
    assert p.layout is not None
    k = p.text.index("note05 steady growth")
    (run,) = p.layout.touching(k, k + 5)
    x0, _y0, x1, _y1 = run.bbox
    assert (x0, x1) == (280.0, 480.0)  # the Notes column's ruling lines


def test_table_cells_are_one_markdown_line_with_pipes_escaped() -> None:
    assert cell_text("a |b\n  c\t d ") == "a \\|b c d"


def test_table_without_repeated_header_is_merged_too() -> None:
    raw = F.table_pdf(rows=50, repeat_header=False)
    p = PdfParser().parse(src(raw), raw)
    tables = [b for b in p.blocks if b.kind == "table"]
    assert len(tables) == 1
    lines = p.text[tables[0].start : tables[0].end].split("\n")
    assert len(lines) == 2 + 50 and lines[0].startswith("| Region |")


def test_large_table_chunks_repeat_the_header_and_never_cut_a_row(
    chunk_ctx: Callable[..., ChunkContext],
) -> None:
    chunks = [
        c for c in chunks_of("table_pdf", chunk_ctx(max_tokens=128, target_tokens=100)) if "row" in c.text
    ]
    assert len(chunks) >= 4
    header = "| Region | Quarter | Revenue | Notes |\n|---|---|---|---|"
    seen: list[str] = []
    row = re.compile(r"^\| row\d\d \| Q\d \| \d+ \| note\d\d steady growth \|$")
    for c in chunks:
        assert c.kind == "table" and "table_split" in c.flags and "line_split" not in c.flags
        assert header in c.embedding_text
        rows = [ln for ln in c.text.split("\n") if ln.startswith("| row")]
        assert rows and all(row.match(ln) for ln in rows)
        seen.extend(ln.split(" | ")[0][2:] for ln in rows)
    assert seen == [f"row{k:02d}" for k in range(60)]  # every row once, in order


# ----------------------------------------------------------------------------- OCR


@needs_tesseract
def test_image_only_page_is_ocred_and_flagged(chunk_ctx: Callable[..., ChunkContext]) -> None:
    p = parsed("image_only_pdf")
    assert "invoice number 4711" in flat(p.text) and "quarterly records" in p.text
    assert p.layout is not None and all(r.ocr for r in p.layout.runs)
    assert all(0.5 < r.confidence <= 1.0 for r in p.layout.runs)
    k = p.text.index("4711")
    (run,) = p.layout.touching(k, k + 4)
    assert 150 < run.bbox[1] < 180 and run.bbox[0] < 70  # drawn at (60, 170) before rendering
    chunks = chunks_of("image_only_pdf", chunk_ctx())
    assert chunks and all("ocr" in c.flags for c in chunks)
    assert any("4711" in c.text for c in chunks)


@needs_tesseract
def test_upside_down_scan_is_read_turned_and_boxes_map_back() -> None:
    raw = F.image_only_pdf(rotate=180)
    p = PdfParser().parse(src(raw), raw)
    assert "invoice number 4711" in flat(p.text)
    assert p.layout is not None
    k = p.text.index("4711")
    (run,) = p.layout.touching(k, k + 4)
    assert run.ocr and F.A4[1] - 180 < run.bbox[1] < F.A4[1] - 150  # drawn at y=170, page turned


def test_image_only_page_without_ocr_engine_is_a_warning(
    monkeypatch: pytest.MonkeyPatch, chunk_ctx: Callable[..., ChunkContext]
) -> None:
    monkeypatch.setattr("tessera.parsing.ocr.shutil.which", lambda _cmd: None)
    raw = fixture("image_only_pdf")
    p = PdfParser().parse(src(raw), raw)
    assert p.text == "" and "ocr_unavailable: page 1" in p.warnings
    assert StructuralChunker().chunk(src(raw), p, chunk_ctx()) == []


def test_scanner_text_layer_is_kept_not_treated_as_hidden() -> None:
    raw = F.searchable_scan_pdf()
    p = PdfParser(ocr=False).parse(src(raw), raw)
    assert "layer01 Scanned invoice number 4711" in p.text
    assert p.layout is not None and all(r.ocr for r in p.layout.runs)
    assert not any(w.startswith("hidden_text") for w in p.warnings)


def test_garbage_text_layer_detection() -> None:
    assert garbage(
        "\ufffd\ufffd\ufffd \ufffd\ufffd\x03\x04 ab \ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd\ufffd" * 2
    )
    assert garbage("Wkh txlfn eurzq ira mxpsv ryhu wkh odcb grj dqg nhhsv uxqqlqj " * 3)
    assert not garbage("Contents . . . . . . . . . . . . . . . . . . . . vii Preface . . . . . . . ix " * 3)
    assert not garbage("The quick brown fox jumps over the lazy dog and its strength " * 3)
    assert not garbage("코로나-19 관련 보험약관상 재해보험금 지급문제 및 개선과제 " * 3)


# ----------------------------------------------------------------------------- hidden text


@pytest.mark.scenario("F4")
def test_hidden_text_is_kept_out_and_counted() -> None:
    p = parsed("hidden_text_pdf")
    for marker in F.HIDDEN:
        assert marker not in p.text
    assert "secret payload" not in p.text and "hidden instructions" not in p.text
    assert "visible01" in p.text and "visible03" in p.text
    assert "visible02 white on a dark box is readable." in p.text  # white on a dark fill is visible
    assert "hidden_text: 3 spans on page 1" in p.warnings


# ----------------------------------------------------------------------------- bad files


BAD = {
    "encrypted_pdf": "encrypted",
    "truncated_pdf": "corrupt",
    "wrong_type_pdf": "corrupt",
    "zero_page_pdf": "empty",
}


@pytest.mark.parametrize(("name", "reason"), [*BAD.items(), ("empty", "empty")])
@pytest.mark.scenario("E1", "E2")
def test_bad_files_fail_with_a_typed_reason(name: str, reason: str) -> None:
    raw = b"" if name == "empty" else fixture(name)
    with pytest.raises(DocumentError) as e:
        PdfParser().parse(src(raw), raw)
    assert e.value.reason == reason


@pytest.mark.scenario("E1", "E2")
def test_bad_files_through_the_sandbox_keep_their_reason() -> None:
    raw = fixture("encrypted_pdf")
    with pytest.raises(DocumentError) as e:
        parse_document(src(raw), raw)
    assert e.value.reason == "encrypted" and str(e.value) == "doc.pdf: encrypted: needs a password"
    good = fixture("structured_pdf")
    assert parse_document(src(good), good).text == parsed("structured_pdf").text


@pytest.mark.scenario("E2")
def test_owner_password_only_file_is_extracted() -> None:
    raw = fixture("owner_only_pdf")
    assert "owneronly01 Readable without a password." in PdfParser().parse(src(raw), raw).text


@pytest.mark.scenario("E1")
def test_repaired_file_is_parsed_with_mupdf_warnings() -> None:
    raw = F.repaired_pdf()
    p = PdfParser().parse(src(raw), raw)
    assert "information retrieval" in p.text
    assert any(w.startswith("mupdf:") and "repair" in w for w in p.warnings)


@pytest.mark.scenario("E1", "E2")
def test_pipeline_quarantines_bad_pdfs_and_keeps_old_chunks(ws: Any) -> None:
    good = fixture("two_column_pdf")
    corpus = ws.tenant(
        "acme",
        {
            "good.pdf": good,
            "table.pdf": fixture("table_pdf"),
            "locked.pdf": fixture("encrypted_pdf"),
            "cut.pdf": fixture("truncated_pdf"),
            "zero.pdf": b"",
            "data.pdf": fixture("wrong_type_pdf"),
        },
    )
    out = ws.run("acme", "r1")
    assert out["parse"]["parsed"] == 2 and out["parse"]["quarantined"] == 4
    report = ws.context("acme", "r1").read("parse_report.json")
    reasons = {q["doc_id"]: q["reason"] for q in report["quarantined"]}
    assert reasons == {
        "locked.pdf": "encrypted",
        "cut.pdf": "corrupt",
        "zero.pdf": "empty",
        "data.pdf": "corrupt",
    }
    rows = ws.rows("acme")
    good_rows = [r for r in rows if r["doc_id"] == "good.pdf"]
    assert good_rows and all(r["pages"] and r["byte_start"] == -1 for r in good_rows)
    assert not any(F.HEADER in r["text"] for r in rows)
    assert verify_step(ws.context("acme", "r1"))[0] == []

    (corpus / "good.pdf").write_bytes(good[: len(good) // 2])  # the file becomes corrupt
    out = ws.run("acme", "r2")
    report = ws.context("acme", "r2").read("parse_report.json")
    assert {"doc_id": "good.pdf", "reason": "corrupt"}.items() <= next(
        q for q in report["quarantined"] if q["doc_id"] == "good.pdf"
    ).items()
    after = [r for r in ws.rows("acme") if r["doc_id"] == "good.pdf"]
    assert sorted(r["id"] for r in after) == sorted(r["id"] for r in good_rows)  # kept, not deleted


def test_the_parser_version_needs_no_pymupdf_import() -> None:
    """A listing asks each parser's version; the PDF parser's is read from the package
    metadata, and importing the parser does not import PyMuPDF (0.6 s, its layout models)."""
    import subprocess
    import sys

    import pymupdf

    from tessera.parsing.pdf import PdfParser

    assert PdfParser.version == f"pymupdf-{pymupdf.VersionBind}+tessera.3"
    code = "import sys, tessera.parsing.pdf as p; p.PdfParser.version; print('pymupdf' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "False"
