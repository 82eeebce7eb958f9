"""The active model and the checked chunk table of a tenant, for a search: validated again only
when one of the tables behind them changed.

Every search reads the tenant's active pointer, then opens its chunk table through the damage
checks of ``tessera.store.health.open_checked`` (the publications log, the table, its tags),
and pins the dataset of the version it opened. On the 100k-chunk benchmark that took 3.5-4 ms
of a 14 ms search, for an answer that changes only with a commit to one of three tables.

So the answer is held per connection, tenant and model, with a mark per table taken before the
answer is worked out: the table's latest version (Lance reads it from the version directory,
~10 µs on a local disk) and the identity of that directory (``_versions``: inode and
modification time), or the table's absence. A commit raises the latest version, a deleted
manifest lowers it, and a table dropped and built again, even to the same version number, has
another directory (or one modified later: a run takes longer than the clock's tick). A later
search compares the three marks and reuses the answer only when all are unchanged; anything
else, a failure to read them included, works the answer out again, checks included. As the
marks are taken first, a commit racing with the answer can only cause one more check, never a
stale answer. On an object store answers are never reused: a version listing alone cannot tell
a table dropped and built again to the same version number from the old one, whose rows a held
answer (and the rows held in memory, ``tessera.search.flat``) would go on serving. Not covered:
a manifest overwritten in place (truncated) changes none of the marks; a new process, or
``tessera doctor``, refuses it. A new connection (``reset_connections``) starts afresh.
"""

from __future__ import annotations

import os
import threading
import weakref
from dataclasses import dataclass
from typing import Any

from tessera.search.dataset import Pinned, pin
from tessera.search.memo import Memo
from tessera.store.active import ActiveModel, ActivePointer, active_table_name
from tessera.store.db import chunks_table_name, connect, publications_table_name
from tessera.store.index import TenantIndex

_KEEP = 256
"""Tenant answers held per connection."""
_LOCK = threading.Lock()
_HELD: weakref.WeakKeyDictionary[Any, Memo[tuple[str, str], _Held]] = weakref.WeakKeyDictionary()


@dataclass(frozen=True)
class _Mark:
    """A table when an answer was worked out: its latest version and version directory
    (``stamp``; None: absent), read through ``dataset``; ``path`` None: nothing can be confirmed."""

    path: str | None
    dataset: Any
    stamp: tuple[int, int, int] | None

    def unchanged(self) -> bool:
        return (
            self.path is not None
            and self.stamp != _UNREADABLE
            and _stamp(self.path, self.dataset) == self.stamp
        )


_UNREADABLE = (-1, -1, -1)
"""The mark of a table that is there but cannot be read: never equal to what it was."""


def _stamp(path: str, dataset: Any) -> tuple[int, int, int] | None:
    """(latest version, inode and mtime of ``_versions``) of the table at ``path`` as
    ``dataset`` reads it; None when it is absent, ``_UNREADABLE`` when it cannot be read."""
    try:
        st = os.stat(os.path.join(path, "_versions"))
        if dataset is None:  # absent when marked: there now
            return _UNREADABLE
        return int(dataset.latest_version), st.st_ino, st.st_mtime_ns
    except FileNotFoundError:
        return None if not os.path.exists(path) else _UNREADABLE
    except (OSError, RuntimeError, ValueError):  # the checks of the full path say why
        return _UNREADABLE


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
    if "://" in index_uri:  # an object store: never reused (see the module's docstring)
        return _Mark(None, None, None)
    import lance

    path = os.path.join(index_uri, f"{name}.lance")
    if not os.path.isdir(os.path.join(path, "_versions")):
        return _Mark(path, None, _stamp(path, None))
    try:
        dataset = lance.dataset(path)
    except (OSError, RuntimeError, ValueError):  # unreadable: never reused
        return _Mark(None, None, None)
    return _Mark(path, dataset, _stamp(path, dataset))
