"""OCR that triggers when the page shows a picture of text, and finishes (issue 15)."""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from typing import Any

import pymupdf
import pytest

from tessera.parsing import ocr
from tessera.parsing.pdf import PdfParser
from tessera.parsing.pdf_extract import PageContext, PageStats, build_blocks, page_dict
from tessera.parsing.pdf_ocr import OcrPlan, decide, union_area
from tessera.types import ParsedDocument, SourceDocument, sha256_hex
from tests import pdf_fixtures as F

needs_tesseract = pytest.mark.skipif(shutil.which("tesseract") is None, reason="tesseract not installed")


def src(raw: bytes) -> SourceDocument:
    return SourceDocument("acme", "s.pdf", "file://s.pdf", sha256_hex(raw), "application/pdf", (), ("staff",))


def parse(raw: bytes, **kw: Any) -> ParsedDocument:
    return PdfParser(**kw).parse(src(raw), raw)


def plan(raw: bytes) -> OcrPlan:
    page = pymupdf.open(stream=raw)[0]
    blocks, vectors = page_dict(page)
    ctx, stats = PageContext(page, vectors), PageStats()
    return decide(page, build_blocks(page, 1, blocks, ctx, stats, []), ctx, stats)


def flat(s: str) -> str:
    return " ".join(s.split())


def test_decision_reads_what_the_page_shows() -> None:
    header = plan(F.scan_with_header_pdf())
    assert header.mode == "images" and header.image_cover > 0.7 and header.text_cover < 0.05
    assert plan(F.image_only_pdf()).mode == "images"
    logo = plan(F.logo_text_pdf())
    assert logo.mode == "none" and 0.01 < logo.image_cover < 0.05
    layer = plan(F.scan_with_header_pdf(layer=True))  # a scanner's full text layer: already text
    assert layer.mode == "none" and layer.text_on_images > 0.1
    assert plan(F.two_column_pdf(1)).mode == "none"


def test_header_text_is_not_a_reason_to_skip_ocr(monkeypatch: pytest.MonkeyPatch) -> None:
    # the header alone has more than the 50 characters the old character count asked for
    assert len(F.SCAN_HEADER) > 50
    calls: list[dict[str, Any]] = []

    def fake(page: Any, **kw: Any) -> list[Any]:
        calls.append(kw)
        return []

    monkeypatch.setattr("tessera.parsing.pdf_ocr.ocr_page", fake)
    parse(F.scan_with_header_pdf())
    parse(F.logo_text_pdf())
    assert len(calls) == 1  # the scan, not the logo page
    assert calls[0]["clip"] is not None and calls[0]["exclude"]  # image area only; header excluded


def test_union_area_counts_overlaps_once() -> None:
    assert union_area([(0, 0, 10, 10), (5, 5, 15, 15)]) == 175
    assert union_area([(0, 0, 10, 10), (0, 0, 10, 10), (2, 2, 3, 3)]) == 100
    assert union_area([]) == 0


@needs_tesseract
def test_scan_with_text_header_is_ocred_and_header_not_repeated() -> None:
    t0 = time.monotonic()
    p = parse(F.scan_with_header_pdf(), ocr_page_seconds=30)
    assert time.monotonic() - t0 < 30
    text = flat(p.text)
    assert text.count("registry entry 88412") == 1 and text.startswith("Received")
    found = [w for line in F.scan_lines() for w in line.split() if w in text.split()]
    assert len(found) >= 0.9 * sum(len(line.split()) for line in F.scan_lines())
    assert p.layout is not None
    assert not p.layout.ocr(0, len(F.SCAN_HEADER)) and p.layout.ocr(p.text.index("scan05"), len(p.text))
    assert not [w for w in p.warnings if w.startswith(("ocr_", "images_not_ocred", "empty_page"))]


def test_tesseract_runs_with_one_openmp_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[str | None] = []
    real = subprocess.Popen

    def spy(*args: Any, **kw: Any) -> Any:
        seen.append(kw.get("env", os.environ).get("OMP_THREAD_LIMIT"))
        return real(*args, **kw)

    pytesseract = pytest.importorskip("pytesseract")
    monkeypatch.setattr(pytesseract.pytesseract.subprocess, "Popen", spy)
    monkeypatch.setenv("OMP_THREAD_LIMIT", "8")  # a caller's environment asks for more
    monkeypatch.setattr(ocr.shutil, "which", lambda _c: "/bin/true")
    with ocr.thread_limit():
        assert os.environ["OMP_THREAD_LIMIT"] == "1"
    assert os.environ["OMP_THREAD_LIMIT"] == "8"  # restored
    if shutil.which("tesseract"):
        page = pymupdf.open(stream=F.image_only_pdf())[0]
        assert ocr.ocr_page(page, timeout=30)
        assert seen and set(seen) == {"1"}
        assert os.environ["OMP_THREAD_LIMIT"] == "8"


@needs_tesseract
def test_ocr_past_the_page_limit_is_a_typed_warning_not_a_silent_page() -> None:
    raw = F.scan_with_header_pdf()
    p = parse(raw, ocr_page_seconds=0.05)
    assert any(w.startswith("ocr_timeout: page 1:") for w in p.warnings)
    assert any(w.startswith("images_not_ocred: page 1: images cover") for w in p.warnings)
    assert flat(p.text) == F.SCAN_HEADER  # the header is kept, the scan reported
    blank = parse(F.image_only_pdf(), ocr_page_seconds=0.05)
    assert blank.text == "" and "empty_page: page 1: no text on this page" in blank.warnings
    assert any(w.startswith("ocr_timeout: page 1:") for w in blank.warnings)


def test_page_that_needed_ocr_with_ocr_off_is_reported() -> None:
    p = parse(F.scan_with_header_pdf(), ocr=False)
    assert any(w.startswith("images_not_ocred: page 1:") and w.endswith("(OCR off)") for w in p.warnings)
    assert not parse(F.logo_text_pdf(), ocr=False).warnings


def test_a_page_without_text_is_reported_and_the_others_are_not() -> None:
    p = parse(F.blank_middle_pdf())
    assert [w for w in p.warnings if w.startswith("empty_page")] == [
        "empty_page: page 2: no text on this page"
    ]
    assert "blank000" in p.text and "blank200" in p.text
