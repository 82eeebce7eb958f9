"""A publish folds its rows into the text and scalar indexes: each keeps its base and one
delta, which the rows join, until the rows outside the base pass ``DELTA_SHARE`` of the table;
then one segment again. At every step no row is unindexed, the base is untouched between
merges, deleted rows are gone from every index, and full-text search returns the same rows with
the same BM25 scores as an index that merged the rows in at once (statistics are global across
segments)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from tessera.store import segments as segments_module
from tessera.store.index import NEVER_VECTOR
from tessera.store.indexes import ensure_indexes, index_state
from tessera.store.segments import outside_largest

WORDS = ["lance", "tenant", "vector", "policy", "zyzzyva", "ledger", "quorum"]


def _rows(lo: int, hi: int) -> pa.Table:
    n = hi - lo
    texts = [
        " ".join(WORDS[(i * j) % len(WORDS)] for j in range(1, 2 + i % 5)) + f" row{i}" for i in range(lo, hi)
    ]
    return pa.table(
        {
            "id": [f"c{i}" for i in range(lo, hi)],
            "embedding_text": texts,
            "readers": [[f"u{i % 3}"] for i in range(lo, hi)],
            "groups": [["g"]] * n,
            "effective_from_us": list(range(lo, hi)),
            "effective_to_us": [2**40] * n,
            "doc_id": [f"d{i // 4}" for i in range(lo, hi)],
            "dup_group": [f"g{i // 2}" for i in range(lo, hi)],
        }
    )


def _segments(table: Any) -> dict[str, int]:
    return {i.columns[0]: int(table.index_stats(i.name).num_indices) for i in table.list_indices()}


def _fts(table: Any, query: str) -> list[tuple[str, float]]:
    hits = table.search(query, query_type="fts").select(["id"]).limit(1000).to_arrow()
    return sorted(zip(hits.column("id").to_pylist(), hits.column("_score").to_pylist(), strict=True))


def _grow(table: Any, step: int) -> None:
    """One publish's worth of change: 30 new rows, and 3 old ones deleted."""
    table.add(_rows(1000 + 30 * step, 1030 + 30 * step))
    table.delete(f"id IN ('c{3 * step}', 'c{3 * step + 1}', 'c{3 * step + 2}')")


def test_folds_join_one_delta_until_its_share_then_one_merged_segment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each step's 30 rows join the delta (the base untouched: the rows outside it grow by 30 a
    step) until they pass a quarter of the table (step 5: 150 of 535 rows), then one segment,
    then a delta again; every index alike, in one commit a step."""
    monkeypatch.setattr(segments_module, "DELTA_SHARE", 0.25)
    db = lancedb.connect(str(tmp_path))
    table = db.create_table("t", _rows(0, 400))
    merged = db.create_table("m", _rows(0, 400))  # the same publishes, each merged in at once
    assert set(ensure_indexes(table, NEVER_VECTOR).values()) == {"created"}
    ensure_indexes(merged, NEVER_VECTOR)
    expected = [2, 2, 2, 2, 1, 2]
    outside_base = [30, 60, 90, 120, 0, 30]
    for step, (segments, outside) in enumerate(zip(expected, outside_base, strict=True), start=1):
        _grow(table, step)
        _grow(merged, step)
        version = table.version
        done = ensure_indexes(table, NEVER_VECTOR)
        assert set(done.values()) == {"updated"} and len(done) == 7
        assert table.version == version + 1  # one fold, one commit
        monkeypatch.setattr(segments_module, "DELTA_SHARE", 0.0)  # every fold a merge into one
        ensure_indexes(merged, NEVER_VECTOR)
        monkeypatch.setattr(segments_module, "DELTA_SHARE", 0.25)
        assert set(_segments(table).values()) == {segments}, step
        for index in table.list_indices():
            assert outside_largest(table, index.name) == outside, (step, index.name)
        assert set(_segments(merged).values()) == {1}
        assert all(unindexed == 0 for _, unindexed in index_state(table).values())
        for query in ("zyzzyva", "lance quorum", f"row{1000 + 30 * step + 7}", "row4"):
            got, want = _fts(table, query), _fts(merged, query)
            assert [i for i, _ in got] == [i for i, _ in want], query
            assert all(g == pytest.approx(w, rel=1e-5) for (_, g), (_, w) in zip(got, want, strict=True))
        gone = f"c{3 * step}"
        assert gone not in {i for i, _ in _fts(table, f"row{3 * step}")}
        new_doc = f"d{(1000 + 30 * step) // 4 + 1}"
        hits = table.search().where(f"doc_id = '{new_doc}'").select(["id"]).to_arrow()
        assert hits.num_rows == 4  # the scalar delta answers the prefilter for the new rows


def test_an_index_with_a_delta_that_gains_no_rows_is_left_alone(tmp_path: Path) -> None:
    table = lancedb.connect(str(tmp_path)).create_table("t", _rows(0, 400))
    ensure_indexes(table, NEVER_VECTOR)
    table.add(_rows(2000, 2010))
    ensure_indexes(table, NEVER_VECTOR)
    assert set(_segments(table).values()) == {2}
    version = table.version
    assert ensure_indexes(table, NEVER_VECTOR) == {} and table.version == version


def test_a_large_fold_merges_into_one(tmp_path: Path) -> None:
    """Rows past ``DELTA_SHARE`` of the table (30 new of 427, 7 %) merge into the base at once,
    beside a lone base too; rows under it (20 new of 447 rows) become a delta."""
    table = lancedb.connect(str(tmp_path)).create_table("t", _rows(0, 400))
    ensure_indexes(table, NEVER_VECTOR)
    _grow(table, 1)
    ensure_indexes(table, NEVER_VECTOR)
    assert set(_segments(table).values()) == {1}
    assert outside_largest(table, "embedding_text_idx") == 0
    table.add(_rows(2000, 2020))
    ensure_indexes(table, NEVER_VECTOR)
    assert set(_segments(table).values()) == {2}
    assert outside_largest(table, "doc_id_idx") == 20
    assert all(unindexed == 0 for _, unindexed in index_state(table).values())
    assert [i for i, _ in _fts(table, "row2013")] == ["c2013"]


def test_maintenance_merges_the_deltas_and_search_answers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Three publishes leave every text and scalar index in 2 segments (its base and the delta
    all three publishes' rows joined, under half the table); maintenance merges them into one
    each, with the same full-text results and prefilter answers, nothing unindexed."""
    from tessera.store.maintenance import maintain_table

    monkeypatch.setattr(segments_module, "DELTA_SHARE", 0.5)
    table = lancedb.connect(str(tmp_path)).create_table("t", _rows(0, 400))
    ensure_indexes(table, NEVER_VECTOR)
    for step in (1, 2, 3):
        _grow(table, step)
        ensure_indexes(table, NEVER_VECTOR)
    before_segments = _segments(table)
    assert set(before_segments.values()) == {2}
    queries = ("zyzzyva", "lance quorum", "row1037", "row4")
    before = {q: _fts(table, q) for q in queries}
    report = maintain_table(table, keep_versions=2, keep_run_tags=0)
    assert report.segments_merged == before_segments
    assert set(_segments(table).values()) == {1}
    assert all(unindexed == 0 for _, unindexed in index_state(table).values())
    for q in queries:
        got, want = _fts(table, q), before[q]
        assert [i for i, _ in got] == [i for i, _ in want], q
        assert all(g == pytest.approx(w, rel=1e-5) for (_, g), (_, w) in zip(got, want, strict=True))
    assert table.search().where("doc_id = 'd258'").select(["id"]).to_arrow().num_rows == 4
    assert maintain_table(table, keep_versions=2, keep_run_tags=0).segments_merged == {}  # nothing left
