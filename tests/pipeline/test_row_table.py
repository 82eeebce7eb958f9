"""Rows built column by column from a staged batch equal, value for value, the rows built
from the chunk objects (``build_rows``), for any chunks, pages, parts, flags, duplicate
columns, document metadata and sentence vectors; and a batch that does not match its
vectors, its sentence vectors or the listing is refused, never published half-joined."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.errors import PublishError
from tessera.pipeline.row_table import staged_row_table
from tessera.pipeline.staging import chunk_batch
from tessera.store.schema import build_rows
from tessera.types import Chunk, PartSpan, SourceDocument
from tests.pipeline.test_staging import TEXT, chunks

DIM = 4
WHEN = st.datetimes(datetime(1971, 1, 1), datetime(2200, 1, 1), timezones=st.just(UTC))
NAMES = st.lists(st.sampled_from(["alice", "bob", "staff", "hr"]), max_size=2, unique=True)


@st.composite
def documents(draw: Any, doc_id: str) -> SourceDocument:
    return SourceDocument(
        tenant="acme",
        doc_id=doc_id,
        uri=f"file:///{draw(TEXT)}",
        revision="r" * 64,
        content_type=draw(st.sampled_from(["text/markdown", "application/pdf", "text/html"])),
        readers=tuple(draw(NAMES)),
        groups=tuple(draw(NAMES)),
        effective_from=draw(WHEN),
        effective_to=draw(WHEN),
        modified_at=draw(WHEN),
        acl_source=draw(st.sampled_from(["", "default", "hr/_access.yaml"])),
    )


PARTS = st.lists(
    st.builds(PartSpan, TEXT, TEXT, st.integers(0, 10**6), st.integers(0, 10**6), TEXT, TEXT), max_size=2
)


@settings(max_examples=80, deadline=None)
@given(st.lists(chunks(), max_size=6), st.data())
def test_rows_from_the_staged_batch_equal_rows_from_the_chunks(
    staged: list[Chunk], data: st.DataObject
) -> None:
    staged = [c if not data.draw(st.booleans()) else _with_parts(c, data.draw(PARTS)) for c in staged]
    docs = {c.doc_id: data.draw(documents(c.doc_id)) for c in staged}
    docs["unused"] = data.draw(documents("unused"))  # the listing holds more than the batch
    dedup = [(data.draw(TEXT), tuple(data.draw(st.lists(TEXT, max_size=2)))) for _ in staged]
    vectors = np.asarray(
        data.draw(st.lists(st.lists(st.floats(-1, 1, width=32), min_size=DIM, max_size=DIM),
                           min_size=len(staged), max_size=len(staged))), np.float32,
    ).reshape(len(staged), DIM)  # fmt: skip
    sentences: list[Any] | None = None
    if data.draw(st.booleans()):
        counts = [data.draw(st.one_of(st.none(), st.integers(0, 3))) for _ in staged]
        sentences = [None if n is None else np.full((n, DIM), 0.5) for n in counts]
    batch = chunk_batch(staged, dedup)
    got = staged_row_table(batch, docs, vectors, "m@1", "run-1", DIM, sentences)
    want = build_rows(staged, docs, vectors, "m@1", "run-1", DIM, dedup, sentences)
    assert got.schema.equals(want.schema)
    assert got.to_pylist() == want.to_pylist()  # the checksums the worker staged included
    names = [n for n in batch.schema.names if n != "checksum"]  # staged by an older release
    older = pa.RecordBatch.from_arrays([batch.column(n) for n in names], names=names)
    assert (
        staged_row_table(older, docs, vectors, "m@1", "run-1", DIM, sentences).to_pylist() == want.to_pylist()
    )


def _with_parts(c: Chunk, parts: list[PartSpan]) -> Chunk:
    from dataclasses import replace

    return replace(c, parts=tuple(parts))


def test_a_batch_that_does_not_match_is_refused() -> None:
    chunk = Chunk("a" * 64, "acme", "d.md", "r" * 64, 0, 3, "one", "one", 0, 3, (), "", 0, "", "", "",
                  1, "text", (), "c", "v", "p", "t")  # fmt: skip
    doc = SourceDocument("acme", "d.md", "file:///d.md", "r" * 64, "text/markdown", ("alice",), ())
    batch = chunk_batch([chunk], [("g", ())])
    one = np.zeros((1, DIM), np.float32)
    assert staged_row_table(batch, {"d.md": doc}, one, "m", "r", DIM).num_rows == 1
    with pytest.raises(PublishError, match="1 staged chunks but 2 vectors"):
        staged_row_table(batch, {"d.md": doc}, np.zeros((2, DIM), np.float32), "m", "r", DIM)
    with pytest.raises(PublishError, match="sentence vectors for 0"):
        staged_row_table(batch, {"d.md": doc}, one, "m", "r", DIM, [])
    with pytest.raises(PublishError, match="not in the listing"):
        staged_row_table(batch, {"other.md": doc}, one, "m", "r", DIM)
