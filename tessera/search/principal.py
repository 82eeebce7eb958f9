"""Who is asking. A principal comes from trusted configuration, never from the query.

* ``principal_from_config``: the tenant's user directory (operators and tests).
* ``IdentityStore``: API keys mapped to (tenant, user) in a server-side file that holds only
  sha256 digests of the keys; the CLI's identity file holds one key and goes through it too.
  The API server wraps it in ``identities.ReloadingIdentities``, which follows both files.
"""

from __future__ import annotations

import hashlib
import hmac
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

import yaml

from tessera.config import TesseraConfig, validate_tenant_id
from tessera.errors import ConfigError
from tessera.search.scope import Scope, register
from tessera.store.db import sql_str
from tessera.store.schema import micros

_NEVER = 2**62
"""A bound no date reaches (year 9999 is ~2.5e17 microseconds): a null bound admits nothing."""
FLAGGED = ("hidden_text", "untrusted")
"""Chunk flags excluded from results unless the caller asks for them."""


@dataclass(frozen=True)
class Principal:
    tenant: str
    user: str
    groups: tuple[str, ...] = ()


def principal_from_config(cfg: TesseraConfig, tenant: str, user: str) -> Principal | None:
    """The principal for a user listed in ``access.users`` or known to the tenant's directory
    (``tenants.T.directory``); None for anyone else.

    Groups are the union of the configured ones and the directory's (the configuration is
    trusted too; removing a user from a directory group removes what that group gave). With a
    directory, the membership is at most ``refresh_seconds`` old; past its grace this raises
    :class:`~tessera.search.directory.DirectoryUnavailable` for every user of the tenant
    (fail closed), configured users included."""
    from tessera.search.directory.membership import directory_groups

    entry = cfg.tenant(tenant).users.get(user)
    found = directory_groups(cfg, tenant, user)
    if entry is None and found is None:
        return None
    groups = set(entry.groups if entry is not None else ()) | set(found or ())
    return Principal(tenant=tenant, user=user, groups=tuple(sorted(groups)))


def key_digest(api_key: str) -> str:
    return hashlib.sha256(api_key.encode("utf-8")).hexdigest()


class IdentityStore:
    """API key -> principal. The file lists ``{sha256, tenant, user}`` entries, never keys."""

    def __init__(self, cfg: TesseraConfig, entries: dict[str, tuple[str, str]]) -> None:
        self._cfg = cfg
        self._entries = entries

    @classmethod
    def load(cls, cfg: TesseraConfig, path: Path) -> IdentityStore:
        try:
            data = yaml.safe_load(path.read_text(encoding="utf-8")) or {}
        except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
            raise ConfigError(str(path), f"cannot read API keys: {e}") from e
        entries: dict[str, tuple[str, str]] = {}
        for k, item in enumerate(data.get("keys") or [] if isinstance(data, dict) else []):
            key = f"{path.name}.keys[{k}]"
            if not isinstance(item, dict) or set(item) != {"sha256", "tenant", "user"}:
                raise ConfigError(key, "each entry needs exactly sha256, tenant and user")
            digest = str(item["sha256"]).lower()
            if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
                raise ConfigError(f"{key}.sha256", "expected 64 hex digits (store digests, never keys)")
            entries[digest] = (validate_tenant_id(item["tenant"], f"{key}.tenant"), str(item["user"]))
        return cls(cfg, entries)

    def principal(self, api_key: str | None) -> Principal | None:
        """The key's principal, or None (unknown key, tenant or user): callers answer 401."""
        if not api_key:
            return None
        digest = key_digest(api_key)
        match = next((v for d, v in self._entries.items() if hmac.compare_digest(d, digest)), None)
        if match is None or match[0] not in self._cfg.tenants:
            return None
        return principal_from_config(self._cfg, *match)


def read_identity_file(path: Path) -> str:
    """The API key in a local identity file (``api_key: ...``) for the CLI."""
    try:
        data = yaml.safe_load(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, yaml.YAMLError) as e:
        raise ConfigError(str(path), f"cannot read identity file: {e}") from e
    if not isinstance(data, dict) or not isinstance(data.get("api_key"), str) or not data["api_key"]:
        raise ConfigError(f"{path}.api_key", "the identity file must hold a non-empty api_key")
    return str(data["api_key"])


def access_filter(principal: Principal | None, as_of: datetime, include_flagged: bool = False) -> str | None:
    """A LanceDB prefilter for what the principal may read at ``as_of``; None = nothing.

    Readers or groups must intersect the principal's claims; empty claims match nothing.
    Values are escaped literals, so ACL strings cannot inject filter syntax.

    The date bounds are written through ``coalesce`` (a missing bound still matches nothing)
    so that LanceDB checks them on the rows the ACL's LABEL_LIST indexes admit instead of
    resolving them through their BTREEs: nearly every row is in effect, and intersecting two
    all-row sets cost more (~5 ms a query on 100k chunks) than reading the dates of those rows.
    The filter is registered with its parts (``tessera.search.scope``): candidate queries
    run under the claims and check the rest on the rows they return.
    """
    if principal is None or not principal.user or not principal.tenant:
        return None
    groups = sorted(set(principal.groups))  # one claim string per set of groups (shared: masks)
    t = micros(as_of)
    scope = Scope(
        reader_claim=f"array_has_any(readers, [{sql_str(principal.user)}])",
        group_claim=f"array_has_any(groups, [{', '.join(sql_str(g) for g in groups)}])" if groups else "",
        tenant=principal.tenant,
        at_us=t,
        excluded_flags=() if include_flagged else FLAGGED,
    )
    where = (
        f"tenant = {sql_str(principal.tenant)} AND {scope.claims} "
        f"AND coalesce(effective_from_us, {_NEVER}) <= {t} AND coalesce(effective_to_us, {-_NEVER}) > {t}"
    )
    if not include_flagged:
        flagged = ", ".join(sql_str(f) for f in FLAGGED)
        where += f" AND (flags IS NULL OR NOT array_has_any(flags, [{flagged}]))"
    return register(where, scope)
