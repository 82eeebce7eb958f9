"""Typed readers for configuration mappings; every error names the dotted key that is wrong."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from tessera.errors import ConfigError


def mapping(value: object, key: str) -> Mapping[str, Any]:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise ConfigError(key, f"expected a mapping, got {type(value).__name__}")
    return value


def check_keys(data: Mapping[str, Any], key: str, allowed: set[str]) -> None:
    unknown = sorted(set(data) - allowed)
    if unknown:
        raise ConfigError(f"{key}.{unknown[0]}" if key else unknown[0], "unknown key")


def string(data: Mapping[str, Any], name: str, key: str, default: str | None = None) -> str:
    value = data.get(name, default)
    if not isinstance(value, str) or (default is None and not value):
        raise ConfigError(f"{key}.{name}", f"expected a non-empty string, got {value!r}")
    return value


def integer(data: Mapping[str, Any], name: str, key: str, default: int, lo: int, hi: int) -> int:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int) or not lo <= value <= hi:
        raise ConfigError(f"{key}.{name}", f"expected an integer in [{lo}, {hi}], got {value!r}")
    return value


def number(data: Mapping[str, Any], name: str, key: str, default: float, lo: float, hi: float) -> float:
    value = data.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or not lo <= value <= hi:
        raise ConfigError(f"{key}.{name}", f"expected a number in [{lo}, {hi}], got {value!r}")
    return float(value)


def boolean(data: Mapping[str, Any], name: str, key: str, default: bool) -> bool:
    value = data.get(name, default)
    if not isinstance(value, bool):
        raise ConfigError(f"{key}.{name}", f"expected true or false, got {value!r}")
    return value


def choice(data: Mapping[str, Any], name: str, key: str, default: str, allowed: tuple[str, ...]) -> str:
    value = data.get(name, default)
    if value not in allowed:
        raise ConfigError(f"{key}.{name}", f"expected one of {list(allowed)}, got {value!r}")
    return str(value)
