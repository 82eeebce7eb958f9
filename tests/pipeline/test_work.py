"""A chunk task's counts (flags by name, chunks, token sum and largest), counted by its worker
from the chunks, equal what the step counted before from the staged Arrow columns, for any
chunks; and the step refuses a task whose counts do not match its staged rows."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pyarrow.compute as pc
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.chunking.minhash import MinHasher, SketchBatch
from tessera.chunking.profile import DedupConfig
from tessera.errors import InternalError
from tessera.pipeline.marks import flag_counts
from tessera.pipeline.staging import chunk_batch
from tessera.pipeline.steps import _count
from tessera.pipeline.work import BatchCounts, ChunkOutcome
from tests.pipeline.test_staging import chunks


@settings(max_examples=80, deadline=None)
@given(st.lists(chunks(), max_size=8))
def test_worker_counts_equal_the_staged_columns(staged: list[Any]) -> None:
    batch = chunk_batch(staged, [("", ())] * len(staged))
    counts = BatchCounts.of(staged)
    assert Counter(dict(counts.flags)) == flag_counts(batch)
    assert counts.chunks == batch.num_rows
    tokens = batch.column("token_count")
    assert counts.token_sum == (int(pc.sum(tokens).as_py()) if batch.num_rows else 0)
    assert counts.token_max == (int(pc.max(tokens).as_py()) if batch.num_rows else 0)


@settings(max_examples=20, deadline=None)
@given(st.lists(chunks(), min_size=1, max_size=4), st.lists(chunks(), min_size=1, max_size=4))
def test_the_step_adds_tasks_and_refuses_counts_of_other_rows(first: list[Any], second: list[Any]) -> None:
    empty = SketchBatch.of([], MinHasher.of(DedupConfig()))

    def outcome(rows: list[Any], counted: list[Any]) -> ChunkOutcome:
        batch = chunk_batch(rows, [("", ())] * len(rows))
        return ChunkOutcome(batch, (), empty, counts=BatchCounts.of(counted))

    flags: Counter[str] = Counter()
    tokens = {"n": 0, "sum": 0, "max": 0}
    _count(outcome(first, first), flags, tokens)
    _count(outcome(second, second), flags, tokens)
    both = first + second
    assert flags == flag_counts(chunk_batch(both, [("", ())] * len(both)))
    assert tokens == {
        "n": len(both),
        "sum": sum(c.token_count for c in both),
        "max": max(c.token_count for c in both),
    }
    with pytest.raises(InternalError, match="counted"):  # a worker that counted other chunks
        _count(outcome(first, first + second), flags, tokens)
    with pytest.raises(InternalError, match="counted"):  # an outcome built without counts
        _count(ChunkOutcome(chunk_batch(first, [("", ())] * len(first)), (), empty), flags, tokens)


def test_parses_land_in_their_folders_and_a_second_parse_replaces_them(tmp_path: Any) -> None:
    """Staged parses are spread over folders named by their hash's first two hex digits, made
    on a folder's first parse (also when one is removed between tasks); parsing the same
    documents again (a re-executed step) replaces each file, never leaving a temporary one."""
    import hashlib
    import json
    import shutil

    from tessera.pipeline.work import ParseTask, parse_documents, parsed_file
    from tessera.serde import parsed_from_json
    from tessera.store.blobs import BlobStore
    from tessera.types import SourceDocument

    store = tmp_path / "index"
    blobs = BlobStore(str(store))
    docs = []
    for n in range(40):
        raw = f"# Title {n}\n\nBody {n}.\n".encode()
        docs.append(SourceDocument("acme", f"d{n}.md", f"file:///d{n}.md", blobs.put("acme", raw),
                                   "text/markdown", (), ("staff",), size=len(raw)))  # fmt: skip
    parsed = tmp_path / "run" / "parsed"
    task = ParseTask(str(store), "acme", parsed, tuple(docs))
    first = parse_documents(task)
    assert all(o.quarantine is None for o in first.outcomes)
    for doc in docs:
        h = hashlib.sha256(doc.doc_id.encode()).hexdigest()[:32]
        assert parsed_file(doc.doc_id) == f"{h[:2]}/{h}.json"
        assert parsed_from_json(json.loads((parsed / h[:2] / f"{h}.json").read_text())).doc_id == doc.doc_id
    folders = {p.name for p in parsed.iterdir()}
    assert len(folders) > 1 and all(len(f) == 2 for f in folders)
    shutil.rmtree(parsed / sorted(folders)[0])  # a folder gone between two tasks is made again
    before = {p: p.stat().st_ino for p in parsed.rglob("*.json")}
    again = parse_documents(task)
    assert [o.doc_id for o in again.outcomes] == [d.doc_id for d in docs]
    after = {p: p.stat().st_ino for p in parsed.rglob("*.json")}
    assert len(after) == len(docs) and not list(parsed.rglob(".*"))
    assert all(after[p] != ino for p, ino in before.items())  # replaced, not written in place
