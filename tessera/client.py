"""The public Python API: a tenant's index, opened as one principal.

    from tessera.client import open_tenant

    acme = open_tenant("examples/tessera.yaml", "acme", user="alice")
    for hit in acme.search("how do I page the on-call engineer", k=3):
        print(hit.score, hit.doc_id, hit.citation, hit.citation.locator())
    print(acme.show(str(hit.citation)).text)  # the exact source slice

Everything goes through the same code as ``tessera search``, ``show`` and ``lineage``: the
tenant and ACL filter of the principal (fail closed: a principal the tenant does not know is
refused when opened), effective dates, duplicate folding, and the retrieval audit log, written
before anything is returned (surface ``python``). A chunk the principal may not read, or that
does not exist, is :class:`~tessera.errors.AccessDenied` either way. Hit texts are untrusted
source data, never instructions.

Retriever adapters for LangChain and LlamaIndex build on this (:mod:`tessera.integrations`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal

from tessera.config import TesseraConfig, load_config
from tessera.embedding.base import Embedder
from tessera.errors import AccessDenied
from tessera.lineage import Lineage
from tessera.search import SearchHit, SearchOptions, SourceSlice, principal_from_config
from tessera.search.audit import AuditLog, Surface, fetch_record, search_record
from tessera.search.principal import IdentityStore, Principal

__all__ = ["TenantReader", "open_tenant"]

SURFACE: Surface = "python"


@dataclass(frozen=True)
class TenantReader:
    """Read access to one tenant's index as one principal (see :func:`open_tenant`)."""

    config: TesseraConfig
    principal: Principal
    embedder: Embedder

    @property
    def tenant(self) -> str:
        return self.principal.tenant

    def current(self) -> Principal:
        """The principal to answer this call with. With a directory (``tenants.T.directory``)
        its groups are resolved again on every call, so a membership change reaches a reader
        opened long ago within ``refresh_seconds``, and a directory past its grace raises
        ``DirectoryUnavailable`` (fail closed) instead of serving the groups of the open."""
        if self.config.tenant(self.tenant).directory is None:
            return self.principal
        now = principal_from_config(self.config, self.tenant, self.principal.user)
        if now is None:
            raise AccessDenied(f"no such principal in tenant {self.tenant!r}")
        return now

    def search(
        self,
        query: str,
        k: int = 5,
        mode: str = "hybrid",
        as_of: datetime | None = None,
        expand: str | None = None,
    ) -> list[SearchHit]:
        """The top ``k`` chunks this principal may read (``mode``: hybrid, dense or lexical),
        as of ``as_of`` (default now); ``expand`` widens each hit (``section``, ``neighbors``)."""
        from tessera.search import search
        from tessera.search.query import check_query

        check_query(query)
        opts = SearchOptions(k=k, mode=mode, as_of=as_of, expand=expand)
        counter = None
        if expand:
            from tessera.chunking.tokens import load_counter
            from tessera.embedding.model_files import model_dir

            counter = load_counter(model_dir(self.config.embedding))
        p = self.current()
        hits = search(self.config.store.uri, self.embedder, p, query, options=opts, counter=counter)
        ids = [h.chunk_id for h in hits]
        self._audit().append(search_record(SURFACE, p.tenant, p.user, query, mode, k, ids))
        return hits

    def show(self, citation: str, as_of: datetime | None = None) -> SourceSlice:
        """The exact source slice a citation (``tessera:<tenant>/<chunk id>``) points to."""
        from tessera.search import show

        try:
            found = show(self.config.store.uri, self.embedder, self.current(), citation, as_of)
        except AccessDenied:
            self._fetched("show", citation, None)
            raise
        self._fetched("show", citation, found.citation.chunk_id)
        return found

    def lineage(self, citation: str) -> Lineage:
        """Where a chunk this principal may read came from: source bytes, parser, chunker,
        model, run, versions and duplicates."""
        from tessera.lineage import lineage
        from tessera.search.citations import fetch_row, parse_citation
        from tessera.search.dataset import open_table
        from tessera.store.db import connect
        from tessera.store.index import TenantIndex

        tenant, chunk_id = parse_citation(citation)
        try:
            if tenant not in (None, self.tenant):
                raise AccessDenied("not found")
            uri = self.config.store.uri
            table = open_table(uri, self.embedder, self.tenant)
            fetch_row(table, self.current(), chunk_id)
            ident = self.embedder.identity
            index = TenantIndex(connect(uri), self.tenant, ident.key, ident.dimension)
            found = lineage(index, uri, chunk_id)
            found = replace(found, duplicates=self._readable(table, found.duplicates))
        except AccessDenied:
            self._fetched("lineage", citation, None)
            raise
        self._fetched("lineage", citation, chunk_id)
        return found

    def _readable(self, table: Any, ids: list[str]) -> list[str]:
        """Those of ``ids`` this principal may read: a copy in a restricted document is not
        named to someone who cannot read it."""
        from tessera.search.principal import access_filter
        from tessera.store.db import sql_str

        where = access_filter(self.current(), datetime.now(UTC), include_flagged=True)
        if not ids or where is None:
            return []
        listed = ", ".join(sql_str(i) for i in ids)
        rows = table.search().where(f"({where}) AND id IN ({listed})").select(["id"]).limit(None).to_arrow()
        allowed = set(rows.column("id").to_pylist())
        return [i for i in ids if i in allowed]

    def _audit(self) -> AuditLog:
        return AuditLog(self.config.store.work_dir)

    def _fetched(self, action: Literal["show", "lineage"], requested: str, chunk_id: str | None) -> None:
        p = self.principal
        self._audit().append(fetch_record(SURFACE, action, p.tenant, p.user, requested, chunk_id))


def open_tenant(
    config: str | Path | TesseraConfig,
    tenant: str,
    user: str | None = None,
    *,
    api_key: str | None = None,
    embedders: Sequence[Embedder] | None = None,
) -> TenantReader:
    """Open ``tenant`` as ``user`` (a user of the tenant's directory in the configuration) or
    as the holder of ``api_key`` (resolved through ``api_keys_file``; it must belong to
    ``tenant``). ``embedders`` default to the configured model (and ``embedding.previous``);
    the one serving the tenant is chosen. An unknown principal is :class:`AccessDenied`."""
    from tessera.embedding.factory import configured_embedders
    from tessera.search.query import for_tenant

    cfg = config if isinstance(config, TesseraConfig) else load_config(Path(config))
    cfg.tenant(tenant)  # an unknown tenant is a ConfigError naming it
    if (user is None) == (api_key is None):
        raise ValueError("give exactly one of user= and api_key=")
    principal: Principal | None
    if api_key is not None:
        if cfg.api_keys_file is None:
            raise AccessDenied("api_key needs api_keys_file in the configuration")
        principal = IdentityStore.load(cfg, cfg.api_keys_file).principal(api_key)
    else:
        principal = principal_from_config(cfg, tenant, str(user))
    if principal is None or principal.tenant != tenant:
        raise AccessDenied(f"no such principal in tenant {tenant!r}")
    loaded = list(embedders or configured_embedders(cfg))
    return TenantReader(cfg, principal, for_tenant(cfg.store.uri, tenant, loaded))
