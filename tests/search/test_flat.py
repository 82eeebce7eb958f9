"""The claims' rows held in memory (``tessera.search.flat``): exact nearest chunks, BM25 rows,
hit columns and copies from memory must answer exactly what the indexed path answers, never a
row the principal may not read, never a row of another version, within the memory bounds.

Every guarantee of the fast path and of the masks is attacked again here with the rows held
from the first query (``forced``): the tests imported below run once more under it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.search import candidates, flat, masks
from tessera.search.collapse import copy_ids
from tessera.search.dataset import dataset, pin
from tessera.search.options import SearchOptions
from tessera.search.principal import Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.search.scope import scope_of

from .test_fast_path import (  # noqa: F401  (run again with the rows held)
    DIM,
    build,
    selective,
    test_copies_below_the_cut_are_found_through_the_filter,
    test_dates_and_flags_fail_closed_on_the_fast_path,
    test_exact_ties_at_the_cut_are_decided_by_id,
    test_rows_failing_the_checked_part_rank_first_yet_never_appear,
    test_selective_acl_is_never_starved_and_never_leaks,
    words,
)
from .test_masks import (  # noqa: F401
    table,
    test_a_revoked_row_is_not_served_from_the_previous_versions_mask,
    test_a_row_added_later_is_ranked_under_the_new_versions_mask,
    test_a_table_built_again_to_the_same_version_never_uses_the_old_mask,
)

NOW = datetime(2026, 6, 1, tzinfo=UTC)
ALICE = Principal("acme", "alice", ("staff",))


@pytest.fixture(autouse=True)
def forced(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    """Masks from the first query and rows held from the first query under a mask; the sets
    read are listed."""
    monkeypatch.setattr(candidates, "mask_for", masks.claims_mask)
    monkeypatch.setattr(flat, "AFTER", 0)
    read: list[Any] = []
    real = flat._read

    def reading(ds: Any, allowed: Any) -> Any:
        read.append(allowed)
        return real(ds, allowed)

    monkeypatch.setattr(flat, "_read", reading)
    return read


def _where(principal: Principal = ALICE) -> str:
    where = access_filter(principal, NOW)
    assert where is not None
    return where


def _indexed(monkeypatch: pytest.MonkeyPatch) -> None:
    """No set is ever built or used from now on: the indexed path."""
    monkeypatch.setattr(flat, "MAX_BYTES", 0)
    monkeypatch.setattr(flat, "remembered", lambda ds, claims: None)


PRINCIPALS = (ALICE, Principal("acme", "bob", ("legal",)), Principal("acme", "mallory", ("staff", "legal")))


def _mixed(tmp_path: Path) -> Any:
    """400 rows in three groups, readers here and there, one row in eight a copy of another's
    text (duplicate groups), a few rows expired or flagged (they fail the checked part)."""
    rng = np.random.default_rng(12)
    rows = []
    for i in range(400):
        group = ["staff", "legal", "ops"][i % 3]
        row = {"id": f"{i:064x}", "text": words(i if i % 8 else i - 1), "groups": [group],
               "readers": ["alice"] if i % 11 == 0 else [], "doc_id": f"d{i // 4}"}  # fmt: skip
        if i % 37 == 0:
            row["effective_to_us"] = 0  # expired long ago
        if i % 41 == 0:
            row["flags"] = ["quarantined"]
        rows.append(row)
    return build(tmp_path, rows, rng.standard_normal((400, DIM)))


def _ranked(chunks: Any, principal: Principal, mode: str, query: str, vector: list[float], k: int) -> Any:
    rows = ranked_rows(chunks, None, query, _where(principal), SearchOptions(k=k, mode=mode), vector)
    return [(r["id"], float(r.get("_score", 0.0)), _sources(r)) for r in rows]


def _sources(row: dict[str, Any]) -> list[tuple[str, str]]:
    """Every source of a hit with every column it carries (sorted by id), scores aside."""
    plain = (
        (s["id"], repr(sorted((k, v) for k, v in s.items() if not k.startswith("_"))))
        for s, _ in row["_sources"]
    )
    return sorted(plain)


@pytest.mark.parametrize("mode", ["dense", "lexical", "hybrid"])
def test_held_rows_answer_exactly_what_the_index_answers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: list[Any], mode: str
) -> None:
    chunks = _mixed(tmp_path)
    rng = np.random.default_rng(3)
    cases = [
        (
            p,
            f"topic{rng.integers(7)} passage number {rng.integers(400)}",
            rng.standard_normal(DIM).tolist(),
            k,
        )
        for p in PRINCIPALS
        for k in (1, 5, 12)
    ]
    held = [_ranked(chunks, p, mode, q, v, k) for p, q, v, k in cases]
    held += [_ranked(chunks, p, mode, q, v, k) for p, q, v, k in cases]  # every set now read
    assert forced, "no set was read: the held path was not taken"
    assert len({a.claims for a in forced}) == len(forced)  # each set read once
    _indexed(monkeypatch)
    indexed = [_ranked(chunks, p, mode, q, v, k) for p, q, v, k in cases]
    assert all(rows for rows in indexed)
    for mine, theirs in zip(held, indexed + indexed, strict=True):
        assert [(i, sources) for i, _, sources in mine] == [(i, sources) for i, _, sources in theirs]
        # cosines in float32 here and in Lance differ in the last bits only
        assert np.allclose([s for _, s, _ in mine], [s for _, s, _ in theirs], rtol=0, atol=1e-5)


def test_copies_are_the_same_from_memory(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = pin(_mixed(tmp_path))
    groups = set(dataset(chunks).to_table(columns=["dup_group"]).column("dup_group").to_pylist()[:40])
    for principal in PRINCIPALS:
        where = _where(principal)
        candidates.dense(chunks, [1.0] * DIM, where, 3)  # reads the set
        scope = scope_of(where)
        assert scope is not None
        assert flat.remembered(dataset(chunks), masks.claims_of(dataset(chunks), scope)) is not None
        from_memory = sorted(r["id"] for r in copy_ids(chunks, where, groups).rows)
        with monkeypatch.context() as m:
            m.setattr(flat, "remembered", lambda ds, claims: None)
            from_store = sorted(r["id"] for r in copy_ids(chunks, where, groups).rows)
        assert from_memory == from_store and from_store


def test_a_row_id_outside_the_set_is_refused(tmp_path: Path) -> None:
    chunks = pin(_mixed(tmp_path))
    where = _where()
    candidates.dense(chunks, [1.0] * DIM, where, 3)
    scope = scope_of(where)
    assert scope is not None
    held = flat.remembered(dataset(chunks), scope.claims)
    assert held is not None
    mine = held.rows.column("_rowid").to_pylist()
    every = dataset(chunks).to_table(columns=[], with_row_id=True).column("_rowid").to_pylist()
    foreign = sorted(set(every) - set(mine))[0]
    assert [r["_rowid"] for r in held.lookup(mine[:3], ["id"])] == mine[:3]
    with pytest.raises(KeyError):
        held.lookup([mine[0], foreign], ["id"])
    with pytest.raises(KeyError):
        held.lookup([max(every) + 1], ["id"])


def test_rows_without_a_vector_are_never_nearest_but_keep_their_columns(tmp_path: Path) -> None:
    chunks = _mixed(tmp_path)
    gone = f"{3:064x}"  # group staff (3 % 3 == 0), readable by alice
    chunks.update(where=f"id = '{gone}'", values={"vector": None})
    where = _where()
    near = candidates.dense(chunks, [1.0] * DIM, where, 500)
    assert near and gone not in {r["id"] for r in near}
    bm25 = candidates.lexical(chunks, "passage number 3 topic3", where, 500)
    assert gone in {r["id"] for r in bm25}


def test_a_mask_too_large_is_never_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: list[Any]
) -> None:
    chunks = _mixed(tmp_path)
    monkeypatch.setattr(flat, "MAX_BYTES", 10 * DIM * 4)  # vectors of 10 rows
    for _ in range(3):
        assert candidates.dense(chunks, [1.0] * DIM, _where(), 5)
    assert forced == []  # the index answered every query


def test_a_set_larger_than_its_bound_after_reading_is_not_read_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, forced: list[Any]
) -> None:
    """The vectors fit, the columns do not: read once, dropped, remembered as too large."""
    chunks = _mixed(tmp_path)
    where = _where()
    scope = scope_of(where)
    assert scope is not None
    allowed = masks.claims_mask(dataset(pin(chunks)), scope.claims)
    monkeypatch.setattr(flat, "MAX_BYTES", allowed.rows * DIM * 4 + 1)
    first = candidates.dense(chunks, [1.0] * DIM, where, 5)
    for _ in range(3):
        assert candidates.dense(chunks, [1.0] * DIM, where, 5) == first
    assert len(forced) == 1
    assert flat.remembered(dataset(pin(chunks)), allowed.claims) is None


def test_sets_stay_within_the_budget(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    chunks = pin(_mixed(tmp_path))
    ds = dataset(chunks)
    sizes = []
    for principal in PRINCIPALS:
        candidates.dense(chunks, [1.0] * DIM, _where(principal), 3)
        scope = scope_of(_where(principal))
        assert scope is not None
        held = flat.remembered(ds, masks.claims_of(ds, scope))
        assert held is not None
        sizes.append(held.nbytes)
    monkeypatch.setattr(flat, "_SETS", flat.Memo(64, max(sizes), lambda s: s.nbytes))
    for principal in PRINCIPALS:
        candidates.dense(chunks, [1.0] * DIM, _where(principal), 3)
    scopes = [scope_of(_where(p)) for p in PRINCIPALS]
    held = [flat.remembered(ds, masks.claims_of(ds, s)) for s in scopes if s is not None]
    assert held[-1] is not None and sum(1 for h in held if h is not None) < len(PRINCIPALS)


def test_where_in_finds_every_row_of_the_values_once_in_row_id_order(tmp_path: Path) -> None:
    """From the column's value index: the same rows as testing every held row, in row-id order,
    each once however often its value is asked, none for values the set lacks."""
    chunks = pin(_mixed(tmp_path))
    where = _where()
    candidates.dense(chunks, [1.0] * DIM, where, 3)  # reads the set
    scope = scope_of(where)
    assert scope is not None
    held = flat.remembered(dataset(chunks), masks.claims_of(dataset(chunks), scope))
    assert held is not None
    column = held.rows.column("dup_group").to_pylist()
    rowids = held.rows.column("_rowid").to_pylist()
    shared = sorted({g for g in column if column.count(g) > 1})
    assert shared, "the fixture has copies in the held set"
    rng = np.random.default_rng(5)
    for _ in range(20):
        asked = [*rng.choice(shared, 3), *rng.choice(column, 2), "no such group", shared[0]]
        got = held.where_in("dup_group", asked, ["id", "dup_group"])
        want = sorted((r, i) for i, (g, r) in enumerate(zip(column, rowids, strict=True)) if g in asked)
        assert [r["_rowid"] for r in got] == [r for r, _ in want]
        assert [r["id"] for r in got] == [held.rows.column("id")[i].as_py() for _, i in want]
    assert held.where_in("dup_group", ["no such group"], ["id"]) == []
    assert held.where_in("dup_group", [], ["id"]) == []


@settings(max_examples=200, deadline=None)
@given(
    st.lists(st.lists(st.one_of(st.none(), st.sampled_from("abcdef")), max_size=12), max_size=4),
    st.sets(st.sampled_from("abcdefgh")),
)
def test_a_value_index_holds_each_row_under_its_value_and_nulls_under_none(
    chunks: list[list[str | None]], asked: set[str]
) -> None:
    values = [v for chunk in chunks for v in chunk]
    index = flat.ValueIndex.of(pa.chunked_array(chunks, pa.string()))
    assert sorted(index.positions(asked).tolist()) == [i for i, v in enumerate(values) if v in asked]
    assert sorted(index.order.tolist()[sum(1 for v in values if v is None) :]) == sorted(
        i for i, v in enumerate(values) if v is not None
    )
