"""Which duplicate groups of a table version hold more than one row.

A hit's copies are the rows sharing its ``dup_group`` (``tessera.search.collapse``); finding
them is a query of its own under the principal's filter, and on 100k chunks it cost 3-5 ms of
a ~22 ms hybrid search even though almost every group has one row (the benchmark's 2 % of
exact copies is typical). So the groups holding two or more rows are counted once per table
version (a version never changes) and the copies query runs only when a group of the results
may hold a row that did not rank: a group counted more often than it ranked, or one not among
the ranked rows' groups at all. The count ignores access: it only decides whether to ask, and
the query that answers still runs under the principal's filter.

Groups are counted by a 64-bit key (``group_key``), streamed a batch at a time, so the count
holds 12 bytes per shared group, not the strings: 0.02 s at 100,000 rows, 0.3-0.5 s and
+100 MB peak at 1,000,000 (counting the strings took 1.2 s and +300 MB), paid by the first
search of a version in a process. Two groups with one key count as one: that can only make
a copy look possible and run the query, never skip it.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa

from tessera.search.dataset import column_names, version_key
from tessera.search.memo import Memo

_KEEP = 64
"""Table versions remembered (all tenants of a process together)."""
_MAX_KEYS = 2_000_000
"""Shared-group keys remembered in all, 12 bytes each; the oldest versions go first."""
_BATCH = 65_536
_MIX = np.uint64(0x9E3779B97F4A7C15)
_CHECKSUM_BYTES = 64
_MASK = 0xFFFF_FFFF_FFFF_FFFF
Keys = npt.NDArray[np.uint64]


@dataclass(frozen=True)
class Shared:
    """The groups of one table version with two rows or more: sorted keys and their rows."""

    keys: Keys
    rows: npt.NDArray[np.int64]

    def count(self, group: str) -> int:
        """Rows in ``group``: its count when shared, else 1 (at most one row has it)."""
        key = np.uint64(group_key(group))
        at = int(np.searchsorted(self.keys, key))
        return int(self.rows[at]) if at < len(self.keys) and self.keys[at] == key else 1


_SHARED: Memo[tuple[str, int, str], Shared] = Memo(_KEEP, _MAX_KEYS, lambda s: len(s.keys))


def group_key(group: str) -> int:
    """The 64-bit key of a ``dup_group``: for a sha256 hex checksum (what publish writes) its
    first 16 characters' bytes mixed, else Python's hash of the string (one process's keys
    agree with each other, which is all the count needs)."""
    raw = group.encode()
    if len(raw) == _CHECKSUM_BYTES:
        first, second = int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:16], "little")
        return (first * int(_MIX) & _MASK) ^ second
    return hash(group) & _MASK


def _keys(column: pa.Array) -> Keys:
    """``group_key`` of every non-null value, vectorized when every value is a checksum."""
    values = column.drop_null()
    if not len(values):
        return np.zeros(0, np.uint64)
    if pa.types.is_string(values.type):
        offsets = np.frombuffer(values.buffers()[1], np.int32)[
            values.offset : values.offset + len(values) + 1
        ]
        if (np.diff(offsets) == _CHECKSUM_BYTES).all():
            data = np.frombuffer(values.buffers()[2], np.uint8)[offsets[0] : offsets[-1]]
            words = np.ascontiguousarray(data.reshape(-1, _CHECKSUM_BYTES)[:, :16]).view("<u8")
            return words[:, 0] * _MIX ^ words[:, 1]  # type: ignore[no-any-return]
    return np.fromiter((group_key(g) for g in values.to_pylist()), np.uint64, count=len(values))


def shared_groups(ds: Any) -> Shared:
    """The groups of this dataset version with two rows or more (remembered per version)."""
    key = version_key(ds)
    known = _SHARED.get(key)
    if known is not None:
        return known
    parts: list[Keys] = []
    if "dup_group" in column_names(ds):
        batches = ds.to_batches(
            columns=["dup_group"], batch_size=_BATCH, batch_readahead=2, fragment_readahead=1
        )
        parts = [_keys(b.column(0)) for b in batches]
    keys, rows = np.unique(np.concatenate(parts) if parts else np.zeros(0, np.uint64), return_counts=True)
    many = rows > 1
    return _SHARED.put(key, Shared(keys[many], rows[many].astype(np.int64)))


def copies_possible(ds: Any, ranked: Iterable[dict[str, Any]], groups: Iterable[str]) -> bool:
    """Whether a row outside ``ranked`` may have its ``dup_group`` in ``groups``: a group
    with more rows in the table than among ``ranked``, or one no ranked row is in (it may be
    some other row's group)."""
    shared = shared_groups(ds)
    held = Counter(r.get("dup_group") for r in ranked)
    return any(shared.count(g) > held.get(g, 0) for g in groups)
