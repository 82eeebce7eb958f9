"""Small-to-big: expand hits to their parent section or neighbour window, re-authorized.

Every expanded unit is fetched with the same access filter as the hit (ACL, effective date,
tenant), so expansion never leaks text the principal may not read. Overlapping ranges of one
document are merged, results are deduplicated by source range, and the final context's
tokens are counted (optionally capped by a budget: lower-ranked results are dropped whole).
"""

from __future__ import annotations

from typing import Any

from tessera.search.hits import SearchHit, hit_from_row
from tessera.search.options import SearchOptions, parse_expand, row_columns
from tessera.store.db import sql_str


def _units(table: Any, row: dict[str, Any], where: str, how: str, n: int) -> list[dict[str, Any]]:
    scope = f"doc_id = {sql_str(row['doc_id'])} AND revision = {sql_str(row['revision'])}"
    if how == "parent":
        scope += f" AND parent_id = {sql_str(row['parent_id'])}"
    else:
        scope += f" AND position >= {int(row['position']) - n} AND position <= {int(row['position']) + n}"
    rows: list[dict[str, Any]] = (
        table.search()
        .where(f"({where}) AND {scope}")
        .select(row_columns(table.schema.names))
        .limit(None)
        .to_arrow()
        .to_pylist()
    )
    return sorted(rows, key=lambda r: (r["start"], r["end"]))


def merge_text(units: list[dict[str, Any]]) -> tuple[int, int, str]:
    """Union of the units' ranges as text; gaps between units (whitespace) become a blank line."""
    start, end, text = units[0]["start"], units[0]["end"], units[0]["text"]
    for u in units[1:]:
        if u["start"] >= end:
            text += "\n\n" + u["text"]
        elif u["end"] > end:
            text += u["text"][end - u["start"] :]
        end = max(end, u["end"])
    return start, end, text


def expand_rows(
    table: Any, rows: list[dict[str, Any]], where: str, opts: SearchOptions, counter: Any
) -> list[SearchHit]:
    assert opts.expand is not None
    how, n = parse_expand(opts.expand)
    groups: list[list[dict[str, Any]]] = []  # ranked; each group is one document range
    for row in rows:
        units = _units(table, row, where, how, n) or [row]
        lo, hi = min(u["start"] for u in units), max(u["end"] for u in units)
        for group in groups:
            g0 = group[0]
            if (g0["doc_id"], g0["revision"]) == (row["doc_id"], row["revision"]) and any(
                u["start"] < hi and lo < u["end"] for u in group
            ):
                group.extend(u for u in units if u["id"] not in {x["id"] for x in group})
                break
        else:
            groups.append([{**row, "_hit": True}, *[u for u in units if u["id"] != row["id"]]])
    hits: list[SearchHit] = []
    used = 0
    for group in groups:
        units = sorted(group, key=lambda r: (r["start"], r["end"]))
        start, end, text = merge_text(units)
        tokens = (
            counter.count(text) if counter is not None else sum(int(u["token_count"] or 0) for u in units)
        )
        if opts.token_budget is not None and used + tokens > opts.token_budget:
            continue  # whole results only: never a silently cut context
        used += tokens
        base = hit_from_row(group[0], None)
        hits.append(
            SearchHit(
                **{
                    **base.__dict__,
                    "text": text,
                    "start": start,
                    "end": end,
                    "byte_start": min(u["byte_start"] for u in units),
                    "byte_end": max(u["byte_end"] for u in units),
                    "chunk_ids": tuple(u["id"] for u in units),
                    "tokens": tokens,
                    "expanded": opts.expand,
                }
            )
        )
    return hits
