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

from tessera.chunking.identity import text_checksum
from tessera.search import collapse, retrieval
from tessera.search.dataset import dataset, pin
from tessera.search.options import SearchOptions
from tessera.search.principal import Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.search.shared import copies_possible, shared_groups

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
    assert dict(shared_groups(dataset(old))) == {text_checksum(TWICE): 2}
    _add(
        table,
        tmp_path / "extra",
        [{"id": "d" * 64, "text": LONE, "groups": ["staff"], "doc_id": "lone-copy"}],
    )
    assert dict(shared_groups(dataset(pin(table)))) == {text_checksum(TWICE): 2, text_checksum(LONE): 2}
    assert dict(shared_groups(dataset(old))) == {text_checksum(TWICE): 2}  # that version is unchanged


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
    assert dict(shared_groups(dataset(t))) == {}
