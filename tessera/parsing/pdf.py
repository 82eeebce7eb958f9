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
from typing import Any

from tessera.errors import DocumentError
from tessera.layout import LayoutRun, PageLayout
from tessera.offsets import OffsetMapBuilder
from tessera.parsing.base import SandboxLimits
from tessera.parsing.ocr import OcrFailed, OcrUnavailable, ocr_page
from tessera.parsing.pdf_extract import (
    PageContext,
    PageStats,
    build_blocks,
    needs_ocr,
    page_dict,
    rules,
)
from tessera.parsing.pdf_layout import mark_headings, merge_tables, order_page, remove_running_lines
from tessera.parsing.pdf_model import Document, Line, Page, PageContent, Table, TextBlock, pymupdf
from tessera.parsing.pdf_tables import find_tables, strategy
from tessera.parsing.trust import instruction_pieces
from tessera.types import Block, ParsedDocument, SourceDocument, TrustReport

MAX_VECTORS_FOR_TABLES = 5000
MAX_MUPDF_WARNINGS = 10
_LIST_ITEM = re.compile(r"^(?:[-•▪◦*·]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s")
_BULLETS = frozenset("-•▪◦*·(")


class PdfParser:
    name = "pdf"
    version = f"pymupdf-{pymupdf.VersionBind}+tessera.2"  # 2: trust report (hidden spans dropped)
    content_types: tuple[str, ...] = ("application/pdf",)
    sandbox = SandboxLimits(wall_seconds=60, memory_mb=2048)

    def __init__(self, tables: bool = True, ocr: bool = True, ocr_budget_seconds: float = 40.0) -> None:
        self.tables = tables
        self.ocr = ocr
        self.ocr_budget_seconds = ocr_budget_seconds
        """OCR time per document; later pages that need OCR get an ``ocr_skipped`` warning."""

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
                tables = find_tables(page, number, kwargs, ctx)
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
        if self.ocr and needs_ocr(stats):
            self._ocr(page, content, stats, warnings, deadline)
        elif stats.garbage:
            content.blocks, content.tables = [], []
            warnings.append(f"garbage_text: page {number}: text layer dropped")
        return content

    def _ocr(
        self, page: Page, content: PageContent, stats: PageStats, warnings: list[str], deadline: float
    ) -> None:
        number = content.number
        if stats.garbage:
            content.blocks, content.tables = [], []
            warnings.append(f"garbage_text: page {number}: text layer dropped")
        left = deadline - time.monotonic()
        if left < 3:
            warnings.append(f"ocr_skipped: page {number}: OCR time budget spent")
            return
        try:
            blocks = ocr_page(page, timeout=min(30.0, left))
        except OcrUnavailable:
            warnings.append(f"ocr_unavailable: page {number}")
            return
        except OcrFailed as e:
            warnings.append(f"ocr_failed: page {number}: {e}")
            return
        if blocks:
            content.blocks, content.tables = blocks, []


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


# -- emission ----------------------------------------------------------------------------


class _Text:
    """Normalized text plus its runs; separators extend the run before them."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.runs: list[list[Any]] = []

    def add(
        self, text: str, page: int, bbox: tuple[float, float, float, float], ocr: bool, conf: float
    ) -> None:
        if text:
            self.runs.append([self.pos, self.pos + len(text), page, bbox, ocr, conf])
            self.parts.append(text)
            self.pos += len(text)

    def sep(self, s: str) -> None:
        if s and self.runs:
            self.parts.append(s)
            self.pos += len(s)
            self.runs[-1][1] = self.pos


def _line_end(text: str, line: Line, nxt: Line, block: TextBlock) -> tuple[str, str]:
    """The line's last piece without a joined hyphen, and the separator before the next line."""
    if text.endswith("\u00ad"):
        return text[:-1], ""
    if text[-1:] in ("-", "\u2010") and text[-2:-1].isalpha() and nxt.text[:1].islower():
        return text[:-1], ""
    width = block.bbox[2] - block.bbox[0]
    if line.bbox[2] < block.bbox[2] - 0.3 * width:
        return text, "\n"
    head = nxt.text[:3]
    if (head[:1] in _BULLETS or head[:1].isdigit() or head[1:2] in (".", ")")) and _LIST_ITEM.match(nxt.text):
        return text, "\n"
    return text, " "


def _emit_block(out: _Text, block: TextBlock, page: int) -> None:
    lines = block.lines
    for k, line in enumerate(lines):
        last = len(line.pieces) - 1
        for j, piece in enumerate(line.pieces):
            text, sep = piece.text, ""
            if j == last and k + 1 < len(lines):
                text, sep = _line_end(text, line, lines[k + 1], block)
            out.add(text, page, piece.bbox, piece.ocr, piece.confidence)
            out.sep(sep)


def _emit_table(out: _Text, table: Table) -> None:
    for i, row in enumerate(table.rows):
        for j, cell in enumerate(row):
            out.add(("| " if j == 0 else " | ") + cell.text, table.row_pages[i], cell.bbox, False, 1.0)
        out.sep(" |")
        if i == 0:
            out.sep("\n|" + "|".join(["---"] * len(row)) + "|")
        if i + 1 < len(table.rows):
            out.sep("\n")


def assemble(pages: list[PageContent]) -> tuple[str, list[Block], PageLayout]:
    out = _Text()
    blocks: list[Block] = []
    for page in pages:
        for item in page.items:
            out.sep("\n\n")
            start = out.pos
            if isinstance(item, Table):
                _emit_table(out, item)
                if out.pos > start:
                    blocks.append(Block("table", start, out.pos))
                continue
            _emit_block(out, item, page.number)
            if out.pos == start:
                continue
            if item.kind == "heading":
                title = " ".join(" ".join(ln.text for ln in item.lines).split())
                blocks.append(Block("heading", start, out.pos, level=item.level, title=title))
            else:
                blocks.append(Block("paragraph", start, out.pos))
    first: dict[int, int] = {}
    runs = []
    for start, end, page_no, bbox, ocr, conf in out.runs:
        base = first.setdefault(page_no, start)
        runs.append(LayoutRun(start, end, page_no, start - base, bbox, ocr, conf))
    return "".join(out.parts), blocks, PageLayout(tuple(runs))
