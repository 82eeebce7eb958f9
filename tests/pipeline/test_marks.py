"""Duplicate marks set on staged Arrow batches give exactly the rows the object round trip
gave (read the chunks back, add the flags, build the batch again), for any chunks, groups,
band keys and flags, including flags that already hold a mark; and a batch is never marked
with outcomes for other rows."""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.errors import InternalError
from tessera.pipeline.marks import flag_counts, marked
from tessera.pipeline.staging import CHUNK_SCHEMA, chunk_batch, chunks_of
from tessera.types import Chunk
from tests.pipeline.test_staging import TEXT, chunks

MARKS = [("near_duplicate",), ("near_duplicate", "linked_duplicate")]


def _chunk(ident: str, flags: tuple[str, ...], text: str) -> Chunk:
    return Chunk(ident * 64, "acme", "d.md", "r" * 64, 0, len(text), text, f"# T\n{text}", 0, len(text),
                 ("T",), "t", 0, "", "", "", 3, "text", flags, "c", "v", "p", "t")  # fmt: skip


def _by_objects(batch: pa.RecordBatch, outcomes: list[Any], mark: tuple[str, ...]) -> pa.RecordBatch:
    """What the chunk step did before: every row back to a Chunk, flagged, built again."""
    out, dedup = [], []
    for c, (group, near, bands) in zip(chunks_of(batch)[0], outcomes, strict=True):
        out.append(replace(c, flags=tuple(dict.fromkeys(c.flags + mark))) if near else c)
        dedup.append((group, tuple(bands)))
    return chunk_batch(out, dedup)


@settings(max_examples=80, deadline=None)
@given(st.lists(chunks(), max_size=6), st.data())
def test_marks_equal_the_object_round_trip(staged: list[Any], data: st.DataObject) -> None:
    batch = chunk_batch(staged, [("", ())] * len(staged))
    outcomes = [
        (data.draw(TEXT), data.draw(st.booleans()), tuple(data.draw(st.lists(TEXT, max_size=3))))
        for _ in staged
    ]
    mark = data.draw(st.sampled_from(MARKS))
    got = marked(batch, outcomes, mark)
    assert got.schema.equals(CHUNK_SCHEMA)
    assert got.equals(_by_objects(batch, outcomes, mark))
    expected = Counter(f.split(":", 1)[0] for c in chunks_of(got)[0] for f in c.flags)
    assert flag_counts(got) == expected


def test_a_near_duplicate_is_flagged_once_and_others_are_untouched() -> None:
    staged = [
        _chunk("a", ("near_duplicate",), "one"),  # already marked: not twice
        _chunk("b", ("rows:3-9",), "two"),
        _chunk("c", (), "three"),
    ]
    outcomes = [("g1", True, ("k1",)), ("g2", False, ()), ("g1", True, ("k1", "k2"))]
    got = marked(chunk_batch(staged, [("", ())] * 3), outcomes, MARKS[1])
    rows = got.to_pylist()
    assert [r["flags"] for r in rows] == [
        ["near_duplicate", "linked_duplicate"],
        ["rows:3-9"],
        ["near_duplicate", "linked_duplicate"],
    ]
    assert [r["dup_group"] for r in rows] == ["g1", "g2", "g1"]
    assert [r["dup_bands"] for r in rows] == [["k1"], [], ["k1", "k2"]]
    assert [r["text"] for r in rows] == [c.text for c in staged]  # every other column as staged
    assert flag_counts(got) == Counter({"near_duplicate": 2, "linked_duplicate": 2, "rows": 1})


def test_outcomes_for_other_rows_are_refused() -> None:
    batch = chunk_batch([_chunk("a", (), "one")], [("", ())])
    for wrong in ([], [("g", False, ()), ("h", False, ())]):
        with pytest.raises(InternalError, match="outcomes for a batch of 1"):
            marked(batch, wrong, MARKS[0])
    empty = chunk_batch([], [])
    assert marked(empty, [], MARKS[0]).num_rows == 0
    assert flag_counts(empty) == Counter()


WORDS = ["alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "zeta"]
PASSAGE = st.lists(st.sampled_from(WORDS), min_size=0, max_size=40).map(" ".join)


@settings(max_examples=80, deadline=None)
@given(st.lists(PASSAGE, min_size=1, max_size=12), st.data())
def test_a_workers_own_marks_are_the_runs_outcome_for_every_chunk_not_near_a_duplicate(
    texts: list[str], data: st.DataObject
) -> None:
    """What a worker stages (``own_marks``: its checksum and band keys) is what the run would
    set for any chunk it does not find near another (the chunk step then rewrites nothing);
    exact copies, short texts, texts without words and near copies included."""
    from tessera.chunking.dedup_columns import SketchColumns, dedupe_columns, own_marks
    from tessera.chunking.minhash import MinHasher, sketch

    for i in data.draw(st.lists(st.integers(0, len(texts) - 1), max_size=3)):  # near copies
        texts.append(texts[i] + " " + data.draw(st.sampled_from(WORDS)))
    hasher = MinHasher()
    sketches = [sketch(t, hasher) for t in texts]
    cols = SketchColumns(hasher)
    cols.add([f"d{i % 3}.md" for i in range(len(texts))], list(range(len(texts))), sketches)
    report = dedupe_columns(cols.close(), hasher)
    for i, s in enumerate(sketches):
        group, near, keys = report.outcome(i)
        if not near:
            assert own_marks(s) == (group, keys), texts[i]
