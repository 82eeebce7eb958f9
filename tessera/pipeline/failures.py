"""The run side of the failed-document queue (:mod:`tessera.store.failures`).

A run's failures are the documents its reports quarantined: at the listing (unreadable in the
source, or its bytes could not be stored: stage ``listing``), the parse (``parse``) or the
chunking (``chunk``). The publish step hands them to the queue under the tenant's lock once
its commit succeeded, so a run that fails before (an embedding outage, the deletion guard, the
quality gate, a stale plan) leaves the queue as it was.

A run restricted to some documents (``RunContext.doc_scope``, set by ``tessera retry``) plans,
parses, publishes and clears only those: other changed documents wait for the next full run and
no removed document is deleted. A scoped document the source does not list is
:class:`DocumentNotListed`, before anything is written.
"""

from __future__ import annotations

from datetime import UTC, datetime

from tessera.errors import SourceError
from tessera.pipeline.context import RunContext
from tessera.pipeline.staging import CHUNK_REPORT, PARSE_REPORT
from tessera.store.failures import Failure, FailureQueue, FailureSummary, QueueUpdate


class DocumentNotListed(SourceError):
    """A document named for a retry is not in the tenant's source listing; nothing was run."""

    def __init__(self, tenant: str, doc_ids: list[str]) -> None:
        self.doc_ids = doc_ids
        super().__init__(f"tenant {tenant!r}: the source does not list {', '.join(map(repr, doc_ids))}")


def in_scope(
    rc: RunContext, seen: set[str], changed: list[str], meta_only: list[str], removed: list[str]
) -> tuple[list[str], list[str], list[str]]:
    """The changed, metadata-only and removed documents a run plans: all of them, or for a run
    restricted to ``rc.doc_scope`` the scoped ones and nothing removed. ``seen``: the documents
    the listing names (listed or failed); a scoped document outside it is
    :class:`DocumentNotListed`."""
    if rc.doc_scope is None:
        return changed, meta_only, removed
    missing = sorted(rc.doc_scope - seen)
    if missing:
        raise DocumentNotListed(rc.tenant, missing)
    return [d for d in changed if d in rc.doc_scope], [d for d in meta_only if d in rc.doc_scope], []


def run_failures(rc: RunContext) -> list[Failure]:
    """The documents this run quarantined, by stage, from its listing, parse and chunk reports."""
    data, docs = rc.listing()
    stages = [("listing", data.get("quarantined", [])), ("parse", rc.read(PARSE_REPORT)["quarantined"])]
    if (rc.workspace / CHUNK_REPORT).exists():
        stages.append(("chunk", rc.read(CHUNK_REPORT)["quarantined"]))
    out: dict[str, Failure] = {}
    for stage, entries in stages:
        for q in entries:
            doc = docs.get(q["doc_id"])
            uri = doc.uri if doc is not None else ""
            out[q["doc_id"]] = Failure(q["doc_id"], uri, stage, q["reason"], q["message"])
    return [out[d] for d in sorted(out)]


def update_queue(rc: RunContext, now: datetime | None = None) -> QueueUpdate:
    """Record this run's failures and clear what it covered; call once its publish committed,
    under the tenant's publish lock."""
    queue = FailureQueue(rc.db, rc.tenant)
    return queue.apply(run_failures(rc), rc.doc_scope, rc.run_id, now or datetime.now(UTC))


def queue_summary(rc: RunContext, top: int = 3) -> FailureSummary:
    """How many documents of the tenant are queued as failed, and the commonest reasons."""
    return FailureQueue(rc.db, rc.tenant).summary(top)
