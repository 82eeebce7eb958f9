"""Dense search inside the tenant's table, filtered before ranking (LanceDB prefilter)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime

from tessera.embedding.base import Embedder
from tessera.errors import ModelIdentityError
from tessera.search.principal import Principal, access_filter
from tessera.store.db import connect
from tessera.store.index import TenantIndex

_COLUMNS = [
    "id",
    "doc_id",
    "uri",
    "revision",
    "text",
    "heading_path",
    "anchor",
    "start",
    "end",
    "byte_start",
    "byte_end",
    "model_version",
    "kind",
    "_distance",
]


@dataclass(frozen=True)
class SearchHit:
    chunk_id: str
    doc_id: str
    uri: str
    revision: str
    text: str
    score: float
    heading_path: tuple[str, ...]
    anchor: str
    start: int
    end: int
    byte_start: int
    byte_end: int


def search(
    index_uri: str,
    embedder: Embedder,
    principal: Principal | None,
    query: str,
    k: int = 5,
    as_of: datetime | None = None,
    model_version: str | None = None,
) -> list[SearchHit]:
    """Top-k chunks the principal may read. Unknown principals get nothing, without a hint."""
    if not 1 <= k <= 1000:
        raise ValueError(f"k must be in [1, 1000], got {k}")
    ident = embedder.identity
    if model_version is not None and model_version != ident.key:
        raise ModelIdentityError(f"query model version {model_version!r} does not match index {ident.key!r}")
    where = access_filter(principal, as_of or datetime.now(UTC))
    if where is None or principal is None:
        return []
    index = TenantIndex(connect(index_uri), principal.tenant, ident.key, ident.dimension)
    table = index.table()
    if table is None:
        return []
    vector = embedder.embed_query(query)
    rows = (
        table.search(vector.tolist(), vector_column_name="vector")
        .distance_type("cosine")
        .where(where, prefilter=True)
        .select(_COLUMNS)
        .limit(k)
        .to_arrow()
        .to_pylist()
    )
    hits = []
    for r in rows:
        if r["model_version"] != ident.key:
            raise ModelIdentityError(
                f"row {r['id']} has model {r['model_version']}, index expects {ident.key}"
            )
        hits.append(
            SearchHit(
                chunk_id=r["id"],
                doc_id=r["doc_id"],
                uri=r["uri"],
                revision=r["revision"],
                text=r["text"],
                score=1.0 - float(r["_distance"]),
                heading_path=tuple(r["heading_path"]),
                anchor=r["anchor"],
                start=r["start"],
                end=r["end"],
                byte_start=r["byte_start"],
                byte_end=r["byte_end"],
            )
        )
    return hits
