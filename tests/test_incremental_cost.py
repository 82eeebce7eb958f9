"""A small change costs the change: indexes are updated, not rebuilt; verify reads no vectors;
the embedding cache writes its vectors from one buffer. Behaviour only, nothing is timed
(the cost itself is measured in ``bench/incremental_cost.py``)."""

from __future__ import annotations

from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pyarrow.compute as pc
import pytest

from tessera.embedding.fake import HashEmbedder
from tessera.pipeline.checks import check_published
from tessera.pipeline.context import RunContext
from tessera.pipeline.run import run_tenant
from tessera.serde import doc_from_json
from tessera.store.doctor_probe import index_check
from tessera.store.embedding_cache import EmbeddingCache, vector_array
from tessera.store.indexes import ensure_indexes, index_state


def _doc(i: int) -> str:
    return f"# Note {i}\n\nPlain words about topic{i} and the shared subject.\n"


def _run(ws: Any, run_id: str) -> RunContext:
    rc = ws.context("acme", run_id)
    run_tenant(rc)
    return rc


def test_publish_updates_existing_indexes_instead_of_rebuilding(ws: Any) -> None:
    src = ws.tenant("acme", {f"d{i}.md": _doc(i) for i in range(12)})
    rc = _run(ws, "r1")
    assert set(rc.index.last_indexes.values()) == {"created"}
    (src / "new.md").write_text("# Fresh\n\nThe zyzzyva arrives in this document.\n", encoding="utf-8")
    rc = _run(ws, "r2")
    assert rc.index.last_indexes and set(rc.index.last_indexes.values()) == {"updated"}
    table = ws.table("acme")
    assert all(unindexed == 0 for _, unindexed in index_state(table).values())
    assert index_check(table, int(table.count_rows())).verdict == "ok"  # the doctor agrees
    hits = table.search("zyzzyva", query_type="fts", fts_columns="embedding_text").limit(5).to_arrow()
    assert set(hits.column("doc_id").to_pylist()) == {"new.md"}
    assert table.search().where("doc_id = 'new.md'").select(["id"]).to_arrow().num_rows >= 1

    # a change that brings in more rows than the indexes hold is a rebuild, not a fold
    for i in range(12, 40):
        (src / f"d{i}.md").write_text(_doc(i), encoding="utf-8")
    rc = _run(ws, "r3")
    assert set(rc.index.last_indexes.values()) == {"rebuilt"}
    assert all(unindexed == 0 for _, unindexed in index_state(ws.table("acme")).values())


def _vector_rows(rng: np.random.Generator, lo: int, hi: int, centres: np.ndarray) -> pa.Table:
    n = hi - lo
    vec = centres[rng.integers(0, len(centres), n)] + 0.2 * rng.standard_normal((n, 16)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    return pa.table(
        {
            "id": [str(i) for i in range(lo, hi)],
            "embedding_text": [f"text {i}" for i in range(lo, hi)],
            "readers": [["u"]] * n,
            "groups": [["g"]] * n,
            "effective_from_us": [0] * n,
            "effective_to_us": [1] * n,
            "doc_id": [f"d{i // 10}" for i in range(lo, hi)],
            "vector": pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), 16),
        }
    )


def _vector_segments(table: Any) -> list[str]:
    (desc,) = [d for d in table.to_lance().describe_indices() if d.name == "vector_idx"]
    return [str(s.uuid) for s in desc.segments]


def test_vector_index_keeps_its_trained_segment_and_indexes_new_rows(tmp_path: Any) -> None:
    rng = np.random.default_rng(5)
    centres = rng.standard_normal((20, 16)).astype(np.float32)
    table = lancedb.connect(str(tmp_path)).create_table("t", data=_vector_rows(rng, 0, 600, centres))
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created")
    (trained,) = _vector_segments(table)

    new = _vector_rows(rng, 600, 660, centres)
    table.add(new)
    assert ensure_indexes(table, vector_min_rows=500)["vector"] == "updated"
    segments = _vector_segments(table)
    assert trained in segments and len(segments) == 2  # the build stays; the new rows are a delta
    assert index_state(table)["vector"][1] == 0
    probe = new.column("vector")[7].as_py()
    plan = table.search(probe, vector_column_name="vector").distance_type("cosine").limit(1)
    assert "ANN" in plan.explain_plan() or "Vector" in plan.explain_plan()
    assert plan.select(["id"]).to_arrow().column("id").to_pylist() == ["607"]

    table.add(_vector_rows(rng, 660, 1000, centres))  # more than a quarter of the rows: retrain
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created")
    assert trained not in _vector_segments(table) and index_state(table)["vector"][1] == 0


def test_cache_put_builds_vectors_from_one_buffer_and_round_trips(tmp_path: Any) -> None:
    vecs = np.random.default_rng(1).standard_normal((50, 8)).astype(np.float32)
    vecs[0, :4] = np.array([-0.0, 1e-45, 3.4e38, -1.5], np.float32)  # sign of zero, denormal, near max
    arr = vector_array(vecs, 8)
    assert arr.type == pa.list_(pa.float32(), 8)
    assert arr.values.buffers()[1].address == vecs.ctypes.data  # no copy of a contiguous block
    with pytest.raises(ValueError, match="dimension"):
        vector_array(vecs[:, :7], 8)
    with pytest.raises(ValueError, match="non-finite"):
        vector_array(np.full((2, 8), np.nan, np.float32), 8)

    embedder = HashEmbedder(dimension=8)
    cache = EmbeddingCache(lancedb.connect(str(tmp_path)), "acme", embedder.identity)
    entries = {f"k{i:03d}": vecs[i] for i in range(50)}
    cache.put(entries)
    got = cache.get(entries)
    assert set(got) == set(entries)
    for k, v in entries.items():
        assert got[k].tobytes() == v.tobytes()  # bit for bit
    with pytest.raises(ValueError):
        cache.put({"bad": np.zeros(7, np.float32)})
    assert cache.count() == 50


class _Spy:
    """The real table; records the columns each query reads and refuses unprojected reads."""

    def __init__(self, table: Any) -> None:
        self._table = table
        self.selected: list[list[str]] = []

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)

    def to_arrow(self) -> Any:
        raise AssertionError("the whole table was read")

    def search(self, *args: Any, **kwargs: Any) -> _Query:
        return _Query(self._table.search(*args, **kwargs), self.selected)

    def to_lance(self) -> Any:
        raise AssertionError("verify reads through LanceDB (loading pylance: +48 MB in a no-op)")


class _Query:
    def __init__(self, query: Any, log: list[list[str]]) -> None:
        self._q, self._log = query, log
        self._cols: list[str] | None = None

    def where(self, *a: Any, **k: Any) -> _Query:
        self._q = self._q.where(*a, **k)
        return self

    def limit(self, *a: Any) -> _Query:
        self._q = self._q.limit(*a)
        return self

    def select(self, cols: list[str]) -> _Query:
        self._cols = cols
        self._q = self._q.select(cols)
        return self

    def to_arrow(self) -> Any:
        assert self._cols is not None, "a query without a projection reads every column"
        self._log.append(list(self._cols))
        return self._q.to_arrow()

    def to_batches(self, *a: Any) -> Any:
        assert self._cols is not None, "a query without a projection reads every column"
        self._log.append(list(self._cols))
        return self._q.to_batches(*a)


def test_verify_reads_no_vectors_and_still_finds_every_problem(ws: Any) -> None:
    ws.tenant("acme", {f"d{i}.md": _doc(i) for i in range(6)})
    rc = _run(ws, "r1")
    listing = {d["doc_id"]: doc_from_json(d).revision for d in rc.read("listing.json")["documents"]}
    table = ws.table("acme")
    spy = _Spy(table)
    problems, stats = check_published(spy, "acme", 64, listing, set(), rc.blobs)
    assert problems == [] and stats["rows"] == table.count_rows() and stats["offsets_checked"] > 0
    assert spy.selected and not any("vector" in cols for cols in spy.selected)

    full = table.to_arrow()
    row = full.filter(pc.equal(full["doc_id"], "d1.md")).slice(0, 1)
    bad = row.set_column(row.schema.get_field_index("tenant"), "tenant", pa.array(["evil"]))
    bad = bad.set_column(
        bad.schema.get_field_index("readers"), "readers", pa.array([[]], pa.list_(pa.string()))
    )
    bad = bad.set_column(
        bad.schema.get_field_index("groups"), "groups", pa.array([[]], pa.list_(pa.string()))
    )
    gone = row.set_column(row.schema.get_field_index("id"), "id", pa.array(["gone-0"]))
    gone = gone.set_column(gone.schema.get_field_index("doc_id"), "doc_id", pa.array(["gone.md"]))
    table.add(pa.concat_tables([bad.cast(full.schema), gone.cast(full.schema)]))
    spy = _Spy(ws.table("acme"))
    problems, stats = check_published(spy, "acme", 64, listing, set(), rc.blobs)
    text = "; ".join(problems)
    assert "1 duplicate chunk ids" in text and "rows of other tenants: ['evil']" in text
    assert "1 rows without any reader or group" in text and "1 stale rows" in text
    assert not any("vector" in cols for cols in spy.selected)
    problems, _ = check_published(ws.table("acme"), "acme", 32, listing, set(), rc.blobs)
    assert any("dimension 32" in p for p in problems)


def test_vector_deltas_merge_at_the_cap_and_the_index_retrains_once_it_is_stale(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each small publish adds a delta segment (the first too: Lance's default merged it into
    the trained segment, a rewrite of the whole graph); at ``MAX_VECTOR_SEGMENTS`` the deltas
    merge into one beside the trained segment, which is never rewritten; once more than
    ``REBUILD_FRACTION`` of the rows lie outside the trained segment the index is retrained.
    Every new row is found by its own vector throughout."""
    from tessera.store import indexes

    monkeypatch.setattr(indexes, "MAX_VECTOR_SEGMENTS", 3)
    rng = np.random.default_rng(9)
    centres = rng.standard_normal((20, 16)).astype(np.float32)
    table = lancedb.connect(str(tmp_path)).create_table("t", data=_vector_rows(rng, 0, 600, centres))
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created")
    (trained,) = _vector_segments(table)
    counts = []
    for step, (lo, hi) in enumerate([(600, 640), (640, 680), (680, 720), (720, 760)]):
        new = _vector_rows(rng, lo, hi, centres)
        table.add(new)
        assert ensure_indexes(table, vector_min_rows=500)["vector"] == "updated", step
        segments = _vector_segments(table)
        assert segments[0] == trained or trained in segments
        counts.append(len(segments))
        assert index_state(table)["vector"][1] == 0
        probe = new.column("vector")[3].as_py()
        hit = table.search(probe, vector_column_name="vector").distance_type("cosine").limit(1)
        assert hit.select(["id"]).to_arrow().column("id").to_pylist() == [str(lo + 3)]
    assert counts == [2, 3, 2, 3]  # two deltas at the cap merged with the new rows into one
    # 160 rows outside the trained 600 (21 %); 60 more (29 % of 820) and it no longer describes
    # the table: retrained, though no single publish brought a quarter of the rows
    table.add(_vector_rows(rng, 760, 820, centres))
    assert ensure_indexes(table, vector_min_rows=500)["vector"].startswith("created")
    assert trained not in _vector_segments(table) and len(_vector_segments(table)) == 1
