"""Who is asking. A principal comes from trusted configuration, never from the query."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from tessera.config import TesseraConfig
from tessera.store.db import sql_str
from tessera.store.schema import micros


@dataclass(frozen=True)
class Principal:
    tenant: str
    user: str
    groups: tuple[str, ...] = ()


def principal_from_config(cfg: TesseraConfig, tenant: str, user: str) -> Principal | None:
    """The principal for a user listed in the tenant's directory; None for anyone else."""
    entry = cfg.tenant(tenant).users.get(user)
    if entry is None:
        return None
    return Principal(tenant=tenant, user=user, groups=entry.groups)


def access_filter(principal: Principal | None, as_of: datetime) -> str | None:
    """A LanceDB prefilter for what the principal may read at ``as_of``; None = nothing.

    Readers or groups must intersect the principal's claims; empty claims match nothing.
    Values are escaped literals, so ACL strings cannot inject filter syntax.
    """
    if principal is None or not principal.user:
        return None
    claims = [f"array_has_any(readers, [{sql_str(principal.user)}])"]
    if principal.groups:
        claims.append(f"array_has_any(groups, [{', '.join(sql_str(g) for g in principal.groups)}])")
    t = micros(as_of)
    return (
        f"tenant = {sql_str(principal.tenant)} AND ({' OR '.join(claims)}) "
        f"AND effective_from_us <= {t} AND effective_to_us > {t}"
    )
