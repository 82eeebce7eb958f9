"""The few rows a principal's claims admit, held in memory: exact nearest chunks, and the
columns of ranked rows without reading them again.

A dense candidate query under a row allowlist (``tessera.search.masks``) walks the HNSW graphs
of every probed IVF partition, skipping the rows the allowlist refuses: the fewer rows it
admits, the more of the graph it walks for each one it keeps. On the 100k-chunk benchmark a
principal admitted to 9,749 rows paid 6-15 ms for a prefiltered top 41 (more while the BM25 list
ran beside it), where the cosine of the query with those 9,749 vectors, held in memory, takes
0.24 ms and is exact. Vector databases do the same below a filter cardinality (Qdrant's
``full_scan_threshold``, Weaviate's ``flatSearchCutoff``). The columns of a search's ranked
rows cost as much again: reading 24 columns of 10 rows took 4-5 ms, a BM25 list's ids, groups
and checked columns for its 160 rows another 5 ms on top of the 4.4 ms ranking.

So once a mask has answered ``AFTER`` candidate queries, its rows are read once (vectors, row
ids and every column a hit or the access check reads) and later queries under that mask take
them from here: the dense list ranks them by exact cosine, the BM25 list (still ranked by
Lance's index) and the rows of a hit are looked up by row id, the copies of a duplicate group
are filtered in memory. A version never changes, so neither do its claims' rows; a set is keyed
like the mask (commit identity and claims), and the sets go with the shared connections
(``tessera.store.db.reset_connections``), as the store's own caches do. A mask whose vectors
alone pass ``MAX_BYTES`` is never read (the index serves it), one whose rows pass it after
reading is remembered as too large, and all sets together stay under ``BUDGET`` bytes, least
recently used first out. Rows come out as the Lance scans return them (``_distance`` is cosine
distance, ``_rowid`` the row id), so the ranking, the tie rule and the access check after it
are the same code on both paths (``tessera.search.candidates``).
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import pyarrow as pa
import pyarrow.compute as pc

from tessera.search.dataset import column_names, version_key
from tessera.search.fusion import TIE
from tessera.search.masks import Allowed
from tessera.search.memo import Memo
from tessera.search.options import row_columns
from tessera.search.scope import CHECKED
from tessera.store.db import on_reset

log = logging.getLogger(__name__)

AFTER = 4
"""Candidate queries (two a hybrid search) a mask answers through the index before its rows are
read into memory: reading them costs about as much as ten indexed searches (~150 ms for 10,000
rows of 384 dimensions)."""
MAX_BYTES = 48 << 20
"""The largest set kept (vectors and columns); a mask whose vectors alone pass it (31,000 rows
of 384 dimensions) is never read."""
BUDGET = 192 << 20
"""All sets of a process together (every tenant, version and principal)."""
SCORES = ("_distance", "_score", "_rowid")


@dataclass(frozen=True)
class FlatSet:
    """The rows of one mask: ``unit``, their unit vectors (zero vectors stay zero); ``missing``,
    the positions of rows without a vector; ``rows``, their other columns and ``_rowid`` in the
    same order; ``by_rowid``, the positions of ``rows`` in row-id order. ``where_in`` indexes a
    column's values on its first call (``_values``)."""

    unit: npt.NDArray[np.float32]
    missing: npt.NDArray[np.intp]
    rows: pa.Table
    by_rowid: npt.NDArray[np.intp]
    _values: dict[str, ValueIndex] = field(default_factory=dict, repr=False, compare=False)

    @property
    def nbytes(self) -> int:
        return sum(int(a.nbytes) for a in (self.unit, self.missing, self.rows, self.by_rowid))

    def serves(self, columns: Collection[str]) -> bool:
        """Whether the set holds ``columns`` (the score columns are computed)."""
        names = self.rows.schema.names
        return all(c in names or c in SCORES for c in columns)

    def nearest(self, vector: Any, n: int, columns: list[str]) -> list[dict[str, Any]]:
        """The ``n`` rows nearest ``vector`` by cosine, and every row tied with the ``n``-th
        (within ``TIE``), best first, with ``columns`` (and ``_rowid``, ``_distance``: one minus
        the cosine, as Lance's cosine metric reports it)."""
        query = np.asarray(vector, np.float32)
        norm = float(np.linalg.norm(query))
        scores = self.unit @ (query / norm if norm > 0 else query)
        scores[self.missing] = -np.inf
        n = min(n, len(scores) - len(self.missing))
        if n <= 0:
            return []
        nth = scores[np.argpartition(-scores, n - 1)[n - 1]]
        top = np.flatnonzero(scores >= nth - TIE)  # the n best and every row tied with the n-th
        top = top[np.argsort(-scores[top], kind="stable")]
        return self._rows(top, columns, {"_distance": 1.0 - scores[top]})

    def lookup(
        self, rowids: Any, columns: list[str], scores: dict[str, Any] | None = None
    ) -> list[dict[str, Any]]:
        """The rows of ``rowids`` in that order, with ``columns``, ``_rowid`` and each column of
        ``scores`` (name -> values in the same order); a row id outside the set is a KeyError."""
        at = self._positions(np.asarray(rowids, np.uint64))
        return self._rows(at, columns, scores or {})

    def where_in(self, column: str, values: Collection[str], columns: list[str]) -> list[dict[str, Any]]:
        """The rows whose ``column`` is one of ``values``, in row-id order, with ``columns``.

        A search asks this for the duplicate groups of its ranked rows. Testing every held row
        (``pc.is_in``) made the copies query 0.51 ms of a search on 9,749 held rows; with the
        column's value index, built by the first call (about 7 ms for 10,000 rows, once per
        set), it took 0.29 ms, most of it reading the rows found (0.18 ms once ``_rows`` took
        only the asked columns)."""
        index = self._values.get(column)
        if index is None:
            index = self._values[column] = ValueIndex.of(self.rows.column(column))
        at = index.positions(values)
        ids = self.rows.column("_rowid").to_numpy()
        return self._rows(at[np.argsort(ids[at], kind="stable")], columns, {})

    def holds(self, rowids: Any) -> npt.NDArray[np.bool_]:
        """Which of ``rowids`` are rows of the set."""
        return self._locate(np.asarray(rowids, np.uint64))[1]

    def _positions(self, wanted: npt.NDArray[np.uint64]) -> npt.NDArray[np.intp]:
        at, found = self._locate(wanted)
        if not found.all():
            raise KeyError("row ids outside the mask's rows")
        return at

    def _locate(self, wanted: npt.NDArray[np.uint64]) -> tuple[npt.NDArray[np.intp], npt.NDArray[np.bool_]]:
        """The position in ``rows`` of each of ``wanted`` (any, where absent), and which are there."""
        ids = self.rows.column("_rowid").to_numpy()
        if not len(ids):
            return np.zeros(len(wanted), np.intp), np.zeros(len(wanted), bool)
        at = self.by_rowid[np.minimum(np.searchsorted(ids[self.by_rowid], wanted), len(ids) - 1)]
        return at, np.asarray(ids[at] == wanted, bool)

    def _rows(self, at: Any, columns: list[str], scores: dict[str, Any]) -> list[dict[str, Any]]:
        keep = [c for c in dict.fromkeys([*columns, "_rowid"]) if c not in scores]
        picked: list[dict[str, Any]] = self.rows.select(keep).take(pa.array(at, pa.int64())).to_pylist()
        for name, values in scores.items():
            for row, score in zip(picked, np.asarray(values).tolist(), strict=True):
                row[name] = float(score)
        return picked


@dataclass(frozen=True)
class ValueIndex:
    """The positions of each value of a string column: ``order`` holds the positions grouped by
    value, ``spans`` each value's slice of it (nulls are in no span). Built after the set was
    counted against ``BUDGET``: for a duplicate-group column about 150 bytes a row more."""

    order: npt.NDArray[np.intp]
    spans: dict[str, tuple[int, int]]

    @staticmethod
    def of(column: pa.ChunkedArray) -> ValueIndex:
        encoded = pc.dictionary_encode(column.combine_chunks())
        codes = np.asarray(pc.fill_null(encoded.indices, -1).to_numpy(), np.int64)
        order = np.argsort(codes, kind="stable")
        first = np.searchsorted(codes[order], np.arange(len(encoded.dictionary) + 1))
        spans = {
            value: (int(start), int(stop))
            for value, start, stop in zip(encoded.dictionary.to_pylist(), first[:-1], first[1:], strict=True)
        }
        return ValueIndex(order, spans)

    def positions(self, values: Collection[str]) -> npt.NDArray[np.intp]:
        """The positions of the rows holding any of ``values`` (each row once)."""
        parts = [self.order[slice(*self.spans[v])] for v in set(values) if v in self.spans]
        return np.concatenate(parts) if parts else np.zeros(0, np.intp)


Key = tuple[str, int, str, str]
_SETS: Memo[Key, FlatSet] = Memo(64, BUDGET, lambda s: s.nbytes)
_USES: Memo[Key, int] = Memo(1024)
"""Queries per mask so far; -1: its set was read and found over ``MAX_BYTES``."""
_WIDTHS: Memo[tuple[str, int, str], int] = Memo(64)
_READING = threading.Lock()


def forget() -> None:
    """Drop every set (with the shared connections: a new one reads the store again)."""
    with _READING:
        _SETS.clear()
        _USES.clear()


on_reset(forget)


def flat_set(ds: Any, allowed: Allowed) -> FlatSet | None:
    """The set of ``allowed`` on this dataset version once the mask has answered ``AFTER``
    queries (read now if it is not remembered); None before that and for masks over
    ``MAX_BYTES``."""
    version = version_key(ds)
    width = _WIDTHS.get(version)
    if width is None:
        width = _WIDTHS.put(version, int(ds.schema.field("vector").type.list_size))
    if allowed.rows * width * 4 > MAX_BYTES:
        return None
    key = (*version, allowed.claims)
    known = _SETS.get(key)
    if known is not None:
        return known
    with _READING:  # the two lists of a hybrid search ask at once: one reads, the other waits
        known = _SETS.get(key)
        uses = _USES.get(key) or 0
        if known is not None or uses < 0:
            return known
        _USES.put(key, uses + 1)
        if uses < AFTER:
            return None
        found = _read(ds, allowed)
        if found.nbytes > MAX_BYTES:
            _USES.put(key, -1)
            return None
        return _SETS.put(key, found)


def remembered(ds: Any, claims: str) -> FlatSet | None:
    """The set of ``claims`` on this dataset version if one is held (never reads)."""
    return _SETS.get((*version_key(ds), claims))


def _read(ds: Any, allowed: Allowed) -> FlatSet:
    columns = list(dict.fromkeys([*row_columns(column_names(ds)), *CHECKED]))
    scan = ds.scanner(columns=[*columns, "vector"], with_row_id=True, row_addr_allowlist=allowed.blob)
    table = scan.to_table().combine_chunks()
    if table.num_rows != allowed.rows:
        raise RuntimeError(f"the mask admits {allowed.rows} rows, its scan read {table.num_rows}")
    vectors = table.column("vector")
    width = vectors.type.list_size
    present = np.asarray(pc.is_valid(vectors).to_numpy(zero_copy_only=False), bool)
    matrix = np.zeros((table.num_rows, width), np.float32)
    if present.any():  # a row without a vector is never nearest (nor in the index)
        values = pc.drop_null(vectors).combine_chunks().flatten()
        matrix[present] = np.asarray(values.to_numpy(zero_copy_only=False), np.float32).reshape(-1, width)
    norms = np.linalg.norm(matrix, axis=1, keepdims=True)
    unit = np.divide(matrix, norms, out=np.zeros_like(matrix), where=norms > 0)
    rows = table.drop_columns(["vector"])
    by_rowid = np.argsort(rows.column("_rowid").to_numpy(), kind="stable")
    log.debug("flat set: %d rows of %s (%s)", len(unit), ds.uri, allowed.claims)
    return FlatSet(unit, np.flatnonzero(~present), rows, by_rowid)
