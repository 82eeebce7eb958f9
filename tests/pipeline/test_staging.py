"""Staged artifacts: chunks survive the Parquet round trip exactly (any text, pages, flags),
an artifact appears only when complete, and a run staged in many small batches publishes
exactly the rows of a run staged in one."""

from __future__ import annotations

import random
from dataclasses import replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.errors import PublishError
from tessera.pipeline import staging
from tessera.pipeline.staging import (
    ChunkWriter,
    VectorWriter,
    chunk_batch,
    chunks_of,
    read_batches,
    read_vectors,
)
from tessera.store.index import StreamedRows
from tessera.types import Chunk, PageSpan
from tests.conftest import Workspace
from tests.pipeline.test_executors import COLUMNS, DOCS

TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)  # U+2028, NUL, RTL marks...


@st.composite
def chunks(draw: Any) -> Chunk:
    pages = draw(
        st.lists(st.tuples(st.integers(1, 999), st.lists(st.floats(0, 1e4), min_size=4, max_size=4)))
    )
    return Chunk(
        id=draw(st.text("0123456789abcdef", min_size=64, max_size=64)),
        tenant="acme",
        doc_id=draw(TEXT),
        revision="r" * 64,
        start=draw(st.integers(0, 10**9)),
        end=draw(st.integers(0, 10**9)),
        text=draw(TEXT),
        embedding_text=draw(TEXT),
        byte_start=draw(st.integers(-1, 10**9)),
        byte_end=draw(st.integers(-1, 10**9)),
        heading_path=tuple(draw(st.lists(TEXT, max_size=3))),
        anchor=draw(TEXT),
        position=draw(st.integers(0, 10**6)),
        parent_id="",
        prev_id="p",
        next_id="",
        token_count=draw(st.integers(0, 512)),
        kind=draw(st.sampled_from(["text", "table", "code"])),
        flags=tuple(
            draw(st.lists(st.sampled_from(["hidden_text", "rows:3-9", "near_duplicate"]), max_size=3))
        ),
        chunking_config_hash="c",
        chunker_version="v",
        parser_version="p",
        tokenizer_version="t",
        pages=tuple(PageSpan(p, tuple(b)) for p, b in pages),  # type: ignore[arg-type]
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(chunks(), max_size=5), st.data())
def test_chunks_round_trip_exactly(staged: list[Chunk], data: st.DataObject) -> None:
    dedup = [(data.draw(TEXT), tuple(data.draw(st.lists(TEXT, max_size=2)))) for _ in staged]
    back, back_dedup = chunks_of(chunk_batch(staged, dedup))
    assert back == staged
    assert back_dedup == dedup


def test_an_artifact_appears_only_when_complete(tmp_path: Path) -> None:
    path = tmp_path / "chunks.parquet"
    with pytest.raises(RuntimeError), ChunkWriter(path) as w:
        w.write(chunk_batch([], []))
        raise RuntimeError("the worker died")
    assert not path.exists() and not list(tmp_path.iterdir())  # no partial file, no temporary left
    with ChunkWriter(path) as w:
        pass
    assert list(read_batches(path)) == [] or sum(b.num_rows for b in read_batches(path)) == 0

    vw = VectorWriter(tmp_path / "vectors.npy", 3, 4)
    vw.write(np.ones((2, 4)))
    with pytest.raises(PublishError, match="2 vectors written for 3"):
        vw.close()
    assert not (tmp_path / "vectors.npy").exists()
    vw = VectorWriter(tmp_path / "v2.npy", 3, 4)
    vw.write(np.ones((2, 4)))
    vw.write(np.full((1, 4), 2.0))
    vw.close()
    v = read_vectors(tmp_path / "v2.npy")
    assert v.shape == (3, 4) and v.dtype == np.float32 and float(v[2, 0]) == 2.0


def test_missing_artifact_names_the_upstream_step(tmp_path: Path) -> None:
    with pytest.raises(PublishError, match="run the upstream step first"):
        list(read_batches(tmp_path / "chunks.parquet"))


def test_a_stream_is_reopened_for_each_attempt() -> None:
    table = pa.table({"doc_id": ["a", "b"], "x": [1, 2]})
    rows = StreamedRows.of(table)
    assert rows.num_rows == 2 and rows.doc_ids == {"a", "b"}
    assert rows.open().read_all() == table
    assert rows.open().read_all() == table  # a retried commit reads everything again


def test_many_small_batches_publish_the_same_rows(ws: Workspace, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "one-batch")
    whole = [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]
    monkeypatch.setattr(staging, "BATCH_ROWS", 7)
    ws2 = Workspace(ws.root / "small")
    ws2.tenant("acme", DOCS)
    out = ws2.run("acme", "small-batches")
    assert out["chunk"]["chunks"] > 7 * 3  # really several batches
    assert [tuple(r[c] for c in COLUMNS) for r in ws2.rows("acme")] == whole
    # a second change goes through the streamed publish too: one document edited
    edited = ws2.root / "corpus" / "acme" / "guide" / "03.md"
    edited.write_text("# Guide 3\n\nRewritten.\n", encoding="utf-8")
    again = ws2.run("acme", "edit")
    assert again["publish"]["committed"] and again["publish"]["docs_changed"] == 1, again["publish"]
    texts = {r["text"] for r in ws2.rows("acme") if r["doc_id"] == "guide/03.md"}
    assert any("Rewritten." in t for t in texts)


def test_the_listing_a_context_wrote_reads_as_the_file_does(ws: Workspace) -> None:
    """``write_listing`` keeps the listing decoded for the writing context; it must be what any
    other process reads from ``listing.json``, and a rewrite by another process is re-read."""
    import json

    from tessera.pipeline.run import list_step
    from tessera.serde import doc_from_json

    ws.tenant("acme", {"a.md": "# A\n\nalpha text.\n", "hr/b.md": "# B\n\nbeta text.\n"})
    (ws.root / "corpus" / "acme" / "hr" / "_access.yaml").write_text(
        "documents:\n  - match: 'b.md'\n    groups: [hr]\n    effective_from: 2026-01-01\n", encoding="utf-8"
    )
    rc = ws.context("acme", "r1")
    list_step(rc)
    data, docs = rc.listing()  # kept from the write, not read back
    fresh = ws.context("acme", "r1")
    on_disk, disk_docs = fresh.listing()
    assert data == on_disk and docs == disk_docs and "documents" not in data  # held once, as docs
    file = json.loads((rc.workspace / staging.LISTING).read_text(encoding="utf-8"))
    assert {k: v for k, v in file.items() if k != "documents"} == data
    assert docs["hr/b.md"].groups == ("hr",)
    assert docs == {d["doc_id"]: doc_from_json(d) for d in file["documents"]}
    file["to_parse"] = []  # another process rewrites the file: this context reads it again
    fresh.write(staging.LISTING, file)
    assert rc.listing()[0]["to_parse"] == []


def test_the_listing_is_written_a_document_at_a_time_as_one_json_object(ws: Workspace) -> None:
    """The streamed ``listing.json`` is the JSON of the data with its documents (any text,
    quotes and non-ASCII names kept as they are), read back equal by another context; data
    that already holds documents is refused rather than written with the key twice."""
    import json

    from tessera.errors import InternalError
    from tessera.serde import doc_to_json
    from tessera.types import SourceDocument

    ws.tenant("acme", {"a.md": "# A\n"})
    rc = ws.context("acme", "r1")
    docs = [
        SourceDocument("acme", name, f"file:///{name}", "r" * 64, "text/markdown", ("u", 'q"x'), ("g",))
        for name in ["a.md", 'dé "quoted".md', "日本/b.md"]
    ]
    data: dict[str, Any] = {"summary": {"n": 3, "note": "ü \\ \n"}, "to_parse": ["a.md"], "empty": False}
    for documents in (docs, []):
        rc.write_listing(data, documents)
        text = (rc.workspace / staging.LISTING).read_text(encoding="utf-8")
        assert json.loads(text) == {"documents": [doc_to_json(d) for d in documents], **data}
        assert "日本" in text or not documents  # written as it is, not escaped
        fresh = ws.context("acme", "r1")
        assert fresh.listing() == (data, {d.doc_id: d for d in documents})
        # the writing context holds what was written, not the caller's dict: changed after
        # the write, before or after a step first asks for it, the held listing stays
        data["to_parse"].append("later.md")
        assert rc.listing() == fresh.listing() and rc.listing()[0]["to_parse"] == ["a.md"]
        held = rc.listing()[0]
        data["summary"]["n"] = 4
        assert rc.listing()[0] is held and held["summary"]["n"] == 3
        data["to_parse"].pop()
        data["summary"]["n"] = 3
    with pytest.raises(InternalError, match="documents"):
        rc.write_listing({**data, "documents": []}, docs)
    assert json.loads((rc.workspace / staging.LISTING).read_text(encoding="utf-8"))["documents"] == []


PLAIN = Chunk(
    id="", tenant="acme", doc_id="d.md", revision="r", start=0, end=4, text="text",
    embedding_text="text", byte_start=0, byte_end=4, heading_path=(), anchor="", position=0,
    parent_id="", prev_id="", next_id="", token_count=1, kind="text", flags=(),
    chunking_config_hash="h", chunker_version="v", parser_version="p", tokenizer_version="t",
)  # fmt: skip
"""A chunk to vary with ``dataclasses.replace`` where only the rows' count and order matter."""


def test_chunk_writer_gathers_small_batches_into_few_row_groups(tmp_path: Path) -> None:
    """A row group per 16-document task made the writer's metadata grow with the corpus;
    batches are gathered into row groups of about BATCH_ROWS rows, every row kept in order."""
    import pyarrow.parquet as pq

    from tessera.pipeline.staging import BATCH_ROWS, ChunkWriter, chunk_batch, chunks_of, read_batches

    chunks = [replace(PLAIN, id=f"{i:064x}", position=i) for i in range(3 * BATCH_ROWS + 10)]
    path = tmp_path / "chunks.parquet"
    with ChunkWriter(path) as w:
        for i in range(0, len(chunks), 64):
            w.write(chunk_batch(chunks[i : i + 64], [("g", ("b",))] * len(chunks[i : i + 64])))
    meta = pq.ParquetFile(path).metadata
    assert meta.num_rows == len(chunks) and meta.num_row_groups <= 4
    got = [c for b in read_batches(path) for c in chunks_of(b)[0]]
    assert [c.id for c in got] == [c.id for c in chunks]
    # a writer that fails leaves no file, even with rows still gathered
    bad = tmp_path / "bad.parquet"
    with pytest.raises(RuntimeError), ChunkWriter(bad) as w:
        w.write(chunk_batch(chunks[:5], [("g", ())] * 5))
        raise RuntimeError("worker died")
    assert not bad.exists() and not list(tmp_path.glob(".bad*"))


def test_reading_staged_chunks_holds_one_row_group_not_the_file(tmp_path: Path) -> None:
    """Arrow's pre-buffering kept every row group it had read (the whole 370 MB file at
    400,000 chunks); the staged batches are read without it."""
    from tessera.pipeline.staging import BATCH_ROWS, ChunkWriter, chunk_batch, read_batches

    path = tmp_path / "chunks.parquet"
    groups, rng = 8, random.Random(7)  # incompressible text: the file is as large as its rows
    with ChunkWriter(path) as w:
        for g in range(groups):
            part = [
                replace(PLAIN, id=f"{g:08x}{i:056x}", text=rng.randbytes(600).hex(), embedding_text=str(i))
                for i in range(BATCH_ROWS)
            ]
            w.write(chunk_batch(part, [("g", ())] * len(part)))
    size = path.stat().st_size
    before = pa.total_allocated_bytes()  # what this process's other Arrow objects hold
    most, rows = 0, 0
    for batch in read_batches(path, ["id", "text"]):
        rows += batch.num_rows
        most = max(most, pa.total_allocated_bytes() - before)
    assert rows == groups * BATCH_ROWS
    assert most < 3 * size / groups  # a row group or two at a time, never the file


def test_staged_vectors_are_read_by_slice_and_checked(tmp_path: Path) -> None:
    rows = np.arange(40, dtype=np.float32).reshape(10, 4)
    w = VectorWriter(tmp_path / "v.npy", 10, 4)
    w.write(rows[:3])
    w.write(rows[3:])
    w.close()
    v = read_vectors(tmp_path / "v.npy")
    assert len(v) == 10 and v.shape == (10, 4)
    assert np.array_equal(v[2:7], rows[2:7]) and np.array_equal(v[-1], rows[-1])
    assert np.array_equal(v[:], rows) and v[5:5].shape == (0, 4) and float(v[3, 1]) == 13.0
    assert np.array_equal(np.load(tmp_path / "v.npy"), rows)  # still a plain .npy file
    with pytest.raises(IndexError):
        v[10]
    with pytest.raises(IndexError):
        v[::2]
    # a block of the wrong width, or more rows than announced, is refused before it is written
    w = VectorWriter(tmp_path / "bad.npy", 2, 4)
    with pytest.raises(PublishError, match="do not fit"):
        w.write(np.ones((1, 5)))
    assert not list(tmp_path.glob(".bad.npy*"))  # the refused writer left no temporary
    w = VectorWriter(tmp_path / "bad.npy", 2, 4)
    with pytest.raises(PublishError, match="do not fit"):
        w.write(np.ones((3, 4)))
    # a file cut short is an error, not short rows
    data = (tmp_path / "v.npy").read_bytes()
    (tmp_path / "cut.npy").write_bytes(data[:-8])
    with pytest.raises(PublishError, match="truncated"):
        read_vectors(tmp_path / "cut.npy")[8:10]
    np.save(tmp_path / "f64.npy", np.ones((2, 4)))
    with pytest.raises(PublishError, match="float32"):
        read_vectors(tmp_path / "f64.npy")


def test_reading_staged_vectors_keeps_no_pages_of_the_file(tmp_path: Path) -> None:
    """A memory map kept every page it had read in the process (+568 MB publishing 400,000
    vectors); slices are read into fresh buffers instead."""
    n, dim = 20_000, 384  # 30 MB
    w = VectorWriter(tmp_path / "v.npy", n, dim)
    for start in range(0, n, 4096):
        w.write(np.ones((min(4096, n - start), dim), np.float32))
    w.close()

    def mapped_kb() -> int:
        text = Path("/proc/self/smaps").read_text() if Path("/proc/self/smaps").exists() else ""
        total, inside = 0, False
        for line in text.splitlines():
            if line[:1].isdigit() or line[:1] in "abcdef":
                inside = line.rstrip().endswith(str(tmp_path / "v.npy"))
            elif inside and line.startswith("Rss:"):
                total += int(line.split()[1])
        return total

    v = read_vectors(tmp_path / "v.npy")
    assert sum(float(v[a : a + 4096].sum()) for a in range(0, n, 4096)) == n * dim
    assert mapped_kb() == 0


def test_the_staged_check_finds_an_id_staged_in_two_batches_and_counts_each_document(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A chunk staged again in a later batch is refused (``check_rows`` sees one batch only);
    ``per_document`` counts every staged row of each document."""
    from collections import Counter

    import pyarrow.parquet as pq

    from tessera.pipeline.rows import StagedRows
    from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step

    monkeypatch.setattr(staging, "BATCH_ROWS", 7)
    ws.tenant("acme", DOCS)
    rc = ws.context("acme", "r1")
    for step in (list_step, parse_step, chunk_step, embed_step):
        step(rc)
    docs = rc.listing()[1]
    staged = StagedRows(rc, docs)
    assert staged.check() == []
    table = pq.read_table(staged.path)
    assert staged.per_document == Counter(table.column("doc_id").to_pylist())

    # the first chunk once more, as a batch of its own at the end (its vector too)
    pq.write_table(pa.concat_tables([table, table.slice(0, 1)]), staged.path, row_group_size=7)
    vectors = np.load(rc.workspace / staging.VECTORS)
    np.save(rc.workspace / staging.VECTORS, np.concatenate([vectors, vectors[:1]]))
    again = StagedRows(rc, docs)
    assert "1 chunk ids staged in more than one batch" in again.check()
