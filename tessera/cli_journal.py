"""The CLI's side of the activity journal (:mod:`tessera.store.activity`): every command that
commits a change to an index outside Dagster records it, so that Dagster shows it."""

from __future__ import annotations

import logging
import sys
from typing import Any

from tessera.config import TesseraConfig
from tessera.errors import ActivityJournalError
from tessera.store.activity import Action, ActivityJournal, IndexActivity

log = logging.getLogger(__name__)


def journal(cfg: TesseraConfig, event: IndexActivity | None) -> None:
    """Record a committed change. A journal that cannot be written is reported on stderr and
    in the log, never raised: the change is committed, and failing the command would say it
    was not (Dagster shows the tenant's next recorded change)."""
    if event is None:
        return
    try:
        ActivityJournal(cfg.store.work_dir).record(event)
    except ActivityJournalError as e:
        log.error("%s", e)
        print(f"tessera: warning: committed, but Dagster will not show it: {e}", file=sys.stderr)


def published(
    action: Action, tenant: str, run_id: str, publish: dict[str, Any] | None
) -> IndexActivity | None:
    """The event of a run's publish summary; None when the run committed nothing (a no-op)."""
    if not publish or not publish.get("committed", False):
        return None
    return IndexActivity(
        action=action,
        tenant=tenant,
        run_id=run_id,
        version=publish.get("version"),
        table=str(publish.get("table", "")),
        inserted=int(publish.get("inserted", 0)),
        updated=int(publish.get("updated", 0)),
        deleted=int(publish.get("deleted", 0)),
        docs_changed=int(publish.get("docs_changed", 0)),
        docs_removed=int(publish.get("docs_removed", 0)),
    )
