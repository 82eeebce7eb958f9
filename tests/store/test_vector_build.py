"""The vector index built in segments of bounded size (``tessera.store.vector_build``): one
segment per group of data files, committed as one index; publishes fold their rows into deltas
beside that base and never merge it or rebuild it; a failed segment commits nothing."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import lance
import lancedb
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.errors import PublishError
from tessera.store import indexes, vector_build
from tessera.store.indexes import (
    RECALL_TARGET,
    ensure_indexes,
    index_state,
    merge_segments,
    tuned,
    vector_recall,
)
from tessera.store.segments import vector_base
from tessera.store.vector_build import VECTOR_INDEX, build_vector_index, segment_groups
from tests.vector_fixtures import clustered_rows


@settings(max_examples=300, deadline=None)
@given(st.lists(st.integers(0, 400), max_size=30), st.integers(1, 500))
def test_groups_are_consecutive_files_closed_at_the_limit_with_no_small_tail(
    rows: list[int], limit: int
) -> None:
    fragments = [(10 + i, n) for i, n in enumerate(rows)]  # ids need not start at 0
    groups = segment_groups(fragments, limit)
    size = dict(fragments)
    # each file with live rows once, in order
    assert [f for g in groups for f in g] == [f for f, n in fragments if n > 0]
    assert all(groups)
    for k, group in enumerate(groups):
        held = np.cumsum([size[f] for f in group])
        if k < len(groups) - 1:
            assert held[-1] >= limit  # only the last group may be short of the limit
        closed = int(np.searchsorted(held, limit))  # the file at which the group reached the limit
        rest = int(held[-1] - held[closed]) if closed < len(held) else 0
        # a group goes on past the limit only by a tail too small to stand alone, and only at the end
        assert rest == 0 or (k == len(groups) - 1 and rest < limit / 2)
    if len(groups) > 1:
        assert sum(size[f] for f in groups[-1]) >= limit / 2


def test_a_tail_joins_the_group_before_and_a_file_over_the_limit_is_a_group_of_its_own() -> None:
    assert segment_groups([(0, 100), (1, 100), (2, 100), (3, 100), (4, 5)], 100) == [[0], [1], [2], [3, 4]]
    assert segment_groups([(0, 100), (1, 60)], 100) == [[0], [1]]  # 60 >= 50: a segment of its own
    assert segment_groups([(0, 250), (1, 30), (2, 40), (3, 0), (4, 50)], 100) == [[0], [1, 2, 4]]
    assert segment_groups([(0, 10), (1, 10)], 100) == [[0, 1]]
    assert segment_groups([(0, 0)], 100) == []


def _files(tmp_path: Path, sizes: list[int], n: int) -> tuple[Any, Any]:
    """A table written as one data file per entry of ``sizes`` (as a run's append writes files
    of at most 100,000 rows), and the rest of ``n`` rows for later publishes."""
    data, _ = clustered_rows(n=n)
    table = lancedb.connect(str(tmp_path)).create_table("t", data=data.slice(0, sizes[0]))
    lo = sizes[0]
    for size in sizes[1:]:
        table.add(data.slice(lo, size))
        lo += size
    assert len(table.to_lance().get_fragments()) == len(sizes)
    return table, data


def _segments(table: Any) -> list[tuple[str, list[int]]]:
    (desc,) = [d for d in table.to_lance().describe_indices() if d.name == VECTOR_INDEX]
    return [(s.uuid, sorted(s.fragment_ids)) for s in desc.segments]


def test_a_table_of_several_files_is_one_index_of_a_segment_per_group(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 300)
    table, _ = _files(tmp_path, [300, 300, 300, 300], 1200)
    done = ensure_indexes(table, vector_min_rows=500)
    assert done["vector"].startswith("created IVF_HNSW_SQ (recall@10")
    assert [files for _, files in _segments(table)] == [[0], [1], [2], [3]]
    assert vector_base(table, VECTOR_INDEX) == (4, 0)
    assert index_state(table)["vector"] == ("IvfHnswSq", 0)  # one index, every row in it
    assert vector_recall(table) >= RECALL_TARGET
    # a prefiltered search (as the ACL filter runs) finds its nearest rows across the segments
    _, vectors = clustered_rows(n=1200)
    where = "CAST(id AS INT) % 3 = 0"
    hits = exact = 0
    for row in range(5, 1200, 97):
        query = vectors[row] + 0.05 * np.sin(np.arange(vectors.shape[1]) + row).astype(np.float32)
        found = tuned(table.search(query).distance_type("cosine").where(where, prefilter=True), 10, 1200)
        truth = table.search(query).distance_type("cosine").where(where, prefilter=True).limit(10)
        got, want = (
            set(found.to_arrow()["id"].to_pylist()),
            set(truth.bypass_vector_index().to_arrow()["id"].to_pylist()),
        )
        assert all(int(i) % 3 == 0 for i in got)
        hits, exact = hits + len(got & want), exact + len(want)
    assert hits / exact >= RECALL_TARGET
    # the same table with files over the limit of a segment: one segment, as before
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 10_000)
    assert build_vector_index(table) == 1
    assert [files for _, files in _segments(table)] == [[0, 1, 2, 3]]
    assert vector_base(table, VECTOR_INDEX) == (1, 0)


def test_publishes_fold_into_deltas_beside_a_base_of_segments_and_never_merge_or_rebuild_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The base is four segments of a quarter of the table each: told apart by size (the old
    rule: rows outside the largest segment) three quarters of the table would be outside it,
    and every publish would rebuild the index."""
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 300)
    table, data = _files(tmp_path, [300, 300, 300, 300], 1300)
    ensure_indexes(table, vector_min_rows=500)
    base = _segments(table)
    monkeypatch.setattr(indexes, "_vector_index", lambda *a: pytest.fail("the base was rebuilt"))
    counts = []
    for lo in range(1200, 1300, 20):  # five publishes of 20 rows
        table.add(data.slice(lo, 20))
        assert ensure_indexes(table, vector_min_rows=500)["vector"] == "updated"
        assert _segments(table)[:4] == base  # the base untouched
        counts.append(len(_segments(table)))
        assert vector_base(table, VECTOR_INDEX) == (4, lo + 20 - 1200)
    # deltas one by one until base + deltas reach MAX_VECTOR_SEGMENTS (the base counted once),
    # then the deltas merge with the next rows into one
    assert counts == [5, 6, 7, 5, 6]
    assert index_state(table)["vector"][1] == 0
    assert merge_segments(table)["vector"] == 6  # maintenance merges the two deltas, not the base
    assert _segments(table)[:4] == base and len(_segments(table)) == 5
    assert vector_recall(table) >= RECALL_TARGET


def test_a_table_mostly_outside_its_base_is_rebuilt_in_segments(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 300)
    table, data = _files(tmp_path, [300, 300], 1200)
    ensure_indexes(table, vector_min_rows=500)
    before = {uuid for uuid, _ in _segments(table)}
    table.add(data.slice(600, 300))
    table.add(data.slice(900, 300))  # 600 of 1,200 rows outside the base: more than a quarter
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created IVF_HNSW_SQ")
    after = _segments(table)
    assert [files for _, files in after] == [[0], [1], [2], [3]] and not before & {u for u, _ in after}
    assert vector_base(table, VECTOR_INDEX) == (4, 0)


def test_a_failed_segment_commits_nothing_and_the_table_keeps_its_index(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 10_000)
    table, data = _files(tmp_path, [300, 300, 300], 1500)
    ensure_indexes(table, vector_min_rows=500)
    kept = _segments(table)
    table.add(data.slice(900, 300))
    table.add(data.slice(1200, 300))  # 600 of 1,500 rows outside the index: it is rebuilt
    ensure_indexes(table, vector_min_rows=10**9)  # the text and scalar indexes take them first
    version = table.version
    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 300)
    build = lance.LanceDataset.create_index_uncommitted
    calls = []

    def second_fails(self: Any, *args: Any, **kwargs: Any) -> Any:
        calls.append(kwargs["fragment_ids"])
        if len(calls) == 2:
            raise OSError("disk full while writing segment 2")
        return build(self, *args, **kwargs)

    monkeypatch.setattr(lance.LanceDataset, "create_index_uncommitted", second_fails)
    with pytest.raises(PublishError, match="segment 2"):
        ensure_indexes(table, vector_min_rows=500)
    table.checkout_latest()
    assert table.version == version and _segments(table) == kept  # nothing committed
    assert calls == [[0], [1]]
    assert vector_recall(table) >= RECALL_TARGET  # the old index still answers
    monkeypatch.setattr(lance.LanceDataset, "create_index_uncommitted", build)
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created IVF_HNSW_SQ")
    assert [files for _, files in _segments(table)] == [[0], [1], [2], [3], [4]]
    assert vector_base(table, VECTOR_INDEX) == (5, 0)


def test_maintenance_over_a_base_of_segments_keeps_it_and_merges_only_the_deltas(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Compaction rewrites the base's files and a delta's (rows deleted from both) and remaps
    every segment; the base must still be told from the deltas afterwards."""
    from tessera.store.maintenance import maintain_table

    monkeypatch.setattr(vector_build, "SEGMENT_ROWS", 300)
    table, data = _files(tmp_path, [300, 300, 300, 300], 1260)
    ensure_indexes(table, vector_min_rows=500)
    for lo in (1200, 1220, 1240):
        table.add(data.slice(lo, 20))
        ensure_indexes(table, vector_min_rows=500)
    table.delete("id IN ('3', '650', '1230')")  # two base files and a delta
    assert len(_segments(table)) == 7
    monkeypatch.setattr(indexes, "vector_recall", lambda t, *a, **k: RECALL_TARGET)
    monkeypatch.setattr(indexes, "_vector_index", lambda *a: pytest.fail("a kept index was rebuilt"))
    report = maintain_table(table, keep_versions=2, keep_run_tags=0)
    assert report.vector_index == f"kept (recall@10 {RECALL_TARGET:.3f})"
    base, outside = vector_base(table, VECTOR_INDEX)
    assert (base, len(_segments(table))) == (4, 5)  # the base's four segments and one delta
    assert outside == 59  # the three publishes' rows, one deleted
    assert all(unindexed == 0 for _, unindexed in index_state(table).values())
    assert table.count_rows() == 1257
