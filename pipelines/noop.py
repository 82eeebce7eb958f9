"""``make run``'s up-to-date check, done before Dagster or torch is imported.

When every selected tenant's source listing matches what is published (nothing changed,
relabelled or removed, no document failing, a complete listing, this model active and its
table present), the job would change nothing: ``make run`` says so and skips it, as ``make``
skips an up-to-date target. The check is the one the ``source_change_sensor`` makes
(``check_sources``, revision cache included), so it never hides a change a run would publish.
``--always`` runs the job anyway.

The sample search embeds the same question every time: its vector is kept beside the work
dir, keyed by the model identity and the exact text, so a no-op loads no model.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from tessera.config import TesseraConfig
from tessera.embedding.base import Embedder, Vectors
from tessera.embedding.identity import ModelIdentity
from tessera.pipeline.listing import check_sources
from tessera.pipeline.run import RunContext
from tessera.store.active import ActivePointer

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LiveTenant:
    tenant: str
    documents: int
    version: int


def run_needed(rc: RunContext, status: dict[str, Any]) -> str | None:
    """Why a run of ``rc``'s tenant would change something, given its ``check_sources``
    status; None when the run would change nothing.

    Reasons: an incomplete listing, changed, relabelled or removed documents, documents failing
    in the listing, another model active than the configured one, or no table yet."""
    if status["verdict"] != "complete":
        return f"listing {status['verdict']}"
    counts = {k: len(status[k]) if isinstance(status[k], list) else int(status[k]) for k in _CHANGES}
    if any(counts.values()):
        return ", ".join(f"{n} {k}" for k, n in counts.items() if n)
    active = ActivePointer(rc.db, rc.tenant).get()
    if active is None or rc.index.table() is None:
        return "never published"
    if active.model_key != rc.embedder.identity.key:
        return "another model is active"
    return None


_CHANGES = ("changed", "meta_only", "removed", "failed")


def up_to_date(cfg: TesseraConfig, tenants: Sequence[str], embedder: Embedder) -> list[LiveTenant] | None:
    """Every tenant's live state when none needs a run; None as soon as one does."""
    live: list[LiveTenant] = []
    for tenant in tenants:
        rc = RunContext(cfg, tenant, "make-run-check", embedder)
        status = check_sources(rc)
        table = rc.index.table()
        if run_needed(rc, status) is not None or table is None:
            return None
        live.append(LiveTenant(tenant, int(status["documents"]), int(table.version)))
    return live


class RememberedQuery:
    """An embedder whose query vectors for exact texts are kept in ``path`` (JSON), keyed by
    the model identity: the same question with the same model is embedded once."""

    def __init__(self, embedder: Embedder, path: Path) -> None:
        self.embedder, self.path = embedder, path
        self.identity: ModelIdentity = embedder.identity

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        key = f"{self.identity.key}\n{text}"
        try:
            known = json.loads(self.path.read_text("utf-8"))
        except (OSError, ValueError):
            known = {}
        if isinstance(known, dict) and isinstance(known.get(key), list):
            vector = np.asarray(known[key], dtype=np.float32)
            if vector.shape == (self.identity.dimension,) and np.isfinite(vector).all():
                return vector
        vector = np.asarray(self.embedder.embed_query(text), dtype=np.float32)
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.path.write_text(json.dumps({key: vector.tolist()}), encoding="utf-8")
        except OSError as e:  # only a cache: the search goes on with the fresh vector
            log.warning("cannot keep the sample query vector in %s: %s", self.path, e)
        return vector
