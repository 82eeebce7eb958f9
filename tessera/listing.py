"""The listing step: enumerate with a verdict, diff against what is live, guard deletions."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from tessera.errors import DocumentError, SourceError, TesseraError
from tessera.run_context import RunContext
from tessera.serde import doc_to_json
from tessera.sources.base import Listing
from tessera.types import canonical_hash


def _enumerate(rc: RunContext) -> Listing:
    """The connector's listing, or SourceError: anything unprovable stops the run here."""
    assert rc.connector is not None
    try:
        listing = rc.connector.list()
    except TesseraError:  # SourceError, or a ConfigError in a policy file: already typed
        raise
    except Exception as e:  # a connector bug or outage is a failed listing, never an empty one
        raise SourceError(f"listing {rc.tenant!r} failed: {type(e).__name__}: {e}") from e
    if not isinstance(listing, Listing):
        raise SourceError(f"connector returned {type(listing).__name__}, not a Listing with a verdict")
    if listing.tenant != rc.tenant:
        raise SourceError(f"connector listed tenant {listing.tenant!r}, expected {rc.tenant!r}")
    return listing


def deletion_plan(rc: RunContext, removed: list[str], live_docs: int) -> dict[str, Any]:
    """Whether this run deletes more documents than the tenant's guard allows."""
    t = rc.config.tenant(rc.tenant)
    fraction = len(removed) / live_docs if live_docs else 0.0
    over = live_docs >= t.guard_min_documents and fraction > t.max_delete_fraction
    return {
        "live_documents": live_docs,
        "to_delete": len(removed),
        "fraction": round(fraction, 4),
        "max_fraction": t.max_delete_fraction,
        "min_documents": t.guard_min_documents,
        "blocked": over and not rc.allow_mass_delete,
        "override": rc.allow_mass_delete,
        "documents": removed[:100],
    }


@dataclass(frozen=True)
class Diff:
    """A listing compared with the live index."""

    listing: Listing
    changed: list[str]
    meta_only: list[str]
    removed: list[str]
    live_documents: int

    @property
    def fingerprint(self) -> str:
        docs = sorted((d.doc_id, d.revision, d.meta_hash) for d in self.listing.documents)
        return canonical_hash([docs, sorted(f.doc_id for f in self.listing.failed), self.removed])


def diff(rc: RunContext) -> Diff:
    """List the source and compare it with the live table; writes nothing."""
    listing = _enumerate(rc)
    live = rc.index.manifest()
    cfg_hash = rc.chunk_context.config_hash
    changed, meta_only = [], []
    for doc in listing.documents:
        state = live.get(doc.doc_id)
        if state is None or state.revision != doc.revision or state.config_hash != cfg_hash:
            changed.append(doc.doc_id)
        elif state.meta_hash != doc.meta_hash:
            meta_only.append(doc.doc_id)
    seen = {d.doc_id for d in listing.documents} | {f.doc_id for f in listing.failed}
    return Diff(listing, changed, meta_only, sorted(set(live) - seen), len(live))


def check_sources(rc: RunContext) -> dict[str, Any]:
    """What a run would do, without indexing: verdict, proof and counts."""
    d = diff(rc)
    return {
        "tenant": rc.tenant,
        "verdict": d.listing.verdict.value,
        "proof": d.listing.proof,
        "documents": len(d.listing.documents),
        "failed": [f.doc_id for f in d.listing.failed],
        "changed": len(d.changed),
        "meta_only": len(d.meta_only),
        "removed": len(d.removed),
        "fingerprint": d.fingerprint,
        "deletion": deletion_plan(rc, d.removed, d.live_documents),
    }


def list_step(rc: RunContext) -> dict[str, Any]:
    """Enumerate the source, diff it against what is live, and store changed raw bytes."""
    assert rc.connector is not None
    d = diff(rc)
    listing = d.listing
    quarantined = [{"doc_id": f.doc_id, "reason": f.reason, "message": f.message} for f in listing.failed]
    by_id = {doc.doc_id: doc for doc in listing.documents}
    to_parse = []
    for doc_id in d.changed + d.meta_only:
        try:
            rc.blobs.put(rc.tenant, rc.connector.read(by_id[doc_id]))
            to_parse.append(doc_id)
        except (SourceError, DocumentError, OSError) as e:  # keep its old chunks
            quarantined.append({"doc_id": doc_id, "reason": "download_error", "message": str(e)})
    deletion = deletion_plan(rc, d.removed, d.live_documents)
    summary = {
        "tenant": rc.tenant,
        "workspace_id": rc.workspace_id or rc.run_id,
        "verdict": listing.verdict.value,
        "proof": listing.proof,
        "documents": len(listing.documents),
        "changed": len(d.changed),
        "meta_only": len(d.meta_only),
        "removed": len(d.removed),
        "unchanged": len(listing.documents) - len(d.changed) - len(d.meta_only),
        "quarantined": len(quarantined),
        "deletion_blocked": deletion["blocked"],
        "model": rc.embedder.identity.key,
        # What the index should be built from: source revisions and ACLs, the model and the
        # chunking profile. A model or profile change changes it, so Dagster shows every
        # downstream asset of the tenant as stale until a backfill rebuilds it.
        "index_version": canonical_hash(
            {
                "docs": sorted((doc.doc_id, doc.revision, doc.meta_hash) for doc in listing.documents),
                "model": rc.embedder.identity.key,
                "chunking": rc.chunk_context.config_hash,
            }
        )[:24],
    }
    rc.write(
        "listing.json",
        {
            "summary": summary,
            "documents": [doc_to_json(doc) for doc in listing.documents],
            "to_parse": to_parse,
            "meta_only": [x for x in d.meta_only if x in to_parse],
            "removed": d.removed,
            "quarantined": quarantined,
            "deletion": deletion,
        },
    )
    return summary


def guard_status(rc: RunContext) -> dict[str, Any]:
    """The staged run's deletion plan, evaluated with this context's override flag."""
    data = rc.read("listing.json")
    return deletion_plan(rc, data["removed"], data["deletion"]["live_documents"])
