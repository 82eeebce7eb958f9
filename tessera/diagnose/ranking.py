"""Stage 5: where the covering chunks rank, on the product's own ranking path.

Every rank comes from :func:`tessera.search.retrieval.ranked_rows` (candidates, fusion,
duplicate folding), the function ``search`` and ``tessera eval chunking`` use. It is asked
twice per mode:

* under the tenant alone (no ACL, no dates, no flags): the operator's evidence, which the
  principal's ACL never hides;
* under the principal's access filter OR the covering rows: where the chunk would rank among
  what the principal reads, were access and dates not in the way. The verdict's ranking stage
  uses this one; authorization and dates are judged apart.

A hit counts when any copy folded into it (``_sources``) is a covering chunk; ranks are
1-based, after folding, within ``depth``.
"""

from __future__ import annotations

from collections.abc import Collection
from datetime import datetime
from typing import Any

from tessera.diagnose.report import ModeRank
from tessera.embedding.base import Embedder
from tessera.search.options import MAX_K, MODES, SearchOptions
from tessera.search.principal import Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.store.db import sql_str

DEPTH = 200
"""How deep a diagnosis looks for the covering chunks (at least ``k``, at most ``MAX_K``)."""


def depth_for(k: int) -> int:
    return min(MAX_K, max(k, DEPTH))


def tenant_filter(tenant: str) -> str:
    return f"tenant = {sql_str(tenant)}"


def visible_filter(tenant: str, principal: Principal | None, as_of: datetime, ids: Collection[str]) -> str:
    """The principal's access filter OR the covering rows; an unknown principal reads nothing,
    so its view is the whole tenant."""
    where = access_filter(principal, as_of)
    if where is None:
        return tenant_filter(tenant)
    listed = ", ".join(sql_str(i) for i in sorted(ids))
    return f"({where}) OR ({tenant_filter(tenant)} AND id IN ({listed}))"


def find(rows: list[dict[str, Any]], ids: Collection[str]) -> tuple[int | None, float | None, str]:
    """(rank, score, chunk id) of the first hit standing for one of ``ids``."""
    for rank, row in enumerate(rows, 1):
        for src, _relation in row.get("_sources") or [(row, "self")]:
            if src["id"] in ids:
                return rank, float(row.get("_score", 0.0)), str(src["id"])
    return None, None, ""


def ranked(
    table: Any, embedder: Embedder, question: str, where: str, mode: str, n: int, vector: list[float]
) -> list[dict[str, Any]]:
    opts = SearchOptions(k=n, mode=mode)
    return ranked_rows(table, embedder, question, where, opts, None if mode == "lexical" else vector)


def rank_modes(
    table: Any,
    embedder: Embedder,
    question: str,
    tenant: str,
    principal: Principal | None,
    as_of: datetime,
    ids: Collection[str],
    k: int,
) -> tuple[ModeRank, ...]:
    """Per mode, the operator's rank and the principal's would-be rank of the covering chunks."""
    n = depth_for(k)
    vector = embedder.embed_query(question).tolist()
    everyone, visible = tenant_filter(tenant), visible_filter(tenant, principal, as_of, ids)
    out: list[ModeRank] = []
    for mode in MODES:
        rank, score, chunk = find(ranked(table, embedder, question, everyone, mode, n, vector), ids)
        vrank, vscore, vchunk = find(ranked(table, embedder, question, visible, mode, n, vector), ids)
        out.append(ModeRank(mode, rank, score, chunk or vchunk, vrank, vscore, n))
    return tuple(out)


def principal_rank(
    table: Any, embedder: Embedder, question: str, principal: Principal, as_of: datetime,
    ids: Collection[str], k: int,
) -> int | None:  # fmt: skip
    """The hybrid rank the principal's own search gives the covering chunks (top ``k``)."""
    where = access_filter(principal, as_of)
    if where is None:
        return None
    vector = embedder.embed_query(question).tolist()
    return find(ranked(table, embedder, question, where, "hybrid", k, vector), ids)[0]
