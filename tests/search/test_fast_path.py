"""The fast search path (issue 17): ids and scores first, columns of the ranked rows by row id,
the dense and BM25 lists at once, one Lance dataset per table version. Each guarantee of the
old path is attacked here on a table built directly: no row the principal may not read, k
results not starved by the filter, exact ties decided by chunk id, new versions seen."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import lancedb
import numpy as np
import pyarrow as pa
import pytest

from tessera.search import candidates
from tessera.search.dataset import dataset
from tessera.search.fusion import candidate_depth
from tessera.search.options import SearchOptions
from tessera.search.principal import Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.search.rows import full_rows
from tessera.store.indexes import ensure_indexes
from tessera.store.schema import chunk_schema, micros, sentence_column, text_checksum

DIM = 8
NOW = datetime(2026, 6, 1, tzinfo=UTC)
ALICE = Principal("acme", "alice", ("staff",))


def build(tmp: Path, rows: list[dict[str, Any]], vectors: np.ndarray, index: bool = True) -> Any:
    """A chunk table of ``chunk_schema`` holding ``rows`` (defaults for every other column)."""
    schema = chunk_schema(DIM)
    n = len(rows)
    base: dict[str, Any] = {
        "tenant": "acme", "revision": "r", "checksum": "c", "meta_hash": "m", "readers": [], "groups": [],
        "flags": [], "effective_from_us": 0, "effective_to_us": 2**62, "model_version": "m", "start": 0,
        "end": 1, "byte_start": 0, "byte_end": 1, "token_count": 3, "heading_path": [], "pages": [],
        "kind": "text", "uri": "file:///x",
    }  # fmt: skip
    full = [{**base, **r} for r in rows]
    for i, r in enumerate(full):
        r.setdefault("doc_id", f"d{i}")
        r.setdefault("position", i)
        r["embedding_text"] = r["text"]
        r.setdefault("dup_group", text_checksum(r["text"]))
    plain = pa.schema([f for f in schema if f.name not in ("vector", "sentence_vectors", "acl_source")])
    cols = {f.name: [r.get(f.name) for r in full] for f in plain}
    table = pa.Table.from_pydict(cols, schema=plain)
    vec = vectors / np.linalg.norm(vectors, axis=1, keepdims=True)
    table = table.append_column(
        schema.field("vector"),
        pa.FixedSizeListArray.from_arrays(pa.array(vec.astype(np.float32).ravel()), DIM),
    )
    table = table.append_column(schema.field("sentence_vectors"), sentence_column([None] * n, DIM))
    table = table.append_column(schema.field("acl_source"), pa.nulls(n, pa.string()))
    t = lancedb.connect(str(tmp)).create_table("chunks", schema=schema)
    t.add(table)
    if index:
        ensure_indexes(t, vector_min_rows=10**9)
    return t


def words(i: int) -> str:
    return f"topic{i % 7} passage number {i} about shared policy words"


@pytest.fixture
def selective(tmp_path: Path) -> Any:
    """3000 rows; alice reads 1 in 100 (readers or group), others are foreign."""
    rng = np.random.default_rng(1)
    rows = []
    for i in range(3000):
        mine = i % 100 == 0
        rows.append(
            {"id": f"{i:064x}", "text": words(i),
             "readers": ["alice"] if mine and i % 200 == 0 else ["mallory"],
             "groups": ["staff"] if mine and i % 200 != 0 else ["legal"]}
        )  # fmt: skip
    return build(tmp_path, rows, rng.standard_normal((3000, DIM)))


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
@pytest.mark.parametrize("k", [1, 10, 30, 45])
def test_selective_acl_is_never_starved_and_never_leaks(selective: Any, mode: str, k: int) -> None:
    where = access_filter(ALICE, NOW)
    assert where is not None
    vector = np.random.default_rng(k).standard_normal(DIM).tolist()
    rows = ranked_rows(
        selective, None, "shared policy words passage", where, SearchOptions(k=k, mode=mode), vector
    )
    assert len(rows) == min(k, 30)  # 30 readable rows: all of them once k exceeds it
    assert all(int(r["id"], 16) % 100 == 0 for r in rows)
    for r in rows:
        assert r["readers"] == ["alice"] or r["groups"] == ["staff"]
        for s, _ in r["_sources"]:
            assert int(s["id"], 16) % 100 == 0


def test_a_row_id_naming_another_row_is_never_returned(selective: Any) -> None:
    """Should a candidate's row id name another row (a moved handle), its row is read again by
    id under the filter: the foreign row behind the row id never comes back."""
    where = access_filter(ALICE, NOW)
    assert where is not None
    ds = dataset(selective)
    ids = ds.to_table(columns=["id"], with_row_id=True).to_pylist()
    rowid = {r["id"]: r["_rowid"] for r in ids}
    mine, foreign = f"{0:064x}", f"{1:064x}"
    got = full_rows(selective, where, [{"id": mine, "_rowid": rowid[foreign], "_score": 1.0}])
    assert [r["id"] for r in got] == [mine]
    assert got[0]["readers"] == ["alice"] and got[0]["_score"] == 1.0
    assert full_rows(selective, where, [{"id": foreign, "_rowid": rowid[mine], "_score": 1.0}]) == []


@pytest.mark.parametrize("mode", ["dense", "lexical"])
def test_exact_ties_at_the_cut_are_decided_by_id(tmp_path: Path, mode: str) -> None:
    """40 rows score exactly alike (same vector, same text): the top k are the k smallest ids,
    whatever order the index returns them in, for every k."""
    rng = np.random.default_rng(5)
    same = rng.standard_normal(DIM)
    ids = [f"{int(x):064x}" for x in rng.permutation(10**6)[:40]]
    rows = [{"id": i, "text": "the same tied passage words here", "groups": ["staff"], "doc_id": f"t{n}"}
            for n, i in enumerate(ids)]  # fmt: skip
    rows += [{"id": f"f{n:063x}", "text": words(n), "groups": ["staff"]} for n in range(60)]
    vectors = np.vstack([np.tile(same, (40, 1)), rng.standard_normal((60, DIM))])
    table = build(tmp_path, rows, vectors)
    where = access_filter(ALICE, NOW)
    assert where is not None
    for k in (1, 3, 7, 20):
        if mode == "dense":
            got = candidates.dense(table, same.tolist(), where, k)
        else:
            got = candidates.lexical(table, "tied passage", where, k)
        assert [r["id"] for r in got] == sorted(ids)[:k], k


def test_dates_and_flags_fail_closed_on_the_fast_path(tmp_path: Path) -> None:
    """Null effective bounds admit nothing, at any ``as_of`` (also before 1970), and flagged
    rows stay out unless asked for."""
    t = micros(NOW)
    rows: list[dict[str, Any]] = [
        {"id": "a" * 64, "text": words(1), "groups": ["staff"]},
        {"id": "b" * 64, "text": words(2), "groups": ["staff"], "effective_from_us": None},
        {"id": "c" * 64, "text": words(3), "groups": ["staff"], "effective_to_us": None},
        {"id": "d" * 64, "text": words(4), "groups": ["staff"], "flags": ["hidden_text"]},
        {"id": "e" * 64, "text": words(5), "groups": ["staff"], "effective_from_us": t + 1},
        {"id": "f" * 64, "text": words(6), "groups": ["staff"], "effective_to_us": t},
    ]
    table = build(tmp_path, rows, np.random.default_rng(2).standard_normal((6, DIM)))
    for as_of, flagged, expected in [
        (NOW, False, {"a"}),
        (NOW, True, {"a", "d"}),
        (datetime(1960, 1, 1, tzinfo=UTC), False, set()),
    ]:
        where = access_filter(ALICE, as_of, flagged)
        assert where is not None
        for mode in ("dense", "lexical", "hybrid"):
            got = ranked_rows(
                table, None, "passage words", where, SearchOptions(k=10, mode=mode), [1.0] * DIM
            )
            assert {r["id"][0] for r in got} == expected, (as_of, flagged, mode)


def test_a_new_version_is_seen_and_a_deleted_row_is_gone(selective: Any, tmp_path: Path) -> None:
    where = access_filter(ALICE, NOW)
    assert where is not None
    opts = SearchOptions(k=50, mode="hybrid")
    before = {r["id"] for r in ranked_rows(selective, None, "policy words", where, opts, [1.0] * DIM)}
    assert f"{0:064x}" in before
    selective.delete(f"id = '{0:064x}'")  # the handle moves to the new version
    after = {r["id"] for r in ranked_rows(selective, None, "policy words", where, opts, [1.0] * DIM)}
    assert after == before - {f"{0:064x}"}
    fresh = lancedb.connect(str(tmp_path)).open_table("chunks")
    assert {r["id"] for r in ranked_rows(fresh, None, "policy words", where, opts, [1.0] * DIM)} == after


def test_copies_below_the_cut_are_found_through_the_filter(tmp_path: Path) -> None:
    """Exact copies share a ``dup_group`` (indexed): every readable copy is a source of the one
    hit, the unreadable copy is not."""
    text = "a paragraph repeated in several documents of the tenant"
    rows = [{"id": f"{i:064x}", "text": text, "groups": ["staff"] if i != 3 else ["legal"], "doc_id": f"c{i}"}
            for i in range(6)]  # fmt: skip
    rows += [{"id": f"e{i:063x}", "text": words(i), "groups": ["staff"]} for i in range(50)]
    table = build(tmp_path, rows, np.random.default_rng(3).standard_normal((56, DIM)))
    where = access_filter(ALICE, NOW)
    assert where is not None
    (hit,) = ranked_rows(table, None, "paragraph repeated", where, SearchOptions(k=1, mode="lexical"), None)
    assert hit["text"] == text
    assert sorted(s["doc_id"] for s, _ in hit["_sources"]) == ["c0", "c1", "c2", "c4", "c5"]


def test_both_raises_the_failure_of_either_query() -> None:
    def boom() -> int:
        raise ZeroDivisionError("first")

    def late() -> int:
        raise KeyError("second")

    with pytest.raises(ZeroDivisionError):
        candidates.both(boom, lambda: 1)
    with pytest.raises(KeyError):
        candidates.both(lambda: 1, late)
    assert candidates.both(lambda: 1, lambda: "b") == (1, "b")


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_rows_failing_the_checked_part_rank_first_yet_never_appear(tmp_path: Path, mode: str) -> None:
    """Candidate queries run under the claims and check tenant, dates and flags on what they
    return: here the 30 nearest, best-matching rows the claims admit are flagged, superseded,
    not yet in effect or of another tenant; the search falls back to the whole filter and still
    returns k admitted rows."""
    t = micros(NOW)
    bad: list[dict[str, Any]] = [
        {"flags": ["hidden_text"]}, {"flags": ["untrusted", "x"]}, {"effective_to_us": t},
        {"effective_from_us": t + 1}, {"tenant": "other"}, {"effective_to_us": None},
    ]  # fmt: skip
    target = np.ones(DIM)
    rows = [
        {"id": f"b{i:063x}", "text": f"exact query words variant{i} here", "groups": ["staff"], **bad[i % 6]}
        for i in range(30)
    ]
    rows += [{"id": f"{i:064x}", "text": words(i), "groups": ["staff"]} for i in range(40)]
    rng = np.random.default_rng(4)
    vectors = np.vstack([target + 0.01 * rng.standard_normal((30, DIM)), rng.standard_normal((40, DIM))])
    table = build(tmp_path, rows, vectors)
    where = access_filter(ALICE, NOW)
    assert where is not None
    for k in (1, 5, 20):
        got = ranked_rows(
            table, None, "exact query words", where, SearchOptions(k=k, mode=mode), target.tolist()
        )
        assert len(got) == k and all(not r["id"].startswith("b") for r in got), (k, mode)
    flagged = access_filter(ALICE, NOW, include_flagged=True)
    assert flagged is not None
    got = ranked_rows(
        table, None, "exact query words", flagged, SearchOptions(k=40, mode=mode), target.tolist()
    )
    assert {r["id"] for r in got if r["id"].startswith("b")} == {
        f"b{i:063x}" for i in range(30) if i % 6 in (0, 1)
    }


def test_a_filter_not_made_by_access_filter_is_used_whole(selective: Any) -> None:
    """Only registered access filters are split; any other string is the prefilter as is."""
    where = "array_has_any(groups, ['staff']) AND position < 1000"
    rows = ranked_rows(
        selective, None, "policy words", where, SearchOptions(k=50, mode="hybrid"), [1.0] * DIM
    )
    assert rows and all(r["groups"] == ["staff"] and r["position"] < 1000 for r in rows)


def _bm25_reference(table: Any, query: str, where: str, n: int) -> list[tuple[str, str, float]]:
    """The BM25 list read the plain way: every candidate's id, group and score in the full-text
    query itself, under the whole filter, as deep as the product reads, cut by score then id."""
    rows = dataset(table).to_table(
        columns=["id", "dup_group", "_score"],
        full_text_query={"query": query, "columns": ["embedding_text"]},
        filter=where, prefilter=True, limit=candidate_depth(n), disable_scoring_autoprojection=True,
    ).to_pylist()  # fmt: skip
    rows.sort(key=lambda r: (-r["_score"], r["id"]))
    return [(r["id"], r["dup_group"], r["_score"]) for r in rows[:n]]


def test_the_bm25_list_equals_the_plain_query(tmp_path: Path) -> None:
    """The BM25 list (under the claims, its top n checked against the rest of the filter)
    equals the list read under the whole filter with every column in the query: scores that
    differ, a tie of 20 rows at the cut (shorter than the list, so both see all of it), rows
    the principal may not read, flagged rows; and its rows carry nothing but id, group, score
    and row id."""
    rng = np.random.default_rng(9)
    rows: list[dict[str, Any]] = []
    for i in range(400):
        text = "alpha beta gamma" if i % 20 == 0 else words(i) + (" alpha" * int(rng.integers(0, 3)))
        rows.append({
            "id": f"{int(rng.integers(0, 2**62)):064x}", "text": text,
            "groups": ["staff"] if i % 3 else ["board"], "flags": ["hidden_text"] if i % 37 == 0 else [],
        })  # fmt: skip
    table = build(tmp_path, rows, rng.standard_normal((400, DIM)))
    where = access_filter(ALICE, NOW)
    assert where is not None
    for query in ("alpha", "alpha beta gamma", "policy words topic3", "passage number 12"):
        for n in (1, 5, 17, 40):
            got = candidates.lexical(table, query, where, n)
            want = _bm25_reference(table, query, where, n)
            assert [(r["id"], r["dup_group"], r["_score"]) for r in got] == want, (query, n)
            assert all(set(r) == {"id", "dup_group", "_score", "_rowid"} for r in got)
            readable = {r["id"] for r in rows if "staff" in r["groups"] and not r["flags"]}
            assert {r["id"] for r in got} <= readable
