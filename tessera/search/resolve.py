"""The active model and the checked chunk table of a tenant, for a search: validated again only
when one of the tables behind them changed.

Every search reads the tenant's active pointer, then opens its chunk table through the damage
checks of ``tessera.store.health.open_checked`` (the publications log, the table, its tags),
and pins the dataset of the version it opened. On the 100k-chunk benchmark that took 3.5-4 ms
of a 14 ms search, for an answer that changes only with a commit to one of three tables.

So the answer is held per connection, tenant and model, with a mark per table: the latest
version its directory held before the answer was worked out, or its absence. A later search
compares each mark with the table's latest version (Lance reads it from the version directory:
~10 µs on a local disk) and reuses the answer only when all three are unchanged; any commit, a
deleted manifest (the latest version moves back), a table created or dropped, or a failure to
read the version, works the answer out again, checks included. Marks are taken before the
answer is read, so a commit racing with it can only cause one more check, never a stale
answer. An absent table is confirmed absent on a local disk only; on an object store an answer
with an absent table is never reused. A new connection (``reset_connections``) starts afresh.
"""

from __future__ import annotations

import logging
import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from tessera.search.dataset import Pinned, pin
from tessera.search.memo import Memo
from tessera.store.active import ActiveModel, ActivePointer, active_table_name
from tessera.store.db import chunks_table_name, connect, publications_table_name, s3_storage_options
from tessera.store.index import TenantIndex

log = logging.getLogger(__name__)

_KEEP = 256
"""Tenant answers held per connection."""
_LOCK = threading.Lock()
_HELD: weakref.WeakKeyDictionary[Any, Memo[tuple[str, str], _Held]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Mark:
    """A table's latest version when an answer was worked out (None: the table was absent)."""

    path: str
    dataset: Any
    version: int | None

    def unchanged(self) -> bool:
        if self.dataset is None:
            return "://" not in self.path and not os.path.isdir(self.path)
        try:
            return int(self.dataset.latest_version) == self.version
        except (OSError, RuntimeError, ValueError) as e:  # unreadable now: the full path says why
            log.debug("the latest version of %s is unreadable (%s); checking the tenant again", self.path, e)
            return False


@dataclass(frozen=True)
class _Held:
    marks: tuple[_Mark, ...]
    active: ActiveModel | None
    table: Pinned | None


def tenant_table(
    index_uri: str, tenant: str, model_key: str, dimension: int
) -> tuple[ActiveModel | None, Pinned | None]:
    """The tenant's active model (None: no pointer yet) and its chunk table for ``model_key``,
    pinned (None: never built); ``StoreDamaged`` as ``TenantIndex.table`` raises it."""
    names = (chunks_table_name(tenant, model_key), publications_table_name(tenant), active_table_name(tenant))
    db = connect(index_uri)
    held = _memo(db)
    key = (tenant, model_key)
    known = held.get(key)
    if known is not None and all(m.unchanged() for m in known.marks):
        return known.active, known.table
    marks = tuple(_mark(index_uri, name) for name in names)
    active = ActivePointer(db, tenant).get()
    table = TenantIndex(db, tenant, model_key, dimension).table()
    answer = _Held(marks, active, None if table is None else pin(table))
    held.put(key, answer)
    return answer.active, answer.table


def _memo(db: Any) -> Memo[tuple[str, str], _Held]:
    with _LOCK:
        if db not in _HELD:
            _HELD[db] = Memo(_KEEP)
        return _HELD[db]


def _mark(index_uri: str, name: str) -> _Mark:
    import lance

    path = f"{index_uri.rstrip('/')}/{name}.lance"
    if "://" not in path and not os.path.isdir(path):
        return _Mark(path, None, None)
    try:
        options = s3_storage_options() if path.startswith("s3://") else None
        dataset = lance.dataset(path, storage_options=options or None)
        return _Mark(path, dataset, int(dataset.latest_version))
    except (OSError, RuntimeError, ValueError) as e:  # absent or unreadable: never reused
        log.debug("no version mark for %s (%s)", path, e)
        return _Mark("unreadable://" + path, None, None)
