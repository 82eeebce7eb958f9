"""A publish's replace of its scope in ONE commit that reads the scope, not the table.

``merge_insert(...).when_not_matched_by_source_delete(where)`` (the commit of
:meth:`tessera.store.index.TenantIndex._merge`) runs a full outer join of its source against
the whole table, every column carried, vectors and texts included: on 400,000 synthetic rows
of 384-d vectors and 600-byte texts, merging 390 rows peaked at 916 MB against 256 MB without
that clause, and at 270 against 236 MB on the same rows without the vector and text columns.
A content change of 1 % paid for the whole table.

:func:`scoped_merge` gives the same table in one Lance transaction (``LanceOperation.Update``):

1. the scope's live rows are read by ``where`` (``doc_id IN (...)``, the ``doc_id`` index), their
   ``id``, change columns and row addresses only;
2. the source is streamed once into new data files, keeping the rows ``merge_insert`` would
   insert or update (an id not live, or live with another ``checksum`` or ``meta_hash``, or
   another non-null ``parser_version``: SQL's ``!=`` is null when either side is null),
   matched against the live rows a batch at a time in Arrow (:class:`_Matcher`);
3. the live rows replaced or gone from the source get deletion vectors, per data file, by the
   row addresses step 1 read (``LanceFragment.delete_rows``: no column of the file is read);
4. one commit holds the deletions and the new files, against the version read in step 1.

Same rows, same counts (inserted, updated, deleted) and a new version even when nothing
changed, as ``merge_insert`` commits. Same 400,000 rows: 0.03–0.05 s and 250 MB peak. Steps 2
and 3 were a Python loop over the rows and a delete by ``id IN (...)`` per data file (which
reads the file's ``id`` column), more than twice as long on large changes (side by side, two
runs each: 10 % of the documents 0.52–0.53 against 0.23–0.24 s, 25 % 1.16–1.23 against
0.46–0.50 s, all of them 4.39–4.45 against 1.78–1.87 s). The one
case where the two could differ cannot arise: a staged id live in a document outside the
scope (``merge_insert`` would move that row, this would add a second), since a chunk id hashes
its own document's id (:func:`tessera.chunking.identity.chunk_id`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tessera.errors import PublishError
from tessera.store.append import CACHE_BYTES, ROWS_PER_FILE

SCOPED_MIN_ROWS = 50_000
"""Tables of at least this many rows take :func:`scoped_merge`; smaller ones ``merge_insert``,
whose whole-table join costs about 0.04 s and 60 MB more there (40,000 rows: 0.06 s and 307 MB
against 0.02 s and 248 MB), and which the rest of the test suite exercises."""
_KEYS = ("checksum", "meta_hash", "parser_version")
_OFFSET = (1 << 32) - 1
"""A row address is its data file's id in the high 32 bits and its row's offset in the file
in the low 32 (Lance's ``_rowaddr``)."""


class _LiveIds:
    """Positions of ids among the scope's live ids, null where an id is not live.

    Where the live ids are all as long (a chunk id is 64 hex digits,
    :func:`tessera.chunking.identity.chunk_id`) and their 64-bit keys (:func:`_keys`) all
    differ, the keys are sorted once and each batch's keys binary-searched in them, a found
    id's bytes compared with its live namesake's: O(scope log scope) for the whole source.
    Otherwise (ids of several lengths, or two live ids of one key, which a tenant could
    contrive but not exploit: it costs time, never a wrong match) each batch's ids are the set
    Arrow's ``index_in`` looks the live ids up in: O(scope) a batch, O(scope x batches) for a
    source as large as the scope. The other way round, the live ids as the set, Arrow hashes
    them on every call: 41 ms a batch of 4,096 rows at 400,000 live rows, against 3.5 ms."""

    def __init__(self, ids: pa.Array) -> None:
        self.ids = ids
        self.width = _uniform_width(ids)
        if self.width:
            self.data = _fixed(ids, self.width)
            keys = _keys(self.data)
            self.order = np.argsort(keys, kind="stable")
            self.sorted = keys[self.order]
            if np.any(self.sorted[1:] == self.sorted[:-1]):
                self.width = 0

    def positions(self, ids: pa.Array) -> pa.Array:
        """Repeated ids in ``ids`` are refused before (:meth:`_Matcher.write`), so each found
        live id has one position."""
        positions = np.full(len(ids), -1, dtype=np.int64)
        if self.width:
            fits = pc.fill_null(pc.equal(pc.binary_length(ids), self.width), False)
            wanted = np.flatnonzero(fits.to_numpy(zero_copy_only=False))
            if len(wanted):
                probe = _fixed(ids.take(pa.array(wanted)).cast(pa.string()), self.width)
                keys = _keys(probe)
                by_key = np.argsort(keys)  # needles in order: numpy narrows each search by the last
                at = np.empty(len(keys), np.int64)
                at[by_key] = np.searchsorted(self.sorted, keys[by_key])
                live = self.order[np.minimum(at, len(self.sorted) - 1)]
                hit = self.data[live] == probe  # the same key is not yet the same id
                positions[wanted[hit]] = live[hit]
        else:
            in_batch = pc.index_in(self.ids, value_set=ids)
            found = pc.is_valid(in_batch)
            positions[pc.filter(in_batch, found).to_numpy(zero_copy_only=False)] = np.flatnonzero(
                found.to_numpy(zero_copy_only=False)
            )
        return pa.array(positions, mask=positions < 0)


def _uniform_width(ids: pa.Array) -> int:
    """The byte length all of ``ids`` share (a non-null ``string`` array), else 0."""
    if not pa.types.is_string(ids.type) or ids.null_count or not len(ids):
        return 0
    lengths = pc.min_max(pc.binary_length(ids)).as_py()
    return int(lengths["min"]) if lengths["min"] == lengths["max"] else 0


def _fixed(ids: pa.Array, width: int) -> np.ndarray:
    """The bytes of ``ids``, all ``width`` long, as numpy's fixed-width ``S<width>`` (a view:
    no copy). Equal widths compare byte for byte, NUL bytes included."""
    start = int(np.frombuffer(ids.buffers()[1], dtype=np.int32)[ids.offset])
    return np.frombuffer(ids.buffers()[2], dtype=f"S{width}", count=len(ids), offset=start)


def _keys(data: np.ndarray) -> np.ndarray:
    """A 64-bit key of each fixed-width byte string: its 8-byte words folded FNV-style, then
    splitmix64's finalizer. Equal strings, equal keys; unequal ones rarely (the caller checks)."""
    width = data.dtype.itemsize
    raw = np.zeros((len(data), -(-width // 8) * 8), np.uint8)
    raw[:, :width] = data.view(np.uint8).reshape(len(data), width)
    h = np.full(len(data), 0xCBF29CE484222325, np.uint64)
    for word in raw.view("<u8").T:
        h = (h ^ word) * np.uint64(0x100000001B3)
    h ^= h >> np.uint64(30)
    h *= np.uint64(0xBF58476D1CE4E5B9)
    h ^= h >> np.uint64(27)
    h *= np.uint64(0x94D049BB133111EB)
    return np.asarray(h ^ (h >> np.uint64(31)))


class _Matcher:
    """The source's rows against the scope's live rows (``id``, the change columns and
    ``_rowaddr``), a batch at a time, in Arrow: which rows to write, how many are new, and
    which live rows (by position) the source replaced or named at all."""

    def __init__(self, live: pa.Table) -> None:
        self.ids = _LiveIds(live.column("id").combine_chunks())
        self.keys = [live.column(key).combine_chunks() for key in _KEYS]
        self.seen: set[str] = set()
        self.named = np.zeros(live.num_rows, dtype=bool)
        self.replaced = np.zeros(live.num_rows, dtype=bool)
        self.inserted = 0

    def write(self, batch: pa.RecordBatch) -> pa.Array:
        """Whether ``merge_insert`` would write each row of ``batch``: its id not live, or its
        update condition (``target.checksum != source.checksum OR ...``) true in SQL's
        three-valued logic, where ``!=`` is null when either side is null (not true)."""
        self._refuse_repeats(batch.column("id").to_pylist())
        at = self.ids.positions(batch.column("id"))  # null: not live
        live = pc.is_valid(at)
        write = pc.invert(live)
        for live_key, key in zip(self.keys, _KEYS, strict=True):
            differs = pc.not_equal(pc.take(live_key, at), batch.column(key))
            write = pc.or_(write, pc.fill_null(differs, False))
        self.named[at.drop_null().to_numpy(zero_copy_only=False)] = True
        self.replaced[pc.filter(at, pc.and_(write, live)).to_numpy(zero_copy_only=False)] = True
        self.inserted += batch.num_rows - int(pc.sum(live).as_py() or 0)
        return write

    def _refuse_repeats(self, ids: list[str]) -> None:
        fresh = set(ids)
        if len(fresh) == len(ids) and self.seen.isdisjoint(fresh):
            self.seen |= fresh
            return
        before: set[str] = set()
        for row_id in ids:  # the first repeat, for the message
            if row_id in self.seen or row_id in before:
                raise PublishError(f"staged rows repeat the id {row_id!r}")
            before.add(row_id)


def scoped_merge(
    table: Any, rows: pa.RecordBatchReader, where: str, whole: bool = False
) -> tuple[int, int, int]:
    """Replace the rows ``where`` selects by ``rows`` in one commit of the LanceDB ``table``:
    ``(inserted, updated, deleted)``, as ``merge_insert`` on ``id`` with the update condition
    above and the by-source delete of ``where`` counts them. ``whole`` (a relabel's rows,
    every live row of the scope): live rows the source does not name stay, as ``merge_insert``
    without the by-source delete keeps them. The handle moves to the latest version whether
    or not the commit returned."""
    import lance

    ds = table.to_lance()
    live = ds.to_table(columns=["id", *_KEYS], filter=where, with_row_address=True)
    match = _Matcher(live)

    refused: list[PublishError] = []

    def kept() -> Iterator[pa.RecordBatch]:
        for batch in rows:
            try:
                write = match.write(batch)
            except PublishError as e:  # Lance, reading this stream, reports it as its own OSError
                refused.append(e)
                raise
            if pc.any(write).as_py():
                yield batch.filter(write)

    try:
        try:
            new = lance.fragment.write_fragments(
                pa.RecordBatchReader.from_batches(rows.schema, kept()),
                ds,
                schema=rows.schema,
                max_rows_per_file=ROWS_PER_FILE,
                data_cache_bytes=CACHE_BYTES,
                data_storage_version=ds.data_storage_version,
            )
        except Exception as e:
            if refused:
                raise refused[0] from e
            raise
        gone = match.replaced if whole else match.replaced | ~match.named
        addresses = live.column("_rowaddr").to_numpy()[gone]
        removed, updated = _delete(ds, addresses)
        op = lance.LanceOperation.Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new
        )
        lance.LanceDataset.commit(ds, op, read_version=ds.version)
    finally:
        table.checkout_latest()
    replaced = int(match.replaced.sum())
    return match.inserted, replaced, len(addresses) - replaced


def _delete(ds: Any, addresses: np.ndarray) -> tuple[list[int], list[Any]]:
    """Deletion vectors for the rows at ``addresses``, per data file: the ids of the files left
    empty, and the new metadata of the others."""
    files = addresses >> 32
    removed: list[int] = []
    updated: list[Any] = []
    for file_id in np.unique(files).tolist():
        offsets = (addresses[files == file_id] & _OFFSET).tolist()
        meta = ds.get_fragment(file_id).delete_rows(offsets)
        if meta is None:
            removed.append(file_id)
        else:
            updated.append(meta)
    return removed, updated
