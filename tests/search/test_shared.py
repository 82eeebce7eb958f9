"""Duplicate groups counted per table version (``tessera.search.shared``): the copies query is
skipped only when no copy can exist outside the ranked rows, a copy published later is found
on the next version, and a copy the principal may not read is never listed. Issue 17 (search
at scale)."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st

from tessera.chunking.identity import text_checksum
from tessera.search import collapse, retrieval
from tessera.search.dataset import dataset, pin
from tessera.search.options import SearchOptions
from tessera.search.principal import Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.search.shared import Shared, _keys, copies_possible, group_key, shared_groups

from .test_fast_path import DIM, build

NOW = datetime(2026, 6, 1, tzinfo=UTC)
ALICE = Principal("acme", "alice", ("staff",))
LONE = "a passage that appears in exactly one document of the tenant"
TWICE = "a passage that two documents of the tenant both carry word for word"


def _rows() -> list[dict[str, Any]]:
    rows = [
        {"id": f"{i:064x}", "text": f"filler passage number {i} on other matters", "groups": ["staff"]}
        for i in range(8)
    ]
    rows.append({"id": "a" * 64, "text": LONE, "groups": ["staff"], "doc_id": "lone"})
    rows += [{"id": c * 64, "text": TWICE, "groups": ["staff"], "doc_id": f"twice-{c}"} for c in "bc"]
    return rows


def _vectors(n: int) -> np.ndarray:
    """Random vectors, but the second copy of ``TWICE`` points away from the first, so a
    search for one never ranks the other."""
    vec = np.random.default_rng(3).standard_normal((n, DIM))
    vec[-1] = -vec[-2]
    return vec


@pytest.fixture
def table(tmp_path: Path) -> Any:
    rows = _rows()
    return build(tmp_path / "t", rows, _vectors(len(rows)))


def _add(table: Any, tmp: Path, rows: list[dict[str, Any]]) -> None:
    """Append ``rows`` (filled as ``build`` fills them, vectors pointing away from ``LONE``'s):
    a new version of ``table``."""
    lone = next(
        r["vector"]
        for r in dataset(table).to_table(columns=["text", "vector"]).to_pylist()
        if r["text"] == LONE
    )
    extra = build(tmp, rows, -np.tile(np.asarray(lone), (len(rows), 1)), index=False)
    table.add(extra.to_arrow())


def _where(principal: Principal = ALICE) -> str:
    where = access_filter(principal, NOW)
    assert where is not None
    return where


def _search(table: Any, text: str) -> list[dict[str, Any]]:
    """Dense top 1 for the stored vector of the row holding ``text``: that row ranks first."""
    rows = dataset(table).to_table(columns=["text", "vector"]).to_pylist()
    vector = next(r["vector"] for r in rows if r["text"] == text)
    return ranked_rows(table, None, text, _where(), SearchOptions(k=1, mode="dense"), vector)


def test_groups_with_two_rows_or_more_are_counted_per_version(table: Any, tmp_path: Path) -> None:
    old = pin(table)
    lone, twice = text_checksum(LONE), text_checksum(TWICE)
    counted = shared_groups(dataset(old))
    assert (counted.count(twice), counted.count(lone), len(counted.keys)) == (2, 1, 1)
    _add(
        table,
        tmp_path / "extra",
        [{"id": "d" * 64, "text": LONE, "groups": ["staff"], "doc_id": "lone-copy"}],
    )
    now = shared_groups(dataset(pin(table)))
    assert (now.count(twice), now.count(lone), len(now.keys)) == (2, 2, 2)
    assert shared_groups(dataset(old)).count(lone) == 1  # that version is unchanged


hex_checksums = st.text("0123456789abcdef", min_size=64, max_size=64)
any_groups = st.one_of(hex_checksums, st.text(max_size=70))


@given(values=st.lists(st.one_of(st.none(), any_groups), max_size=40), start=st.integers(0, 5))
def test_vectorized_keys_are_the_keys_of_each_group(values: list[str | None], start: int) -> None:
    """The batch path (checksums read straight from Arrow's buffers, any slice of an array)
    gives every value the key ``group_key`` gives it alone; nulls have none."""
    column = pa.array(values, pa.string()).slice(min(start, len(values)))
    expected = [group_key(v) for v in column.to_pylist() if v is not None]
    assert _keys(column).tolist() == expected


def test_many_rows_of_one_group_and_a_colliding_key_only_ever_ask() -> None:
    """Counting by key: groups that share a key count together, so a copy looks possible
    (the query runs); a group seen once is never counted as shared."""
    a, b = "0" * 16 + "a" * 48, "0" * 16 + "b" * 48  # same first 16 characters: one key
    assert group_key(a) == group_key(b)
    keys, rows = np.unique(_keys(pa.array([a, b, "x" * 64])), return_counts=True)
    counted = Shared(keys[rows > 1], rows[rows > 1].astype(np.int64))
    assert counted.count(a) == counted.count(b) == 2 and counted.count("x" * 64) == 1


def test_a_copy_may_exist_unless_every_row_of_each_group_ranked(table: Any) -> None:
    ds = dataset(table)
    rows = {r["text"]: r for r in ds.to_table(columns=["id", "text", "dup_group"]).to_pylist()}
    lone, twice = rows[LONE], rows[TWICE]
    assert not copies_possible(ds, [lone], {lone["dup_group"]})
    assert copies_possible(ds, [twice], {twice["dup_group"]})  # the other copy did not rank
    both = [
        r
        for r in ds.to_table(columns=["id", "dup_group"]).to_pylist()
        if r["dup_group"] == twice["dup_group"]
    ]
    assert not copies_possible(ds, both, {twice["dup_group"]})
    assert copies_possible(ds, [lone], {"f" * 64})  # a key no ranked row is in: some row may be


def test_no_copies_query_without_copies_and_a_later_copy_is_found(
    table: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[set[str]] = []
    real = collapse.copy_ids

    def counted(t: Any, where: str, groups: set[str]) -> Any:
        calls.append(set(groups))
        return real(t, where, groups)

    monkeypatch.setattr(collapse, "copy_ids", counted)
    monkeypatch.setattr(retrieval, "copy_ids", counted)
    hits = _search(table, LONE)
    assert hits[0]["text"] == LONE and [s["id"] for s, _ in hits[0]["_sources"]] == ["a" * 64]
    assert calls == []  # no group of the results holds another row
    twice = _search(table, TWICE)
    assert {s["id"] for s, _ in twice[0]["_sources"]} == {"b" * 64, "c" * 64} and calls

    calls.clear()
    _add(
        table,
        tmp_path / "extra",
        [
            {"id": "d" * 64, "text": LONE, "groups": ["staff"], "doc_id": "lone-copy"},
            {"id": "e" * 64, "text": LONE, "groups": ["legal"], "doc_id": "lone-legal"},  # not alice's
        ],
    )
    hits = _search(table, LONE)
    assert calls, "the new version's copies were not looked for"
    assert [s["id"] for s, _ in hits[0]["_sources"]] == ["a" * 64, "d" * 64]


def test_a_table_without_the_group_column_counts_nothing(tmp_path: Path) -> None:
    import lancedb

    t = lancedb.connect(str(tmp_path)).create_table("t", pa.table({"id": ["x", "y"]}))
    assert len(shared_groups(dataset(t)).keys) == 0 and shared_groups(dataset(t)).count("x") == 1
