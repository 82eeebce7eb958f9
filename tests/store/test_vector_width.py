"""The vector index's search width grows with the table, and its publish check asks near-data
questions (issue 17: at 1,000,000 rows the width of 100k rows gave recall@10 0.76, and the
check, querying rows' own vectors, passed it at 0.98)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa

from tessera.search import candidates
from tessera.search.dataset import dataset
from tessera.store import indexes
from tessera.store.indexes import (
    EF,
    EF_ROWS,
    REFINE,
    ROWS_PER_PARTITION,
    ef_for,
    ensure_indexes,
    exact_distances,
    nearest,
    partitions_for,
    vector_recall,
)
from tests.test_incremental_cost import _vector_rows


def test_width_is_fixed_up_to_the_measured_size_then_grows_with_the_square_root() -> None:
    assert ef_for(0, 10) == ef_for(5_000, 10) == ef_for(EF_ROWS, 10) == EF
    assert ef_for(4 * EF_ROWS, 10) == 2 * EF
    assert ef_for(1_000_000, 10) == math.ceil(EF * math.sqrt(10)) == 203
    assert all(ef_for(r, 10) <= ef_for(r + 50_000, 10) for r in range(0, 3_000_000, 50_000))
    # never below what HNSW must return, whatever the size
    assert ef_for(10, 200) == 200 * REFINE and ef_for(10**7, 1000) == 1000 * REFINE
    assert nearest([0.0, 1.0], 10, 1_000_000)["ef"] == 203


def test_partitions_hold_a_fixed_number_of_rows_and_never_fewer_than_one() -> None:
    """Each probed partition is a graph search of its own: 100k rows make 4 partitions, all
    probed (``NPROBES`` 20), not 16."""
    assert partitions_for(0) == partitions_for(1) == partitions_for(ROWS_PER_PARTITION) == 1
    assert partitions_for(ROWS_PER_PARTITION + 1) == 2
    assert partitions_for(100_000) == 4 <= indexes.NPROBES
    assert partitions_for(1_000_000) == 40


def _table(tmp_path: Path, rows: int = 600) -> tuple[Any, np.ndarray]:
    rng = np.random.default_rng(4)
    data = _vector_rows(rng, 0, rows, rng.standard_normal((20, 16)).astype(np.float32))
    vec = np.asarray(data.column("vector").to_pylist(), np.float32)
    data = data.append_column("dup_group", pa.array([f"g{i}" for i in range(rows)]))
    return lancedb.connect(str(tmp_path)).create_table("t", data=data), vec


def test_the_recall_check_asks_questions_near_the_rows_not_the_rows_themselves(tmp_path: Path) -> None:
    table, vec = _table(tmp_path)
    asked: list[np.ndarray] = []
    search = table.search

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(table, name)

        def search(self, q: Any = None, **kw: Any) -> Any:
            if q is not None:
                asked.append(np.asarray(q, np.float32))
            return search(q, **kw)

    recall = vector_recall(Spy(), queries=8)  # no index: the "approximate" search is exact
    assert recall == 1.0 and len(asked) == 8  # each question asked once; exact answers by a scan
    units = vec / np.linalg.norm(vec, axis=1, keepdims=True)
    for q in asked:
        cos = units @ (q / np.linalg.norm(q))
        assert cos.max() < 0.95, "a stored row's own vector was the question"
        assert cos.max() > 0.5, "the question is not near the data"
    assert vector_recall(Spy(), queries=8) == recall  # a fixed seed: the same questions each time


def test_the_recall_check_draws_its_questions_from_rows_across_the_table(tmp_path: Path) -> None:
    """Not the first rows written (one document's chunks, say): ``RECALL_QUESTIONS`` distinct
    rows from the whole table, the same ones each time."""
    table, _ = _table(tmp_path)
    taken: list[list[int]] = []

    class Dataset:
        def __init__(self, ds: Any) -> None:
            self.ds = ds

        def __getattr__(self, name: str) -> Any:
            return getattr(self.ds, name)

        def take(self, positions: list[int], **kw: Any) -> Any:
            taken.append(list(positions))
            return self.ds.take(positions, **kw)

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(table, name)

        def to_lance(self) -> Any:
            return Dataset(table.to_lance())

    assert vector_recall(Spy()) == 1.0  # no index: the "approximate" search is exact
    (positions,) = taken
    assert len(set(positions)) == indexes.RECALL_QUESTIONS
    assert min(positions) < 100 and max(positions) > 500  # spread over the 600 rows
    assert vector_recall(Spy()) == 1.0 and taken[1] == positions
    assert vector_recall(Spy(), queries=1000) == 1.0 and len(taken[2]) == 600  # never past the table


def test_a_built_index_still_passes_its_near_data_check(tmp_path: Path) -> None:
    table, _ = _table(tmp_path)
    done = ensure_indexes(table, vector_min_rows=500)
    assert done["vector"].startswith("created"), done
    assert vector_recall(table) >= 0.95


def test_the_search_width_follows_each_version_of_the_table(tmp_path: Path, monkeypatch: Any) -> None:
    table, vec = _table(tmp_path, rows=50)
    widths: list[int] = []
    real = candidates.nearest

    def spy(vector: Any, limit: int, rows: int) -> dict[str, Any]:
        widths.append(rows)
        return real(vector, limit, rows)

    monkeypatch.setattr(candidates, "nearest", spy)
    candidates.dense(table, vec[0].tolist(), "true", 3)
    table.add(table.to_arrow().slice(0, 30))  # a new version with 80 rows
    candidates.dense(table, vec[0].tolist(), "true", 3)
    assert widths[0] == 50 and widths[-1] == 80
    assert candidates.table_rows(dataset(table)) == 80


def test_exact_answers_come_from_one_bounded_pass_and_match_brute_force(
    tmp_path: Path, monkeypatch: Any
) -> None:
    table, vec = _table(tmp_path, rows=50)
    table.add(table.to_arrow().slice(0, 5))  # exact copies: ties at equal distance
    vec = np.concatenate([vec, vec[:5]])
    column = table.schema.get_field_index("vector")
    zeros = pa.array([[0.0] * 16], table.schema.field("vector").type)
    zero = table.to_arrow().slice(0, 1).set_column(column, "vector", zeros)
    table.add(zero)  # a zero vector: at distance 1 from every question
    vec = np.concatenate([vec, np.zeros((1, 16), np.float32)])
    scans: list[tuple[Any, Any]] = []
    real = type(table.to_lance())

    class Scanned:
        def __init__(self, ds: Any) -> None:
            self.ds = ds

        def to_batches(self, **kw: Any) -> Any:
            scans.append((kw.get("columns"), kw.get("batch_size")))
            return self.ds.to_batches(**kw)

    class Spy:
        def __getattr__(self, name: str) -> Any:
            return getattr(table, name)

        def to_lance(self) -> Any:
            ds = table.to_lance()
            assert isinstance(ds, real)
            return Scanned(ds)

    monkeypatch.setattr(indexes, "SCAN_ROWS", 7)  # many batches: the running top-k is merged
    rng = np.random.default_rng(9)
    questions = np.concatenate([vec[:3], rng.standard_normal((4, 16)).astype(np.float32)])
    got = exact_distances(Spy(), questions, 10)
    units = vec / np.maximum(np.linalg.norm(vec, axis=1, keepdims=True), 1e-12)
    qs = questions / np.linalg.norm(questions, axis=1, keepdims=True)
    want = np.sort(1.0 - qs.astype(np.float64) @ units.T.astype(np.float64), axis=1)[:, :10]
    assert np.allclose(got, want, atol=1e-6)
    assert scans == [(["vector"], 7)]  # one pass for every question, the vector column only
    assert np.all(np.isinf(exact_distances(table, questions[:1], 80)[0, 56:]))  # fewer rows than k


def test_recall_counts_an_equally_near_copy_and_nothing_beyond_the_kth_distance(
    tmp_path: Path, monkeypatch: Any
) -> None:
    rng = np.random.default_rng(5)
    data = _vector_rows(rng, 0, 300, rng.standard_normal((20, 16)).astype(np.float32))
    data = pa.concat_tables([data, data])  # every vector twice: which copy a search lists is arbitrary
    table = lancedb.connect(str(tmp_path)).create_table("t", data=data)
    assert vector_recall(table) == 1.0
    monkeypatch.setattr(indexes, "TIE", -1.0)  # nothing counts: the check must fail, not pass
    assert vector_recall(table) == 0.0
