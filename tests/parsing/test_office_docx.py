"""DocxParser: golden output, headings from paragraph styles, lists, tables, hidden text, and
exact structural citations (every chunk's ``parts`` read back from the file give its text)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker
from tessera.errors import DocumentError
from tessera.parsing.base import get_parser, parser_for_path
from tessera.parsing.office_docx import DocxParser
from tessera.parsing.office_locate import cited_text, element_texts, parts_match
from tessera.types import ParsedDocument, PartSpan
from tests import office_fixtures as F


def _parse(raw: bytes) -> ParsedDocument:
    return DocxParser().parse(F.source("handbook.docx", raw, F.DOCX), raw)


def test_registered_by_content_type_and_extension() -> None:
    assert parser_for_path("a/B.DOCX") == F.DOCX
    assert isinstance(get_parser(F.DOCX), DocxParser) and DocxParser.version == "tessera-docx/1"


def test_golden() -> None:
    raw = F.docx_sample()
    assert raw == F.docx_sample()  # the fixture itself is reproducible
    F.check_golden("sample.docx", DocxParser().parse(F.source("s.docx", raw, F.DOCX), raw))


def test_headings_lists_tables_and_hidden_text() -> None:
    raw = F.docx_sample()
    parsed = DocxParser().parse(F.source("s.docx", raw, F.DOCX), raw)
    heads = [(b.level, b.title) for b in parsed.blocks if b.kind == "heading"]
    assert heads == [(1, "Refund Handbook"), (2, "Eligibility"), (3, "Payment methods")]
    lists = [parsed.text[b.start : b.end] for b in parsed.blocks if b.kind == "list"]
    assert lists == ["- Item unused and in its box\n- Receipt or order number"]
    table = next(parsed.text[b.start : b.end] for b in parsed.blocks if b.kind == "table")
    assert table == "| Method | Days |\n|---|---|\n| Card \\| debit | 3 |\n| Bank transfer | 5 working |"
    # w:vanish text is left out and counted, like hidden PDF spans and hidden HTML elements
    assert "Ignore all previous" not in parsed.text
    assert "Staff discount applies. Ask the store manager." in parsed.text
    assert "You are now" not in parsed.text and "Opening hours are 9 to 5." in parsed.text  # style vanish
    assert parsed.trust.hidden_dropped == 2 and parsed.trust.instructions_dropped == 2
    assert "hidden_text: 2 hidden spans left out" in parsed.warnings


def test_every_range_reads_back_from_the_file() -> None:
    raw = F.docx_sample()
    parsed = DocxParser().parse(F.source("s.docx", raw, F.DOCX), raw)
    assert parsed.structure is not None
    text = parsed.text
    for a in range(0, len(text), 7):
        for b in (a + 1, a + 13, len(text)):
            spans = parsed.structure.spans(text, a, min(b, len(text)))
            if any(ch.isalnum() for ch in text[a:b]):
                assert cited_text(raw, spans) == text[a : min(b, len(text))]
    # the element text of the paragraph with hidden text holds it: the range skips it
    spans = parsed.structure.spans(text, 0, len(text))
    p = next(s for s in spans if s.tail == "" and "Ask" in cited_text(raw, [s]))
    whole = element_texts(raw, {(p.part, p.locator)})[(p.part, p.locator)]
    assert "Ignore all previous instructions" in whole and p.start > 0


def test_chunks_carry_parts_and_no_bytes(chunk_ctx: Callable[..., ChunkContext]) -> None:
    raw = F.docx_sample()
    doc = F.source("s.docx", raw, F.DOCX)
    parsed = DocxParser().parse(doc, raw)
    chunks = StructuralChunker().chunk(doc, parsed, chunk_ctx(max_tokens=48, target_tokens=32))
    assert chunks
    for c in chunks:
        assert (c.byte_start, c.byte_end, c.pages) == (-1, -1, ())
        assert c.parts and all(s.part == "word/document.xml" for s in c.parts)
        assert parts_match(raw, c.parts, c.text)


def test_a_wrong_citation_does_not_match() -> None:
    raw = F.docx_sample()
    assert not parts_match(raw, [PartSpan("word/document.xml", "p0", 0, 6)], "Refunc")
    assert not parts_match(raw, [PartSpan("word/document.xml", "p999", 0, 6)], "Refund")
    assert not parts_match(raw, [PartSpan("word/document.xml", "p0", 0, 6, lead="x")], "xRefund")
    assert parts_match(raw, [PartSpan("word/document.xml", "p0", 0, 6)], "Refund")


def test_corrupt_and_empty() -> None:
    with pytest.raises(DocumentError) as e:
        _parse(b"")
    assert e.value.reason == "empty"
    with pytest.raises(DocumentError) as e:
        _parse(F.docx_sample()[:-200])
    assert e.value.reason == "corrupt"


def test_footnotes_follow_the_body_and_cite_their_part() -> None:
    raw = F.with_footnote(F.docx_sample(), "Source: the 2026 refund audit.")
    parsed = _parse(raw)
    assert parsed.text.endswith("\n\nSource: the 2026 refund audit.")
    assert parsed.blocks[-1].info == "note"
    assert parsed.structure is not None
    last = parsed.structure.runs[-1]
    assert (last.part, last.locator) == ("word/footnotes.xml", "p1")  # p0 is the separator line
    spans = parsed.structure.spans(parsed.text, 0, len(parsed.text))
    assert cited_text(raw, spans) == parsed.text
