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
   another non-null ``parser_version``: SQL's ``!=`` is null when either side is null);
3. the live rows replaced or gone from the source get deletion vectors, per data file, by id
   (``LanceFragment.delete``: reads that file's ``id`` column);
4. one commit holds the deletions and the new files, against the version read in step 1.

Same rows, same counts (inserted, updated, deleted) and a new version even when nothing
changed, as ``merge_insert`` commits. Same 400,000 rows: 0.03–0.05 s and 250 MB peak. The one
case where the two could differ cannot arise: a staged id live in a document outside the
scope (``merge_insert`` would move that row, this would add a second), since a chunk id hashes
its own document's id (:func:`tessera.chunking.identity.chunk_id`).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from tessera.errors import PublishError
from tessera.store.append import CACHE_BYTES, ROWS_PER_FILE
from tessera.store.db import sql_str

SCOPED_MIN_ROWS = 50_000
"""Tables of at least this many rows take :func:`scoped_merge`; smaller ones ``merge_insert``,
whose whole-table join costs about 0.04 s and 60 MB more there (40,000 rows: 0.06 s and 307 MB
against 0.02 s and 248 MB), and which the rest of the test suite exercises."""
_KEYS = ("checksum", "meta_hash", "parser_version")

Key = tuple[Any, Any, Any]


def _changed(live: Key | None, new: Key) -> bool:
    """Whether ``merge_insert`` would write the source row: not live, or its update condition
    (``target.checksum != source.checksum OR ...``) true in SQL's three-valued logic."""
    if live is None:
        return True
    return any(a is not None and b is not None and a != b for a, b in zip(live, new, strict=True))


def _keys(batch: pa.RecordBatch | pa.Table) -> list[Key]:
    return list(zip(*(batch.column(c).to_pylist() for c in _KEYS), strict=True))


def scoped_merge(table: Any, rows: pa.RecordBatchReader, where: str) -> tuple[int, int, int]:
    """Replace the rows ``where`` selects by ``rows`` in one commit of the LanceDB ``table``:
    ``(inserted, updated, deleted)``, as ``merge_insert`` on ``id`` with the update condition
    above and the by-source delete of ``where`` counts them. The handle moves to the latest
    version whether or not the commit returned."""
    import lance

    ds = table.to_lance()
    live_rows = ds.to_table(columns=["id", *_KEYS], filter=where, with_row_address=True)
    live = dict(zip(live_rows.column("id").to_pylist(), _keys(live_rows), strict=True))
    seen: set[str] = set()
    counts = [0, 0]  # inserted, updated
    replaced: set[str] = set()

    def kept() -> Iterator[pa.RecordBatch]:
        for batch in rows:
            ids = batch.column("id").to_pylist()
            keep = []
            for row_id, key in zip(ids, _keys(batch), strict=True):
                if row_id in seen:
                    raise PublishError(f"staged rows repeat the id {row_id!r}")
                seen.add(row_id)
                old = live.get(row_id)
                keep.append(_changed(old, key))
                if keep[-1]:
                    counts[old is not None] += 1
                    if old is not None:
                        replaced.add(row_id)
            if any(keep):
                yield batch.filter(pa.array(keep))

    try:
        new = lance.fragment.write_fragments(
            pa.RecordBatchReader.from_batches(rows.schema, kept()),
            ds,
            schema=rows.schema,
            max_rows_per_file=ROWS_PER_FILE,
            data_cache_bytes=CACHE_BYTES,
            data_storage_version=ds.data_storage_version,
        )
        gone = replaced | (live.keys() - seen)
        removed, updated = _delete(ds, live_rows, gone)
        op = lance.LanceOperation.Update(
            removed_fragment_ids=removed, updated_fragments=updated, new_fragments=new
        )
        lance.LanceDataset.commit(ds, op, read_version=ds.version)
    finally:
        table.checkout_latest()
    return counts[0], counts[1], len(gone) - counts[1]


def _delete(ds: Any, live_rows: pa.Table, gone: set[str]) -> tuple[list[int], list[Any]]:
    """Deletion vectors for the ``gone`` ids, per data file: the ids of the files left empty,
    and the new metadata of the others."""
    if not gone:
        return [], []
    hit = live_rows.filter(pc.is_in(live_rows.column("id"), pa.array(sorted(gone), pa.string())))
    by_file: dict[int, list[str]] = {}
    for address, row_id in zip(hit.column("_rowaddr").to_pylist(), hit.column("id").to_pylist(), strict=True):
        by_file.setdefault(int(address) >> 32, []).append(row_id)
    removed: list[int] = []
    updated: list[Any] = []
    for file_id, ids in sorted(by_file.items()):
        meta = ds.get_fragment(file_id).delete(f"id IN ({', '.join(sql_str(i) for i in sorted(ids))})")
        if meta is None:
            removed.append(file_id)
        else:
            updated.append(meta)
    return removed, updated
