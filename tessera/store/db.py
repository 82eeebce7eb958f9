"""Connections, table names and SQL literal escaping."""

from __future__ import annotations

import os
import re
from functools import lru_cache
from typing import Any

import lancedb

from tessera.config import validate_tenant_id


def s3_storage_options() -> dict[str, str]:
    """Object-store options for ``s3://`` index URIs, from the standard AWS environment.

    ``AWS_ENDPOINT_URL_S3`` or ``AWS_ENDPOINT_URL`` selects an S3-compatible server (MinIO,
    Ceph, a loopback server in tests; plain ``http://`` is allowed then), ``AWS_REGION`` or
    ``AWS_DEFAULT_REGION`` the region. Credentials stay in the environment.
    """
    opts: dict[str, str] = {}
    endpoint = os.environ.get("AWS_ENDPOINT_URL_S3") or os.environ.get("AWS_ENDPOINT_URL")
    if endpoint:
        opts["aws_endpoint"] = endpoint
        if endpoint.startswith("http://"):
            opts["allow_http"] = "true"
    region = os.environ.get("AWS_REGION") or os.environ.get("AWS_DEFAULT_REGION")
    if region:
        opts["aws_region"] = region
    return opts


@lru_cache(maxsize=16)
def _connect(uri: str, options: tuple[tuple[str, str], ...]) -> Any:
    return lancedb.connect(uri, storage_options=dict(options) or None)


def connect(uri: str) -> Any:
    """The LanceDB database at ``uri``: a local folder, or ``s3://bucket/prefix``."""
    options = tuple(sorted(s3_storage_options().items())) if uri.startswith("s3://") else ()
    return _connect(uri, options)


def chunks_table_name(tenant: str, model_key: str) -> str:
    return f"chunks__{validate_tenant_id(tenant)}__{model_key}"


def cache_table_name(tenant: str, model_key: str) -> str:
    return f"embed_cache__{validate_tenant_id(tenant)}__{model_key}"


def publications_table_name(tenant: str) -> str:
    return f"publications__{validate_tenant_id(tenant)}"


def open_table(db: Any, name: str) -> Any | None:
    """The table, or None when it does not exist (any other failure propagates)."""
    try:
        return db.open_table(name)
    except ValueError as e:
        if "was not found" in str(e):
            return None
        raise


def create_or_open(db: Any, name: str, data: Any, schema: Any) -> Any | None:
    """Create table ``name`` holding ``data`` (one commit); if it exists, even because another
    process created it a moment ago, return it instead so the caller adds ``data`` itself.
    Returns None when ``data`` went into a new table."""
    table = open_table(db, name)
    if table is not None:
        return table
    try:
        db.create_table(name, data=data, schema=schema)
        return None
    except ValueError as e:
        if "already exists" not in str(e):
            raise
        return db.open_table(name)


def list_tables(db: Any) -> list[str]:
    names: list[str] = []
    token = None
    while True:
        resp = db.list_tables(page_token=token) if token else db.list_tables()
        names.extend(resp.tables)
        token = resp.page_token
        if not token:
            return names


def sql_str(value: str) -> str:
    """A SQL string literal with quotes escaped; control characters are refused."""
    if re.search(r"[\x00-\x1f]", value):
        raise ValueError("control characters are not allowed in filter values")
    return "'" + value.replace("'", "''") + "'"


def tag_for_run(run_id: str) -> str:
    """Lance tags allow alphanumerics, '.', '-' and '_'."""
    return "run-" + re.sub(r"[^A-Za-z0-9._-]", "_", run_id)
