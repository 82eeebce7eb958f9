"""The staged chunks and vectors as publishable rows, built one staged batch at a time.

:meth:`StagedRows.check` streams every row through the row checks (ids unique across the
whole run, the tenant, an ACL on every row, the vector type) and the offset check on a
sample, and counts the chunks per document for the deletion guard; :meth:`StagedRows.reader`
streams the rows of the publish scope into the commit. Neither holds more than one batch of
rows (plus one small integer per chunk id for the uniqueness check), except that rows the check
passed are kept for the commit while they total at most :data:`KEEP_CHECKED_BYTES`.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator, Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tessera.errors import PublishError
from tessera.pipeline.checks import check_offsets, check_rows
from tessera.pipeline.context import RunContext
from tessera.pipeline.row_table import staged_row_table
from tessera.pipeline.staging import CHUNKS, VECTORS, read_batches, read_vectors, staged_rows
from tessera.store.index import StreamedRows
from tessera.store.schema import chunk_schema
from tessera.types import SourceDocument

OFFSET_SAMPLE = 50
_OFFSET_COLUMNS = ["id", "tenant", "revision", "byte_start", "byte_end", "text", "pages", "content_type"]
KEEP_CHECKED_BYTES = 32 * 2**20
"""Rows that passed :meth:`StagedRows.check` and total at most this many bytes are kept for the
commit, which then writes the very tables the checks read, instead of building them a second
time from the staged files (a 2,000-document first build's 8,000 rows are 22 MB; its publish
step took 0.71 s instead of 0.86 s, medians of 4 alternated pairs). Larger sets are read again
batch by batch, so memory stays bounded."""


class StagedRows:
    def __init__(self, rc: RunContext, docs: Mapping[str, SourceDocument]) -> None:
        self.rc, self.docs = rc, docs
        self.path = rc.workspace / CHUNKS
        self.rows = staged_rows(self.path)
        self.vectors = read_vectors(rc.workspace / VECTORS)
        if len(self.vectors) != self.rows:
            raise PublishError(f"{len(self.vectors)} staged vectors for {self.rows} staged chunks")
        self.sentences = rc.staged_sentences(self.rows)
        self.per_document: Counter[str] = Counter()
        self.checked: list[pa.Table] | None = None
        """The checked rows, kept when they total at most :data:`KEEP_CHECKED_BYTES`."""

    def batches(self) -> Iterator[pa.Table]:
        """Rows of ``chunk_schema``, one staged batch at a time."""
        ident = self.rc.embedder.identity
        start = 0
        for batch in read_batches(self.path):
            end = start + batch.num_rows
            sentences: list[Any] | None = None if self.sentences is None else self.sentences[start:end]
            vectors = self.vectors[start:end]
            rows = staged_row_table(
                batch, self.docs, vectors, ident.key, self.rc.run_id, ident.dimension, sentences
            )
            start = end
            yield rows

    def check(self) -> list[str]:
        """Problems of the staged rows (empty: publishable); fills :attr:`per_document`.

        What it keeps between batches is NumPy and Arrow, not Python objects: a set of every
        id's prefix and a Counter fed each batch's doc ids kept ~150 MB after a 400,000-row
        check (the objects themselves, and the memory of the batches' strings they were
        allocated among)."""
        problems: list[str] = []
        prefixes: list[np.ndarray] = []
        counts: list[pa.Table] = []
        sampled = held = 0
        kept: list[pa.Table] | None = []
        dimension = self.rc.embedder.identity.dimension
        for rows in self.batches():
            problems += check_rows(rows, self.rc.tenant, dimension)
            held += rows.nbytes
            if kept is not None and held <= KEEP_CHECKED_BYTES:
                kept.append(rows)
            else:
                kept = None
            ids = rows.column("id").to_pylist()
            prefixes.append(np.unique(np.fromiter((int(i[:16], 16) for i in ids), np.uint64, len(ids))))
            per_doc = pc.value_counts(rows.column("doc_id"))
            counts.append(pa.table({"doc_id": per_doc.field("values"), "n": per_doc.field("counts")}))
            if sampled < OFFSET_SAMPLE:
                cols = [c for c in [*_OFFSET_COLUMNS, "parts"] if c in rows.schema.names]
                sample = rows.select(cols).slice(0, OFFSET_SAMPLE - sampled).to_pylist()
                problems += check_offsets(sample, self.rc.blobs)
                sampled += len(sample)
        # an id in c batches is c - 1 repeats (repeats inside one batch are check_rows' to find)
        each = np.concatenate(prefixes) if prefixes else np.empty(0, np.uint64)
        repeated = len(each) - len(np.unique(each)) if len(each) else 0  # none staged: numpy.ma unloaded
        if repeated:
            problems.append(f"{repeated} chunk ids staged in more than one batch")
        if counts:
            total = pa.concat_tables(counts).group_by("doc_id").aggregate([("n", "sum")])
            self.per_document = Counter(
                dict(zip(total.column("doc_id").to_pylist(), total.column("n_sum").to_pylist(), strict=True))
            )
        self.checked = None if problems else kept
        return problems

    def drop_counts(self) -> None:
        """Forget :attr:`per_document` once every reader is made (a Counter of every staged
        document: 3.8 MB at 100,000 documents, under a publish's index builds)."""
        self.per_document = Counter()

    def reader(self, scope: set[str]) -> StreamedRows:
        """The rows of ``scope`` as a stream for one commit (call :meth:`check` first)."""
        schema = chunk_schema(self.rc.embedder.identity.dimension)

        def open_reader() -> pa.RecordBatchReader:
            batches = (b for rows in self._scoped(scope) for b in rows.cast(schema).to_batches())
            return pa.RecordBatchReader.from_batches(schema, batches)

        count = sum(n for d, n in self.per_document.items() if d in scope)
        # the ids are the scope's own strings, not the counts' (those go with drop_counts; at
        # 100,000 documents a second copy of every id was 6 MB under the index builds)
        return StreamedRows(open_reader, count, frozenset(d for d in scope if d in self.per_document))

    def _scoped(self, scope: set[str]) -> Iterator[pa.Table]:
        """The rows of ``scope``: from the checked tables when kept, else read again."""
        wanted = pa.array(sorted(scope), pa.string())
        for rows in self.batches() if self.checked is None else self.checked:
            mask = pc.is_in(rows.column("doc_id"), value_set=wanted)
            yield rows if pc.all(mask).as_py() else rows.filter(mask)
