"""Builds the core RunContext for a tenant partition from the other resources."""

from typing import Any

from dagster import ConfigurableResource, ResourceDependency

from resources.config import TesseraConfigResource
from resources.embedder import EmbedderResource
from resources.sources import SourceResource
from tessera.pipeline.run import RunContext

ALLOW_MASS_DELETE_TAG = "tessera/allow_mass_delete"
"""Run tag that overrides the mass-deletion guard for that run (value ``"true"``)."""


class TenantRunResource(ConfigurableResource):  # type: ignore[type-arg]
    config: ResourceDependency[TesseraConfigResource]
    embedder: ResourceDependency[EmbedderResource]
    sources: ResourceDependency[SourceResource]

    def context_for(
        self, tenant: str, run_id: str, workspace_id: str | None = None, allow_mass_delete: bool = False
    ) -> RunContext:
        cfg = self.config.load()
        return RunContext(
            config=cfg,
            tenant=tenant,
            run_id=run_id,
            embedder=self.embedder.get(cfg.embedding),
            connector=self.sources.connector(cfg.tenant(tenant), cfg.store.work_dir),
            workspace_id=workspace_id or run_id,
            allow_mass_delete=allow_mass_delete,
            serving=tuple(self.embedder.get(c) for c in cfg.embedding.previous),
        )

    def from_manifest(
        self, manifest: dict[str, Any], run_id: str, allow_mass_delete: bool = False
    ) -> RunContext:
        """The context of a downstream step: same workspace as the listing that started it."""
        return self.context_for(manifest["tenant"], run_id, manifest["workspace_id"], allow_mass_delete)
