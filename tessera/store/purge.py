"""Remove everything Tessera holds for one tenant: an explicit, separate operation.

Dropping a tenant from the configuration never deletes its data; ``tessera tenant purge``
does: every model's chunk table, the embedding caches, the publication log, the failed-document
queue, the stored source bytes and the run workspaces.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

from tessera.config import validate_tenant_id
from tessera.store.active import active_table_name
from tessera.store.blobs import BlobStore
from tessera.store.db import list_tables, publications_table_name
from tessera.store.failures import failures_table_name


def purge_tenant(db: Any, index_uri: str, work_dir: Path, tenant: str) -> dict[str, Any]:
    validate_tenant_id(tenant)
    mine = {publications_table_name(tenant), active_table_name(tenant), failures_table_name(tenant)}
    prefixes = (f"chunks__{tenant}__", f"embed_cache__{tenant}__")
    dropped = sorted(n for n in list_tables(db) if n in mine or n.startswith(prefixes))
    for name in dropped:
        db.drop_table(name)
    removed_paths = []
    blobs = BlobStore(index_uri)
    if blobs.purge(tenant):
        removed_paths.append(f"{index_uri.rstrip('/')}/_sources/{tenant}")
    for path in (
        work_dir / tenant,
        work_dir / "_locks" / f"{tenant}.lock",
    ):
        if path.is_dir():
            shutil.rmtree(path)
            removed_paths.append(str(path))
        elif path.exists():
            path.unlink()
            removed_paths.append(str(path))
    return {"tenant": tenant, "tables": dropped, "paths": removed_paths}
