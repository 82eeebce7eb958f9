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
from tessera.registry import Registry, UnknownName
from tessera.sources.base import SourceConnector
from tessera.sources.revision_cache import ReadOnlyRevisionCache, RevisionCache, cache_path

ConnectorFactory = Callable[[TenantConfig], SourceConnector]
CachingFactory = Callable[[TenantConfig, RevisionCache | None], SourceConnector]
CONNECTORS: Registry[CachingFactory] = Registry("source kind")
"""Source kind -> factory; a kind is taken once (a plug-in cannot replace folder, s3 or git)."""


def register_connector(kind: str, factory: ConnectorFactory) -> None:
    """Add a connector for a new source kind (it gets no revision cache)."""
    CONNECTORS.register(kind, lambda t, _cache: factory(t))


def _folder(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.folder import FolderConnector

    assert t.source.path is not None
    return FolderConnector(t.tenant_id, t.source.path, t.default_access, cache, t.source.posix_access)


def _s3(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.s3 import S3Connector

    return S3Connector.from_config(t, cache)


def _git(t: TenantConfig, cache: RevisionCache | None) -> SourceConnector:
    from tessera.sources.git import GitConnector

    return GitConnector.from_config(t, cache)


CONNECTORS.register("folder", _folder)
CONNECTORS.register("s3", _s3)
CONNECTORS.register("git", _git)
BUILTIN = ("folder", "s3", "git")


def connector_for(
    tenant: TenantConfig, state_dir: Path | None = None, *, read_only: bool = False
) -> SourceConnector:
    """The tenant's connector; with ``state_dir``, built-in kinds keep a revision cache there
    (``{state_dir}/{tenant}/.source-revisions.json``). ``read_only``: the cache is used for
    lookups (unchanged documents are not read again) but never written."""
    kind = tenant.source.kind
    try:
        factory = CONNECTORS.get(kind)
    except UnknownName as e:
        raise ConfigError(f"tenants.{tenant.tenant_id}.source.kind", f"no connector for {kind!r}") from e
    cache = None
    if state_dir is not None and kind in BUILTIN:
        kind_of_cache = ReadOnlyRevisionCache if read_only else RevisionCache
        cache = kind_of_cache(cache_path(state_dir, tenant.tenant_id), tenant.tenant_id)
    return factory(tenant, cache)
