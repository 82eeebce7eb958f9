"""Search inside the tenant's table, filtered before ranking (LanceDB prefilter).

Modes: ``dense`` (vector), ``lexical`` (BM25 full-text) and ``hybrid`` (both, fused by
reciprocal rank fusion); the ranking is :mod:`tessera.search.retrieval`. Every candidate list
is produced with the principal's filter as a prefilter, so k results are never starved by
post-filtering and no foreign row is ranked. Duplicates are folded after that filter
(:mod:`tessera.search.collapse`); a hit's ``sources`` list every copy (its own row first), all
of which came through the principal's filter, so provenance never names a document the
principal may not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tessera.embedding.base import Embedder
from tessera.errors import ModelIdentityError
from tessera.search.dataset import open_table
from tessera.search.hits import SearchHit, Source, hit_from_row
from tessera.search.options import (
    COLUMNS,
    MAX_K,
    MAX_QUERY_CHARS,
    MODES,
    NEAR_POLICIES,
    SearchOptions,
    check_query,
)
from tessera.search.principal import Principal, access_filter
from tessera.search.resolve import tenant_table
from tessera.search.retrieval import (
    LEXICAL_WEIGHT,
    PRODUCT_FUSION,
    RRF_K,
    Fusion,
    fusion_depth,
    ranked_rows,
    retrieve,
    rrf,
)
from tessera.store.active import ActivePointer
from tessera.store.db import connect
from tessera.store.health import read_guard

__all__ = [
    "COLUMNS", "LEXICAL_WEIGHT", "MAX_K", "MAX_QUERY_CHARS", "MODES", "NEAR_POLICIES", "PRODUCT_FUSION",
    "RRF_K",
    "Fusion", "SearchHit", "SearchOptions", "Source", "check_query", "for_tenant", "fusion_depth",
    "hit_from_row", "open_table", "ranked_rows", "retrieve", "rrf", "search",
]  # fmt: skip


def for_tenant(index_uri: str, tenant: str, embedders: Sequence[Embedder]) -> Embedder:
    """The embedder of the model serving ``tenant`` (its active pointer); the first one when
    the tenant has no pointer yet. A tenant served by none of them is a ModelIdentityError."""
    active = ActivePointer(connect(index_uri), tenant).get()
    if active is None:
        return embedders[0]
    for embedder in embedders:
        if embedder.identity.key == active.model_key:
            return embedder
    keys = [e.identity.key for e in embedders]
    raise ModelIdentityError(
        f"tenant {tenant!r} is served by model {active.model_key}; loaded models: {keys}"
    )


def search(
    index_uri: str,
    embedder: Embedder,
    principal: Principal | None,
    query: str,
    k: int = 5,
    as_of: datetime | None = None,
    model_version: str | None = None,
    options: SearchOptions | None = None,
    counter: Any = None,
) -> list[SearchHit]:
    """Top-k chunks the principal may read. Unknown principals get nothing, without a hint."""
    opts = options or SearchOptions(k=k, as_of=as_of, model_version=model_version)
    ident = embedder.identity
    if opts.model_version is not None and opts.model_version != ident.key:
        raise ModelIdentityError(
            f"query model version {opts.model_version!r} does not match index {ident.key!r}"
        )
    where = access_filter(principal, opts.as_of or datetime.now(UTC), opts.include_flagged)
    if where is None or principal is None:
        return []
    active, table = tenant_table(index_uri, principal.tenant, ident.key, ident.dimension)
    if active is not None and active.model_key != ident.key:
        raise ModelIdentityError(
            f"tenant {principal.tenant!r} is served by model {active.model_key}; this query uses {ident.key}"
        )
    if table is None:
        return []
    with read_guard(connect(index_uri), principal.tenant, ident.key):  # damaged files: StoreDamaged
        vector = None if opts.mode == "lexical" else embedder.embed_query(query).tolist()
        rows = ranked_rows(table, embedder, query, where, opts, vector)
    for r in (s for row in rows for s, _ in row["_sources"]):
        if r["model_version"] != ident.key:
            raise ModelIdentityError(
                f"row {r['id']} has model {r['model_version']}, index expects {ident.key}"
            )
    if opts.expand:
        from tessera.search.expand import expand_rows

        with read_guard(connect(index_uri), principal.tenant, ident.key):
            return expand_rows(table, rows, where, opts, counter)
    return [hit_from_row(r, counter) for r in rows]
