"""Publishable rows (``tessera.store.schema.chunk_schema``) from one staged chunk batch.

The same rows :func:`tessera.store.schema.build_rows` builds from :class:`~tessera.types.Chunk`
objects, built column by column from the staged Arrow batch: the chunk's own columns are
taken as staged (the checksum too: the worker that chunked the rows hashed them), a
document's metadata is computed once per document and spread over its rows, and only PDF page
boxes go through Python row by row. The publish step builds every row twice (the checks, then the
commit), in the one process the whole run waits on; the object round trip was most of that
step's own work.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tessera.embedding.base import Vectors
from tessera.errors import PublishError
from tessera.store.schema import chunk_schema, micros, sentence_column
from tessera.types import SourceDocument, canonical_hash

_AS_STAGED = [
    "id", "tenant", "doc_id", "revision", "start", "end", "byte_start", "byte_end", "text",
    "embedding_text", "heading_path", "anchor", "position", "parent_id", "prev_id", "next_id",
    "token_count", "kind", "flags", "chunking_config_hash", "chunker_version", "parser_version",
    "tokenizer_version", "dup_group", "dup_bands", "parts",
]  # fmt: skip
_PER_DOCUMENT = [
    "uri", "content_type", "meta_hash", "readers", "groups", "effective_from_us",
    "effective_to_us", "modified_at_us", "acl_source",
]  # fmt: skip


def _document_columns(doc: SourceDocument) -> dict[str, Any]:
    return {
        "uri": doc.uri,
        "content_type": doc.content_type,
        "meta_hash": doc.meta_hash,
        "readers": list(doc.readers),
        "groups": list(doc.groups),
        "effective_from_us": micros(doc.effective_from),
        "effective_to_us": micros(doc.effective_to),
        "modified_at_us": micros(doc.modified_at),
        "acl_source": doc.acl_source or None,
    }


def _pages(column: pa.Array, schema: pa.Schema) -> pa.Array:
    """Staged ``(page, bbox)`` lists as the table's ``(page, x0, y0, x1, y1)`` lists."""
    target = schema.field("pages").type
    if not pc.any(pc.greater(pc.list_value_length(column), 0)).as_py():
        return pa.array([[] for _ in range(len(column))], target)
    corners = ("x0", "y0", "x1", "y1")
    boxes = [
        [{"page": p["page"], **dict(zip(corners, p["bbox"], strict=True))} for p in pages or ()]
        for pages in column.to_pylist()
    ]
    return pa.array(boxes, target)


def _checksums(batch: pa.RecordBatch) -> pa.Array:
    """:attr:`Chunk.checksum` of each row, for chunks staged without it (an older release)."""
    texts, embedded = batch.column("text").to_pylist(), batch.column("embedding_text").to_pylist()
    starts, ends = batch.column("start").to_pylist(), batch.column("end").to_pylist()
    return pa.array(
        [canonical_hash(list(v)) for v in zip(texts, embedded, starts, ends, strict=True)], pa.string()
    )


def staged_row_table(
    batch: pa.RecordBatch,
    docs: Mapping[str, SourceDocument],
    vectors: Vectors,
    model_version: str,
    run_id: str,
    dimension: int,
    sentences: list[Any] | None = None,
) -> pa.Table:
    """The rows of ``batch`` joined with their documents, ``vectors`` (one per row, in order)
    and ``sentences`` (each row's sentence vectors, or None; without it the column is null)."""
    n = batch.num_rows
    if len(vectors) != n:
        raise PublishError(f"{n} staged chunks but {len(vectors)} vectors")
    if sentences is not None and len(sentences) != n:
        raise PublishError(f"{n} staged chunks but sentence vectors for {len(sentences)}")
    schema = chunk_schema(dimension)
    doc_ids = batch.column("doc_id")
    names = sorted(set(doc_ids.to_pylist()))
    missing = [d for d in names if d not in docs]
    if missing:
        raise PublishError(f"staged chunks of documents not in the listing: {missing[:3]}")
    meta = [_document_columns(docs[d]) for d in names]
    where = pc.index_in(doc_ids, value_set=pa.array(names, pa.string()))
    cols: dict[str, pa.Array] = {name: batch.column(name) for name in _AS_STAGED}
    for name in _PER_DOCUMENT:
        cols[name] = pa.array([m[name] for m in meta], schema.field(name).type).take(where)
    cols["checksum"] = batch.column("checksum") if "checksum" in batch.schema.names else _checksums(batch)
    cols["pages"] = _pages(batch.column("pages"), schema)
    cols["model_version"] = pa.array([model_version] * n, pa.string())
    cols["run_id"] = pa.array([run_id] * n, pa.string())
    flat = np.ascontiguousarray(vectors, np.float32).reshape(-1)
    cols["vector"] = pa.FixedSizeListArray.from_arrays(pa.array(flat, pa.float32()), dimension)
    cols["sentence_vectors"] = sentence_column(sentences if sentences is not None else [None] * n, dimension)
    arrays = [cols[f.name].cast(f.type) for f in schema]
    return pa.Table.from_arrays(arrays, schema=schema)
