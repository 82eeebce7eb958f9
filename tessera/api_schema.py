"""The wire schema of a search hit, a chunk and an error: one serializer for the HTTP API and
``tessera search --json`` (the same query by the same principal gives the same JSON).

A hit's ``score`` is reciprocal-rank fusion in hybrid mode (``1/(60+rank)`` summed over the
dense and the lexical ranking, so about 0.016 to 0.033; higher is better), the cosine
similarity in dense mode and the BM25 score in lexical mode. Its text is untrusted source data.
"""

from dataclasses import asdict
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from tessera.search.citations import Citation, SourceSlice
from tessera.search.query import SearchHit, Source


class CitationModel(BaseModel):
    """Where a hit's text lies: ``citation``/``id`` is ``tessera:<tenant>/<chunk id>``."""

    model_config = ConfigDict(frozen=True)

    citation: str
    id: str
    tenant: str
    chunk_id: str
    uri: str
    revision: str
    doc_id: str
    anchor: str
    byte_start: int
    byte_end: int
    pages: list[dict[str, Any]] = Field(default_factory=list)
    parts: list[dict[str, Any]] = Field(default_factory=list)
    """Office documents: ``{part, locator, start, end, lead, tail}`` per cited element (zip part,
    element, character range of its text, separators); empty for other formats."""

    @classmethod
    def of(cls, c: Citation) -> "CitationModel":
        pages = [{"page": p, "bbox": list(b)} for p, b in c.pages]
        parts = [asdict(p) for p in c.parts]
        return cls(
            citation=str(c), id=str(c), tenant=c.tenant, chunk_id=c.chunk_id, uri=c.uri,
            revision=c.revision, doc_id=c.doc_id, anchor=c.anchor, byte_start=c.byte_start,
            byte_end=c.byte_end, pages=pages, parts=parts,
        )  # fmt: skip


class SourceModel(CitationModel):
    """A copy of the hit's content the caller may read; ``relation``: self, exact or near."""

    start: int
    end: int
    relation: str

    @classmethod
    def of_source(cls, s: Source) -> "SourceModel":
        base = CitationModel.of(s.citation).model_dump()
        return cls(**base, start=s.start, end=s.end, relation=s.relation)


class HitModel(BaseModel):
    """One search result, as both the API (``results``) and ``tessera search --json`` give it."""

    model_config = ConfigDict(frozen=True)

    chunk_id: str
    doc_id: str
    uri: str
    revision: str
    text: str
    score: float
    heading_path: list[str]
    anchor: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    kind: str
    flags: list[str]
    chunk_ids: list[str]
    tokens: int
    expanded: str = ""
    trust: Literal["untrusted-source-data"] = "untrusted-source-data"
    citation: CitationModel
    sources: list[SourceModel] = Field(default_factory=list)
    dup_group: str = ""

    @classmethod
    def of(cls, h: SearchHit) -> "HitModel":
        return cls(
            chunk_id=h.chunk_id, doc_id=h.doc_id, uri=h.uri, revision=h.revision, text=h.text,
            score=h.score, heading_path=list(h.heading_path), anchor=h.anchor, start=h.start,
            end=h.end, byte_start=h.byte_start, byte_end=h.byte_end, kind=h.kind, flags=list(h.flags),
            chunk_ids=list(h.chunk_ids), tokens=h.tokens, expanded=h.expanded,
            citation=CitationModel.of(h.citation),
            sources=[SourceModel.of_source(s) for s in h.sources], dup_group=h.dup_group,
        )  # fmt: skip


def hits_json(hits: list[SearchHit]) -> list[dict[str, Any]]:
    """The JSON form of a result list (``tessera search --json`` prints exactly this)."""
    return [HitModel.of(h).model_dump(mode="json") for h in hits]


class SearchResponse(BaseModel):
    model_version: str
    mode: str
    results: list[HitModel]


class ChunkResponse(BaseModel):
    chunk_id: str
    text: str
    source_slice: str
    trust: Literal["untrusted-source-data"] = "untrusted-source-data"
    citation: CitationModel

    @classmethod
    def of(cls, sl: SourceSlice) -> "ChunkResponse":
        """A chunk and its exact source slice, as ``GET /chunks/{id}`` and ``tessera show --json``."""
        c = sl.citation
        return cls(
            chunk_id=c.chunk_id, text=sl.chunk_text, source_slice=sl.text, citation=CitationModel.of(c)
        )


class ErrorModel(BaseModel):
    """The one body of every error answer (4xx and 5xx): ``{"detail": "<message>"}``."""

    detail: str


KEYED_ERRORS: dict[int | str, dict[str, Any]] = {
    401: {
        "model": ErrorModel,
        "description": "missing or invalid API key",
        "headers": {"WWW-Authenticate": {"description": "the challenge", "schema": {"type": "string"}}},
    },
    422: {"model": ErrorModel, "description": "a bad parameter; the message names it"},
    500: {"model": ErrorModel, "description": "an unexpected error, named by type only"},
}
"""The error answers every endpoint behind an API key declares (OpenAPI)."""

OPS_RESPONSES: dict[int | str, dict[str, Any]] = {
    **KEYED_ERRORS,
    403: {"model": ErrorModel, "description": "not an operator of the tenant, or another tenant"},
    503: {"model": ErrorModel, "description": "identities, the store or the audit log unavailable"},
}
"""The error answers every operator endpoint (``/ops/...``) declares."""

OTHER_TENANT = "forbidden: an operator acts only within its own tenant"


class HealthResponse(BaseModel):
    status: Literal["ok"] = "ok"


class ReadyResponse(BaseModel):
    status: Literal["ready"] = "ready"
