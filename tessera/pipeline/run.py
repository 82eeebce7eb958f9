"""One tenant run as plain Python: list -> plan -> parse -> chunk -> embed -> stage/check -> publish.

Each step reads and writes a run workspace (``{work_dir}/{tenant}/{run_id}``) and returns a
small JSON-able summary, so Dagster assets pass manifests, never payloads. ``run_tenant``
chains the steps for the CLI and the tests. The steps live in :mod:`tessera.pipeline.steps`
(parse, chunk, embed) and :mod:`tessera.pipeline.publish` (gate, publish, verify).
"""

from __future__ import annotations

import logging
from functools import partial
from typing import Any

from tessera.errors import StalePlanError
from tessera.pipeline.context import RunContext as RunContext
from tessera.pipeline.cutover import cutover_step
from tessera.pipeline.footprint import measured, with_footprint
from tessera.pipeline.listing import list_step as list_step
from tessera.pipeline.publish import candidate_scope as candidate_scope
from tessera.pipeline.publish import gate_step as gate_step
from tessera.pipeline.publish import publish_step as publish_step
from tessera.pipeline.publish import verify_step as verify_step
from tessera.pipeline.staging import QUALITY_GATE
from tessera.pipeline.steps import chunk_step as chunk_step
from tessera.pipeline.steps import embed_step as embed_step
from tessera.pipeline.steps import parse_step as parse_step
from tessera.store.memory import release_memory

log = logging.getLogger(__name__)
PLAN_ATTEMPTS = 3


def run_tenant(rc: RunContext) -> dict[str, Any]:
    """All steps in order; the first failure stops the run before anything is published.

    A publish refused because another writer changed the live index after this run planned
    (:class:`StalePlanError`) lists and plans again, up to ``PLAN_ATTEMPTS`` times.

    Each step's summary carries its ``memory`` footprint (:mod:`tessera.pipeline.footprint`);
    ``verify`` is its problem count and footprint.

    Last, the tenant's active model moves to this run's model when it is verified and complete
    (the first build, or the end of a backfill after a model change)."""
    for attempt in range(1, PLAN_ATTEMPTS + 1):
        out: dict[str, Any] = {}
        for name, step in (
            ("listing", partial(list_step, prestart=True)),  # the parse step runs next, here
            ("parse", parse_step),
            ("chunk", chunk_step),
            ("embed", embed_step),
        ):
            out[name] = measured(rc.tenant, name, partial(step, rc))
            release_memory()  # each step starts from what it needs, not the last step's peak
        try:
            out["publish"] = measured(rc.tenant, "publish", partial(publish_step, rc))
            release_memory()
            break
        except StalePlanError:
            if attempt == PLAN_ATTEMPTS:
                raise
            log.warning(
                "tenant %s: the live index changed while run %s planned; re-planning", rc.tenant, rc.run_id
            )
            (rc.workspace / QUALITY_GATE).unlink(missing_ok=True)
    (problems, _), verified = with_footprint(rc.tenant, "verify", partial(verify_step, rc))
    out["verify"] = {"problems": len(problems), "memory": verified.as_dict()}
    out["cutover"] = cutover_step(rc, problems, rc.serving)
    return out
