"""Which duplicate groups of a table version hold more than one row.

A hit's copies are the rows sharing its ``dup_group`` (``tessera.search.collapse``); finding
them is a query of its own under the principal's filter, and on 100k chunks it cost 3-5 ms of
a ~22 ms hybrid search even though almost every group has one row (the benchmark's 2 % of
exact copies is typical). So the groups holding two or more rows are counted once per table
version (a version never changes) and the copies query runs only when a group of the results
may hold a row that did not rank: a group counted more often than it ranked, or one not among
the ranked rows' groups at all. The count ignores access: it only decides whether to ask, and
the query that answers still runs under the principal's filter.

Counting reads the ``dup_group`` column once per version and process: ~30 ms at 100,000 rows,
paid by the first search after a publish; a few versions are remembered.
"""

from __future__ import annotations

import threading
from collections import Counter, OrderedDict
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow.compute as pc

from tessera.search.dataset import column_names

_KEEP = 8
_LOCK = threading.Lock()
_SHARED: OrderedDict[tuple[str, int], Mapping[str, int]] = OrderedDict()


def shared_groups(ds: Any) -> Mapping[str, int]:
    """``dup_group`` -> rows, for the groups of this dataset version with two rows or more."""
    key = (str(ds.uri), int(ds.version))
    with _LOCK:
        if key in _SHARED:
            _SHARED.move_to_end(key)
            return _SHARED[key]
    shared: dict[str, int] = {}
    if "dup_group" in column_names(ds):
        counts = pc.value_counts(ds.to_table(columns=["dup_group"]).column("dup_group"))
        values, rows = counts.field("values"), counts.field("counts")
        keep = pc.and_(pc.is_valid(values), pc.greater(rows, 1))
        shared = dict(zip(values.filter(keep).to_pylist(), rows.filter(keep).to_pylist(), strict=True))
    with _LOCK:
        _SHARED[key] = shared
        while len(_SHARED) > _KEEP:
            _SHARED.popitem(last=False)
    return shared


def copies_possible(ds: Any, ranked: Iterable[dict[str, Any]], groups: Iterable[str]) -> bool:
    """Whether a row outside ``ranked`` may have its ``dup_group`` in ``groups``: a group
    with more rows in the table than among ``ranked``, or one no ranked row is in (it may be
    some other row's group)."""
    shared = shared_groups(ds)
    held = Counter(r.get("dup_group") for r in ranked)
    return any(shared.get(g, 1) > held.get(g, 0) for g in groups)
