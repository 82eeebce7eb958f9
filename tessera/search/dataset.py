"""The tenant's table of a search, and the Lance dataset behind its handle.

A search's candidate, row and copy queries go to the Lance dataset of the handle's version
(``LanceTable.to_lance``) rather than through LanceDB's query builders: on the 100k-chunk
benchmark each LanceDB query paid 3-10 ms of its own (planning, several round trips to its
event loop) on top of the same Lance scan. Datasets are opened at the handle's version, so
every query of a search reads that one version and the row ids of one query name the same
rows in the next. The datasets of one connection share one ``lance.Session`` (bounded index
caches; an index unchanged between versions stays cached) and go with the connection.

A search pins its handle first (``pin``): the dataset is resolved once, and its candidate, row
and copy queries reuse it without asking LanceDB for the handle's version again (each ask is a
round trip to LanceDB's event loop: ~0.5 ms, several ms while the CPUs are busy).
"""

from __future__ import annotations

import threading
import weakref
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any

from tessera.embedding.base import Embedder
from tessera.search.memo import Memo
from tessera.store.db import connect
from tessera.store.index import TenantIndex

_OPEN_MAX = 32
_LOCK = threading.Lock()
_CACHES: weakref.WeakKeyDictionary[Any, tuple[OrderedDict[tuple[str, int, int], Any], Any]] = (
    weakref.WeakKeyDictionary()
)


def open_table(index_uri: str, embedder: Embedder, tenant: str) -> Any | None:
    ident = embedder.identity
    return TenantIndex(connect(index_uri), tenant, ident.key, ident.dimension).table()


@dataclass(frozen=True)
class Pinned:
    """A table handle with the dataset of the version it read when pinned; every other
    attribute is the handle's (``table.search()`` and the like still work; ``version`` is the
    handle's current one, ``ds.version`` the pinned one)."""

    table: Any
    ds: Any

    def __getattr__(self, name: str) -> Any:
        if name in ("table", "ds") or name.startswith("__"):  # copying, unpickling: no recursion
            raise AttributeError(name)
        return getattr(self.table, name)


def pin(table: Any) -> Pinned:
    """``table`` with its dataset resolved now, for the queries of one search."""
    return table if isinstance(table, Pinned) else Pinned(table, dataset(table))


def dataset(table: Any) -> Any:
    """The ``lance.LanceDataset`` of ``table`` at the version the handle reads (the pinned one
    for a ``Pinned`` handle).

    Remembered per handle and version, not per table name and version: a table dropped and built
    again to the same version number (a purge, then a run) is another commit, which a handle
    opened since reads, and must never be answered by the old dataset (whose files are gone, and
    whose rows ``tessera.search.flat`` may hold)."""
    if isinstance(table, Pinned):
        return table.ds
    key = (str(table.uri), int(table.version), id(table))
    opened, session = _cache(table._conn)
    with _LOCK:
        known = opened.get(key)
        if known is not None and known[0]() is table:
            opened.move_to_end(key)
            return known[1]
    ds = table.to_lance(session=session)
    if int(ds.version) != key[1]:
        raise RuntimeError(f"opened version {ds.version} of {key[0]}, the handle reads {key[1]}")
    with _LOCK:
        opened[key] = (weakref.ref(table), ds)
        while len(opened) > _OPEN_MAX:
            opened.popitem(last=False)
    return ds


_NAMES: Memo[tuple[str, int, str], tuple[str, ...]] = Memo(_OPEN_MAX)


def version_key(ds: Any) -> tuple[str, int, str]:
    """The identity of the commit a dataset reads: its uri, version number and commit time
    (from the loaded manifest, ~3 µs). A table dropped and built again up to the same version
    number has other commit times, so a cache keyed by this never answers for the old one."""
    version = ds.get_version()
    return str(ds.uri), int(version["version"]), version["timestamp"].isoformat()


def column_names(ds: Any) -> tuple[str, ...]:
    """The column names of this dataset version, remembered per version: ``ds.schema`` converts
    the whole schema from Lance on every read (~0.35 ms, three times a search before)."""
    key = version_key(ds)
    names = _NAMES.get(key)
    return names if names is not None else _NAMES.put(key, tuple(ds.schema.names))


def _cache(conn: Any) -> tuple[OrderedDict[tuple[str, int, int], Any], Any]:
    """The open datasets and the session of one LanceDB connection: they live as long as it
    does, so a fresh connection (``connect(..., fresh=True)``, ``reset_connections``) reads
    everything from the store again, as LanceDB's own caches do."""
    with _LOCK:
        if conn not in _CACHES:
            import lance

            session = lance.Session()  # type: ignore[attr-defined]  # re-exported, not in __all__
            _CACHES[conn] = (OrderedDict(), session)
        return _CACHES[conn]
