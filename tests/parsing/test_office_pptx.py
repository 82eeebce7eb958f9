"""PptxParser: golden output, slide titles as headings, tables, notes, hidden slides, and
exact structural citations (slide part + shape + paragraph)."""

from __future__ import annotations

from collections.abc import Callable

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker
from tessera.parsing.base import get_parser, parser_for_path
from tessera.parsing.office_locate import cited_text, parts_match
from tessera.parsing.office_pptx import PptxParser
from tessera.types import ParsedDocument
from tests import office_fixtures as F


def _parse(raw: bytes) -> ParsedDocument:
    return PptxParser().parse(F.source("deck.pptx", raw, F.PPTX), raw)


def test_registered_by_content_type_and_extension() -> None:
    assert parser_for_path("deck.pptx") == F.PPTX
    assert isinstance(get_parser(F.PPTX), PptxParser) and PptxParser.version == "tessera-pptx/1"


def test_golden() -> None:
    raw = F.pptx_sample()
    assert raw == F.pptx_sample()
    F.check_golden("sample.pptx", _parse(raw))


def test_titles_tables_notes_and_hidden_slides() -> None:
    raw = F.pptx_sample()
    parsed = _parse(raw)
    heads = [b.title for b in parsed.blocks if b.kind == "heading"]
    assert heads == ["Quarterly Review", "Results", "Regions", "Draft pricing (hidden)"]
    notes = [parsed.text[b.start : b.end] for b in parsed.blocks if b.info == "notes"]
    assert notes == ["Say that churn is measured monthly."]
    table = next(parsed.text[b.start : b.end] for b in parsed.blocks if b.kind == "table")
    assert table == "| Region | Sales |\n|---|---|\n| EMEA | 4.1 |\n| APAC | 3.7 |"
    # the hidden slide is kept, its range marked hidden (its chunks are flagged hidden_text)
    ((a, b),) = parsed.trust.hidden_spans
    assert parsed.text[a:b].strip() == "Draft pricing (hidden)"
    assert "hidden_slide: slides 4 are hidden (kept, flagged)" in parsed.warnings


def test_citations_name_slide_shape_and_paragraph(chunk_ctx: Callable[..., ChunkContext]) -> None:
    raw = F.pptx_sample()
    doc = F.source("deck.pptx", raw, F.PPTX)
    parsed = _parse(raw)
    assert parsed.structure is not None
    parts = {(r.part, r.locator.split("/")[0]) for r in parsed.structure.runs}
    assert ("ppt/notesSlides/notesSlide1.xml", "sp3") in parts or any(
        p.startswith("ppt/notesSlides/") for p, _ in parts
    )
    assert any("/r1c0/" in r.locator for r in parsed.structure.runs)  # a table cell
    chunks = StructuralChunker().chunk(doc, parsed, chunk_ctx(max_tokens=32, target_tokens=16))
    assert len(chunks) > 2
    for c in chunks:
        assert c.byte_start == -1 and c.parts
        assert cited_text(raw, c.parts) == c.text and parts_match(raw, c.parts, c.text)
    hidden = [c for c in chunks if "Draft pricing" in c.text]
    assert hidden and all("hidden_text" in c.flags for c in hidden)
    assert not any("hidden_text" in c.flags for c in chunks if "Quarterly" in c.text)
