"""Chunk lineage, checked live against the store: which source bytes, parser, chunker,
tokenizer, model and run produced a chunk, and where it has been published.

This is an operator view (it takes a tenant, not a principal); the search paths never use it.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from tessera.errors import AccessDenied
from tessera.parsing.office_locate import cited_text, part_spans, parts_match
from tessera.parsing.slices import decode_slice, source_slice_matches
from tessera.store.blobs import BlobStore
from tessera.store.db import sql_str
from tessera.store.index import TenantIndex


@dataclass(frozen=True)
class Lineage:
    chunk_id: str
    tenant: str
    doc_id: str
    uri: str
    revision: str
    content_type: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    pages: list[dict[str, Any]]
    parts: list[dict[str, Any]]
    """Office documents: the cited zip parts and elements (:class:`~tessera.types.PartSpan`)."""
    source_slice: str
    source_verified: bool
    parser_version: str
    chunker_version: str
    chunking_config_hash: str
    tokenizer_version: str
    model_version: str
    token_count: int
    sentence_vectors: int
    """How many sentence vectors the chunk has besides its own (``chunking.sentence_vectors``)."""
    run_id: str
    partition: str
    first_published_version: int | None
    active_version: int
    parent_id: str
    prev_id: str
    next_id: str
    duplicates: list[str]
    flags: list[str]

    def as_dict(self) -> dict[str, Any]:
        return asdict(self)


def lineage(index: TenantIndex, index_uri: str, chunk_id: str) -> Lineage:
    table = index.table()
    if table is None:
        raise AccessDenied("not found")
    rows = table.search().where(f"id = {sql_str(chunk_id)}").limit(1).to_arrow().to_pylist()
    if not rows:
        raise AccessDenied("not found")
    r = rows[0]
    slice_text, verified = r["text"], False
    if r["byte_start"] >= 0:
        raw = BlobStore(index_uri).get(index.tenant, r["revision"])  # verifies the sha256
        slice_text = decode_slice(raw, r["byte_start"], r["byte_end"], r["content_type"])
        verified = source_slice_matches(raw, r)
    elif r.get("parts"):  # Office: read the cited elements back from the source file
        raw = BlobStore(index_uri).get(index.tenant, r["revision"])
        spans = part_spans(r["parts"])
        verified = parts_match(raw, spans, r["text"])
        slice_text = cited_text(raw, spans, r["doc_id"]) if verified else r["text"]
    pubs = [p for p in index.publications() if p["run_id"] == r["run_id"] and p["kind"] == "publish"]
    same = table.search().select(["id", "embedding_text"]).limit(None).to_arrow()
    duplicates = [
        i
        for i, t in zip(same.column("id").to_pylist(), same.column("embedding_text").to_pylist(), strict=True)
        if t == r["embedding_text"] and i != chunk_id
    ]
    return Lineage(
        chunk_id=chunk_id,
        tenant=index.tenant,
        doc_id=r["doc_id"],
        uri=r["uri"],
        revision=r["revision"],
        content_type=r["content_type"],
        start=r["start"],
        end=r["end"],
        byte_start=r["byte_start"],
        byte_end=r["byte_end"],
        pages=list(r["pages"] or []),
        parts=list(r.get("parts") or []),
        source_slice=slice_text,
        source_verified=verified,
        parser_version=r["parser_version"],
        chunker_version=r["chunker_version"],
        chunking_config_hash=r["chunking_config_hash"],
        tokenizer_version=r["tokenizer_version"],
        model_version=r["model_version"],
        token_count=r["token_count"],
        sentence_vectors=len(r.get("sentence_vectors") or []),
        run_id=r["run_id"],
        partition=index.tenant,
        first_published_version=min((p["table_version"] for p in pubs), default=None),
        active_version=int(table.version),
        parent_id=r["parent_id"],
        prev_id=r["prev_id"],
        next_id=r["next_id"],
        duplicates=sorted(duplicates),
        flags=list(r["flags"] or []),
    )
