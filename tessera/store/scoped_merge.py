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


class _Matcher:
    """The source's rows against the scope's live rows (``id``, the change columns and
    ``_rowaddr``), a batch at a time, in Arrow: which rows to write, how many are new, and
    which live rows (by position) the source replaced or named at all."""

    def __init__(self, live: pa.Table) -> None:
        self.ids = live.column("id").combine_chunks()
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
        at = self._live_positions(batch.column("id"))  # null: not live
        live = pc.is_valid(at)
        write = pc.invert(live)
        for live_key, key in zip(self.keys, _KEYS, strict=True):
            differs = pc.not_equal(pc.take(live_key, at), batch.column(key))
            write = pc.or_(write, pc.fill_null(differs, False))
        self.named[at.drop_null().to_numpy(zero_copy_only=False)] = True
        self.replaced[pc.filter(at, pc.and_(write, live)).to_numpy(zero_copy_only=False)] = True
        self.inserted += batch.num_rows - int(pc.sum(live).as_py() or 0)
        return write

    def _live_positions(self, ids: pa.Array) -> pa.Array:
        """Each id's position among the live ids, null where it is not live. The batch's ids
        are the set looked up in, the live ids the values probed: Arrow hashes its value set
        on every call, and hashing the scope's live ids for each batch cost 41 ms a batch of
        4,096 rows at 400,000 live rows, against 3.5 ms this way round (the ids are unique
        here: repeats are refused first)."""
        in_batch = pc.index_in(self.ids, value_set=ids)
        found = pc.is_valid(in_batch)
        positions = np.full(len(ids), -1, dtype=np.int64)
        positions[pc.filter(in_batch, found).to_numpy(zero_copy_only=False)] = np.flatnonzero(
            found.to_numpy(zero_copy_only=False)
        )
        return pa.array(positions, mask=positions < 0)

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


def scoped_merge(table: Any, rows: pa.RecordBatchReader, where: str) -> tuple[int, int, int]:
    """Replace the rows ``where`` selects by ``rows`` in one commit of the LanceDB ``table``:
    ``(inserted, updated, deleted)``, as ``merge_insert`` on ``id`` with the update condition
    above and the by-source delete of ``where`` counts them. The handle moves to the latest
    version whether or not the commit returned."""
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
        gone = match.replaced | ~match.named
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
