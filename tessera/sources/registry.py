"""Connectors by source kind (``tenants.<t>.source.kind``).

The built-in folder, s3 and git connectors take a per-tenant revision cache
(:mod:`tessera.sources.revision_cache`) when :func:`connector_for` is given the directory where
the run keeps tenant state (``store.work_dir``); a registered factory takes only the tenant.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from tessera.config import TenantConfig
from tessera.errors import ConfigError
from tessera.sources.base import SourceConnector
from tessera.sources.revision_cache import RevisionCache, cache_path

ConnectorFactory = Callable[[TenantConfig], SourceConnector]
CachingFactory = Callable[[TenantConfig, RevisionCache | None], SourceConnector]
_REGISTRY: dict[str, ConnectorFactory] = {}
_CACHING: dict[str, CachingFactory] = {}


def register_connector(kind: str, factory: ConnectorFactory) -> None:
    _REGISTRY[kind] = factory
    _CACHING.pop(kind, None)  # a replaced built-in kind no longer gets a cache


def _register_builtin(kind: str, factory: CachingFactory) -> None:
    _REGISTRY[kind] = lambda t: factory(t, None)
    _CACHING[kind] = factory


def _folder(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.folder import FolderConnector

    assert t.source.path is not None
    return FolderConnector(t.tenant_id, t.source.path, t.default_access, cache)


def _s3(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.s3 import S3Connector

    return S3Connector.from_config(t, cache)


def _git(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.git import GitConnector

    return GitConnector.from_config(t, cache)


_register_builtin("folder", _folder)
_register_builtin("s3", _s3)
_register_builtin("git", _git)


def connector_for(tenant: TenantConfig, state_dir: Path | None = None) -> SourceConnector:
    """The tenant's connector; with ``state_dir``, built-in kinds keep a revision cache there
    (``{state_dir}/{tenant}/.source-revisions.json``)."""
    kind = tenant.source.kind
    if state_dir is not None and kind in _CACHING:
        cache = RevisionCache(cache_path(state_dir, tenant.tenant_id), tenant.tenant_id)
        return _CACHING[kind](tenant, cache)
    try:
        factory = _REGISTRY[kind]
    except KeyError:
        raise ConfigError(f"tenants.{tenant.tenant_id}.source.kind", f"no connector for {kind!r}") from None
    return factory(tenant)
