"""Builds the core RunContext for a tenant partition from the other resources."""

from typing import Any

from dagster import ConfigurableResource, ResourceDependency

from resources.config import TesseraConfigResource
from resources.embedder import EmbedderResource
from tessera.run import RunContext


class TenantRunResource(ConfigurableResource):  # type: ignore[type-arg]
    config: ResourceDependency[TesseraConfigResource]
    embedder: ResourceDependency[EmbedderResource]

    def context_for(self, tenant: str, run_id: str, workspace_id: str | None = None) -> RunContext:
        cfg = self.config.load()
        return RunContext(
            config=cfg,
            tenant=tenant,
            run_id=run_id,
            embedder=self.embedder.get(cfg.embedding),
            workspace_id=workspace_id or run_id,
        )

    def from_manifest(self, manifest: dict[str, Any], run_id: str) -> RunContext:
        """The context of a downstream step: same workspace as the listing that started it."""
        return self.context_for(manifest["tenant"], run_id, manifest["workspace_id"])
