"""Source connectors as a resource: the configured connectors, or an in-memory fake."""

from pathlib import Path

from dagster import ConfigurableResource
from pydantic import Field

from tessera.config import TenantConfig
from tessera.sources.base import SourceConnector
from tessera.sources.memory import MemoryConnector
from tessera.sources.registry import connector_for


class SourceResource(ConfigurableResource):  # type: ignore[type-arg]
    """Interface: the connector for a tenant's configured source."""

    def connector(self, tenant: TenantConfig, state_dir: Path | None = None) -> SourceConnector:
        """``state_dir``: where the tenant's revision cache lives (``store.work_dir``)."""
        raise NotImplementedError


class ConfiguredSourceResource(SourceResource):
    """The real connectors (folder, s3, git), chosen by ``source.kind`` in tessera.yaml."""

    def connector(self, tenant: TenantConfig, state_dir: Path | None = None) -> SourceConnector:
        return connector_for(tenant, state_dir)


class FakeSourceResource(SourceResource):
    """In-memory documents per tenant, with a scripted failure mode for tests."""

    documents: dict[str, dict[str, str]] = Field(default_factory=dict)
    failure: str = ""
    unreadable: list[str] = Field(default_factory=list)

    def connector(self, tenant: TenantConfig, state_dir: Path | None = None) -> SourceConnector:
        return MemoryConnector(
            tenant.tenant_id,
            self.documents.get(tenant.tenant_id, {}),
            tenant.default_access,
            failure=self.failure,
            unreadable=tuple(self.unreadable),
        )
