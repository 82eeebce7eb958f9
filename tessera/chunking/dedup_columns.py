"""Near-duplicate detection over columns: what a run holds per staged chunk while it dedups.

The first streamed release held one ``Entry`` per staged chunk with its :class:`Sketch`: the
id, a hex checksum, a signature array and nine hex band keys, about 1.1 KB a chunk in the
run's process (measured: the chunk step's growth at 40,000 chunks fell from 207 to 164 MB when
only this changed). Here a chunk is one row of
fixed-width columns, in chunk order: a 32-byte checksum, two flags, its band keys as 64-bit
integers, its document's ordinal and its position (about 120 bytes). Its MinHash signature
(256 bytes) goes to a spill file in the run's workspace, and only LSH candidates' rows are read
back. Outcomes are looked up by the chunk's ordinal, so ids are never held.

The rules are those of :mod:`tessera.chunking.dedup` (which wraps this module for callers
that hold entries): candidates share one band key, at most ``BUCKET_LIMIT`` earlier members of
a band group are compared, the estimated Jaccard must reach the threshold, clusters are joined
by union-find, and the canonical chunk is the earliest by ``(live first, doc_id, position)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from tessera.chunking.minhash import Bands, MinHasher, Sketch, SketchBatch, band_keys, sketch

BUCKET_LIMIT = 256
Ints = npt.NDArray[np.int64]


class SketchColumns:
    """Sketches appended batch by batch, in chunk order (:meth:`add`), then :meth:`close`."""

    def __init__(self, hasher: MinHasher, spill: Path | None = None) -> None:
        self.hasher = hasher
        self.docs: list[str] = []
        self._doc_index: dict[str, int] = {}
        self._parts: list[tuple[npt.NDArray[Any], ...]] = []
        self._sigs: list[npt.NDArray[np.uint32]] = []
        self._spill = spill
        self._fh: BinaryIO | None = None if spill is None else spill.open("wb")
        self._mapped: npt.NDArray[np.uint32] | None = None
        self.count = 0

    def __len__(self) -> int:
        return self.count

    def _doc(self, doc_id: str) -> int:
        if (i := self._doc_index.get(doc_id)) is None:
            i = self._doc_index[doc_id] = len(self.docs)
            self.docs.append(doc_id)
        return i

    def add(
        self, doc_ids: Sequence[str], positions: Sequence[int], sketches: SketchBatch | Sequence[Sketch]
    ) -> None:
        batch = sketches if isinstance(sketches, SketchBatch) else SketchBatch.of(sketches, self.hasher)
        n, sigs = len(batch), batch.signatures
        width = (self.hasher.permutations, self.hasher.band_count)
        if (sigs.shape[1:] + batch.bands.shape[1:]) != width or len(doc_ids) != n or len(positions) != n:
            raise ValueError(
                f"{n} sketches of {sigs.shape[1:]} minima and {batch.bands.shape[1:]} bands for "
                f"{len(doc_ids)} documents and {len(positions)} positions; this run signs with "
                f"{width[0]} minima in {width[1]} bands"
            )
        doc = np.fromiter((self._doc(d) for d in doc_ids), np.int64, n)
        keyed, pos = batch.keyed, np.asarray(positions, np.int64)
        self._parts.append((batch.checksum, keyed, batch.signed & keyed, batch.bands, doc, pos))
        if self._fh is None:
            self._sigs.append(sigs)
        else:
            self._fh.write(np.ascontiguousarray(sigs, "<u4").tobytes())
        self.count += n

    def close(self) -> Columns:
        """The columns (one concatenation; the signatures stay in the spill file)."""
        if self._fh is not None:
            self._fh.close()
            self._fh = None
            if self.count:
                assert self._spill is not None
                self._mapped = np.memmap(
                    self._spill, np.uint32, "r", shape=(self.count, self.hasher.permutations)
                )
        elif self._sigs:
            self._mapped = np.concatenate(self._sigs)
            self._sigs = []
        if not self._parts:
            self.add([], [], [])
        # a column at a time, each column's parts freed once joined: the parts and the joined
        # columns are never all held at once (120 bytes a chunk: 48 MB at 400,000 chunks)
        parts = [list(c) for c in zip(*self._parts, strict=True)]
        self._parts = []
        chk, keyed, signed, bands, doc, pos = [_joined(parts.pop(0)) for _ in range(len(parts))]
        return Columns(chk, keyed, signed, bands, doc, pos, self.docs, self._rows)

    def _rows(self, ix: Ints) -> npt.NDArray[np.uint32]:
        if self._mapped is None:  # no rows at all
            return np.empty((len(ix), self.hasher.permutations), np.uint32)
        return np.asarray(self._mapped[ix])


@dataclass(frozen=True)
class Columns:
    """One row per chunk, in chunk order; ``doc`` indexes ``docs``; ``signatures(rows)`` reads
    the MinHash signatures of the given rows (from the spill file when there is one)."""

    checksum: npt.NDArray[np.void]
    keyed: npt.NDArray[np.bool_]
    signed: npt.NDArray[np.bool_]
    """Keyed, with a signature: takes part in near-duplicate detection."""
    bands: Bands
    doc: Ints
    position: Ints
    docs: list[str]
    signatures: Callable[[Ints], npt.NDArray[np.uint32]]

    def band_keys(self) -> set[str]:
        """Every band key of the signed rows, as stored in ``dup_bands``."""
        if not self.signed.any():  # nothing chunked (a no-op run): no NumPy set operations to load
            return set()
        return set(band_keys(np.unique(self.bands[self.signed])))


def live_columns(rows: Iterable[tuple[str, int, str]], hasher: MinHasher) -> Columns:
    """Columns of live rows ``(doc_id, position, text)``, sketched here from their text."""
    cols = SketchColumns(hasher)
    items = list(rows)
    cols.add([d for d, _, _ in items], [p for _, p, _ in items], [sketch(t, hasher) for _, _, t in items])
    return cols.close()


@dataclass(frozen=True)
class ColumnReport:
    """Outcomes by staged ordinal: ``near[i]`` is the group of a near duplicate."""

    checksum: npt.NDArray[np.void]
    signed: npt.NDArray[np.bool_]
    bands: Bands
    near: dict[int, str]
    exact_duplicates: int
    live_candidates: int

    def outcome(self, i: int) -> tuple[str, bool, tuple[str, ...]]:
        """``(dup_group, near_duplicate, band keys)`` of staged chunk ``i``."""
        keys = band_keys(self.bands[i]) if self.signed[i] else ()
        group = self.near.get(i)
        return (bytes(self.checksum[i]).hex() if group is None else group), group is not None, keys


def own_marks(s: Sketch) -> tuple[str, tuple[str, ...]]:
    """A chunk's ``(dup_group, dup_bands)`` unless the run finds it a near duplicate: its own
    checksum and band keys (:meth:`ColumnReport.outcome` for a chunk outside ``near``, with the
    band keys of a row :class:`SketchColumns` counts as signed)."""
    if s.keyed and s.signature is not None and s.bands is not None:
        return s.checksum, band_keys(s.bands)
    return s.checksum, ()


@dataclass(frozen=True)
class Merged:
    """Live candidates (items ``0 .. n_live-1``) and staged chunks (the rest), clustered.
    ``canon[item]`` is the canonical item of a near duplicate."""

    checksum: npt.NDArray[np.void]
    keyed: npt.NDArray[np.bool_]
    order: Ints
    n_live: int
    canon: dict[int, int]


def _joined(arrays: Sequence[npt.NDArray[Any]]) -> npt.NDArray[Any]:
    """The arrays end to end; one array is itself, not a copy of it."""
    return arrays[0] if len(arrays) == 1 else np.concatenate(arrays)


def merge(staged: Columns, hasher: MinHasher, live: Columns | None = None) -> Merged:
    both = [staged] if live is None else [live, staged]
    n_live = 0 if live is None else len(live.keyed)
    names = sorted({d for c in both for d in c.docs})
    rank = {d: i for i, d in enumerate(names)}
    doc = _joined([np.asarray([rank[d] for d in c.docs], np.int64)[c.doc] for c in both])
    del rank, names
    # without live rows the staged columns are used as they are (a run that replaces every
    # document: a copy of each was 120 bytes a chunk more at the chunk step's peak)
    position = _joined([c.position for c in both])
    checksum = _joined([c.checksum for c in both])
    keyed, signed = _joined([c.keyed for c in both]), _joined([c.signed for c in both])
    order = np.lexsort((position, doc, np.arange(len(keyed)) >= n_live))  # earliest first, live first

    def rows(ix: Ints) -> npt.NDArray[np.uint32]:
        if live is None:
            return staged.signatures(ix)
        out = np.empty((len(ix), hasher.permutations), np.uint32)
        old = ix < n_live
        out[old] = live.signatures(ix[old])
        out[~old] = staged.signatures(ix[~old] - n_live)
        return out

    bands = _joined([c.bands for c in both])
    canon = _canonical(_cluster(bands, signed, checksum, rows, hasher.threshold), order)
    return Merged(checksum, keyed, order, n_live, canon)


def dedupe_columns(
    staged: Columns, hasher: MinHasher, live: Columns | None = None, live_groups: Sequence[str | None] = ()
) -> ColumnReport:
    """Groups and flags of ``staged`` against the ``live`` candidate rows (``live_groups``:
    their stored ``dup_group``)."""
    m = merge(staged, hasher, live)
    groups = list(live_groups)
    near: dict[int, str] = {}
    for item, c in m.canon.items():
        if item >= m.n_live:
            own = groups[c] if c < m.n_live else None
            near[item - m.n_live] = own or bytes(m.checksum[c]).hex()
    # exact copies: keyed items that are not the earliest of their text
    first = m.order[m.keyed[m.order]]
    _, at = np.unique(m.checksum[first], return_index=True)
    exact = int(np.count_nonzero(m.keyed[m.n_live :]) - np.count_nonzero(first[at] >= m.n_live))
    return ColumnReport(staged.checksum, staged.signed, staged.bands, near, exact, m.n_live)


def _cluster(
    bands: Bands,
    signed: npt.NDArray[np.bool_],
    checksum: npt.NDArray[np.void],
    rows: Callable[[Ints], npt.NDArray[np.uint32]],
    threshold: float,
) -> tuple[Ints, Ints]:
    """``(key of each item (-1: none), union-find root of each key)``. Keys are distinct texts
    in order of first appearance; candidates share a band value."""
    valid = np.flatnonzero(signed)
    key = np.full(len(signed), -1, np.int64)
    if len(valid) == 0:
        return key, np.empty(0, np.int64)
    _, first, inv = np.unique(checksum[valid], return_index=True, return_inverse=True)
    by_first = np.argsort(first, kind="stable")
    renumber = np.empty_like(by_first)
    renumber[by_first] = np.arange(len(by_first))
    key[valid] = renumber[inv.ravel()]
    rep = valid[first[by_first]]  # the first item of each key
    parent = list(range(len(rep)))

    def find(i: int) -> int:
        while parent[i] != i:
            parent[i] = parent[parent[i]]
            i = parent[i]
        return i

    for b in range(bands.shape[1]):
        _, groups, counts = np.unique(bands[rep, b], return_inverse=True, return_counts=True)
        groups = groups.ravel()
        shared = np.flatnonzero(counts[groups] > 1)
        if len(shared) == 0:
            continue
        members_all = shared[np.argsort(groups[shared], kind="stable")]  # in key order per group
        cuts = np.flatnonzero(np.diff(groups[members_all])) + 1
        for members in np.split(members_all, cuts):
            sigs = rows(rep[members])
            for n in range(1, len(members)):
                lo = max(0, n - BUCKET_LIMIT)
                earlier = [j for j in range(lo, n) if find(int(members[j])) != find(int(members[n]))]
                if not earlier:
                    continue
                estimates = (sigs[earlier] == sigs[n]).mean(axis=1)
                for j, est in zip(earlier, estimates, strict=True):
                    if est >= threshold:
                        parent[find(int(members[j]))] = find(int(members[n]))
    return key, np.asarray([find(k) for k in range(len(rep))], np.int64)


def _canonical(clustered: tuple[Ints, Ints], order: Ints) -> dict[int, int]:
    """``{item: canonical item}`` for items of a cluster of several texts whose text is not the
    canonical's; the canonical is the cluster's earliest item."""
    key, roots = clustered
    if len(roots) == 0:
        return {}
    multi = np.bincount(roots, minlength=len(roots))[roots] > 1  # per key: its cluster has others
    ordered = order[key[order] >= 0]
    ordered = ordered[multi[key[ordered]]]
    if len(ordered) == 0:
        return {}
    cluster = roots[key[ordered]]
    _, at = np.unique(cluster, return_index=True)
    first_of = dict(zip(cluster[at].tolist(), ordered[at].tolist(), strict=True))
    out: dict[int, int] = {}
    for item, c in zip(ordered.tolist(), cluster.tolist(), strict=True):
        canon = first_of[c]
        if key[item] != key[canon]:
            out[item] = canon
    return out
