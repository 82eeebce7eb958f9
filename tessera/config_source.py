"""Source configuration: where a tenant's documents live (folder, S3, git), validated when built."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tessera.config_values import check_keys as _check_keys
from tessera.config_values import string as _str
from tessera.errors import ConfigError


def resolve_path(base: Path, value: str) -> Path:
    """Absolute and normalized, without following links: a source root that is a link must be
    seen as one (and refused), not silently replaced by its target."""
    p = Path(value)
    return p if p.is_absolute() else Path(os.path.normpath(base.absolute() / p))


@dataclass(frozen=True)
class SourceConfig:
    """Where a tenant's documents live. ``kind`` selects the connector.

    folder: ``path``. s3: ``bucket``, ``prefix``, optional ``endpoint_url`` (MinIO and other
    S3-compatible stores) and ``region``; credentials come from the environment, never from
    this file. git: ``repo`` (a local clone or bare repository), ``ref``, optional ``subdir``.
    """

    kind: str
    path: Path | None = None
    bucket: str = ""
    prefix: str = ""
    endpoint_url: str | None = None
    region: str = "us-east-1"
    repo: Path | None = None
    ref: str = "HEAD"
    subdir: str = ""
    timeout_seconds: float = 30.0


_SOURCE_KEYS = {
    "folder": {"path"},
    "s3": {"bucket", "prefix", "endpoint_url", "region"},
    "git": {"repo", "ref", "subdir"},
}


def parse_source(data: Mapping[str, Any], key: str, base: Path) -> SourceConfig:
    kind = _str(data, "kind", key)
    if kind not in _SOURCE_KEYS:
        raise ConfigError(
            f"{key}.kind", f"unsupported source kind {kind!r}; supported: {sorted(_SOURCE_KEYS)}"
        )
    _check_keys(data, key, {"kind", "timeout_seconds"} | _SOURCE_KEYS[kind])
    timeout = data.get("timeout_seconds", 30.0)
    if isinstance(timeout, bool) or not isinstance(timeout, int | float) or not 0 < timeout <= 3600:
        raise ConfigError(f"{key}.timeout_seconds", f"expected seconds in (0, 3600], got {timeout!r}")
    if kind == "folder":
        return SourceConfig(
            kind, path=resolve_path(base, _str(data, "path", key)), timeout_seconds=float(timeout)
        )
    if kind == "s3":
        bucket = _str(data, "bucket", key)
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise ConfigError(f"{key}.bucket", f"invalid bucket name {bucket!r}")
        prefix = _str(data, "prefix", key, "")
        if prefix.startswith("/") or ".." in prefix.split("/"):
            raise ConfigError(f"{key}.prefix", f"invalid prefix {prefix!r}")
        endpoint = data.get("endpoint_url")
        if endpoint is not None and (not isinstance(endpoint, str) or not re.match(r"https?://", endpoint)):
            raise ConfigError(f"{key}.endpoint_url", f"expected an http(s) URL, got {endpoint!r}")
        return SourceConfig(
            kind,
            bucket=bucket,
            prefix=prefix,
            endpoint_url=endpoint,
            region=_str(data, "region", key, "us-east-1"),
            timeout_seconds=float(timeout),
        )
    ref = _str(data, "ref", key, "HEAD")
    if ref.startswith("-") or not re.fullmatch(r"[A-Za-z0-9._/@^~{}-]+", ref):
        raise ConfigError(f"{key}.ref", f"invalid git ref {ref!r}")
    subdir = _str(data, "subdir", key, "").strip("/")
    if ".." in subdir.split("/"):
        raise ConfigError(f"{key}.subdir", f"invalid subdir {subdir!r}")
    return SourceConfig(
        kind,
        repo=resolve_path(base, _str(data, "repo", key)),
        ref=ref,
        subdir=subdir,
        timeout_seconds=float(timeout),
    )
