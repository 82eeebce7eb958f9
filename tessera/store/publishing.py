"""What a publish takes and gives (:meth:`tessera.store.index.TenantIndex.publish`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import pyarrow as pa


@dataclass(frozen=True)
class StreamedRows:
    """Rows to publish as a stream: ``open()`` returns a fresh reader each time (a retried
    commit reads them again), ``num_rows`` and ``doc_ids`` say what it holds; ``whole``: every
    live row of the scope (a relabel), deleting none: below ``SCOPED_MIN_ROWS`` a
    ``merge_insert`` without the by-source delete (298, not 949 MB peak on 400,000 rows), at or
    above it the scoped commit, which reads only the scope (1 % relabelled there: +113 MB over
    the source against the upsert's +212-222 MB, which still joins the whole table's ids)."""

    open: Callable[[], pa.RecordBatchReader]
    num_rows: int
    doc_ids: frozenset[str]
    whole: bool = False

    @classmethod
    def of(cls, table: pa.Table) -> StreamedRows:
        ids = frozenset(table.column("doc_id").to_pylist()) if table.num_rows else frozenset()
        return cls(
            lambda: pa.RecordBatchReader.from_batches(table.schema, table.to_batches()), table.num_rows, ids
        )


@dataclass(frozen=True)
class PublishResult:
    committed: bool
    version: int | None
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    docs_changed: int = 0
    docs_removed: int = 0
    tag: str = ""
