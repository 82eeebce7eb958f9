"""Connectors by source kind (``tenants.<t>.source.kind``)."""

from __future__ import annotations

from collections.abc import Callable

from tessera.config import TenantConfig
from tessera.errors import ConfigError
from tessera.sources.base import SourceConnector

ConnectorFactory = Callable[[TenantConfig], SourceConnector]
_REGISTRY: dict[str, ConnectorFactory] = {}


def register_connector(kind: str, factory: ConnectorFactory) -> None:
    _REGISTRY[kind] = factory


def _folder(t: TenantConfig) -> SourceConnector:
    from tessera.sources.folder import FolderConnector

    assert t.source.path is not None
    return FolderConnector(t.tenant_id, t.source.path, t.default_access)


def _s3(t: TenantConfig) -> SourceConnector:
    from tessera.sources.s3 import S3Connector

    return S3Connector.from_config(t)


def _git(t: TenantConfig) -> SourceConnector:
    from tessera.sources.git import GitConnector

    return GitConnector.from_config(t)


register_connector("folder", _folder)
register_connector("s3", _s3)
register_connector("git", _git)


def connector_for(tenant: TenantConfig) -> SourceConnector:
    try:
        factory = _REGISTRY[tenant.source.kind]
    except KeyError:
        raise ConfigError(
            f"tenants.{tenant.tenant_id}.source.kind", f"no connector for {tenant.source.kind!r}"
        ) from None
    return factory(tenant)
