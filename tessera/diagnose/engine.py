"""``diagnose``: why did retrieval miss this document for this principal and question?

The request names the document (``doc``) or a citation, and optionally the part that should
answer (``expect`` text or a source byte ``range``). Evidence is gathered stage by stage
(:mod:`tessera.diagnose.document`, :mod:`tessera.diagnose.chunks`,
:mod:`tessera.diagnose.ranking`) and judged by :mod:`tessera.diagnose.verdict`. Everything is
read, nothing written: the listing runs without the revision cache, the parse in memory.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from typing import Any

from tessera.config import TesseraConfig
from tessera.diagnose.chunks import access, covering, doc_rows, in_effect
from tessera.diagnose.document import Listed, Parsed, Target, list_document, locate
from tessera.diagnose.ranking import principal_rank, rank_modes
from tessera.diagnose.report import (
    EXCERPT_CHARS,
    RETRIEVED,
    ChunkCover,
    ChunkEvidence,
    Diagnosis,
    Finding,
    ListingEvidence,
    ModelEvidence,
    ModeRank,
    ParseEvidence,
)
from tessera.diagnose.verdict import Evidence, judge
from tessera.embedding.base import Embedder
from tessera.errors import InvalidArgument
from tessera.search.citations import parse_citation
from tessera.search.options import MAX_K, check_query
from tessera.search.principal import principal_from_config
from tessera.store.active import ActivePointer
from tessera.store.db import connect, sql_str
from tessera.store.health import read_guard
from tessera.store.index import TenantIndex

_RANGE = re.compile(r"([0-9]{1,15}):([0-9]{1,15})")


def parse_range(text: str, key: str = "range") -> tuple[int, int]:
    """``START:END``, a half-open byte range of the source (``0:120``); else InvalidArgument."""
    m = _RANGE.fullmatch(text.strip()) if isinstance(text, str) else None
    if m is None or int(m[1]) >= int(m[2]):
        raise InvalidArgument(key, f"expected START:END with START < END (source bytes), got {text!r}")
    return int(m[1]), int(m[2])


@dataclass(frozen=True)
class DiagnoseRequest:
    """Checked when built; a bad field is ``InvalidArgument`` naming it."""

    tenant: str
    user: str
    question: str
    doc_id: str | None = None
    citation: str | None = None
    byte_range: tuple[int, int] | None = None
    expect: str | None = None
    k: int = 5
    as_of: datetime | None = None

    def __post_init__(self) -> None:
        check_query(self.question, "question")
        if (self.doc_id is None) == (self.citation is None):
            raise InvalidArgument("doc", "give exactly one of doc and citation")
        if self.doc_id is not None and (not self.doc_id.strip() or "\0" in self.doc_id):
            raise InvalidArgument("doc", "must be a document id (its path in the source)")
        if self.citation is not None:
            parse_citation(self.citation)
            if self.byte_range is not None or self.expect is not None:
                raise InvalidArgument(
                    "citation", "a citation names its own range: no range or expect with it"
                )
        if self.byte_range is not None and self.expect is not None:
            raise InvalidArgument("range", "give range or expect, not both")
        if self.expect is not None and not self.expect.strip():
            raise InvalidArgument("expect", "must be a non-empty text")
        if isinstance(self.k, bool) or not isinstance(self.k, int) or not 1 <= self.k <= MAX_K:
            raise InvalidArgument("k", f"must be an integer in [1, {MAX_K}], got {self.k!r}")


def _serving(db: Any, tenant: str, embedders: Sequence[Embedder]) -> tuple[Embedder, str]:
    """The loaded model serving the tenant (the first one when none does) and the pointer."""
    active = ActivePointer(db, tenant).get()
    key = active.model_key if active is not None else ""
    return next((e for e in embedders if e.identity.key == key), embedders[0]), key


def _cited(table: Any | None, tenant: str, citation: str) -> tuple[str, Target]:
    named, chunk_id = parse_citation(citation)
    if named is not None and named != tenant:
        raise InvalidArgument("citation", f"names tenant {named!r}, not {tenant!r}")
    rows = [] if table is None else table.search().where(f"id = {sql_str(chunk_id)}").limit(1).to_list()
    if not rows:
        raise InvalidArgument("citation", f"chunk {chunk_id} is not in the live table of tenant {tenant!r}")
    r = rows[0]
    return str(r["doc_id"]), Target(chunk=(r["revision"], int(r["start"]), int(r["end"]), r["text"] or ""))


def _listing_evidence(listed: Listed, rows: list[dict[str, Any]]) -> ListingEvidence:
    revisions = tuple(sorted({str(r["revision"]) for r in rows}))
    doc = listed.doc
    return ListingEvidence(
        listed=doc is not None and listed.raw is not None,
        reason=listed.reason,
        source_revision=doc.revision if doc is not None else "",
        indexed_revisions=revisions,
        acl_source=doc.acl_source if doc is not None else "",
    )


def _parse_evidence(parsed: Parsed | None, queued: tuple[str, int], target: Target) -> ParseEvidence:
    """The parse stage's evidence; a cited chunk's text is never echoed (only its range)."""
    whole = target.whole_document
    if parsed is None:
        return ParseEvidence(False, "", "", "", *queued, (), "", -1, -1, None, None)
    doc = parsed.parsed
    span = parsed.span or (-1, -1)
    return ParseEvidence(
        parsed=doc is not None,
        parser=f"{doc.parser} {doc.parser_version}" if doc is not None else "",
        failure_reason=parsed.reason,
        failure_message=parsed.message,
        queued_reason=queued[0],
        queued_attempts=queued[1],
        warnings=doc.warnings if doc is not None else (),
        target="" if target.chunk is not None else parsed.text[:EXCERPT_CHARS],
        target_start=span[0],
        target_end=span[1],
        in_parse=None if doc is None or whole else parsed.span is not None,
        in_source=parsed.in_source,
    )


def _queued(db: Any, tenant: str, doc_id: str) -> tuple[str, int]:
    """The failure queue's entry for the document (``stage:reason``, attempts)."""
    from tessera.store.failures import FailureQueue

    record = FailureQueue(db, tenant).get(doc_id)
    return ("", 0) if record is None else (f"{record.stage}:{record.reason}", record.attempts)


def diagnose(cfg: TesseraConfig, req: DiagnoseRequest, embedders: Sequence[Embedder]) -> Diagnosis:
    """The diagnosis of one document for one principal and question (read-only)."""
    cfg.tenant(req.tenant)
    as_of = req.as_of or datetime.now(UTC)
    db = connect(cfg.store.uri)
    embedder, active = _serving(db, req.tenant, embedders)
    ident = embedder.identity
    key = active or ident.key  # the served table, even when no loaded model can query it
    table = TenantIndex(db, req.tenant, key, ident.dimension).table()
    can_rank = key == ident.key
    dimension = table.schema.field("vector").type.list_size if table is not None else ident.dimension
    if req.citation is not None:
        doc_id, target = _cited(table, req.tenant, req.citation)
    else:
        assert req.doc_id is not None
        doc_id, target = req.doc_id, Target(expect=req.expect, byte_range=req.byte_range)
    listed = list_document(cfg, req.tenant, doc_id)
    doc = listed.doc
    if target.byte_range is not None and doc is not None and not doc.content_type.startswith("text/"):
        raise InvalidArgument("range", f"{doc_id} is {doc.content_type}: use expect, not a byte range")
    with read_guard(db, req.tenant, key):
        rows = doc_rows(table, doc_id)
        parsed = locate(doc, listed.raw, target) if doc is not None and listed.raw is not None else None
        revision = doc.revision if doc is not None else None
        covers = covering(rows, target, parsed, revision, dimension)
        principal = principal_from_config(cfg, req.tenant, req.user)
        ids = [c.chunk_id for c in covers]
        ranks: tuple[ModeRank, ...] = ()
        if ids and can_rank:
            ranks = rank_modes(table, embedder, req.question, req.tenant, principal, as_of, ids, req.k)
        acc = access(principal, req.user, covers)
        model = ModelEvidence(ident.key, active, key, tuple(sorted({c.model_version for c in covers})))
        evidence = Evidence(
            listing=_listing_evidence(listed, rows),
            parse=_parse_evidence(parsed, _queued(db, req.tenant, doc_id), target),
            rows=len(rows),
            covers=covers,
            whole_document=target.whole_document,
            hybrid=next((r for r in ranks if r.mode == "hybrid"), None),
            access=acc,
            dates=in_effect(covers, acc.readable, as_of),
            model=model,
            k=req.k,
        )
        findings, stage, verdict = judge(evidence)
        rank = None
        if stage == RETRIEVED and principal is not None:
            rank = principal_rank(table, embedder, req.question, principal, as_of, ids, req.k)
            if rank is None:
                why = f"the principal's own search does not return it within k={req.k}"
                stage, verdict = "ranking", f"lost at ranking: {why}"
                findings = tuple(
                    replace(f, status="lost", detail=why) if f.stage == "ranking" else f for f in findings
                )
            else:
                verdict = f"retrieved at rank {rank} within k={req.k}"
    return Diagnosis(
        tenant=req.tenant, user=req.user, question=req.question, doc_id=doc_id, k=req.k,
        verdict_stage=stage, verdict=verdict, rank=rank, findings=findings,
        listing=evidence.listing, parse=evidence.parse,
        chunks=_chunk_evidence(rows, covers), ranking=ranks, access=acc, dates=evidence.dates, model=model,
    )  # fmt: skip


def _chunk_evidence(rows: list[dict[str, Any]], covers: tuple[ChunkCover, ...]) -> ChunkEvidence:
    revision = ", ".join(sorted({str(r["revision"]) for r in rows}))
    return ChunkEvidence(len(rows), revision, tuple(covers))


__all__ = ["DiagnoseRequest", "Diagnosis", "Finding", "diagnose", "parse_range"]
