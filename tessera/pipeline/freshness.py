"""How stale a tenant's index is: a fresh listing of the source against what is live.

Definitions (all times UTC):

* **live**: the manifest of the tenant's table for the configured model, the same per-document
  state the run's planner diffs against (:func:`tessera.pipeline.listing.diff`), and the last
  row of its publications log (``published_version``, ``published_at``, ``run_id``).
* **pending**: a document the source holds differently from the live index, by kind:
  ``new`` (listed, not live), ``changed`` (another revision), ``metadata`` (same revision,
  another ``meta_hash``: readers, groups, dates), ``removed`` (live, not listed) and
  ``unreadable`` (listed, but the listing could not read it). A chunking profile or parser
  upgrade is not a source change and is not counted. A document whose parse failed keeps its
  old rows (or none), so it stays pending until a run publishes it: a quarantined change is
  never reported fresh. A document that yields no chunks is never live either, and stays
  pending likewise (the planner parses it again on every run).
* **change time** of a pending document: its ``modified_at`` from the source (file mtime, S3
  LastModified, the commit time of the listed git commit), even when that is older than the
  last publication (a copy that keeps its mtime, a quarantined change that a later publication
  left behind). A metadata change counts from the later of ``modified_at`` and the last
  publication: an edit of a folder's access policy file leaves the documents' own mtimes as
  they were, and the publication's listing still saw the old metadata. A removed or
  unreadable document carries no change time, so it is the time of the **last publication**:
  the earliest moment the change can have happened, as that publication's listing still saw
  the document as it is live (so its lag is an upper bound; it is *not* the time this check
  observed it missing, which would never age). A change time in the future (clock skew)
  counts as now, and an unknown one (the epoch, e.g. an S3 object without LastModified) as
  the last publication (or now, before any).
* ``lag_seconds`` = now - the oldest pending change time, never negative; 0 when nothing pends.
* **verdict**: ``source-unavailable`` when the listing failed (whatever else is known; never
  fresh), else ``never-published`` when the model's table has no publication, else ``stale``
  when ``lag_seconds`` exceeds the tenant's bound (``tenants.<t>.freshness.max_lag_seconds``),
  else ``fresh`` (pending changes younger than the bound are fresh).

The check is read-only: no commit, no run workspace, and the revision cache is read but
never written (``connector_for(..., read_only=True)``). It takes no lock: the live state is read between
two reads of the table version and read again if a publish came in between.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import Any

from tessera.config import TenantConfig, TesseraConfig
from tessera.embedding.identity import ModelIdentity
from tessera.sources.base import Listing, SourceConnector
from tessera.sources.registry import connector_for
from tessera.store.db import connect
from tessera.store.index import DocState, TenantIndex
from tessera.types import ALWAYS

log = logging.getLogger(__name__)

KINDS = ("new", "changed", "metadata", "removed", "unreadable")
READ_ATTEMPTS = 3
"""Reads of the live state before giving up on a consistent one (a publish per attempt)."""


class FreshnessVerdict(StrEnum):
    FRESH = "fresh"
    STALE = "stale"
    NEVER_PUBLISHED = "never-published"
    SOURCE_UNAVAILABLE = "source-unavailable"


@dataclass(frozen=True)
class PendingChange:
    """One document the index does not reflect yet, with the change time its lag counts from."""

    doc_id: str
    kind: str
    changed_at: datetime


@dataclass(frozen=True)
class Freshness:
    tenant: str
    model: str
    verdict: FreshnessVerdict
    checked_at: datetime
    max_lag_seconds: float
    lag_seconds: float
    live_version: int | None
    published_version: int | None
    published_at: datetime | None
    run_id: str
    live_documents: int
    live_chunks: int
    source_documents: int
    newest_source_change: datetime | None
    oldest_pending_change: datetime | None
    pending: tuple[PendingChange, ...]
    error: str = ""
    """Why the source could not be listed (``source-unavailable``), else empty."""

    @property
    def counts(self) -> dict[str, int]:
        """Pending documents per kind (every kind, zeros included)."""
        c = Counter(p.kind for p in self.pending)
        return {k: c[k] for k in KINDS}

    def as_dict(self, limit: int = 100) -> dict[str, Any]:
        """The JSON form; ``pending_documents`` lists the oldest ``limit`` pending changes."""

        def iso(t: datetime | None) -> str | None:
            return None if t is None else t.isoformat(timespec="seconds")

        return {
            "tenant": self.tenant,
            "model": self.model,
            "verdict": self.verdict.value,
            "checked_at": iso(self.checked_at),
            "lag_seconds": round(self.lag_seconds, 3),
            "max_lag_seconds": self.max_lag_seconds,
            "live_version": self.live_version,
            "published_version": self.published_version,
            "published_at": iso(self.published_at),
            "run_id": self.run_id,
            "live_documents": self.live_documents,
            "live_chunks": self.live_chunks,
            "source_documents": self.source_documents,
            "newest_source_change": iso(self.newest_source_change),
            "oldest_pending_change": iso(self.oldest_pending_change),
            "pending": self.counts,
            "pending_documents": [
                {"doc_id": p.doc_id, "kind": p.kind, "changed_at": iso(p.changed_at)}
                for p in self.pending[:limit]
            ],
            "error": self.error,
        }


@dataclass(frozen=True)
class LiveState:
    """What is live: the table version, its manifest and the last publications row (or None)."""

    version: int | None
    manifest: dict[str, DocState]
    last: dict[str, Any] | None


def read_live(index: TenantIndex) -> LiveState:
    """The manifest and the last publication of one table version, without a lock: read again
    when a publish commits in between; after READ_ATTEMPTS racing publishes the latest read
    is used (at worst one publication behind the manifest)."""
    for attempt in range(1, READ_ATTEMPTS + 1):
        before = index.version()
        pubs = index.publications()
        manifest = index.manifest()
        after = index.version()
        live = LiveState(after, manifest, pubs[-1] if pubs else None)
        if before == after:
            break
        log.info("%s: a publish came in during freshness read %d", index.name, attempt)
    return live


def _list(connector: Callable[[], SourceConnector], tenant: str) -> Listing | str:
    """The listing, or why there is none: every failure to build the connector (a git repository
    gone, an S3 client without credentials) or to list, typed or not, is an unavailable source."""
    try:
        listing = connector().list()
    except Exception as e:  # an outage, a policy error, a connector bug: reported, never fresh
        log.info("freshness of %r: the source cannot be listed: %s: %s", tenant, type(e).__name__, e)
        return f"{type(e).__name__}: {e}"
    if not isinstance(listing, Listing) or listing.tenant != tenant:
        return f"the connector returned no listing of tenant {tenant!r}"
    return listing


def pending_changes(
    listing: Listing, live: dict[str, DocState], published_at: datetime | None, now: datetime
) -> list[PendingChange]:
    """What the listing holds that ``live`` does not, oldest first (see the module docstring)."""
    fallback = min(published_at, now) if published_at is not None else now

    def when(t: datetime | None) -> datetime:
        if t is None or t <= ALWAYS:
            return fallback
        return min(t, now)

    out: list[PendingChange] = []
    for doc in listing.documents:
        state = live.get(doc.doc_id)
        if state is None:
            kind = "new"
        elif state.revision != doc.revision:
            kind = "changed"
        elif state.meta_hash != doc.meta_hash:
            kind = "metadata"
        else:
            continue
        at = when(doc.modified_at)
        if kind == "metadata" and published_at is not None:
            at = max(at, fallback)
        out.append(PendingChange(doc.doc_id, kind, at))
    out += [PendingChange(f.doc_id, "unreadable", when(None)) for f in listing.failed]
    seen = {d.doc_id for d in listing.documents} | {f.doc_id for f in listing.failed}
    out += [PendingChange(d, "removed", when(None)) for d in sorted(set(live) - seen)]
    return sorted(out, key=lambda p: (p.changed_at, p.doc_id))


def assess(
    tenant: TenantConfig,
    model: str,
    listing: Listing | str,
    live: LiveState,
    now: datetime,
) -> Freshness:
    """The freshness of one tenant from a listing (or the listing's error) and its live state."""
    last = live.last
    published_at = datetime.fromtimestamp(last["published_at_us"] / 1e6, UTC) if last else None
    pending: list[PendingChange] = []
    newest = None
    if isinstance(listing, Listing):
        pending = pending_changes(listing, live.manifest, published_at, now)
        times = [d.modified_at for d in listing.documents if d.modified_at > ALWAYS]
        newest = max(times) if times else None
    oldest = pending[0].changed_at if pending else None
    lag = max(0.0, (now - oldest).total_seconds()) if oldest is not None else 0.0
    if isinstance(listing, str):
        verdict = FreshnessVerdict.SOURCE_UNAVAILABLE
    elif last is None:
        verdict = FreshnessVerdict.NEVER_PUBLISHED
    elif lag > tenant.freshness_max_lag_s:
        verdict = FreshnessVerdict.STALE
    else:
        verdict = FreshnessVerdict.FRESH
    return Freshness(
        tenant=tenant.tenant_id,
        model=model,
        verdict=verdict,
        checked_at=now,
        max_lag_seconds=tenant.freshness_max_lag_s,
        lag_seconds=lag,
        live_version=live.version,
        published_version=int(last["table_version"]) if last else None,
        published_at=published_at,
        run_id=str(last["run_id"] or "") if last else "",
        live_documents=len(live.manifest),
        live_chunks=sum(s.chunks for s in live.manifest.values()),
        source_documents=len(listing.documents) if isinstance(listing, Listing) else 0,
        newest_source_change=newest,
        oldest_pending_change=oldest,
        pending=tuple(pending),
        error=listing if isinstance(listing, str) else "",
    )


def check_freshness(
    config: TesseraConfig,
    tenant: str,
    model: ModelIdentity,
    connector: SourceConnector | None = None,
    now: datetime | None = None,
    db: Any = None,
) -> Freshness:
    """List ``tenant``'s source and compare it with its live table for ``model`` (read-only).

    ``connector``: the tenant's connector (default: its own, with a read-only revision
    cache); ``now``: the time the lag is measured at (default: after the listing, so a slow
    listing adds no lag)."""
    t = config.tenant(tenant)  # an unknown tenant is a ConfigError

    def source() -> SourceConnector:
        return connector if connector is not None else connector_for(t, config.store.work_dir, read_only=True)

    listing = _list(source, tenant)  # first: a publish during the listing cannot look pending
    index = TenantIndex(
        db if db is not None else connect(config.store.uri), tenant, model.key, model.dimension
    )
    live = read_live(index)
    return assess(t, model.key, listing, live, now if now is not None else datetime.now(UTC))
