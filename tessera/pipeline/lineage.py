"""After a publish: the run's lineage report (changed documents) and a provenance sample."""

from __future__ import annotations

from typing import Any

from tessera.lineage_html import provenance_sample, write_report
from tessera.pipeline.context import RunContext


def lineage_step(rc: RunContext) -> dict[str, Any]:
    changed = set(rc.listing()[0]["to_parse"])
    # the run's own publication gets its diff page; a no-op reads no older version
    page = write_report(
        rc.index, rc.config.store.uri, rc.workspace / "lineage", changed, diffs=1 if changed else 0
    )
    return {"report": str(page), "documents": len(changed), "sample": provenance_sample(rc.index, changed)}
