"""DOCX parser: the main document part's paragraphs and tables, with exact part locations.

* Elements: every ``w:p`` of ``word/document.xml`` in document order is paragraph ``p<i>``
  (:func:`paragraphs`). Its text (:func:`paragraph_pieces`) is its own runs' ``w:t`` text,
  ``w:tab`` as a tab and ``w:br``/``w:cr`` as a newline, in order; text of a nested paragraph
  (a text box) belongs to that paragraph, deleted and moved-from revisions to none.
* Blocks: a paragraph whose style is ``Title``, ``heading N`` or has an outline level ``N - 1``
  is a heading (level 1 for the title, ``N + 1`` for the others, so headings nest under it);
  a paragraph with numbering (``w:numPr``) or a ``List ...`` style is a list item
  (consecutive items make one ``list`` block, each item after ``- ``); a body table
  is a ``table`` block (its first row the header; a cell's paragraphs joined by a space);
  other paragraphs are ``paragraph`` blocks. Blocks are separated by a blank line.
* Hidden text: runs with ``w:vanish`` (on the run, else from its character style, else from
  its paragraph style, styles inheriting through ``w:basedOn``) are left out of the text and
  counted (``hidden_text`` warning, ``TrustReport.hidden_dropped``, consecutive hidden runs
  one span), as hidden PDF spans and hidden HTML elements are.
* Footnotes and endnotes (``word/footnotes.xml``, ``word/endnotes.xml``; paragraphs ``p<i>``
  of those parts) follow the body as ``paragraph`` blocks with ``info="note"``.
* Not read: headers, footers, comments, text boxes.
"""

from __future__ import annotations

from typing import Any

from tessera.errors import DocumentError
from tessera.parsing import versions
from tessera.parsing.base import SandboxLimits
from tessera.parsing.office_text import Emitter, Piece, finish, plain
from tessera.parsing.office_zip import Package
from tessera.parsing.trust import instruction_pieces
from tessera.types import ParsedDocument, SourceDocument, TrustReport

W = "{http://schemas.openxmlformats.org/wordprocessingml/2006/main}"
W_P, W_R, W_T, W_TAB, W_BR, W_CR = (f"{W}{t}" for t in ("p", "r", "t", "tab", "br", "cr"))
_DROPPED = {f"{W}del", f"{W}moveFrom"}
_OFF = ("0", "false", "off")
_NOTES = ("/footnotes", "/endnotes")


def paragraphs(root: Any) -> list[Any]:
    """Every ``w:p`` of a part in document order: paragraph ``p<i>`` is ``paragraphs[i]``."""
    return list(root.iter(W_P))


def _owner(el: Any) -> tuple[Any, Any, bool]:
    """The nearest paragraph and run around ``el``, and whether a revision drops it."""
    run, node, dropped = None, el.getparent(), False
    while node is not None and node.tag != W_P:
        if node.tag == W_R and run is None:
            run = node
        dropped = dropped or node.tag in _DROPPED
        node = node.getparent()
    return node, run, dropped


def _vanish(rpr: Any) -> bool | None:
    """Whether run properties set ``w:vanish`` (None when they do not say)."""
    v = None if rpr is None else rpr.find(f"{W}vanish")
    return None if v is None else v.get(f"{W}val", "true") not in _OFF


def paragraph_pieces(p: Any) -> list[tuple[str, Any]]:
    """The paragraph's text in order as ``(text, run)`` pieces; joined, its element text."""
    out: list[tuple[str, Any]] = []
    for el in p.iter(W_T, W_TAB, W_BR, W_CR):
        owner, run, dropped = _owner(el)
        if owner is not p or dropped:
            continue
        text = (el.text or "") if el.tag == W_T else ("\t" if el.tag == W_TAB else "\n")
        if text:
            out.append((text, run))
    return out


def paragraph_text(p: Any) -> str:
    return "".join(t for t, _ in paragraph_pieces(p))


class _Styles:
    def __init__(self, pkg: Package, main: str) -> None:
        self.names: dict[str, str] = {}
        self.outline: dict[str, int] = {}
        self.hidden: set[str] = set()
        """Styles (paragraph or character) whose run properties set ``w:vanish``, inherited
        through ``w:basedOn``."""
        based: dict[str, str] = {}
        vanish: dict[str, bool] = {}
        target = next((t for k, t in pkg.rels(main).values() if k.endswith("/styles")), None)
        if target is None or not pkg.has(target):
            return
        for style in pkg.xml(target).iter(f"{W}style"):
            sid = style.get(f"{W}styleId", "")
            name = style.find(f"{W}name")
            self.names[sid] = (name.get(f"{W}val", "") if name is not None else sid).lower()
            lvl = style.find(f"{W}pPr/{W}outlineLvl")
            if lvl is not None and (lvl.get(f"{W}val") or "").isdigit():
                self.outline[sid] = int(lvl.get(f"{W}val"))
            if (parent := style.find(f"{W}basedOn")) is not None:
                based[sid] = parent.get(f"{W}val", "")
            if (v := _vanish(style.find(f"{W}rPr"))) is not None:
                vanish[sid] = v
        for sid in self.names:
            seen, cur = set(), sid
            while cur not in vanish and cur in based and cur not in seen:
                seen.add(cur)
                cur = based[cur]
            if vanish.get(cur):
                self.hidden.add(sid)

    def run_hidden(self, run: Any, p: Any) -> bool:
        """``w:vanish`` on the run, else its character style's, else its paragraph style's."""
        rpr = None if run is None else run.find(f"{W}rPr")
        direct = _vanish(rpr)
        if direct is not None:
            return direct
        rstyle = None if rpr is None else rpr.find(f"{W}rStyle")
        if rstyle is not None and rstyle.get(f"{W}val", "") in self.hidden:
            return True
        pstyle = p.find(f"{W}pPr/{W}pStyle")
        return pstyle is not None and pstyle.get(f"{W}val", "") in self.hidden

    def kind(self, p: Any) -> tuple[str, int]:
        """``("heading", level)``, ``("list", 0)`` or ``("paragraph", 0)``."""
        ppr = p.find(f"{W}pPr")
        sid = ""
        if ppr is not None and (ps := ppr.find(f"{W}pStyle")) is not None:
            sid = ps.get(f"{W}val", "")
        name = self.names.get(sid, sid.lower())
        if name == "title":
            return "heading", 1
        if name.startswith("heading ") and name[8:].isdigit() and 1 <= int(name[8:]) <= 9:
            return "heading", int(name[8:]) + 1
        lvl = ppr.find(f"{W}outlineLvl") if ppr is not None else None
        outline = (
            int(lvl.get(f"{W}val")) if lvl is not None and (lvl.get(f"{W}val") or "").isdigit() else None
        )
        outline = self.outline.get(sid) if outline is None else outline
        if outline is not None and outline < 9:
            return "heading", outline + 2
        if (ppr is not None and ppr.find(f"{W}numPr") is not None) or name.startswith("list"):
            return "list", 0
        return "paragraph", 0


class DocxParser:
    name = "docx"
    version = versions.DOCX
    content_types: tuple[str, ...] = (
        "application/vnd.openxmlformats-officedocument.wordprocessingml.document",
    )
    sandbox = SandboxLimits(wall_seconds=60, memory_mb=2048)

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        pkg = Package(doc.doc_id, raw)
        main = pkg.main_part("document.xml")
        root = pkg.xml(main)
        body = root.find(f"{W}body")
        if body is None:
            raise DocumentError(doc.doc_id, "corrupt", f"{main} has no w:body")
        paras = paragraphs(root)  # kept alive: lxml reuses a live proxy, so ids stay valid
        walk = _Walk(main, {id(p): i for i, p in enumerate(paras)}, _Styles(pkg, main))
        walk.children(body)
        for target in sorted(t for k, t in pkg.rels(main).values() if k.endswith(_NOTES) and pkg.has(t)):
            notes = pkg.xml(target)
            paras = paragraphs(notes)
            walk.part, walk.index, walk.info = target, {id(p): i for i, p in enumerate(paras)}, "note"
            for note in notes:
                if note.get(f"{W}type", "normal") == "normal":  # not the separator lines
                    walk.children(note)
        warnings = [f"hidden_text: {len(walk.hidden)} hidden spans left out"] if walk.hidden else []
        trust = TrustReport(
            hidden_dropped=len(walk.hidden), instructions_dropped=instruction_pieces(walk.hidden)
        )
        return finish(doc, (self.name, self.version), walk.out, warnings, trust, pkg.has_macros())


class _Walk:
    def __init__(self, part: str, index: dict[int, int], styles: _Styles) -> None:
        self.part, self.index, self.styles = part, index, styles
        self.out = Emitter()
        self.hidden: list[str] = []
        self.list_start = -1
        self.info = ""

    def pieces(self, p: Any) -> list[Piece]:
        loc, pos, out, was_hidden = f"p{self.index[id(p)]}", 0, [], False
        for text, run in paragraph_pieces(p):
            hidden = self.styles.run_hidden(run, p)
            if hidden and was_hidden:  # one hidden span: consecutive hidden pieces
                self.hidden[-1] += text
            elif hidden:
                self.hidden.append(text)
            was_hidden = hidden
            if not hidden:
                out.append(Piece(self.part, loc, pos, text))
            pos += len(text)
        return out

    def children(self, parent: Any) -> None:
        for child in parent:
            if child.tag == W_P:
                self.paragraph(child)
            elif child.tag == f"{W}tbl":
                self.end_list()
                self.table(child)
            elif child.tag == f"{W}sdt" and (content := child.find(f"{W}sdtContent")) is not None:
                self.children(content)
        self.end_list()

    def end_list(self) -> None:
        if self.list_start >= 0:
            self.out.block("list", self.list_start)
            self.list_start = -1

    def paragraph(self, p: Any) -> None:
        pieces = self.pieces(p)
        if not "".join(x.text for x in pieces).strip():
            return
        out = self.out
        kind, level = self.styles.kind(p)
        if kind == "list":
            if self.list_start < 0:
                out.gap("\n\n")
                self.list_start = out.pos
            else:
                out.sep("\n")
            out.sep("- ")
            out.pieces(pieces)
            return
        self.end_list()
        out.gap("\n\n")
        start = out.pos
        out.pieces(pieces)
        title = plain("".join(x.text for x in pieces)) if kind == "heading" else ""
        out.block(kind, start, level=level, title=title, info=self.info)

    def table(self, tbl: Any) -> None:
        rows: list[list[list[Piece | str]]] = []
        for tr in tbl.iter(f"{W}tr"):
            if tr.getparent() is not tbl:
                continue  # a nested table's rows are read as its cell's paragraphs
            cells: list[list[Piece | str]] = []
            for tc in tr.iter(f"{W}tc"):
                if tc.getparent() is not tr:
                    continue
                cell: list[Piece | str] = []
                for p in tc.iter(W_P):
                    pieces = self.pieces(p)
                    if pieces and cell:
                        cell.append(" ")
                    cell.extend(pieces)
                cells.append(cell)
            if any(c for c in cells):
                rows.append(cells)
        if rows:
            self.out.table(rows)
