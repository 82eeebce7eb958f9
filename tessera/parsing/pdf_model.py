"""Records the PDF parser passes between its stages: pieces, lines, blocks, tables, pages.

A :class:`Piece` is text drawn at one place on one page (a PyMuPDF span, a table cell, an
OCR line); it becomes one :class:`tessera.layout.LayoutRun` of the normalized text.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any


class _OnFirstUse:
    """PyMuPDF, imported on first attribute access: importing it costs about 0.6 s (its layout
    package loads ONNX models), which a listing, a sensor tick or ``make run``'s up-to-date
    check, needing only the parser's version, should not pay."""

    def __getattr__(self, name: str) -> Any:
        import pymupdf as module

        return getattr(module, name)


pymupdf: Any = _OnFirstUse()
"""PyMuPDF, typed as ``Any``: it ships ``py.typed`` but most of its API is unannotated."""
Page = Any
Document = Any

Box = tuple[float, float, float, float]


def union(boxes: list[Box]) -> Box:
    return (
        min(b[0] for b in boxes),
        min(b[1] for b in boxes),
        max(b[2] for b in boxes),
        max(b[3] for b in boxes),
    )


@dataclass(slots=True)
class Piece:
    text: str
    bbox: Box
    ocr: bool = False
    confidence: float = 1.0


@dataclass(slots=True)
class Line:
    pieces: list[Piece]
    bbox: Box
    size: float = 0.0
    """Largest font size on the line (0 for OCR lines, which are never headings)."""
    bold: bool = False
    text: str = ""
    """The pieces' text (computed when not given; pieces are not changed afterwards)."""

    def __post_init__(self) -> None:
        if not self.text:
            self.text = "".join(p.text for p in self.pieces)


@dataclass(slots=True)
class TextBlock:
    lines: list[Line]
    bbox: Box
    kind: str = "paragraph"
    level: int = 0

    def refresh(self) -> None:
        self.bbox = union([ln.bbox for ln in self.lines])


@dataclass(slots=True)
class Cell:
    text: str
    bbox: Box


@dataclass(slots=True)
class Table:
    rows: list[list[Cell]]
    bbox: Box
    row_pages: list[int] = field(default_factory=list)
    """1-based page of each row (a table merged across a page break has two)."""

    @property
    def columns(self) -> int:
        return len(self.rows[0]) if self.rows else 0


Item = TextBlock | Table


@dataclass(slots=True)
class PageContent:
    number: int
    width: float
    height: float
    blocks: list[TextBlock] = field(default_factory=list)
    tables: list[Table] = field(default_factory=list)
    items: list[Item] = field(default_factory=list)
    """Blocks and tables in reading order (filled by the layout stage)."""
