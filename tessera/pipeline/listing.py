"""The listing step: enumerate with a verdict, diff against what is live, guard deletions."""

from __future__ import annotations

import hashlib
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, fields
from typing import Any

from tessera.errors import DocumentError, PolicyError, SourceError, TesseraError
from tessera.parsing.base import ParserVersions
from tessera.pipeline import executors
from tessera.pipeline.alloc import collector_paused
from tessera.pipeline.context import RunContext
from tessera.pipeline.failures import in_scope
from tessera.pipeline.progress import log as progress_log
from tessera.pipeline.relabel import split_meta_only
from tessera.sources.base import Listing, Verdict
from tessera.sources.policy import POLICY_FILE
from tessera.store.index import DocState
from tessera.types import canonical_hash, canonical_json


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


GUTTED_KEEP = 4
"""A document that keeps fewer than 1/GUTTED_KEEP of its chunks (from at least that many)
counts as lost for the deletion guard, like a removed one."""


@dataclass(frozen=True)
class ContentLoss:
    """What a run would take from users, by document: removed from the source (and not
    moved: the same revision under another name is no loss), emptied (the new revision yields
    no chunks) or gutted (keeps under a quarter of its chunks)."""

    removed: tuple[str, ...] = ()
    emptied: tuple[str, ...] = ()
    gutted: tuple[str, ...] = ()
    moved: tuple[str, ...] = ()

    @property
    def lost(self) -> list[str]:
        return sorted(set(self.removed) | set(self.emptied) | set(self.gutted))


def content_loss(
    removed: list[str],
    moved: set[str],
    old_chunks: dict[str, int],
    new_chunks: dict[str, int],
) -> ContentLoss:
    """Lost documents, from the live chunk counts of the replaced documents and their new counts."""
    emptied = sorted(d for d, n in new_chunks.items() if n == 0 and old_chunks.get(d, 0) > 0)
    gutted = sorted(
        d
        for d, n in new_chunks.items()
        if n > 0 and old_chunks.get(d, 0) >= GUTTED_KEEP and n * GUTTED_KEEP < old_chunks[d]
    )
    gone = sorted(set(removed) - moved)
    return ContentLoss(tuple(gone), tuple(emptied), tuple(gutted), tuple(sorted(set(removed) & moved)))


def deletion_plan(
    rc: RunContext, loss: ContentLoss, live_docs: int, empty: bool = False, proven: bool = True
) -> dict[str, Any]:
    """Whether this run takes more from the tenant than its guard allows.

    Blocked, unless the run has the override: more than ``max_delete_fraction`` of the
    documents lost (tenants of ``min_documents`` or more), or every document lost, at any size,
    unless the source proved it is empty (an EMPTY listing with proof, such as a root marker)."""
    t = rc.config.tenant(rc.tenant)
    lost = loss.lost
    fraction = len(lost) / live_docs if live_docs else 0.0
    over = live_docs >= t.guard_min_documents and fraction > t.max_delete_fraction
    wiped = live_docs > 0 and len(lost) >= live_docs and not (empty and proven)
    return {
        "live_documents": live_docs,
        "to_delete": len(lost),
        "fraction": round(fraction, 4),
        "max_fraction": t.max_delete_fraction,
        "min_documents": t.guard_min_documents,
        "removed": len(loss.removed),
        "emptied": list(loss.emptied[:100]),
        "gutted": list(loss.gutted[:100]),
        "moved": len(loss.moved),
        "every_document": wiped,
        "blocked": (over or wiped) and not rc.allow_mass_delete,
        "override": rc.allow_mass_delete,
        "documents": lost[:100],
    }


def block_message(plan: dict[str, Any]) -> str:
    what = f"{plan['to_delete']} of {plan['live_documents']} documents"
    detail = f" ({plan['removed']} removed, {len(plan['emptied'])} emptied, {len(plan['gutted'])} gutted)"
    if plan["every_document"]:
        why = "every document, and the source did not prove it is empty"
    else:
        why = f"{plan['fraction']:.0%} > {plan['max_fraction']:.0%}"
    return f"run would delete {what}{detail}: {why}; rerun with the override to allow it"


def plan_fingerprint(live: dict[str, DocState]) -> str:
    """The live state a run plans from; the publish refuses to commit if it has changed.

    The canonical hash of ``sorted((doc_id, {field: value}) for each document)``, hashed a
    document at a time: the same bytes as one ``json.dumps`` of that list, which held the
    list and its whole encoding at once (88 MB of Python objects at 100,000 documents)."""
    names = [f.name for f in fields(DocState)]
    digest = hashlib.sha256(b"[")
    for i, doc_id in enumerate(sorted(live)):
        state = live[doc_id]
        item = canonical_json([doc_id, {n: getattr(state, n) for n in names}])
        digest.update((b"," if i else b"") + item.encode("utf-8"))
    digest.update(b"]")
    return digest.hexdigest()


@dataclass(frozen=True)
class Diff:
    """A listing compared with the live index."""

    listing: Listing
    changed: list[str]
    meta_only: list[str]
    removed: list[str]
    live_documents: int
    planned_from: str = ""
    old_chunks: dict[str, int] = field(default_factory=dict)
    moved: frozenset[str] = frozenset()
    relabel: list[str] = field(default_factory=list)
    """Metadata-only changes whose live rows are relabelled, not rebuilt
    (:mod:`tessera.pipeline.relabel`); ``meta_only`` holds the ones parsed again."""
    planned_at: str = ""
    """The commit the live state was read at (:func:`tessera.store.manifest.commit_key`)."""

    @property
    def fingerprint(self) -> str:
        docs = sorted((d.doc_id, d.revision, d.meta_hash) for d in self.listing.documents)
        return canonical_hash([docs, sorted(f.doc_id for f in self.listing.failed), self.removed])

    def loss(self) -> ContentLoss:
        """What the listing alone shows: removed documents and changed ones now zero bytes."""
        zero = {d.doc_id: 0 for d in self.listing.documents if d.size == 0 and d.doc_id in self.changed}
        return content_loss(self.removed, set(self.moved), self.old_chunks, zero)

    def plan(self, rc: RunContext) -> dict[str, Any]:
        empty = self.listing.verdict is Verdict.EMPTY
        return deletion_plan(rc, self.loss(), self.live_documents, empty, self.listing.emptiness_proven)


def _policies_gone(listing: Listing, live: dict[str, DocState]) -> None:
    """Fail closed when a policy file the live ACLs came from is gone and they would change."""
    present = set(listing.policies)
    gone: dict[str, list[str]] = {}
    for doc in listing.documents:
        state = live.get(doc.doc_id)
        if state is None or not state.acl_source.endswith(POLICY_FILE) or state.acl_source in present:
            continue
        if state.meta_hash != doc.meta_hash:
            gone.setdefault(state.acl_source, []).append(doc.doc_id)
    if gone:
        path, docs = sorted(gone.items())[0]
        raise PolicyError(
            path,
            f"the access policy is gone, but the published ACLs of {len(docs)} documents came from it "
            f"(e.g. {sorted(docs)[:3]}) and would change; restore it, or to drop its rules deliberately "
            "replace it with 'documents: []' for one run",
        )


def diff(rc: RunContext) -> Diff:
    """List the source and compare it with the live table; writes nothing."""
    with collector_paused():
        return _diff(rc)


def _diff(rc: RunContext) -> Diff:
    # The live manifest is read while the source is enumerated: Lance reads and groups it off
    # the GIL (a 10,000-document listing took 0.19 s, the manifest 0.05-0.09 s beside it).
    # A failed listing is raised (once the read ends), else the read's failure, if any.
    with ThreadPoolExecutor(1, thread_name_prefix="tessera-manifest") as pool:
        planned = pool.submit(rc.index.planned_state)
        listing = _enumerate(rc)
        live, commit_key = planned.result()
    _policies_gone(listing, live)
    cfg_hash = rc.chunk_context.config_hash
    parsers = ParserVersions()
    changed, meta_only = [], []
    for doc in listing.documents:
        state = live.get(doc.doc_id)
        if (
            state is None
            or state.revision != doc.revision
            or state.config_hash != cfg_hash
            or parsers.changed(doc.content_type, state.parser_version)
        ):
            changed.append(doc.doc_id)
        elif state.meta_hash != doc.meta_hash:
            meta_only.append(doc.doc_id)
    seen = {d.doc_id for d in listing.documents} | {f.doc_id for f in listing.failed}
    changed, meta_only, removed = in_scope(rc, seen, changed, meta_only, sorted(set(live) - seen))
    revisions = {d.revision for d in listing.documents}
    moved = frozenset(d for d in removed if live[d].revision in revisions)
    old = {d: live[d].chunks for d in changed + removed if d in live}
    by_id = {d.doc_id: d for d in listing.documents}
    relabel, meta_only = split_meta_only(rc.index.table() if meta_only else None, meta_only, by_id)
    # the state a publish fences on, when there is one: a plan that changes nothing publishes
    # nothing, and hashing every live document cost a tenth of a 10,000-document no-op
    publishes = bool(changed or meta_only or relabel or removed)
    fingerprint, planned_at = (plan_fingerprint(live), commit_key()) if publishes else ("", "")
    return Diff(listing, changed, meta_only, removed, len(live), fingerprint, old, moved, relabel, planned_at)


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
        "meta_only": len(d.meta_only) + len(d.relabel),
        "relabel": len(d.relabel),
        "removed": len(d.removed),
        "fingerprint": d.fingerprint,
        "skipped": [list(x) for x in d.listing.skipped],
        "policies": list(d.listing.policies),
        "deletion": d.plan(rc),
    }


def list_step(rc: RunContext, prestart: bool = False) -> dict[str, Any]:
    """Enumerate the source, diff it against what is live, and store changed raw bytes.

    ``prestart``: the parse step will run next in this process (``run_tenant``), so the worker
    pool it will use is started as soon as the diff says how many documents it parses, and
    starts while the changed bytes are stored (``executors.warm``). Off where each step may
    run in its own process (Dagster's multiprocess executor), which would start it for nothing."""
    with collector_paused():
        return _list_step(rc, prestart)


def _list_step(rc: RunContext, prestart: bool) -> dict[str, Any]:
    assert rc.connector is not None
    d = diff(rc)
    listing = d.listing
    quarantined = [{"doc_id": f.doc_id, "reason": f.reason, "message": f.message} for f in listing.failed]
    by_id = {doc.doc_id: doc for doc in listing.documents}
    if prestart:
        executors.warm(rc.config.execution, len(d.changed) + len(d.meta_only))
    to_parse = []
    for doc_id in d.changed + d.meta_only:
        try:
            rc.blobs.put(rc.tenant, rc.connector.read(by_id[doc_id]))
            to_parse.append(doc_id)
        except (SourceError, DocumentError, OSError) as e:  # keep its old chunks
            quarantined.append({"doc_id": doc_id, "reason": "download_error", "message": str(e)})
    deletion = d.plan(rc)
    skipped = Counter(reason for _, reason in listing.skipped)
    summary = {
        "tenant": rc.tenant,
        "workspace_id": rc.workspace_id or rc.run_id,
        "verdict": listing.verdict.value,
        "proof": listing.proof,
        "documents": len(listing.documents),
        "changed": len(d.changed),
        "meta_only": len(d.meta_only) + len(d.relabel),  # every metadata-only change
        "relabel": len(d.relabel),  # of which relabelled in place, not parsed again
        "removed": len(d.removed),
        "unchanged": len(listing.documents) - len(d.changed) - len(d.meta_only) - len(d.relabel),
        "quarantined": len(quarantined),
        "skipped": dict(sorted(skipped.items())),
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
    rc.write_listing(
        {
            "summary": summary,
            "to_parse": to_parse,
            "meta_only": [x for x in d.meta_only if x in to_parse],
            "relabel": d.relabel,
            "removed": d.removed,
            "moved": sorted(d.moved),
            "quarantined": quarantined,
            "deletion": deletion,
            "planned_from": d.planned_from,
            "planned_at": d.planned_at,
            "old_chunks": d.old_chunks,
            "empty": listing.verdict is Verdict.EMPTY,
            "emptiness_proven": listing.emptiness_proven,
            "skipped": [list(x) for x in listing.skipped],
        },
        list(listing.documents),
    )
    progress_log.info(
        "%s list: %d documents (%d changed, %d metadata only, %d removed, %d unchanged), %s",
        rc.tenant, summary["documents"], summary["changed"], summary["meta_only"], summary["removed"],
        summary["unchanged"], listing.verdict.value,
    )  # fmt: skip
    return summary


def guard_status(rc: RunContext, new_chunks: dict[str, int] | None = None) -> dict[str, Any]:
    """The staged run's deletion plan, evaluated with this context's override flag.

    Without ``new_chunks`` (the listing check, before parsing) only removed documents and
    zero-byte revisions count; the publish step passes each replaced document's new chunk
    count, so emptied and gutted documents count as well."""
    data, docs = rc.listing()
    old = data.get("old_chunks", {})
    if new_chunks is None:
        new_chunks = {d: 0 for d in data["to_parse"] if d in docs and docs[d].size == 0}
    loss = content_loss(data["removed"], set(data.get("moved", [])), old, new_chunks)
    live = data["deletion"]["live_documents"]
    return deletion_plan(rc, loss, live, data.get("empty", False), data.get("emptiness_proven", True))
