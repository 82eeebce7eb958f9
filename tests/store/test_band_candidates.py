"""The live band lookup (``band_candidates``) on real LanceDB tables: every row sharing a band
key with the run, outside the documents it replaces, in row id order, whatever the keys (far more
than one SQL scan took), however the rows fall into fragments and scan batches, with rows
deleted (gaps in the row ids), compacted (fragments rewritten) and rows without band keys."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.store import schema as schema_module
from tessera.store.schema import band_candidates

KEYS = [f"k{i}" for i in range(12)]
DOCS = ["a.md", "b.md", "c/d.md", "q'uote.md"]
COLUMNS = ["id", "doc_id", "position", "text", "dup_group"]
ROW = st.tuples(st.sampled_from(DOCS), st.none() | st.lists(st.sampled_from(KEYS), max_size=4))
_ids = itertools.count()


Part = list[tuple[str, list[str] | None]]


def _table(folder: Path, parts: list[Part], delete: str | None, compact: bool) -> Any:
    """A table built by one append per part (a fragment each), then a delete and a compaction."""
    db = lancedb.connect(str(folder / f"db{next(_ids)}"))
    table = None
    position = itertools.count()
    for part in parts:
        data = pa.table(
            {
                "id": [f"{next(_ids):08x}" for _ in part],
                "doc_id": [d for d, _ in part],
                "position": [next(position) for _ in part],
                "text": [f"text {i}" for i in range(len(part))],
                "dup_group": [f"g{i % 3}" for i in range(len(part))],
                "dup_bands": pa.array([b for _, b in part], pa.list_(pa.string())),
            }
        )
        if table is None:
            table = db.create_table("t", data)
        else:
            table.add(data)
    assert table is not None
    if delete is not None:
        table.delete(f"doc_id = '{delete.replace(chr(39), chr(39) * 2)}'")
    if compact:
        table.optimize()
    return table


def _expected(table: Any, keys: set[str], exclude: set[str]) -> list[dict[str, Any]]:
    """Every row in row id order, kept when its band keys meet ``keys`` and its document is
    not excluded."""
    rows = table.search().select([*COLUMNS, "dup_bands"]).with_row_id(True).limit(None).to_arrow().to_pylist()
    return [
        {c: r[c] for c in COLUMNS}
        for r in sorted(rows, key=lambda r: r["_rowid"])
        if set(r["dup_bands"] or ()) & keys and r["doc_id"] not in exclude
    ]


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    parts=st.lists(st.lists(ROW, min_size=1, max_size=8), min_size=1, max_size=3),
    keys=st.sets(st.sampled_from([*KEYS, "absent", "k"])),
    exclude=st.sets(st.sampled_from([*DOCS, "e.md"])),
    delete=st.none() | st.sampled_from(DOCS),
    compact=st.booleans(),
    scan_rows=st.sampled_from([1, 2, 3, 65_536]),
)
def test_the_lookup_finds_exactly_the_rows_sharing_a_key(
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    parts: list[Part],
    keys: set[str],
    exclude: set[str],
    delete: str | None,
    compact: bool,
    scan_rows: int,
) -> None:
    table = _table(tmp_path, parts, delete, compact)
    monkeypatch.setattr(schema_module, "_SCAN_ROWS", scan_rows)  # rows split across scan batches
    assert band_candidates(table, keys, exclude) == _expected(table, keys, exclude)


def test_many_keys_in_one_pass_and_nothing_without_keys_or_column(tmp_path: Path) -> None:
    """20,000 keys (the SQL lookup took them 8,192 at a time): the two matching rows, in row
    id order; no keys, no table or a table from before ``dup_bands`` give nothing."""
    rows = [("a.md", [f"x{i}", "shared"]) for i in range(5)] + [("b.md", ["y"]), ("c/d.md", None)]
    table = _table(tmp_path, [rows], None, False)
    keys = {f"n{i}" for i in range(20_000)} | {"x3", "y"}
    got = band_candidates(table, keys, set())
    assert [(r["doc_id"], r["position"]) for r in got] == [("a.md", 3), ("b.md", 5)]
    assert [(r["doc_id"], r["position"]) for r in band_candidates(table, {"shared"}, {"b.md"})] == [
        ("a.md", i) for i in range(5)
    ]
    assert band_candidates(table, {"shared"}, {"a.md"}) == []  # the run's own documents
    assert band_candidates(table, set(), set()) == [] and band_candidates(None, {"y"}, set()) == []
    table.drop_columns(["dup_bands"])
    assert band_candidates(table, {"y"}, set()) == []
