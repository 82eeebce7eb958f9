"""Index freshness for the published index asset and its check; the core computes it
(:mod:`tessera.pipeline.freshness`), read-only."""

import logging
from typing import Any

from dagster import MetadataValue

from resources.sources import ConfiguredSourceResource, SourceResource
from tessera.errors import TesseraError
from tessera.pipeline.freshness import Freshness, check_freshness
from tessera.pipeline.run import RunContext

log = logging.getLogger(__name__)


def freshness_of(rc: RunContext, sources: SourceResource) -> Freshness:
    """The tenant's freshness. The configured connectors list through the tenant's revision
    cache without writing it; any other source resource (a fake) lists as it is."""
    t = rc.config.tenant(rc.tenant)
    connector = None if isinstance(sources, ConfiguredSourceResource) else sources.connector(t, None)
    return check_freshness(rc.config, rc.tenant, rc.embedder.identity, connector)


def freshness_metadata(f: Freshness) -> dict[str, Any]:
    return {
        "freshness_verdict": f.verdict.value,
        "freshness_lag_seconds": round(f.lag_seconds, 3),
        "freshness_max_lag_seconds": f.max_lag_seconds,
        "freshness_pending": sum(f.counts.values()),
        "freshness_pending_by_kind": MetadataValue.json(f.counts),
        "freshness_oldest_pending": f.oldest_pending_change.isoformat()
        if f.oldest_pending_change
        else "none",
        "freshness_error": f.error or "none",
    }


def published_freshness(rc: RunContext, sources: SourceResource) -> dict[str, Any]:
    """Freshness metadata for an index that is already published: a store error while reading
    it is logged and shown as the verdict ``unknown``, never a failure of the publish."""
    try:
        return freshness_metadata(freshness_of(rc, sources))
    except TesseraError as e:
        log.warning("freshness of %r could not be read after its publish: %s", rc.tenant, e)
        return {"freshness_verdict": "unknown", "freshness_error": f"{type(e).__name__}: {e}"}
