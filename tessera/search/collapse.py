"""Fold duplicate hits into one result whose ``_sources`` name every copy the caller may read.

Exact copies (same text checksum) always fold into the best-ranked one. Near duplicates fold
into their ``dup_group`` under the ``drop`` policy: explicitly (``near="drop"``) or as indexed
(``near=None``: rows flagged ``linked_duplicate``). Every row seen here came through the
principal's access filter, including the copies fetched by ``with_all_copies``, so a result's
provenance never names a document the principal may not read.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessera.search import flat
from tessera.search.dataset import dataset
from tessera.search.masks import claims_of
from tessera.search.rows import full_rows
from tessera.search.scope import CHECKED, scope_of
from tessera.search.shared import copies_possible
from tessera.store.db import sql_str
from tessera.store.schema import dedup_key

MAX_CANDIDATES = 1000
"""At most this many candidates are ranked, and copies fetched, for one search."""
_LINKED = "linked_duplicate"


@dataclass(frozen=True)
class Copies:
    """The rows ``copy_ids`` found for ``groups``."""

    groups: frozenset[str]
    rows: tuple[dict[str, Any], ...]


def collapse(rows: list[dict[str, Any]], near: str | None = None) -> list[dict[str, Any]]:
    """Fold ranked rows into the best-ranked row they duplicate; it lists them in ``_sources``.

    Keys: a row's text checksum always; its ``dup_group`` too when near duplicates fold. A row
    joins the first kept row sharing a key. Texts too short to be duplicate content
    (``dedup_key`` is None, e.g. a lone heading) are never folded.
    """
    owner: dict[str, dict[str, Any]] = {}
    kept: list[dict[str, Any]] = []
    for r in rows:
        own = dedup_key(r["text"] or "")
        keys = [] if own is None else [own]
        linked = near == "drop" or (near is None and _LINKED in (r["flags"] or ()))
        if own and r.get("dup_group") and linked:
            keys.append(r["dup_group"])
        top = next((owner[k] for k in keys if k in owner), None)
        if top is None:
            top = {**r, "_sources": [(r, "self")], "_key": own}
            kept.append(top)
        else:
            top["_sources"].append((r, "exact" if own == top["_key"] else "near"))
        owner.update({k: top for k in keys if k not in owner})
    return kept


def copy_ids(table: Any, where: str, groups: set[str]) -> Copies:
    """Id, row id and group of every row under ``where`` in one of ``groups`` (at most
    ``MAX_CANDIDATES``; ``dup_group`` has a BTREE index).

    An access filter's claims select the rows (indexes answer them) and the rest of it is
    checked on the rows found (``tessera.search.scope``), as for candidates: on 100k chunks
    that took the query from ~20 to ~16 ms (side by side, on a loaded 2-core machine). A row
    failing the check is dropped, never returned; when the claims alone reach the limit, the
    whole filter is queried instead, so the rows are always exactly those under ``where``."""
    listed = ", ".join(sql_str(g) for g in sorted(groups))
    ds = dataset(table)
    scope = scope_of(where)
    if scope is not None:
        claims = claims_of(ds, scope)
        held = flat.remembered(ds, claims)
        found = (
            held.where_in("dup_group", groups, ["id", "dup_group", *CHECKED])[:MAX_CANDIDATES]
            if held is not None
            else ds.to_table(
                columns=["id", "dup_group", *CHECKED], filter=f"{claims} AND dup_group IN ({listed})",
                with_row_id=True, limit=MAX_CANDIDATES,
            ).to_pylist()
        )  # fmt: skip
        if len(found) < MAX_CANDIDATES:
            kept = (_ids(r) for r in found if scope.admits(r))
            return Copies(frozenset(groups), tuple(kept))
    whole = ds.to_table(
        columns=["id", "dup_group"], filter=f"({where}) AND dup_group IN ({listed})", with_row_id=True,
        limit=MAX_CANDIDATES,
    )  # fmt: skip
    return Copies(frozenset(groups), tuple(whole.to_pylist()))


def _ids(row: dict[str, Any]) -> dict[str, Any]:
    return {"id": row["id"], "dup_group": row["dup_group"], "_rowid": row["_rowid"]}


def with_all_copies(
    table: Any,
    where: str,
    ranked: list[dict[str, Any]],
    kept: list[dict[str, Any]],
    near: str | None,
    prefetched: Copies | None = None,
) -> list[dict[str, Any]]:
    """``kept`` (collapsed from ``ranked``) with the copies that ranked below the cut-off.

    One query, under the same ``where``, for rows sharing a result's group or text checksum
    (``copy_ids``), none when no such row can exist outside ``ranked``
    (``tessera.search.shared``); ``prefetched`` answers it when it covers those groups (search queries the
    groups of all ranked rows while it reads their columns). The columns are read for the
    copies not already ranked. They are folded after every ranked row, so the results and
    their order do not change, only their ``_sources`` grow.
    """
    groups = {g for r in kept if r["_key"] for g in (r["_key"], r.get("dup_group")) if g}
    if not groups or not copies_possible(dataset(table), ranked, groups):
        return kept
    seen = {r["id"] for r in ranked}
    covered = prefetched is not None and groups <= prefetched.groups and len(prefetched.rows) < MAX_CANDIDATES
    copies = prefetched if covered and prefetched is not None else copy_ids(table, where, groups)
    found = [r for r in copies.rows if r["dup_group"] in groups and r["id"] not in seen]
    extra = full_rows(table, where, [{"id": r["id"], "_rowid": r["_rowid"]} for r in found])
    if not extra:
        return kept
    ids = {r["id"] for r in kept}
    extra.sort(key=lambda r: (r["doc_id"], r["position"], r["id"]))
    return [r for r in collapse([*ranked, *extra], near) if r["id"] in ids]
