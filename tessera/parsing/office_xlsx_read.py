"""Streaming reads of an XLSX package: sheets, shared strings, date styles, rows of cells.

A worksheet part is never held whole: :func:`rows` iterparses it row by row and clears each
row once read. A cell's text (:func:`cell_text`, which parsing and citation lookups share):

* a shared string (``t="s"``) or an inline string: its ``t`` text, phonetic runs left out;
* a boolean: ``TRUE``/``FALSE``; an error or a formula string: the cached ``v`` as written;
* a number: the cached ``v`` as written, except with a date number format (built-in ids
  14-22 and 45-47, or a custom format with a y/m/d/h/s outside quotes and brackets), which
  is written as an ISO date (``2026-03-01``) or date-time (``2026-03-01T08:30:00``),
  in the 1900 or 1904 date system the workbook declares.

Formulas are not evaluated: a cell without a cached value is empty.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from tessera.errors import DocumentError
from tessera.parsing.office_zip import REL, Package

S = "{http://schemas.openxmlformats.org/spreadsheetml/2006/main}"
MAX_COLUMNS = 2048
"""A row is read up to this column; a cell beyond it is refused (``too_large``)."""
_DATE_IDS = frozenset([*range(14, 23), 45, 46, 47])
_REF = re.compile(r"([A-Z]{1,3})([0-9]{1,7})")


@dataclass(frozen=True)
class Sheet:
    number: int
    """1-based position in the workbook: the sheet's name is element ``sheet<number>`` of
    ``xl/workbook.xml``."""
    name: str
    part: str
    state: str


@dataclass(frozen=True)
class Book:
    sheets: tuple[Sheet, ...]
    strings: tuple[str, ...]
    date_styles: frozenset[int]
    epoch: datetime


def column_index(letters: str) -> int:
    n = 0
    for ch in letters:
        n = n * 26 + ord(ch) - 64
    return n


def column_letters(n: int) -> str:
    out = ""
    while n:
        n, r = divmod(n - 1, 26)
        out = chr(65 + r) + out
    return out


def split_ref(ref: str) -> tuple[int, int] | None:
    """``(row, column)`` of an A1 reference, or None."""
    m = _REF.fullmatch(ref)
    return None if m is None else (int(m[2]), column_index(m[1]))


def _string(si: Any) -> str:
    return "".join(t.text or "" for t in si.iter(f"{S}t") if t.getparent().tag != f"{S}rPh")


def _date_format(code: str) -> bool:
    bare = re.sub(r'"[^"]*"|\[[^\]]*\]|\\.', "", code).lower()
    return code.lower() != "general" and bool(re.search(r"[ymdhs]", bare))


def open_book(pkg: Package, main: str) -> Book:
    root = pkg.xml(main)
    rels = pkg.rels(main)
    sheets = []
    node = root.find(f"{S}sheets")
    for n, el in enumerate([] if node is None else node.findall(f"{S}sheet"), 1):
        part = rels.get(el.get(f"{{{REL}}}id", ""), ("", ""))[1]
        sheets.append(Sheet(n, el.get("name", ""), part, el.get("state", "visible")))
    pr = root.find(f"{S}workbookPr")
    epoch = (
        datetime(1904, 1, 1)
        if pr is not None and pr.get("date1904") in ("1", "true")
        else datetime(1899, 12, 30)
    )
    strings: list[str] = []
    dates: set[int] = set()
    for kind, target in rels.values():
        if kind.endswith("/sharedStrings") and pkg.has(target):
            for _, si in pkg.iterparse(target, (f"{S}si",)):
                strings.append(_string(si))
                si.clear()
        elif kind.endswith("/styles") and pkg.has(target):
            dates = _date_styles(pkg.xml(target))
    return Book(tuple(sheets), tuple(strings), frozenset(dates), epoch)


def _date_styles(root: Any) -> set[int]:
    custom = {
        int(f.get("numFmtId", "-1")): f.get("formatCode", "")
        for f in root.iter(f"{S}numFmt")
        if f.get("numFmtId", "").isdigit()
    }
    xfs = root.find(f"{S}cellXfs")
    out = set()
    for k, xf in enumerate([] if xfs is None else xfs.findall(f"{S}xf")):
        fid = int(xf.get("numFmtId", "0")) if xf.get("numFmtId", "0").isdigit() else 0
        if fid in _DATE_IDS or (fid in custom and _date_format(custom[fid])):
            out.add(k)
    return out


_V, _IS, _C, _ROW, _COL = f"{S}v", f"{S}is", f"{S}c", f"{S}row", f"{S}col"


def cell_text(c: Any, book: Book) -> str:
    kind = c.get("t", "n")
    value = ""
    for child in c:  # children, not find(): this runs for every cell
        if child.tag == _V:
            value = child.text or ""
        elif child.tag == _IS and kind == "inlineStr":
            return _string(child)
    if kind == "s":
        k = int(value) if value.isdigit() else -1
        return book.strings[k] if 0 <= k < len(book.strings) else ""
    if kind == "b":
        return "TRUE" if value in ("1", "true") else "FALSE" if value else ""
    style = c.get("s", "0")
    if kind == "n" and value and style.isdigit() and int(style) in book.date_styles:
        return _as_date(value, book.epoch) or value
    return value


def _as_date(value: str, epoch: datetime) -> str | None:
    try:
        serial = float(value)
    except ValueError:
        return None
    if not 0 <= serial < 2_958_466:  # up to 9999-12-31
        return None
    when = epoch + timedelta(days=serial)
    when = when.replace(microsecond=0) + timedelta(seconds=round(when.microsecond / 1e6))
    return when.date().isoformat() if serial == int(serial) else when.isoformat()


@dataclass(frozen=True)
class Row:
    number: int
    hidden: bool
    cells: tuple[tuple[int, str, str], ...]
    """``(column, A1 reference, text)`` of the non-empty cells, left to right."""
    hidden_columns: frozenset[int] = frozenset()
    """The columns of ``cells`` that the sheet hides (``<col hidden="1">``)."""


def rows(pkg: Package, sheet: Sheet, book: Book) -> Iterator[Row]:
    """The sheet's rows with text, streamed (each row element cleared once read)."""
    last, hidden_cols = 0, set[int]()
    for _, row in pkg.iterparse(sheet.part, (_ROW, _COL)):
        if row.tag == _COL:  # <cols> comes before <sheetData>
            low, high = row.get("min", ""), row.get("max", "")
            if row.get("hidden") in ("1", "true") and low.isdigit() and high.isdigit():
                hidden_cols.update(range(int(low), min(int(high), MAX_COLUMNS) + 1))
            continue
        r = row.get("r", "")
        number = int(r) if r.isdigit() else last + 1
        last = number
        cells, col = [], 0
        for c in row:
            if c.tag != _C:
                continue
            where = split_ref(c.get("r", ""))
            col = where[1] if where is not None else col + 1
            if col > MAX_COLUMNS:
                raise DocumentError(
                    pkg.doc_id, "too_large", f"{sheet.name}: a cell in column {col} > {MAX_COLUMNS}"
                )
            text = cell_text(c, book)
            if text.strip():
                cells.append((col, f"{column_letters(col)}{number}", text))
        hidden = row.get("hidden") in ("1", "true")
        row.clear()
        while row.getprevious() is not None:
            del row.getparent()[0]
        if cells:
            yield Row(number, hidden, tuple(cells), frozenset(c[0] for c in cells) & hidden_cols)


def find_cells(pkg: Package, sheet: Sheet, book: Book, refs: set[str]) -> dict[str, str]:
    """The text of the cells ``refs`` of a sheet (a cell without text is ``""``)."""
    wanted = {split_ref(r): r for r in refs}
    found = {r: "" for r in refs}
    top = max((w[0] for w in wanted if w is not None), default=0)
    for row in rows(pkg, sheet, book):
        for col, _ref, text in row.cells:
            if (row.number, col) in wanted:
                found[wanted[(row.number, col)]] = text
        if row.number >= top:
            break
    return found
