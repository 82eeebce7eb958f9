"""The columns of ranked candidates, read for those rows alone.

Candidates carry LanceDB's ``_rowid`` from the prefiltered query that found them, on the same
table handle, so taking those row ids reads exactly the rows the principal's filter admitted.
Every row read is checked against the candidate's id: should the row ids name other rows
(the handle moved to another version), the rows are read again by id under the same filter,
and a row that is gone or no longer readable is dropped, never returned unfiltered.
"""

from __future__ import annotations

from typing import Any

from tessera.search import flat
from tessera.search.dataset import column_names, dataset
from tessera.search.masks import claims_of
from tessera.search.options import row_columns
from tessera.search.scope import scope_of
from tessera.store.db import sql_str

_SCRATCH = ("_rowid",)


def full_rows(table: Any, where: str, ranked: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``ranked`` in its order, each row with every column of ``row_columns`` and its ``_score``
    if it has one (rows that already have the columns, from the exact-BM25 fallback, are kept
    as they are)."""
    need = [r for r in ranked if "text" not in r]
    read = _read(table, where, need) if need else {}
    out: list[dict[str, Any]] = []
    for r in ranked:
        row = r if "text" in r else read.get(r["id"])
        if row is not None:
            full = {k: v for k, v in row.items() if k not in _SCRATCH}
            if "_score" in r:
                full["_score"] = r["_score"]
            out.append(full)
    return out


def _read(table: Any, where: str, need: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    ids = {r["id"] for r in need}
    ds = dataset(table)
    columns = row_columns(column_names(ds))
    if all(isinstance(r.get("_rowid"), int) for r in need):
        rowids = [r["_rowid"] for r in need]
        taken = _held(ds, where, rowids, columns)
        if taken is None:
            taken = ds._take_rows(rowids, columns=columns).to_pylist()  # by row id, not offset
        by_id = {r["id"]: r for r in taken}
        if len(taken) == len(need) and set(by_id) == ids:
            return by_id
    listed = ", ".join(sql_str(i) for i in sorted(ids))
    found = ds.to_table(columns=columns, filter=f"({where}) AND id IN ({listed})", limit=len(ids))
    return {r["id"]: r for r in found.to_pylist() if r["id"] in ids}


def _held(ds: Any, where: str, rowids: list[int], columns: list[str]) -> list[dict[str, Any]] | None:
    """The rows from the claims' rows held in memory (``tessera.search.flat``), when they are
    held and hold every row id; the rows are checked against their ids all the same."""
    scope = scope_of(where)
    held = None if scope is None else flat.remembered(ds, claims_of(ds, scope))
    if held is None or not held.serves(columns):
        return None
    try:
        return held.lookup(rowids, columns)
    except KeyError:
        return None
