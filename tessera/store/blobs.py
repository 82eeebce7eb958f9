"""Raw source bytes, content-addressed by revision (sha256) next to the index.

Citations, offset checks and lineage read the exact revision a chunk came from, even after
the source changed or disappeared.
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

from tessera.config import validate_tenant_id
from tessera.errors import PublishError
from tessera.types import sha256_hex


class BlobStore:
    def __init__(self, index_uri: str) -> None:
        if "://" in index_uri:
            raise PublishError(
                f"source blobs for {index_uri!r} need a local path (object storage comes later)"
            )
        self.root = Path(index_uri) / "_sources"

    def path(self, tenant: str, revision: str) -> Path:
        return self.root / validate_tenant_id(tenant) / revision

    def put(self, tenant: str, raw: bytes) -> str:
        revision = sha256_hex(raw)
        target = self.path(tenant, revision)
        if target.exists():
            return revision
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=target.parent, prefix=".tmp-")
        with os.fdopen(fd, "wb") as f:
            f.write(raw)
        os.replace(tmp, target)
        return revision

    def get(self, tenant: str, revision: str) -> bytes:
        data = self.path(tenant, revision).read_bytes()
        if sha256_hex(data) != revision:
            raise PublishError(f"source blob {tenant}/{revision} is corrupt")
        return data
