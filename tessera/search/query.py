"""Search inside the tenant's table, filtered before ranking (LanceDB prefilter).

Modes: ``dense`` (vector), ``lexical`` (BM25 full-text) and ``hybrid`` (both, fused by
reciprocal rank fusion). Every candidate list is produced with the principal's filter as a
prefilter, so k results are never starved by post-filtering and no foreign row is ranked.

Duplicates are folded after that filter (``tessera.search.collapse``): rows with the same
text always fold into the best-ranked one, and near duplicates fold into their group under
the ``drop`` policy. Candidates are widened (x4, at most 1000) until k distinct results
remain; then one more query under the same filter adds the copies that ranked below the
cut-off. A hit's ``sources`` list every copy (its own row first); all came through the
principal's filter, so provenance never names a document the principal may not read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from typing import Any

import numpy as np

from tessera.embedding.base import Embedder
from tessera.errors import InvalidArgument, ModelIdentityError
from tessera.search.citations import Citation, citation_of
from tessera.search.collapse import MAX_CANDIDATES, collapse, with_all_copies
from tessera.search.fusion import candidate_depth, row_score
from tessera.search.lexical import flat_bm25
from tessera.search.principal import Principal, access_filter
from tessera.store.active import ActivePointer
from tessera.store.db import connect
from tessera.store.health import read_guard
from tessera.store.index import TenantIndex
from tessera.store.indexes import NPROBES, REFINE

MODES = ("dense", "lexical", "hybrid")
NEAR_POLICIES = (None, "flag", "drop")
RRF_K = 60
COLUMNS = [
    "id", "tenant", "doc_id", "uri", "revision", "text", "heading_path", "anchor", "start", "end",
    "byte_start", "byte_end", "pages", "model_version", "kind", "flags", "parent_id", "position",
    "token_count", "content_type", "readers", "groups", "dup_group",
]  # fmt: skip


@dataclass(frozen=True)
class SearchOptions:
    k: int = 5
    mode: str = "hybrid"
    as_of: datetime | None = None
    model_version: str | None = None
    expand: str | None = None
    token_budget: int | None = None
    include_flagged: bool = False
    near_duplicates: str | None = None
    """``flag``: near duplicates stay separate hits; ``drop``: they fold into their group;
    None: as indexed (rows flagged ``linked_duplicate`` fold). Exact copies always fold."""

    def __post_init__(self) -> None:
        """Every option is checked here, before anything is read: a bad one is an
        ``InvalidArgument`` (a ``ValueError``) naming it."""
        if not _is_int(self.k) or not 1 <= self.k <= MAX_K:
            raise InvalidArgument("k", f"must be an integer in [1, {MAX_K}], got {self.k!r}")
        if self.mode not in MODES:
            raise InvalidArgument("mode", f"must be one of {', '.join(MODES)}, got {self.mode!r}")
        if self.token_budget is not None and (not _is_int(self.token_budget) or self.token_budget < 1):
            raise InvalidArgument("token_budget", f"must be a positive integer, got {self.token_budget!r}")
        if self.near_duplicates not in NEAR_POLICIES:
            raise InvalidArgument(
                "near_duplicates", f"must be one of {NEAR_POLICIES}, got {self.near_duplicates!r}"
            )
        if self.as_of is not None and not isinstance(self.as_of, datetime):
            raise InvalidArgument("as_of", f"must be a datetime, got {type(self.as_of).__name__}")
        if self.model_version is not None and not isinstance(self.model_version, str):
            kind = type(self.model_version).__name__
            raise InvalidArgument("model_version", f"must be a string, got {kind}")
        if self.expand is not None:
            from tessera.search.expand import parse_expand  # expand imports this module

            parse_expand(self.expand)


MAX_K = 1000
MAX_QUERY_CHARS = 2000
"""The longest query the CLI and the API accept (the API's ``q`` has the same bound)."""


def _is_int(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def check_query(query: object, key: str = "query") -> str:
    """The query text, or ``InvalidArgument``: it must be a non-blank string of at most
    ``MAX_QUERY_CHARS`` characters without NUL."""
    if not isinstance(query, str) or not query.strip():
        raise InvalidArgument(key, "must be a non-empty text")
    if len(query) > MAX_QUERY_CHARS:
        raise InvalidArgument(key, f"must be at most {MAX_QUERY_CHARS} characters, got {len(query)}")
    if "\0" in query:
        raise InvalidArgument(key, "must not contain NUL characters")
    return query


@dataclass(frozen=True)
class Source:
    """One copy of a hit's content: ``self`` (the hit's own row), ``exact`` (the same text
    elsewhere) or ``near`` (a near duplicate folded in under the ``drop`` policy)."""

    citation: Citation
    start: int
    end: int
    relation: str = "self"


@dataclass(frozen=True)
class SearchHit:
    """One result. Its text is untrusted *data* from a source document, never instructions."""

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
    citation: Citation
    kind: str = "text"
    flags: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    tokens: int = 0
    trust: str = "untrusted-source-data"
    expanded: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    sources: tuple[Source, ...] = ()
    dup_group: str = ""


def open_table(index_uri: str, embedder: Embedder, tenant: str) -> Any | None:
    ident = embedder.identity
    return TenantIndex(connect(index_uri), tenant, ident.key, ident.dimension).table()


def _nearest(table: Any, vector: list[float], column: str, where: str, n: int, cols: list[str]) -> list[Any]:
    q = (
        table.search(vector, vector_column_name=column)
        .distance_type("cosine")
        .nprobes(NPROBES)
        .refine_factor(REFINE)
        .where(where, prefilter=True)
    )
    rows: list[dict[str, Any]] = q.select([*cols, "_distance"]).limit(n).to_arrow().to_pylist()
    return rows


def _dense(table: Any, vector: list[float], where: str, n: int) -> list[dict[str, Any]]:
    """Top ``n`` by the fused score of :mod:`tessera.search.fusion`: the ``candidate_depth(n)``
    nearest chunk vectors under the principal's prefilter, each rescored exactly from its
    stored vectors. A table without the ``sentence_vectors`` column ranks by chunk vector.
    Either way exact ties are ordered by chunk id (:func:`_rank_key`), also at the cut."""
    if "sentence_vectors" not in table.schema.names:
        rows = _nearest(table, vector, "vector", where, candidate_depth(n), COLUMNS)
        for r in rows:
            r["_score"] = 1.0 - float(r.pop("_distance"))
        return sorted(rows, key=_rank_key)[:n]  # fetched deeper: a tie at the cut is decided by id
    query = np.asarray(vector, np.float32)
    cols = [*COLUMNS, "vector", "sentence_vectors"]
    rows = _nearest(table, vector, "vector", where, candidate_depth(n), cols)
    for r in rows:
        r.pop("_distance")
        r["_score"] = row_score(query, r.pop("vector"), r.pop("sentence_vectors"))
    return sorted(rows, key=_rank_key)[:n]


def _rank_key(row: dict[str, Any]) -> tuple[float, str]:
    """Best score first; exact ties by chunk id, a sha256, so no copy of a repeated passage
    (the first one in a document, say) is favoured over another."""
    return -float(row["_score"]), str(row["id"])


@dataclass(frozen=True)
class Fusion:
    """How hybrid search fuses; the default is the product's. The other settings exist so the
    evaluation can compare them on the same code path (``tessera.evaluation.chunking.fusion``).

    ``depth``: candidates per list (None: :func:`fusion_depth`); ``fts_column``: the column BM25
    ranks; ``lancedb``: LanceDB's own hybrid query with its ``RRFReranker`` instead (it fetches
    ``limit`` rows per list and fuses them with K = 60)."""

    depth: int | None = None
    fts_column: str = "embedding_text"
    lancedb: bool = False


PRODUCT_FUSION = Fusion()


def _lexical(
    table: Any, query: str, where: str, n: int, column: str = "embedding_text"
) -> list[dict[str, Any]]:
    if not query.strip():
        return []
    try:
        q = table.search(query, query_type="fts", fts_columns=column).where(where, prefilter=True)
        found = q.select([*COLUMNS, "_score"]).limit(candidate_depth(n)).to_arrow().to_pylist()
        rows: list[dict[str, Any]] = sorted(found, key=_rank_key)[:n]  # ties by id, as dense
        return rows
    except ValueError as e:
        if "INVERTED index" not in str(e):
            raise
        return flat_bm25(table, query, where, n, COLUMNS)  # no FTS index yet: exact, slower


def fusion_depth(k: int) -> int:
    """Candidates per list (dense and BM25) that hybrid search fuses for a top ``k``."""
    return max(k, 20) * 2


def rrf(lists: list[list[dict[str, Any]]], k: int) -> list[dict[str, Any]]:
    """Reciprocal rank fusion: score = sum of 1 / (60 + rank) over the lists a row is in."""
    scores: dict[str, float] = {}
    rows: dict[str, dict[str, Any]] = {}
    for ranked in lists:
        for rank, row in enumerate(ranked, 1):
            scores[row["id"]] = scores.get(row["id"], 0.0) + 1.0 / (RRF_K + rank)
            rows.setdefault(row["id"], row)
    order = sorted(scores, key=lambda i: (-scores[i], i))[:k]
    return [{**rows[i], "_score": scores[i]} for i in order]


def _lancedb_hybrid(
    table: Any, query: str, vector: list[float], where: str, n: int, column: str
) -> list[Any]:
    from lancedb.rerankers import RRFReranker

    q = (
        table.search(query_type="hybrid", vector_column_name="vector", fts_columns=column)
        .vector(vector)
        .text(query)
        .where(where, prefilter=True)
        .rerank(RRFReranker())
    )
    rows: list[dict[str, Any]] = q.select(COLUMNS).limit(n).to_arrow().to_pylist()
    for r in rows:
        r["_score"] = float(r.pop("_relevance_score"))
    return rows


def retrieve(
    table: Any,
    embedder: Embedder | None,
    query: str,
    where: str,
    opts: SearchOptions,
    vector: list[float] | None = None,
    fusion: Fusion = PRODUCT_FUSION,
) -> list[dict[str, Any]]:
    """The ranked rows of one query: ``embedder`` may be None when ``vector`` is given."""
    depth = fusion.depth or fusion_depth(opts.k)
    if opts.mode == "lexical":
        return _lexical(table, query, where, opts.k)
    if vector is None:
        if embedder is None:
            raise InvalidArgument("vector", "a dense or hybrid search needs a query vector or an embedder")
        vector = embedder.embed_query(query).tolist()
    if opts.mode == "dense":
        return _dense(table, vector, where, opts.k)
    if fusion.lancedb:
        return _lancedb_hybrid(table, query, vector, where, opts.k, fusion.fts_column)
    lexical = _lexical(table, query, where, depth, fusion.fts_column)
    return rrf([_dense(table, vector, where, depth), lexical], opts.k)


def _distinct(
    table: Any, embedder: Embedder, query: str, where: str, opts: SearchOptions
) -> list[dict[str, Any]]:
    vector = None if opts.mode == "lexical" else embedder.embed_query(query).tolist()
    return ranked_rows(table, embedder, query, where, opts, vector)


def ranked_rows(
    table: Any,
    embedder: Embedder | None,
    query: str,
    where: str,
    opts: SearchOptions,
    vector: list[float] | None,
    fusion: Fusion = PRODUCT_FUSION,
) -> list[dict[str, Any]]:
    """Top-k after ``collapse``, widening the candidates while duplicates eat into k; then
    every readable copy of each result joins its ``_sources`` (``with_all_copies``).

    This is the ranking :func:`search` returns (before expansion); ``tessera eval chunking``
    calls it with the query vector it already has, so the evaluation is the product."""
    n = opts.k
    while True:
        rows = retrieve(table, embedder, query, where, replace(opts, k=n), vector, fusion)
        kept = collapse(rows, opts.near_duplicates)
        if len(kept) >= opts.k or len(rows) < n or n >= MAX_CANDIDATES:
            return with_all_copies(table, where, rows, kept[: opts.k], opts.near_duplicates, COLUMNS)
        n = min(n * 4, MAX_CANDIDATES)


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
    active = ActivePointer(connect(index_uri), principal.tenant).get()
    if active is not None and active.model_key != ident.key:
        raise ModelIdentityError(
            f"tenant {principal.tenant!r} is served by model {active.model_key}; this query uses {ident.key}"
        )
    table = open_table(index_uri, embedder, principal.tenant)
    if table is None:
        return []
    with read_guard(connect(index_uri), principal.tenant, ident.key):  # damaged files: StoreDamaged
        rows = _distinct(table, embedder, query, where, opts)
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


def hit_from_row(r: dict[str, Any], counter: Any = None) -> SearchHit:
    return SearchHit(
        chunk_id=r["id"],
        doc_id=r["doc_id"],
        uri=r["uri"],
        revision=r["revision"],
        text=r["text"],
        score=float(r.get("_score", 0.0)),
        heading_path=tuple(r["heading_path"] or ()),
        anchor=r["anchor"],
        start=r["start"],
        end=r["end"],
        byte_start=r["byte_start"],
        byte_end=r["byte_end"],
        citation=citation_of(r),
        kind=r["kind"],
        flags=tuple(r["flags"] or ()),
        chunk_ids=(r["id"],),
        tokens=counter.count(r["text"]) if counter is not None else int(r["token_count"] or 0),
        sources=tuple(
            Source(citation_of(s), s["start"], s["end"], rel) for s, rel in r.get("_sources") or [(r, "self")]
        ),
        dup_group=r.get("dup_group") or "",
    )
