"""Connections, table names and SQL literal escaping."""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from functools import lru_cache
from typing import Any

import lancedb

from tessera.config import validate_tenant_id
from tessera.errors import StoreDamaged


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


def connect(uri: str, fresh: bool = False) -> Any:
    """The LanceDB database at ``uri``: a local folder, or ``s3://bucket/prefix``.

    Connections are shared per process, and with them LanceDB's cache of index files; a
    ``fresh`` one reads everything from the store (``tessera doctor`` checks what is stored)."""
    options = tuple(sorted(s3_storage_options().items())) if uri.startswith("s3://") else ()
    return _connect.__wrapped__(uri, options) if fresh else _connect(uri, options)


_ON_RESET: list[Callable[[], None]] = []


def on_reset(forget: Callable[[], None]) -> None:
    """Call ``forget`` whenever the shared connections are forgotten: a cache above the store
    (search's rows held in memory) goes with them."""
    _ON_RESET.append(forget)


def reset_connections() -> None:
    """Forget the shared connections and their caches, as a new process would."""
    _connect.cache_clear()
    for forget in _ON_RESET:
        forget()


def chunks_table_name(tenant: str, model_key: str) -> str:
    return f"chunks__{validate_tenant_id(tenant)}__{model_key}"


def cache_table_name(tenant: str, model_key: str) -> str:
    return f"embed_cache__{validate_tenant_id(tenant)}__{model_key}"


def publications_table_name(tenant: str) -> str:
    return f"publications__{validate_tenant_id(tenant)}"


_IO_MARKERS = (
    "LanceError(IO)",
    "lance error: Not found",
    "no longer exists. Was it cleaned up",
    "External error: Not found: ",
)
"""How LanceDB reports a missing, truncated or unreadable file (messages of lancedb 0.40). The
last is Lance's object store through Arrow (``ArrowInvalid``), as a BM25 query restricted by a
row allowlist reports a deleted index file."""
_TRANSIENT = re.compile(
    r"\bconnect|\btimed out\b|\btimeout\b|\bdns error\b|\b503\b|\bservice unavailable\b|\bslow ?down\b"
)
"""Words of a throttled or unreachable store, as words: a path or a uuid in a storage error
(``.../_indices/6b72ba29-...-167050349b0f/...``) holds ``503`` or ``timeout`` inside other text."""


def is_transient_store_error(e: BaseException) -> bool:
    """An object store answered 503 / SlowDown, timed out or dropped the connection: the same
    request may well succeed a moment later (a throttled or contended store)."""
    return (
        isinstance(e, RuntimeError | ValueError | OSError) and _TRANSIENT.search(str(e).lower()) is not None
    )


def is_storage_error(e: BaseException) -> bool:
    """A LanceDB file is missing, truncated or unreadable: not a bad query, not another
    library's error, and not a network failure of an object store (transient, not damage)."""
    text = str(e)
    if not isinstance(e, RuntimeError | ValueError | OSError) or _TRANSIENT.search(text.lower()):
        return False
    return any(m in text for m in _IO_MARKERS)


def error_text(e: BaseException) -> str:
    """The first line of a storage error, without the library's source paths."""
    first = str(e).splitlines()[0] if str(e) else type(e).__name__
    first = re.split(r", /(?:rustc|\S*\.cargo)/", first)[0]
    first = re.sub(r"(?:Generic \S+ error|Wrapped error): ", "", first)
    return re.sub(r"(Not found: )+", "Not found: ", first)[:240]


def open_table(db: Any, name: str) -> Any | None:
    """The table, or None when it does not exist. A table whose manifest cannot be read
    (truncated, corrupt, a file it needs missing) is :class:`StoreDamaged` naming it; any
    other failure propagates. (``tessera.store.health`` also checks a chunk table against its
    publications: a deleted latest manifest silently opens the version before it.)"""
    try:
        return db.open_table(name)
    except (RuntimeError, ValueError, OSError) as e:
        if isinstance(e, ValueError) and "was not found" in str(e):
            return None
        if is_storage_error(e):
            raise StoreDamaged(name, f"its manifest is unreadable: {error_text(e)}") from e
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
    """Every table of the store. A local store path that is a file (not a folder, not absent)
    is :class:`StoreDamaged`: LanceDB would list it as an empty store."""
    uri = str(getattr(db, "uri", ""))
    if uri and "://" not in uri and os.path.lexists(uri) and not os.path.isdir(uri):
        raise StoreDamaged(uri, "the store path is not a folder")
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
