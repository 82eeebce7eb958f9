"""PDF parser: PyMuPDF text with reading order, tables, OCR and an exact page layout map.

Stages (one ``get_text("dict")`` per page; see the modules named for the details):

1. open and validate: typed failures ``empty``, ``corrupt`` (no ``%PDF-`` header, unreadable,
   or truncated: repaired *and* no ``%%EOF`` at the end), ``encrypted`` (needs a user
   password; owner-password-only files open with ``authenticate("")`` and are extracted);
2. per page (:mod:`~tessera.parsing.pdf_extract`): visible spans to lines and blocks, hidden
   text counted and dropped, ruling lines counted; tabular pages get the table pass
   (:mod:`~tessera.parsing.pdf_tables`); pages without a usable text layer are OCRed
   (:mod:`~tessera.parsing.ocr`);
3. document level (:mod:`~tessera.parsing.pdf_layout`): running headers/footers removed,
   headings marked, blocks put in reading order, tables continued across a page break merged;
4. emission: blocks separated by a blank line, lines joined by a space (a newline after a
   short line), hyphenated line ends joined, tables as GFM Markdown (one row per line, header
   then ``|---|`` separator). Every character belongs to a :class:`LayoutRun` (a span, a
   table cell or an OCR line; separators belong to the run before them), so a chunk's
   union bbox contains all of its characters on each page.

``LayoutRun.page_start`` indexes the page's own extracted text: the slice of the normalized
text that the page's runs cover (they are contiguous, pages in order).
"""

from __future__ import annotations

import gc
import re
import time

from tessera.errors import DocumentError
from tessera.layout import PageLayout
from tessera.offsets import OffsetMapBuilder
from tessera.parsing import versions
from tessera.parsing.base import SandboxLimits
from tessera.parsing.pdf_emit import assemble
from tessera.parsing.pdf_extract import (
    PageContext,
    PageStats,
    build_blocks,
    page_dict,
    rules,
)
from tessera.parsing.pdf_layout import mark_headings, merge_tables, order_page, remove_running_lines
from tessera.parsing.pdf_model import Document, Page, PageContent, Table, pymupdf
from tessera.parsing.pdf_ocr import decide, not_ocred, run_ocr
from tessera.parsing.pdf_tables import find_tables, strategy
from tessera.parsing.trust import instruction_pieces
from tessera.types import ParsedDocument, SourceDocument, TrustReport

MAX_VECTORS_FOR_TABLES = 5000
MAX_MUPDF_WARNINGS = 10


class PdfParser:
    name = "pdf"
    version = versions.pdf()
    content_types: tuple[str, ...] = ("application/pdf",)
    sandbox = SandboxLimits(wall_seconds=60, memory_mb=2048)

    def __init__(
        self,
        tables: bool = True,
        ocr: bool = True,
        ocr_budget_seconds: float = 40.0,
        ocr_page_seconds: float = 30.0,
    ) -> None:
        self.tables = tables
        self.ocr = ocr
        self.ocr_budget_seconds = ocr_budget_seconds
        """OCR time per document; later pages that need OCR get an ``ocr_skipped`` warning."""
        self.ocr_page_seconds = ocr_page_seconds
        """OCR time per page; a page past it gets an ``ocr_timeout`` warning."""

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        pymupdf.TOOLS.mupdf_display_errors(False)
        pymupdf.TOOLS.mupdf_display_warnings(False)
        pymupdf.TOOLS.reset_mupdf_warnings()
        pdf = open_pdf(doc.doc_id, raw)
        collect = gc.isenabled()
        gc.disable()  # many short-lived dicts, no cycles: the cyclic GC only costs time here
        try:
            return self._parse(doc, pdf)
        finally:
            pdf.close()
            if collect:
                gc.enable()

    def _parse(self, doc: SourceDocument, pdf: Document) -> ParsedDocument:
        warnings: list[str] = []
        deadline = time.monotonic() + self.ocr_budget_seconds
        pages: list[PageContent] = []
        dropped = [0, 0]  # hidden spans dropped, of which instruction-like
        for i in range(pdf.page_count):
            try:
                pages.append(self._page(pdf.load_page(i), i + 1, warnings, deadline, dropped))
            except MemoryError:
                raise
            except Exception as e:  # one unreadable page does not lose the others
                if re.search(r"out of memory|malloc|cannot allocate", str(e), re.I):
                    raise MemoryError(str(e)) from e
                warnings.append(f"page_error: page {i + 1}: {type(e).__name__}: {str(e)[:120]}")
        if not pages:
            raise DocumentError(doc.doc_id, "corrupt", "no page could be read")
        removed = remove_running_lines(pages)
        if removed:
            warnings.append(f"running_header_footer: {removed} lines removed")
        mark_headings(pages)
        for page in pages:
            order_page(page)
        merge_tables(pages)
        text, blocks, layout = assemble(pages)
        warnings.extend(_mupdf_warnings())
        warnings.extend(_empty_pages(pages, pdf.page_count, layout))
        if not text.strip():
            warnings.append("no_text: no extractable text")
        omap = OffsetMapBuilder()
        omap.verbatim(text, 0)
        return ParsedDocument(
            doc_id=doc.doc_id,
            text=text,
            blocks=tuple(blocks),
            offsets=omap.build()[1],
            parser=self.name,
            parser_version=self.version,
            warnings=tuple(warnings),
            layout=layout,
            trust=TrustReport(hidden_dropped=dropped[0], instructions_dropped=dropped[1]),
        )

    def _page(
        self, page: Page, number: int, warnings: list[str], deadline: float, dropped: list[int]
    ) -> PageContent:
        text_blocks, vectors = page_dict(page)
        stats = PageStats()
        rules(vectors, stats)
        ctx = PageContext(page, vectors)
        tables: list[Table] = []
        kwargs = strategy(stats) if self.tables else None
        if kwargs is not None and len(vectors) > MAX_VECTORS_FOR_TABLES:
            warnings.append(f"tables_skipped: page {number}: {len(vectors)} vector paths")
        elif kwargs is not None:
            try:
                tables = find_tables(page, number, kwargs, ctx, warnings)
            except Exception as e:
                warnings.append(f"table_error: page {number}: {type(e).__name__}: {str(e)[:120]}")
        content = build_blocks(page, number, text_blocks, ctx, stats, [t.bbox for t in tables])
        content.tables = tables
        if stats.hidden:
            warnings.append(f"hidden_text: {stats.hidden} spans on page {number}")
            dropped[0] += stats.hidden
            dropped[1] += instruction_pieces(stats.hidden_texts)
        if stats.ocr_layer:
            warnings.append(
                f"ocr_text_layer: {stats.ocr_layer} invisible spans over images kept on page {number}"
            )
        plan = decide(page, content, ctx, stats)
        if plan.mode != "none" and self.ocr:
            warnings.extend(run_ocr(page, content, plan, deadline, self.ocr_page_seconds))
        elif plan.mode != "none":
            if stats.garbage:
                content.blocks, content.tables = [], []
                warnings.append(f"garbage_text: page {number}: text layer dropped")
            warnings.append(not_ocred(number, plan))
        return content


def open_pdf(doc_id: str, raw: bytes) -> Document:
    """Open ``raw`` as a PDF or raise a typed :class:`DocumentError`."""
    if not raw:
        raise DocumentError(doc_id, "empty", "0-byte file")
    if b"%PDF-" not in raw[:1024]:
        raise DocumentError(doc_id, "corrupt", "not a PDF (no %PDF- header)")
    try:
        pdf = pymupdf.open(stream=raw, filetype="pdf")
    except pymupdf.EmptyFileError as e:
        raise DocumentError(doc_id, "empty", str(e)) from e
    except Exception as e:  # FileDataError and other MuPDF errors
        reason = "encrypted" if re.search(r"password|crypt", str(e), re.I) else "corrupt"
        raise DocumentError(doc_id, reason, f"{type(e).__name__}: {e}") from e
    if pdf.needs_pass and not pdf.authenticate(""):
        pdf.close()
        raise DocumentError(doc_id, "encrypted", "needs a password")
    if pdf.is_repaired and b"%%EOF" not in raw[-1024:]:
        pdf.close()
        raise DocumentError(doc_id, "corrupt", "truncated file (no %%EOF, xref repaired)")
    if pdf.page_count == 0:
        pdf.close()
        raise DocumentError(doc_id, "empty", "no pages")
    return pdf


MAX_EMPTY_LISTED = 20


def _empty_pages(pages: list[PageContent], count: int, layout: PageLayout) -> list[str]:
    """``empty_page`` warnings for the pages that gave no text (read, but no run on them)."""
    with_text = {r.page for r in layout.runs}
    empty = [p.number for p in pages if p.number not in with_text]
    out = [f"empty_page: page {n}: no text on this page" for n in empty[:MAX_EMPTY_LISTED]]
    if len(empty) > MAX_EMPTY_LISTED:
        out.append(f"empty_page: {len(empty) - MAX_EMPTY_LISTED} more pages of {count} without text")
    return out


def _mupdf_warnings() -> list[str]:
    seen: list[str] = []
    for line in pymupdf.TOOLS.mupdf_warnings(reset=True).splitlines():
        line = line.strip()
        if line and line not in seen:
            seen.append(line)
    out = [f"mupdf: {w[:160]}" for w in seen[:MAX_MUPDF_WARNINGS]]
    if len(seen) > MAX_MUPDF_WARNINGS:
        out.append(f"mupdf: {len(seen) - MAX_MUPDF_WARNINGS} more warnings")
    return out
