"""Directory configuration: where a tenant's users and groups come from (``tenants.T.directory``).

    directory:
      kind: ldap
      url: ldaps://ldap.example.org        # ldap:// or ldaps://; start_tls: true upgrades ldap://
      bind_dn: cn=tessera,ou=services,dc=example,dc=org
      password_env: TESSERA_LDAP_PASSWORD  # or password_file: /run/secrets/ldap; never inline
      user_base: ou=people,dc=example,dc=org
      group_base: ou=groups,dc=example,dc=org
      member_attribute: member             # member | uniqueMember (DNs) | memberUid (user names)
      refresh_seconds: 300                 # the bound: a directory change reaches search within it
      grace_seconds: 3600                  # an outage serves the last membership this long, then refuses

Secrets never sit in the configuration: the bind password is read from ``password_env`` or
``password_file`` when the directory is contacted, and never logged.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tessera.config_source import resolve_path
from tessera.config_values import boolean, check_keys, choice, integer, number, string
from tessera.errors import ConfigError

MEMBER_ATTRIBUTES = ("member", "uniqueMember", "memberUid")
_ATTR = re.compile(r"[A-Za-z][A-Za-z0-9-]{0,63}")
_KEYS = {
    "kind",
    "url",
    "bind_dn",
    "password_env",
    "password_file",
    "start_tls",
    "ca_file",
    "user_base",
    "user_filter",
    "user_attribute",
    "group_base",
    "group_filter",
    "group_attribute",
    "member_attribute",
    "timeout_seconds",
    "page_size",
    "refresh_seconds",
    "grace_seconds",
    "max_drop_fraction",
}


@dataclass(frozen=True)
class DirectoryConfig:
    """A tenant's LDAP directory (see the module docstring for the keys)."""

    kind: str
    url: str
    user_base: str
    group_base: str
    bind_dn: str = ""
    password_env: str = ""
    password_file: Path | None = None
    start_tls: bool = False
    ca_file: Path | None = None
    user_filter: str = "(objectClass=inetOrgPerson)"
    user_attribute: str = "uid"
    group_filter: str = "(objectClass=groupOfNames)"
    group_attribute: str = "cn"
    member_attribute: str = "member"
    timeout_seconds: float = 10.0
    page_size: int = 500
    refresh_seconds: float = 300.0
    """A change in the directory reaches search within this (refresh-on-read and the sensor)."""
    grace_seconds: float = 3600.0
    """After a failed refresh the last membership serves until this long after the last
    successful one; then every lookup of the tenant fails closed (DirectoryUnavailable)."""
    max_drop_fraction: float = 0.5
    """A refresh that loses more than this fraction of the known users is refused (reported,
    the previous membership kept until the grace runs out)."""

    @property
    def identity(self) -> str:
        """What the persisted membership was fetched from: another directory starts afresh."""
        return f"{self.url} {self.user_base} {self.group_base} {self.member_attribute}"


def _filter(data: Mapping[str, Any], name: str, key: str, default: str) -> str:
    value = string(data, name, key, default)
    depth = 0
    for ch in value:
        depth += {"(": 1, ")": -1}.get(ch, 0)
        if depth < 0:
            break
    if not value.startswith("(") or depth != 0:
        raise ConfigError(f"{key}.{name}", f"expected a parenthesised LDAP filter, got {value!r}")
    return value


def _attribute(data: Mapping[str, Any], name: str, key: str, default: str) -> str:
    value = string(data, name, key, default)
    if not _ATTR.fullmatch(value):
        raise ConfigError(f"{key}.{name}", f"expected an attribute name, got {value!r}")
    return value


def parse_directory(data: object, key: str, base: Path) -> DirectoryConfig | None:
    """``tenants.T.directory`` validated; None when absent. Errors name the bad key."""
    if data is None:
        return None
    if not isinstance(data, Mapping):
        raise ConfigError(key, f"expected a mapping, got {type(data).__name__}")
    check_keys(data, key, _KEYS)
    kind = choice(data, "kind", key, "", ("ldap",))
    url = string(data, "url", key)
    if not re.fullmatch(r"ldaps?://[A-Za-z0-9.\-\[\]:]+/?", url):
        raise ConfigError(f"{key}.url", f"expected ldap://host[:port] or ldaps://host[:port], got {url!r}")
    if "password" in data:
        raise ConfigError(f"{key}.password", "never inline a secret: use password_env or password_file")
    bind_dn = string(data, "bind_dn", key, "")
    env, file = string(data, "password_env", key, ""), string(data, "password_file", key, "")
    if bind_dn and bool(env) == bool(file):
        raise ConfigError(f"{key}.password_env", "a bind_dn needs exactly one of password_env, password_file")
    if not bind_dn and (env or file):
        raise ConfigError(f"{key}.bind_dn", "a password without a bind_dn")
    refresh = number(data, "refresh_seconds", key, 300.0, 1.0, 86_400.0)
    grace = number(data, "grace_seconds", key, 3600.0, 1.0, 30 * 86_400.0)
    if grace < refresh:
        raise ConfigError(f"{key}.grace_seconds", "must be at least refresh_seconds")
    ca = string(data, "ca_file", key, "")
    tls = boolean(data, "start_tls", key, False)
    if tls and url.startswith("ldaps://"):
        raise ConfigError(f"{key}.start_tls", "ldaps:// is TLS already; start_tls is for ldap://")
    return DirectoryConfig(
        kind=kind,
        url=url.rstrip("/"),
        user_base=string(data, "user_base", key),
        group_base=string(data, "group_base", key),
        bind_dn=bind_dn,
        password_env=env,
        password_file=resolve_path(base, file) if file else None,
        start_tls=tls,
        ca_file=resolve_path(base, ca) if ca else None,
        user_filter=_filter(data, "user_filter", key, DirectoryConfig.user_filter),
        user_attribute=_attribute(data, "user_attribute", key, "uid"),
        group_filter=_filter(data, "group_filter", key, DirectoryConfig.group_filter),
        group_attribute=_attribute(data, "group_attribute", key, "cn"),
        member_attribute=choice(data, "member_attribute", key, "member", MEMBER_ATTRIBUTES),
        timeout_seconds=number(data, "timeout_seconds", key, 10.0, 0.1, 300.0),
        page_size=integer(data, "page_size", key, 500, 1, 10_000),
        refresh_seconds=refresh,
        grace_seconds=grace,
        max_drop_fraction=number(data, "max_drop_fraction", key, 0.5, 0.0, 1.0),
    )
