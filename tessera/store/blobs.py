"""Raw source bytes, content-addressed by revision (sha256) next to the index.

Citations, offset checks and lineage read the exact revision a chunk came from, even after
the source changed or disappeared. A local index keeps them in ``<index>/_sources/<tenant>/``;
an ``s3://bucket/prefix`` index keeps them under ``prefix/_sources/<tenant>/`` in the same
bucket (same endpoint and credentials as the tables, see :func:`tessera.store.db.s3_storage_options`).
Writes are atomic (rename locally; a single PUT on S3) and a read verifies the sha256.
"""

from __future__ import annotations

import contextlib
import os
import tempfile
import threading
from pathlib import Path
from typing import Any

from tessera.config import validate_tenant_id
from tessera.errors import PublishError
from tessera.types import sha256_hex

_CREATE = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_CLOEXEC", 0)


class BlobStore:
    def __init__(self, index_uri: str) -> None:
        self.s3: Any = None
        if index_uri.startswith("s3://"):
            import boto3
            from botocore.config import Config

            bucket, _, prefix = index_uri[len("s3://") :].partition("/")
            self.bucket, self.prefix = bucket, (prefix.strip("/") + "/_sources").lstrip("/")
            endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
            # botocore's standard mode retries 503 SlowDown and timeouts with jittered backoff
            retries = Config(retries={"mode": "standard", "max_attempts": 6})
            self.s3 = boto3.client("s3", endpoint_url=endpoint, config=retries)
        elif "://" in index_uri:
            raise PublishError(f"unsupported index URI {index_uri!r}: use a local path or s3://bucket/prefix")
        self.root = Path(index_uri) / "_sources"

    def path(self, tenant: str, revision: str) -> Path:
        return self.root / validate_tenant_id(tenant) / revision

    def _key(self, tenant: str, revision: str) -> str:
        return f"{self.prefix}/{validate_tenant_id(tenant)}/{revision}"

    def put(self, tenant: str, raw: bytes) -> str:
        revision = sha256_hex(raw)
        if self.s3 is not None:
            from botocore.exceptions import BotoCoreError, ClientError

            try:
                self.s3.put_object(Bucket=self.bucket, Key=self._key(tenant, revision), Body=raw)
            except (BotoCoreError, ClientError) as e:  # an OSError: the caller quarantines the document
                raise OSError(f"storing source blob {tenant}/{revision} failed after retries: {e}") from e
            return revision
        folder = os.path.join(self.root, validate_tenant_id(tenant))
        target = os.path.join(folder, revision)
        if os.path.exists(target):
            return revision
        # One temporary name per revision, process and thread, created exclusively: a listing
        # stores every changed document here, one after another, and tempfile.mkstemp's random
        # names and pathlib made 10,000 stores of 3 KB take 0.33 s against 0.19 s (tmpfs, no disk time).
        tmp = os.path.join(folder, f".tmp-{revision[:16]}-{os.getpid()}-{threading.get_ident()}")
        try:
            fd = os.open(tmp, _CREATE, 0o600)
        except FileNotFoundError:  # the tenant's first blob, or its folder purged since
            os.makedirs(folder, exist_ok=True)
            fd = os.open(tmp, _CREATE, 0o600)
        except FileExistsError:  # left by a writer that died with this process and thread id
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
        try:
            with os.fdopen(fd, "wb") as f:
                f.write(raw)
            os.replace(tmp, target)
        except BaseException:
            with contextlib.suppress(OSError):
                os.unlink(tmp)
            raise
        return revision

    def get(self, tenant: str, revision: str) -> bytes:
        if self.s3 is not None:
            data: bytes = self.s3.get_object(Bucket=self.bucket, Key=self._key(tenant, revision))[
                "Body"
            ].read()
        else:
            data = self.path(tenant, revision).read_bytes()
        if sha256_hex(data) != revision:
            raise PublishError(f"source blob {tenant}/{revision} is corrupt")
        return data

    def purge(self, tenant: str) -> int:
        """Delete every blob of the tenant; returns how many objects or files were removed."""
        if self.s3 is None:
            import shutil

            folder = self.root / validate_tenant_id(tenant)
            count = sum(1 for _ in folder.iterdir()) if folder.is_dir() else 0
            if folder.is_dir():
                shutil.rmtree(folder)
            return count
        removed = 0
        pages = self.s3.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=f"{self.prefix}/{validate_tenant_id(tenant)}/"
        )
        for page in pages:
            keys = [{"Key": o["Key"]} for o in page.get("Contents", [])]
            if keys:
                self.s3.delete_objects(Bucket=self.bucket, Delete={"Objects": keys})
                removed += len(keys)
        return removed
