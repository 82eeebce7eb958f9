"""Emission shared by the Office parsers: normalized text, blocks, part runs, hidden ranges.

Every character of the text either comes verbatim from one element's text (a :class:`PartRun`:
part, locator, offset) or is a separator the parser adds: blank lines between blocks,
``- `` before a list item, table syntax (``| ``, `` | ``, `` |``, the ``|---|`` line) and the
character that stands for one a table row cannot hold (a ``\\`` before a ``|`` of a cell, a
space for a newline in a cell). Separators never hold a letter or a digit.

Tables are rendered as the shared table chunker reads them (:mod:`tessera.chunking.tables`):
one row per line, the first row is the header, then the ``|---|`` delimiter line.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass

from tessera.errors import DocumentError
from tessera.layout import PartLayout, PartRun
from tessera.offsets import OffsetMap, OffsetMapBuilder
from tessera.types import Block, ParsedDocument, SourceDocument, TrustReport

_CELL_SPECIAL = re.compile(r"[|\n\r\t]")


@dataclass(frozen=True)
class Piece:
    """A range of one element's text: ``text`` starts at ``offset`` of it."""

    part: str
    locator: str
    offset: int
    text: str


class Emitter:
    """Normalized text plus its part runs, blocks and hidden ranges, built in order."""

    def __init__(self) -> None:
        self.parts: list[str] = []
        self.pos = 0
        self.runs: list[PartRun] = []
        self.blocks: list[Block] = []
        self.hidden: list[tuple[int, int]] = []

    def sep(self, s: str) -> None:
        if s:
            self.parts.append(s)
            self.pos += len(s)

    def gap(self, s: str) -> None:
        """A block separator, only between blocks (never at the start)."""
        if self.pos:
            self.sep(s)

    def piece(self, p: Piece) -> None:
        if p.text:
            self.runs.append(PartRun(self.pos, self.pos + len(p.text), p.part, p.locator, p.offset))
            self.parts.append(p.text)
            self.pos += len(p.text)

    def pieces(self, ps: Sequence[Piece]) -> None:
        for p in ps:
            self.piece(p)

    def cell(self, ps: Sequence[Piece | str]) -> None:
        """A table cell's pieces (a ``str`` is a separator) with ``|`` escaped and newlines,
        tabs as spaces."""
        for p in ps:
            if isinstance(p, str):
                self.sep(p)
                continue
            if not _CELL_SPECIAL.search(p.text):
                self.piece(p)
                continue
            start = 0
            for m in _CELL_SPECIAL.finditer(p.text):
                k = m.start()
                self.piece(Piece(p.part, p.locator, p.offset + start, p.text[start:k]))
                if m[0] == "|":
                    self.sep("\\")
                    start = k
                else:
                    self.sep(" ")
                    start = k + 1
            self.piece(Piece(p.part, p.locator, p.offset + start, p.text[start:]))

    def row(self, cells: Sequence[Sequence[Piece | str]], header: bool) -> list[tuple[int, int]]:
        """Emit a table row; the range of each cell's text."""
        spans = []
        for j, cell in enumerate(cells):
            self.sep("| " if j == 0 else " | ")
            start = self.pos
            self.cell(cell)
            spans.append((start, self.pos))
        self.sep(" |")
        if header:
            self.sep("\n|" + "|".join(["---"] * max(len(cells), 1)) + "|")
        return spans

    def table(self, rows: Sequence[Sequence[Sequence[Piece | str]]]) -> None:
        """A whole table block, after a blank line: a line per row, the first the header."""
        self.gap("\n\n")
        start = self.pos
        for i, cells in enumerate(rows):
            if i:
                self.sep("\n")
            self.row(cells, header=i == 0)
        self.block("table", start)

    def block(self, kind: str, start: int, level: int = 0, info: str = "", title: str = "") -> None:
        if self.pos > start:
            self.blocks.append(Block(kind, start, self.pos, level=level, info=info, title=title))

    def text(self) -> str:
        return "".join(self.parts)

    def structure(self) -> PartLayout:
        return PartLayout(tuple(self.runs))


def finish(
    doc: SourceDocument,
    parser: tuple[str, str],
    out: Emitter,
    warnings: list[str],
    trust: TrustReport,
    macros: bool,
    what: str = "text",
    no_text: str = "no extractable text",
) -> ParsedDocument:
    """The parsed document of ``out``, for every Office parser (``parser``: name, version):
    a package with a VBA project and no ``what`` is ``macro_only``; macros beside text and a
    document without text (``no_text``) are warnings."""
    text = out.text()
    if macros:
        if not text.strip():
            raise DocumentError(doc.doc_id, "macro_only", f"a VBA project and no {what}")
        warnings.append("macros: a VBA project is present (not run, not indexed)")
    if not text.strip():
        warnings.append(f"no_text: {no_text}")
    return ParsedDocument(
        doc_id=doc.doc_id,
        text=text,
        blocks=tuple(out.blocks),
        offsets=text_offsets(text),
        parser=parser[0],
        parser_version=parser[1],
        warnings=tuple(warnings),
        structure=out.structure(),
        trust=trust,
    )


def text_offsets(text: str) -> OffsetMap:
    """The offset map of a text with no byte ranges of its own (the part runs locate it)."""
    omap = OffsetMapBuilder()
    omap.verbatim(text, 0)
    return omap.build()[1]


def plain(text: str) -> str:
    """Text on one line, as a heading title or breadcrumb."""
    return " ".join(text.split())
