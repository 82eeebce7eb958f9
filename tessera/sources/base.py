"""The connector protocol. A listing is trusted only with a positive verdict.

``complete``: every document was enumerated. ``empty``: the source positively confirmed it
holds nothing (``proof`` says how). Anything else raises :class:`SourceError` and the run
stops before publish, so an outage can never delete an index.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from enum import StrEnum
from typing import Protocol

from tessera.config import AccessRule
from tessera.errors import SourceError
from tessera.parsing.base import parser_for_path
from tessera.types import SourceDocument, sha256_hex


class Verdict(StrEnum):
    COMPLETE = "complete"
    EMPTY = "empty"


@dataclass(frozen=True)
class DocumentFailure:
    """A document the listing saw but could not read: quarantined, never deleted."""

    doc_id: str
    reason: str
    message: str


@dataclass(frozen=True)
class Listing:
    """``policies``: the access policy files the listing read (paths in the source).
    ``skipped``: entries never read, with the reason (links, special files, unsafe names).
    ``emptiness_proven``: for an EMPTY listing, whether the source positively proved it is
    empty (a root marker, a commit); an empty folder without one may be an unmounted mount
    point, so the deletion guard refuses to delete a tenant on it without the override."""

    tenant: str
    verdict: Verdict
    documents: tuple[SourceDocument, ...]
    proof: str
    failed: tuple[DocumentFailure, ...] = ()
    policies: tuple[str, ...] = ()
    skipped: tuple[tuple[str, str], ...] = ()
    emptiness_proven: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.verdict, Verdict):
            raise SourceError(f"listing for {self.tenant!r} has no valid verdict: {self.verdict!r}")
        if not self.proof.strip():
            raise SourceError(f"listing for {self.tenant!r} carries no proof; it cannot be trusted")
        if self.verdict is Verdict.EMPTY and (self.documents or self.failed):
            raise SourceError("an EMPTY listing cannot hold documents")
        if self.verdict is Verdict.COMPLETE and not (self.documents or self.failed):
            raise SourceError("a COMPLETE listing with no documents must be EMPTY with proof")
        ids = [d.doc_id for d in self.documents] + [f.doc_id for f in self.failed]
        if len(set(ids)) != len(ids):
            raise SourceError(f"listing for {self.tenant!r} names a document twice")
        if any(d.tenant != self.tenant for d in self.documents):
            raise SourceError(f"listing for {self.tenant!r} holds another tenant's documents")


def make_document(
    tenant: str,
    doc_id: str,
    raw: bytes,
    uri: str,
    access: AccessRule,
    effective: tuple[datetime, datetime],
    modified_at: datetime,
    acl_source: str = "",
) -> SourceDocument:
    """A listed document: revision = sha256 of the raw bytes, content type from the name."""
    return document_at(
        tenant, doc_id, sha256_hex(raw), len(raw), uri, access, effective, modified_at, acl_source
    )


def document_at(
    tenant: str,
    doc_id: str,
    revision: str,
    size: int,
    uri: str,
    access: AccessRule,
    effective: tuple[datetime, datetime],
    modified_at: datetime,
    acl_source: str = "",
    content_type: str | None = None,
) -> SourceDocument:
    """A listed document whose revision (the sha256 of its bytes) and size are already known,
    from a revision cache (:mod:`tessera.sources.revision_cache`) or a read. ``content_type``:
    ``parser_for_path(doc_id)``, when the connector has it already (it selected the file by it)."""
    if content_type is None:
        content_type = parser_for_path(doc_id)
    if content_type is None:
        raise SourceError(f"{doc_id!r} has no parser; connectors list only supported files")
    return SourceDocument(
        tenant=tenant,
        doc_id=doc_id,
        uri=uri,
        revision=revision,
        content_type=content_type,
        readers=access.readers,
        groups=access.groups,
        effective_from=effective[0],
        effective_to=effective[1],
        modified_at=modified_at,
        size=size,
        acl_source=acl_source,
    )


class SourceConnector(Protocol):
    def list(self) -> Listing:
        """Enumerate the tenant's documents, or raise SourceError."""
        ...

    def read(self, doc: SourceDocument) -> bytes:
        """The raw bytes of one document at the listed revision."""
        ...
