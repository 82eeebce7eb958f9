"""Citations to exact source ranges, and ``show``: the cited slice, under the same filter.

A citation names the tenant and chunk (``tessera:<tenant>/<chunk id>``) plus the source URI,
revision (sha256 of the bytes), byte range, PDF pages with bboxes or Office parts (zip part,
element, character range: :class:`~tessera.types.PartSpan`), and heading anchor. ``show``
reads an Office citation back from the stored source file (:mod:`tessera.parsing.office_locate`).
Fetching by id is not a bypass: ``show`` applies the principal's filter, and a chunk the
principal may not see is reported exactly like one that does not exist.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

from tessera.embedding.base import Embedder
from tessera.errors import AccessDenied, DocumentError, InvalidArgument, PublishError, SourceBlobMissing
from tessera.parsing.office_locate import cited_text, describe, part_spans
from tessera.parsing.slices import decode_slice
from tessera.search.principal import Principal, access_filter
from tessera.store.blobs import BlobStore
from tessera.store.db import sql_str
from tessera.types import PartSpan

_CITATION = re.compile(r"(?:tessera:(?P<tenant>[a-z0-9_-]+)/)?(?P<id>[0-9a-f]{64})")


@dataclass(frozen=True)
class Citation:
    tenant: str
    chunk_id: str
    doc_id: str
    uri: str
    revision: str
    anchor: str
    byte_start: int
    byte_end: int
    pages: tuple[tuple[int, tuple[float, float, float, float]], ...] = ()
    parts: tuple[PartSpan, ...] = ()

    def __str__(self) -> str:
        return f"tessera:{self.tenant}/{self.chunk_id}"

    def locator(self) -> str:
        if self.pages:
            return "; ".join(f"page {p} bbox {tuple(round(v, 1) for v in b)}" for p, b in self.pages)
        if self.parts:
            return describe(self.parts)
        return f"bytes {self.byte_start}-{self.byte_end}"


def citation_of(row: dict[str, Any]) -> Citation:
    pages = tuple((int(p["page"]), (p["x0"], p["y0"], p["x1"], p["y1"])) for p in row.get("pages") or ())
    return Citation(
        tenant=row["tenant"],
        chunk_id=row["id"],
        doc_id=row["doc_id"],
        uri=row["uri"],
        revision=row["revision"],
        anchor=row["anchor"],
        byte_start=row["byte_start"],
        byte_end=row["byte_end"],
        pages=pages,
        parts=part_spans(row.get("parts")),
    )


def parse_citation(text: str) -> tuple[str | None, str]:
    """``(tenant or None, chunk id)``; a malformed string is ``InvalidArgument`` (a ValueError)
    naming ``citation``. Its syntax is public, so refusing it reveals nothing."""
    m = _CITATION.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None:
        shown = repr(text) if len(repr(text)) <= 80 else repr(text)[:77] + "..."
        raise InvalidArgument(
            "citation", f"not a citation: {shown} (expected tessera:<tenant>/<chunk id> or a 64-hex chunk id)"
        )
    return m["tenant"], m["id"]


def read_source(index_uri: str, cite: Citation) -> bytes:
    """The stored source bytes of the citation's revision (sha256 verified), or
    ``SourceBlobMissing`` naming the revision when they are gone or unreadable."""
    from botocore.exceptions import BotoCoreError, ClientError

    try:
        return BlobStore(index_uri).get(cite.tenant, cite.revision)
    except (OSError, BotoCoreError, ClientError, PublishError) as e:  # PublishError: sha256 mismatch
        reason = e.strerror if isinstance(e, OSError) and e.strerror else type(e).__name__
        if isinstance(e, PublishError):
            reason = "corrupt: sha256 mismatch"
        raise SourceBlobMissing(
            f"{cite}: the source bytes of revision {cite.revision} are missing or unreadable in "
            f"the store ({reason})"
        ) from e


@dataclass(frozen=True)
class SourceSlice:
    citation: Citation
    text: str
    chunk_text: str


def fetch_row(
    table: Any, principal: Principal | None, chunk_id: str, as_of: datetime | None = None
) -> dict[str, Any]:
    """The chunk's row if the principal may read it now, else AccessDenied (render as 404)."""
    where = access_filter(principal, as_of or datetime.now(UTC), include_flagged=True)
    if where is None or table is None:
        raise AccessDenied("not found")
    rows = table.search().where(f"({where}) AND id = {sql_str(chunk_id)}").limit(1).to_arrow().to_pylist()
    if not rows:
        raise AccessDenied("not found")
    row: dict[str, Any] = rows[0]
    return row


def show(
    index_uri: str,
    embedder: Embedder,
    principal: Principal | None,
    citation: str,
    as_of: datetime | None = None,
) -> SourceSlice:
    """The exact source slice a citation points to, under the caller's authorization."""
    from tessera.search.dataset import open_table

    tenant, chunk_id = parse_citation(citation)
    if principal is None or (tenant is not None and tenant != principal.tenant):
        raise AccessDenied("not found")
    row = fetch_row(open_table(index_uri, embedder, principal.tenant), principal, chunk_id, as_of)
    cite = citation_of(row)
    if cite.parts:  # Office: read the cited elements back from the source file
        raw = read_source(index_uri, cite)
        try:
            return SourceSlice(cite, cited_text(raw, cite.parts, cite.doc_id), row["text"])
        except DocumentError as e:
            raise SourceBlobMissing(
                f"{cite}: the cited parts of revision {cite.revision} cannot be read: {e}"
            ) from e
    if cite.pages or cite.byte_start < 0:
        return SourceSlice(cite, row["text"], row["text"])
    raw = read_source(index_uri, cite)
    text = decode_slice(raw, cite.byte_start, cite.byte_end, row.get("content_type"))
    return SourceSlice(cite, text, row["text"])
