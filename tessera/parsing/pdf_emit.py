"""Emission of the PDF parser: blocks and tables in reading order to normalized text and runs.

Blocks are separated by a blank line, lines joined by a space (a newline after a short line or
before a list item), hyphenated line ends joined, tables as GFM Markdown (one row per line,
header then ``|---|`` separator). Every character belongs to a :class:`LayoutRun` (a span, a
table cell or an OCR line; separators belong to the run before them).
"""

from __future__ import annotations

import re
from typing import Any

from tessera.layout import LayoutRun, PageLayout
from tessera.parsing.pdf_model import Line, PageContent, Table, TextBlock
from tessera.types import Block

_LIST_ITEM = re.compile(r"^(?:[-•▪◦*·]|\(?\d{1,3}[.)]|\(?[a-z][.)])\s")
_BULLETS = frozenset("-•▪◦*·(")


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
