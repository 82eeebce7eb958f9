"""Reading a chunk's structural citation back from the Office source file.

:func:`cited_text` opens the stored source bytes, reads each cited element (a DOCX paragraph,
a PPTX shape or table-cell paragraph, an XLSX cell or sheet name) by its part and locator,
takes the cited character range and puts the separators back: the result is the chunk's text
exactly when the citation is right. ``show``, ``lineage`` and the publish-time offset check
use it (:func:`parts_match`). Separators are checked to hold no letter or digit, so every
letter of a verified chunk comes from the source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from tessera.errors import DocumentError
from tessera.parsing import office_docx, office_pptx
from tessera.parsing.office_xlsx import WORKBOOK_SHEET
from tessera.parsing.office_xlsx_read import Book, find_cells, open_book
from tessera.parsing.office_zip import Package
from tessera.types import PartSpan

Key = tuple[str, str]


def part_spans(rows: Sequence[Any] | None) -> tuple[PartSpan, ...]:
    """``PartSpan`` values of a stored row's ``parts`` (dicts from Arrow, or spans)."""
    out = []
    for p in rows or ():
        out.append(p if isinstance(p, PartSpan) else PartSpan(**{k: p[k] for k in PartSpan.__match_args__}))
    return tuple(out)


def element_texts(raw: bytes, keys: set[Key], doc_id: str = "?") -> dict[Key, str]:
    """The text of each ``(part, locator)`` element; ``DocumentError`` when one is not there."""
    pkg = Package(doc_id, raw)
    found: dict[Key, str] = {}
    by_part: dict[str, set[str]] = {}
    for part, loc in keys:
        by_part.setdefault(part, set()).add(loc)
    book: Book | None = None
    for part, locs in sorted(by_part.items()):
        if not pkg.has(part):
            raise DocumentError(doc_id, "corrupt", f"no part {part}")
        if part.startswith("xl/"):
            main = pkg.main_part("workbook.xml")
            book = book or open_book(pkg, main)
            found.update({(part, k): v for k, v in _xlsx(pkg, main, book, part, locs).items()})
        elif part.startswith("ppt/"):
            root = pkg.xml(part)
            for loc in locs:
                text = office_pptx.element_text(root, loc)
                if text is None:
                    raise DocumentError(doc_id, "corrupt", f"{part}: no element {loc}")
                found[(part, loc)] = text
        else:
            paras = office_docx.paragraphs(pkg.xml(part))
            for loc in locs:
                k = int(loc[1:]) if loc[:1] == "p" and loc[1:].isdigit() else -1
                if not 0 <= k < len(paras):
                    raise DocumentError(doc_id, "corrupt", f"{part}: no paragraph {loc}")
                found[(part, loc)] = office_docx.paragraph_text(paras[k])
    return found


def _xlsx(pkg: Package, main: str, book: Book, part: str, locs: set[str]) -> dict[str, str]:
    if part == main:
        names = {WORKBOOK_SHEET.format(s.number): s.name for s in book.sheets}
        missing = locs - set(names)
        if missing:
            raise DocumentError(pkg.doc_id, "corrupt", f"{part}: no sheet {sorted(missing)[0]}")
        return {loc: names[loc] for loc in locs}
    sheet = next((s for s in book.sheets if s.part == part), None)
    if sheet is None:
        raise DocumentError(pkg.doc_id, "corrupt", f"{part} is not a sheet of the workbook")
    return find_cells(pkg, sheet, book, locs)


def cited_text(raw: bytes, spans: Sequence[PartSpan], doc_id: str = "?") -> str:
    """The text the spans cite, read from the source: the chunk's text when they are right."""
    texts = element_texts(raw, {(s.part, s.locator) for s in spans}, doc_id)
    return "".join(s.lead + texts[(s.part, s.locator)][s.start : s.end] + s.tail for s in spans)


def parts_match(raw: bytes, spans: Sequence[PartSpan], text: str) -> bool:
    """Whether the cited elements give ``text`` exactly, with separators free of letters and
    digits; an unreadable source or a missing element is no match."""
    if not spans or any(ch.isalnum() for s in spans for ch in s.lead + s.tail):
        return False
    try:
        return cited_text(raw, spans) == text
    except DocumentError:
        return False


def describe(spans: Sequence[PartSpan]) -> str:
    """A short locator for display: per part, its first and last element."""
    groups: dict[str, list[str]] = {}
    for s in spans:
        locs = groups.setdefault(s.part, [])
        if not locs or locs[-1] != s.locator:
            locs.append(s.locator)
    return "; ".join(
        f"{part} {locs[0]}" if len(locs) == 1 else f"{part} {locs[0]}..{locs[-1]}"
        for part, locs in groups.items()
    )
