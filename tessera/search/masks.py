"""The rows a principal's claims admit, as a row allowlist, once per table version and claims.

A candidate query under a SQL prefilter evaluates the filter itself (the LABEL_LIST lookups of
``readers`` and ``groups``, then a row mask), and a hybrid search's two candidate queries did
that twice a search. Here the claims' rows are read once per table version and claims string
(a version never changes, so neither do the rows its claims admit), serialized as Lance's row
allowlist (``row_addr_allowlist``, applied before KNN and BM25 ranking, so k results are not
starved), and handed to both queries. On 100k chunks, side by side on a quiet machine: hybrid
search p50 -2.0 ms (23.9 -> 21.8 and 24.6 -> 22.6 ms in two runs of 150 queries).

Building a mask costs about as much as it saves once (a principal's first search with it: +2.6
ms), so a principal's first search of a version runs under the SQL claims and only marks the
key; its next search builds the mask (``mask_for``). One-off principals pay nothing. A search
is what runs inside :func:`one_search` (``tessera.search.retrieval`` wraps each): the dense and
BM25 queries of one hybrid search are one sighting, not two. They used to be two, so the
second of them built the mask during the first search (4 ms on a worker thread beside the
dense query; 100k chunks, 60 principals of groups no one searched, three alternated pairs of
processes: p50 33.8 / 34.6 / 33.1 -> 28.6 / 31.3 / 32.6 ms). Outside a search every candidate
query is a sighting.

Principals of the same groups share masks (and the rows ``tessera.search.flat`` holds): a
principal's claims are its user on ``readers`` OR its groups on ``groups``, and when the user
is on no row's ``readers`` in this version, its claims admit exactly the rows of its groups'
claim, so that claim keys the mask (``claims_of``; checked once per version and user with the
``readers`` index, about 0.5 ms on 100k chunks). A user whose own rows exist keeps its own.

The mask narrows what the queries rank to the claims' rows exactly as the SQL prefilter did;
every row they return is still checked against the rest of the access filter (tenant, dates,
flags: ``tessera.search.scope``), and a row failing it sends the query to the whole filter in
SQL. A new version (a publish, an ACL change, a restore) gets a mask of its own, and so does a
table dropped and built again up to the same version number (the key holds the commit time:
``tessera.search.dataset.version_key``); the claims are not checked again on the rows, so an
old mask must never answer for another commit.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from itertools import count
from typing import Any

from tessera.search.dataset import version_key
from tessera.search.memo import Memo
from tessera.search.scope import Scope

_KEEP = 256
"""Masks remembered (all tenants, versions and principals of a process together)."""
_MAX_BYTES = 64 << 20
"""Serialized masks remembered in all; the least recently used go first."""


@dataclass(frozen=True)
class Allowed:
    """The rows of one dataset version that ``claims`` admits, as a serialized allowlist of
    row ids (what a scan's ``row_addr_allowlist`` takes)."""

    claims: str
    blob: bytes
    rows: int


Key = tuple[str, int, str, str]
_MASKS: Memo[Key, Allowed] = Memo(_KEEP, _MAX_BYTES, lambda m: len(m.blob))
_SEEN: Memo[Key, int] = Memo(4 * _KEEP)
"""(version, claims) -> the search that sighted them first (0: a query outside a search)."""
_SEARCH: ContextVar[int] = ContextVar("tessera_search", default=0)
_SEARCHES = count(1)
_LOCK = threading.Lock()
_BUILDING: dict[Key, threading.Event] = {}
"""Masks being built now, each by one thread."""
_NO_OWN_ROWS: Memo[Key, bool] = Memo(16 * _KEEP)
"""(version, reader claim) -> whether the user is on no row's ``readers`` in that version."""


def claims_of(ds: Any, scope: Scope) -> str:
    """The claims a query of this dataset version runs under: the group claim alone when the
    reader claim admits no row of the version (the same rows, shared by every user of those
    groups), else the principal's whole claims."""
    if not scope.group_claim or not scope.reader_claim:
        return scope.claims
    key = (*version_key(ds), scope.reader_claim)
    none = _NO_OWN_ROWS.get(key)
    if none is None:
        none = _NO_OWN_ROWS.put(key, int(ds.count_rows(filter=scope.reader_claim)) == 0)
    return scope.group_claims if none else scope.claims


@contextmanager
def one_search() -> Iterator[None]:
    """The candidate queries run inside (on this thread, or carried to another with
    ``contextvars.copy_context``) are one search: they sight a claims' mask once."""
    token = _SEARCH.set(next(_SEARCHES))
    try:
        yield
    finally:
        _SEARCH.reset(token)


def mask_for(ds: Any, claims: str) -> Allowed | None:
    """The claims' mask when this version and claims were searched before (built now if it
    is not remembered); None on the first sighting, which only marks it, and for every query
    of the search that sighted it first."""
    key = (*version_key(ds), claims)
    known = _MASKS.get(key)
    if known is not None:
        return known
    search, first = _SEARCH.get(), _SEEN.get(key)
    if first is None:
        _SEEN.put(key, search)
        return None
    if search and first == search:  # the other query of the search that sighted it
        return None
    return _build_once(ds, key, claims)


def claims_mask(ds: Any, claims: str) -> Allowed:
    """The rows of this dataset version that the SQL ``claims`` admits (remembered)."""
    key = (*version_key(ds), claims)
    return _MASKS.get(key) or _build_once(ds, key, claims)


def _build_once(ds: Any, key: Key, claims: str) -> Allowed:
    """Build the mask, or wait for the thread already building it (a hybrid search's two
    queries ask at once)."""
    with _LOCK:
        known = _MASKS.get(key)
        if known is not None:
            return known
        building = _BUILDING.get(key)
        if building is None:
            building = _BUILDING[key] = threading.Event()
            mine = True
        else:
            mine = False
    if not mine:
        building.wait()
        return _MASKS.get(key) or _build_once(ds, key, claims)  # its builder failed, or it went
    try:
        return _build(ds, key, claims)
    finally:
        with _LOCK:
            del _BUILDING[key]
        building.set()


def _build(ds: Any, key: Key, claims: str) -> Allowed:
    from lance.dataset import serialize_row_addrs  # pylance loads with the first dataset

    ids = ds.to_table(columns=[], filter=claims, with_row_id=True).column("_rowid")
    return _MASKS.put(key, Allowed(claims, serialize_row_addrs(ids.to_numpy().tolist()), len(ids)))


def scan_args(restriction: str | Allowed) -> dict[str, Any]:
    """The scan arguments that restrict a candidate query: a SQL prefilter or an allowlist."""
    if isinstance(restriction, Allowed):
        return {"row_addr_allowlist": restriction.blob}
    return {"filter": restriction, "prefilter": True}
