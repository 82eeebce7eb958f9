"""Source configuration: where a tenant's documents live (folder, S3, git), validated when built."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tessera.config_values import boolean, number
from tessera.config_values import check_keys as _check_keys
from tessera.config_values import string as _str
from tessera.errors import ConfigError


def resolve_path(base: Path, value: str) -> Path:
    """Absolute and normalized, without following links: a source root that is a link must be
    seen as one (and refused), not silently replaced by its target."""
    p = Path(value)
    return p if p.is_absolute() else Path(os.path.normpath(base.absolute() / p))


_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


@dataclass(frozen=True)
class PosixAccess:
    """folder ``posix_access``: a file's owner (user name or uid, as a string) -> the readers
    it grants, its group (group name or gid) -> the groups it grants. A file whose owner or
    group is listed gets exactly the union of what its entries grant, unless an
    ``_access.yaml`` rule sets its ACL (the rule wins); other files get the tenant default."""

    owners: Mapping[str, tuple[str, ...]]
    groups: Mapping[str, tuple[str, ...]]


def _grants(data: object, key: str) -> dict[str, tuple[str, ...]]:
    if data is None:
        return {}
    if not isinstance(data, Mapping):
        raise ConfigError(key, f"expected a mapping, got {type(data).__name__}")
    out: dict[str, tuple[str, ...]] = {}
    for name, value in data.items():
        names = [value] if isinstance(value, str) else value
        if (
            not isinstance(names, list)
            or not names
            or not all(isinstance(n, str) and _NAME.fullmatch(n) for n in names)
        ):
            raise ConfigError(f"{key}.{name}", f"expected a name or a non-empty list of names, got {value!r}")
        out[str(name)] = tuple(sorted(set(names)))
    return out


def parse_posix(data: object, key: str) -> PosixAccess | None:
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ConfigError(key, f"expected a mapping, got {type(data).__name__}")
    _check_keys(data, key, {"owners", "groups"})
    owners, groups = (
        _grants(data.get("owners"), f"{key}.owners"),
        _grants(data.get("groups"), f"{key}.groups"),
    )
    if not owners and not groups:
        raise ConfigError(key, "map at least one owner or group (or leave posix_access out)")
    return PosixAccess(owners, groups)


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
    tags: bool = True
    """s3: read ``tessera-*`` object tags as well as metadata (:mod:`tessera.sources.s3_tags`)."""
    tags_refresh_seconds: float = 86_400.0
    """s3: how old cached tags of an unchanged object may get (a tag edit keeps the ETag)."""
    posix_access: PosixAccess | None = None
    """folder: readers and groups from the files' POSIX owner and group (:mod:`tessera.sources.posix`)."""


_SOURCE_KEYS = {
    "folder": {"path", "posix_access"},
    "s3": {"bucket", "prefix", "endpoint_url", "region", "tags", "tags_refresh_seconds"},
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
            kind,
            path=resolve_path(base, _str(data, "path", key)),
            timeout_seconds=float(timeout),
            posix_access=parse_posix(data.get("posix_access"), f"{key}.posix_access"),
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
            tags=boolean(data, "tags", key, True),
            tags_refresh_seconds=number(data, "tags_refresh_seconds", key, 86_400.0, 0.0, 30 * 86_400.0),
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
