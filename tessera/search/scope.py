"""The part of an access filter that candidate rows can be checked against in Python.

An access filter (``principal.access_filter``) is the principal's claims on ``readers`` and
``groups`` (answered by their LABEL_LIST indexes) AND the tenant, the effective dates and the
flags (read and checked row by row). Those row checks cost about as much as the rest of a
candidate query on 100k chunks. So candidate queries run under the claims alone, read the
checked columns of the few rows they return, and check them here; only when a returned row
fails (a flagged or superseded chunk ranks among them) is the query run again under the whole
filter. Either way no row outside the filter is returned, and k results are not starved: the
top rows under the claims, all admitted, are the top rows under the whole filter.

Only a filter string ``access_filter`` made is split: it is registered here with its parts;
any other string is used whole.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

CHECKED = ["tenant", "effective_from_us", "effective_to_us", "flags"]
"""The columns ``Scope.admits`` reads."""
_KEEP = 1024
_LOCK = threading.Lock()
_SCOPES: OrderedDict[str, Scope] = OrderedDict()


@dataclass(frozen=True)
class Scope:
    """``claims``: the SQL of the principal's claims, the OR of ``reader_claim`` (the user on
    ``readers``) and ``group_claim`` (its groups on ``groups``; empty without groups), kept
    apart so that principals of the same groups can share what their claims admit
    (``tessera.search.masks.claims_of``); the rest is checked by ``admits``, with the same
    meaning as the SQL of the whole filter (null bounds admit nothing)."""

    reader_claim: str
    group_claim: str
    tenant: str
    at_us: int
    excluded_flags: tuple[str, ...]

    @property
    def claims(self) -> str:
        return _any_of(self.reader_claim, self.group_claim)

    @property
    def group_claims(self) -> str:
        """The group claim alone, as claims (what every user of these groups on no row's
        ``readers`` is admitted to)."""
        return _any_of(self.group_claim)

    def admits(self, row: dict[str, Any]) -> bool:
        start, end = row["effective_from_us"], row["effective_to_us"]
        if row["tenant"] != self.tenant or start is None or end is None or not start <= self.at_us < end:
            return False
        return not set(row["flags"] or ()) & set(self.excluded_flags)


def register(where: str, scope: Scope) -> str:
    """Remember that the filter ``where`` is ``scope.claims`` AND the checks of ``scope``."""
    with _LOCK:
        _SCOPES[where] = scope
        _SCOPES.move_to_end(where)
        while len(_SCOPES) > _KEEP:
            _SCOPES.popitem(last=False)
    return where


def scope_of(where: str) -> Scope | None:
    """The parts of a filter ``access_filter`` made (None for any other string)."""
    with _LOCK:
        return _SCOPES.get(where)


def _any_of(*claims: str) -> str:
    return f"({' OR '.join(c for c in claims if c)})"
