"""Per-document access and effective dates from a source's ``_access.yaml``."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass
from datetime import UTC, date, datetime
from pathlib import Path

import yaml

from tessera.config import AccessRule, parse_access_rule
from tessera.errors import ConfigError
from tessera.types import ALWAYS, NEVER

POLICY_FILE = "_access.yaml"


@dataclass(frozen=True)
class PolicyRule:
    match: str
    access: AccessRule | None
    effective_from: datetime
    effective_to: datetime


@dataclass(frozen=True)
class Policy:
    default: AccessRule
    rules: tuple[PolicyRule, ...]

    def resolve(self, rel_path: str) -> tuple[AccessRule, datetime, datetime]:
        """First matching rule wins (``*`` also crosses folders); else the tenant default."""
        for rule in self.rules:
            if fnmatch.fnmatchcase(rel_path, rule.match):
                return rule.access or self.default, rule.effective_from, rule.effective_to
        return self.default, ALWAYS, NEVER


def _date(value: object, key: str, default: datetime) -> datetime:
    if value is None:
        return default
    if isinstance(value, datetime):
        dt = value
    elif isinstance(value, date):  # unquoted YAML dates load as date: midnight UTC
        dt = datetime(value.year, value.month, value.day, tzinfo=UTC)
    elif isinstance(value, str):
        try:
            dt = datetime.fromisoformat(value.replace("Z", "+00:00"))
        except ValueError as e:
            raise ConfigError(key, f"not an ISO-8601 date: {value!r}") from e
    else:
        raise ConfigError(key, f"expected an ISO-8601 string, got {value!r}")
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def load_policy(root: Path, default: AccessRule) -> Policy:
    """The ``_access.yaml`` of a folder (tenant default only when there is none)."""
    path = root / POLICY_FILE
    if not path.exists():
        return Policy(default, ())
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise ConfigError(str(path), f"cannot read access policy: {e}") from e
    return parse_policy(raw, default, str(path))


def parse_policy(raw: bytes, default: AccessRule, name: str = POLICY_FILE) -> Policy:
    """Parse policy bytes (from a folder, an S3 object or a git blob); ``name`` labels errors."""
    try:
        data = yaml.safe_load(raw.decode("utf-8")) or {}
    except (UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(name, f"cannot read access policy: {e}") from e
    if not isinstance(data, dict) or set(data) - {"documents"}:
        raise ConfigError(name, "expected a mapping with one key, 'documents'")
    rules: list[PolicyRule] = []
    label = name.rsplit("/", 1)[-1]
    for k, item in enumerate(data.get("documents") or []):
        key = f"{label}.documents[{k}]"
        if not isinstance(item, dict) or not isinstance(item.get("match"), str):
            raise ConfigError(f"{key}.match", "each rule needs a 'match' glob")
        unknown = set(item) - {"match", "readers", "groups", "effective_from", "effective_to"}
        if unknown:
            raise ConfigError(f"{key}.{sorted(unknown)[0]}", "unknown key")
        has_acl = "readers" in item or "groups" in item
        access = parse_access_rule({k2: item[k2] for k2 in ("readers", "groups") if k2 in item}, key)
        if has_acl and not access.readers and not access.groups:
            raise ConfigError(key, "an access rule must name at least one reader or group (fail closed)")
        start = _date(item.get("effective_from"), f"{key}.effective_from", ALWAYS)
        end = _date(item.get("effective_to"), f"{key}.effective_to", NEVER)
        if end <= start:
            raise ConfigError(f"{key}.effective_to", "must be after effective_from")
        rules.append(PolicyRule(item["match"], access if has_acl else None, start, end))
    return Policy(default, tuple(rules))
