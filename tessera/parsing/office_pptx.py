"""PPTX parser: slides in presentation order, titles as headings, shapes, tables and notes.

* Elements: a slide part's shape paragraph is ``sp<id>/p<k>`` (paragraph ``k`` of the
  ``p:txBody`` of the shape whose ``p:cNvPr`` id is ``<id>``); a table cell's paragraph is
  ``sp<id>/r<i>c<j>/p<k>`` (the graphic frame's id). A paragraph's text
  (:func:`paragraph_text`) is its ``a:t`` text (runs and fields) with ``a:br`` as a newline.
  Notes are the body placeholder of the slide's notes part (``ppt/notesSlides/...``).
* Blocks: the title placeholder (``title``/``ctrTitle``) is a level-1 heading; other shapes'
  paragraphs are ``paragraph`` blocks, tables ``table`` blocks (first row the header), the
  notes a ``paragraph`` block with ``info="notes"``. Shapes are read in the slide's tree
  order (groups included).
* Hidden slides (``show="0"``) are kept and their range is marked hidden: their chunks are
  flagged ``hidden_text`` and a ``hidden_slide`` warning names them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from tessera.errors import DocumentError
from tessera.parsing import versions
from tessera.parsing.base import SandboxLimits
from tessera.parsing.office_text import Emitter, Piece, finish, plain
from tessera.parsing.office_zip import REL, Package
from tessera.types import ParsedDocument, SourceDocument, TrustReport

A = "{http://schemas.openxmlformats.org/drawingml/2006/main}"
P = "{http://schemas.openxmlformats.org/presentationml/2006/main}"
_TITLES = ("title", "ctrTitle")
MAX_SLIDES = 5000


def paragraph_text(p: Any) -> str:
    out = []
    for el in p.iter(f"{A}t", f"{A}br"):
        out.append("\n" if el.tag == f"{A}br" else (el.text or ""))
    return "".join(out)


def _shape_id(shape: Any) -> str:
    for el in shape.iter(f"{P}cNvPr"):
        return str(el.get("id", ""))
    return ""


def shapes(tree: Any) -> Iterator[Any]:
    """Text shapes and graphic frames of a shape tree in order, groups opened."""
    for child in tree:
        if child.tag == f"{P}grpSp":
            yield from shapes(child)
        elif child.tag in (f"{P}sp", f"{P}graphicFrame"):
            yield child


def _placeholder(shape: Any) -> str:
    ph = shape.find(f"{P}nvSpPr/{P}nvPr/{P}ph")
    return "" if ph is None else str(ph.get("type", "body"))


def element_text(root: Any, locator: str) -> str | None:
    """The text of a slide or notes part's element ``sp<id>/[r<i>c<j>/]p<k>``, or None."""
    bits = locator.split("/")
    tree = root.find(f"{P}cSld/{P}spTree")
    if tree is None or len(bits) not in (2, 3):
        return None
    for shape in shapes(tree):
        if f"sp{_shape_id(shape)}" != bits[0]:
            continue
        paras = _paragraphs(shape, bits[1] if len(bits) == 3 else "")
        k = int(bits[-1][1:]) if bits[-1][1:].isdigit() else -1
        return paragraph_text(paras[k]) if 0 <= k < len(paras) else None
    return None


def _paragraphs(shape: Any, cell: str) -> list[Any]:
    if not cell:
        body = shape.find(f"{P}txBody")
        return [] if body is None else body.findall(f"{A}p")
    for i, tr in enumerate(shape.iter(f"{A}tr")):
        for j, tc in enumerate(tr.findall(f"{A}tc")):
            if f"r{i}c{j}" == cell:
                body = tc.find(f"{A}txBody")
                return [] if body is None else body.findall(f"{A}p")
    return []


class PptxParser:
    name = "pptx"
    version = versions.PPTX
    content_types: tuple[str, ...] = (
        "application/vnd.openxmlformats-officedocument.presentationml.presentation",
    )
    sandbox = SandboxLimits(wall_seconds=60, memory_mb=2048)

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        pkg = Package(doc.doc_id, raw)
        main = pkg.main_part("presentation.xml")
        rels = pkg.rels(main)
        ids = pkg.xml(main).find(f"{P}sldIdLst")
        slides = [] if ids is None else [rels.get(s.get(f"{{{REL}}}id", ""), ("", ""))[1] for s in ids]
        if len(slides) > MAX_SLIDES:
            raise DocumentError(doc.doc_id, "too_large", f"{len(slides)} slides > {MAX_SLIDES}")
        out, warnings, hidden = Emitter(), [], []
        for n, part in enumerate(slides, 1):
            if not part or not pkg.has(part):
                warnings.append(f"missing_slide: slide {n}")
                continue
            root = pkg.xml(part)
            start = out.pos
            _slide(out, part, root)
            notes = next((t for k, t in pkg.rels(part).values() if k.endswith("/notesSlide")), None)
            if notes and pkg.has(notes):
                _notes(out, notes, pkg.xml(notes))
            if root.get("show") in ("0", "false") and out.pos > start:
                hidden.append(n)
                out.hidden.append((start, out.pos))
        if hidden:
            warnings.append(f"hidden_slide: slides {', '.join(map(str, hidden))} are hidden (kept, flagged)")
        trust = TrustReport(hidden_spans=tuple(out.hidden))
        return finish(doc, (self.name, self.version), out, warnings, trust, pkg.has_macros())


def _pieces(part: str, loc: str, p: Any) -> list[Piece]:
    text = paragraph_text(p)
    return [Piece(part, loc, 0, text)] if text.strip() else []


def _slide(out: Emitter, part: str, root: Any) -> None:
    tree = root.find(f"{P}cSld/{P}spTree")
    if tree is None:
        return
    for shape in shapes(tree):
        sid = f"sp{_shape_id(shape)}"
        if shape.tag == f"{P}graphicFrame":
            _table(out, part, sid, shape)
            continue
        kind = "heading" if _placeholder(shape) in _TITLES else "paragraph"
        start = _shape_text(out, part, sid, shape)
        if start is None:
            continue
        title = plain(out.text()[start:]) if kind == "heading" else ""
        out.block(kind, start, level=1 if title else 0, title=title)


def _table(out: Emitter, part: str, sid: str, frame: Any) -> None:
    rows: list[list[list[Piece | str]]] = []
    for i, tr in enumerate(frame.iter(f"{A}tr")):
        cells: list[list[Piece | str]] = []
        for j, tc in enumerate(tr.findall(f"{A}tc")):
            cell: list[Piece | str] = []
            body = tc.find(f"{A}txBody")
            for k, p in enumerate([] if body is None else body.findall(f"{A}p")):
                pieces = _pieces(part, f"{sid}/r{i}c{j}/p{k}", p)
                if pieces and cell:
                    cell.append(" ")
                cell.extend(pieces)
            cells.append(cell)
        if any(cells):
            rows.append(cells)
    if rows:
        out.table(rows)


def _notes(out: Emitter, part: str, root: Any) -> None:
    tree = root.find(f"{P}cSld/{P}spTree")
    if tree is None:
        return
    for shape in shapes(tree):
        if _placeholder(shape) != "body":
            continue
        start = _shape_text(out, part, f"sp{_shape_id(shape)}", shape)
        if start is not None:
            out.block("paragraph", start, info="notes")


def _shape_text(out: Emitter, part: str, sid: str, shape: Any) -> int | None:
    """A shape's paragraphs after a blank line, a line each; where they start (None: no text)."""
    paras = [_pieces(part, f"{sid}/p{k}", p) for k, p in enumerate(_paragraphs(shape, ""))]
    paras = [p for p in paras if p]
    if not paras:
        return None
    out.gap("\n\n")
    start = out.pos
    for k, pieces in enumerate(paras):
        if k:
            out.sep("\n")
        out.pieces(pieces)
    return start
