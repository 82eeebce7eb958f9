"""Properties of the Office offset contract, over generated documents: for any cell or
paragraph text (pipes, newlines, tabs, blanks, non-ASCII), every range of the normalized text
reads back exactly from the cited parts, and separators never hold a letter or digit."""

from __future__ import annotations

import io

import docx
import openpyxl
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.parsing.office_docx import DocxParser
from tessera.parsing.office_locate import cited_text
from tessera.parsing.office_xlsx import XlsxParser
from tessera.types import ParsedDocument
from tests import office_fixtures as F

# printable text with the characters a table row or a paragraph must handle specially
TEXT = st.text(alphabet=st.sampled_from(list("ab Z9|-\n\t:é€✓")), min_size=0, max_size=12).filter(
    lambda s: "\r" not in s
)
SETTINGS = settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _check_every_range(raw: bytes, parsed: ParsedDocument) -> None:
    assert parsed.structure is not None
    text = parsed.text
    for r in parsed.structure.runs:  # every run is its element's text, verbatim
        assert cited_text(raw, parsed.structure.spans(text, r.start, r.end)) == text[r.start : r.end]
    for a in range(0, len(text), 5):
        for b in range(a + 1, len(text) + 1, 7):
            spans = parsed.structure.spans(text, a, b)
            if not spans:
                assert not any(ch.isalnum() for ch in text[a:b])
                continue
            assert cited_text(raw, spans) == text[a:b]
            assert not any(ch.isalnum() for s in spans for ch in s.lead + s.tail)


@SETTINGS
@given(st.lists(st.lists(TEXT, min_size=1, max_size=4), min_size=1, max_size=5))
def test_xlsx_ranges_read_back(rows: list[list[str]]) -> None:
    wb = openpyxl.Workbook()
    ws = wb.active
    assert ws is not None
    for row in rows:
        ws.append(row)
    buf = io.BytesIO()
    wb.save(buf)
    raw = buf.getvalue()
    parsed = XlsxParser().parse(F.source("p.xlsx", raw, F.XLSX), raw)
    _check_every_range(raw, parsed)
    kept = [c for row in rows for c in row if c.strip()]
    body = parsed.text.replace("\\|", "|")
    assert all(" ".join(c.split("\n")).replace("\t", " ") in body.replace("\t", " ") for c in kept)


@SETTINGS
@given(st.lists(st.tuples(TEXT, st.booleans()), min_size=1, max_size=6))
def test_docx_ranges_read_back(paragraphs: list[tuple[str, bool]]) -> None:
    d = docx.Document()
    for text, hidden in paragraphs:
        p = d.add_paragraph("x" + text)
        p.add_run(text + "y").font.hidden = hidden
    buf = io.BytesIO()
    d.save(buf)
    raw = buf.getvalue()
    parsed = DocxParser().parse(F.source("p.docx", raw, F.DOCX), raw)
    _check_every_range(raw, parsed)
    assert parsed.trust.hidden_dropped == sum(1 for _t, h in paragraphs if h)
