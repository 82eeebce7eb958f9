"""The ``parts`` column (Office structural citations): serialized through every stage, and a
table from before it still serves, then gains the column on its next publish."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from tessera.layout import PartLayout, PartRun
from tessera.parsing.office_locate import part_spans, parts_match
from tessera.parsing.office_text import text_offsets
from tessera.pipeline.staging import chunk_batch, chunks_of
from tessera.search import principal_from_config
from tessera.search.citations import citation_of, show
from tessera.search.query import SearchOptions, search
from tessera.serde import chunk_from_json, chunk_to_json, parsed_from_json, parsed_to_json
from tessera.types import Chunk, ParsedDocument, PartSpan
from tests import office_fixtures as F

SPANS = (
    PartSpan("xl/workbook.xml", "sheet1", 0, 5),
    PartSpan("xl/worksheets/sheet1.xml", "A1", 0, 4, lead="\n\n| "),
    PartSpan("xl/worksheets/sheet1.xml", "B1", 0, 7, lead=" | ", tail=" |"),
)


def _chunk() -> Chunk:
    return Chunk(
        id="c" * 64, tenant="acme", doc_id="r.xlsx", revision="r", start=0, end=20,
        text="Rates\n\n| Zone | Country |",
        embedding_text="x", byte_start=-1, byte_end=-1, heading_path=("Rates",), anchor="rates", position=0,
        parent_id="", prev_id="", next_id="", token_count=3, kind="table", flags=(), chunking_config_hash="h",
        chunker_version="v", parser_version="tessera-xlsx/1", tokenizer_version="t", parts=SPANS,
    )  # fmt: skip


def test_parts_survive_json_staging_and_parsed_documents() -> None:
    c = _chunk()
    assert chunk_from_json(chunk_to_json(c)) == c
    got, _ = chunks_of(chunk_batch([c], [("g", ())]))
    assert got == [c]
    legacy = chunk_to_json(replace(c, parts=()))
    del legacy["parts"]  # staged by a release before Office parsers
    assert chunk_from_json(legacy).parts == ()
    structure = PartLayout((PartRun(0, 2, "xl/worksheets/sheet1.xml", "A1", 0),))
    parsed = ParsedDocument("d", "ab", (), text_offsets("ab"), "xlsx", "1", structure=structure)
    assert parsed_from_json(parsed_to_json(parsed)) == parsed


def test_a_table_from_before_parts_serves_and_upgrades(ws: Any) -> None:
    corpus = ws.tenant("acme", {"rates.xlsx": F.xlsx_sample(), "notes.md": "# Notes\n\nPlain text.\n"})
    ws.run("acme", "r1")
    ws.table("acme").drop_columns(["parts"])  # as an older release wrote it
    rows = ws.rows("acme")
    assert all(citation_of(r).parts == () for r in rows)  # old rows: no parts, nothing fails
    alice = principal_from_config(ws.config(), "acme", "alice")
    md = next(r for r in rows if r["doc_id"] == "notes.md")
    assert show(ws.config().store.uri, ws.embedder, alice, md["id"]).text == md["text"]
    uri = ws.config().store.uri
    for mode in ("hybrid", "lexical", "dense"):  # an old table searches: no parts asked of it
        hits = search(uri, ws.embedder, alice, "plain text notes", options=SearchOptions(k=5, mode=mode))
        assert hits and all(s.citation.parts == () for h in hits for s in h.sources)
    assert "parts" not in ws.table("acme").schema.names  # reading never alters a table
    raw = F.xlsx_rows(5)
    (corpus / "rates.xlsx").write_bytes(raw)  # a new revision: published again
    ws.run("acme", "r2")
    assert "parts" in ws.table("acme").schema.names  # the publish added the column
    rows = ws.rows("acme")
    xlsx = [r for r in rows if r["doc_id"] == "rates.xlsx"]
    assert xlsx and all(parts_match(raw, part_spans(r["parts"]), r["text"]) for r in xlsx)
    assert next(r for r in rows if r["doc_id"] == "notes.md")["parts"] in (None, [])
    hits = search(uri, ws.embedder, alice, "item col1", options=SearchOptions(k=10, mode="lexical"))
    cited = {s.citation.chunk_id: s.citation.parts for h in hits for s in h.sources}
    assert any(cited.get(r["id"]) == part_spans(r["parts"]) for r in xlsx)  # search hits cite parts
    sl = show(ws.config().store.uri, ws.embedder, alice, xlsx[-1]["id"])
    assert sl.text == xlsx[-1]["text"] and "xl/worksheets/sheet1.xml" in sl.citation.locator()
