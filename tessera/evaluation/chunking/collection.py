"""One configuration's chunks as a tenant table, searched by the product's own code path.

The chunks of every corpus are pooled into one LanceDB table of the published schema
(:func:`tessera.store.schema.chunk_schema`), indexed by :func:`tessera.store.indexes.ensure_indexes`
as a publish does (FTS on ``embedding_text``, the scalar indexes, a vector index from 50k rows),
and searched through :func:`tessera.search.query.ranked_rows`, the ranking ``tessera search``
returns: the same candidate depths, sentence-vector rescoring, RRF fusion, tie-breaking by
chunk id, and exact duplicates folded into one hit whose ``sources`` list every copy.

A chunk's ``start``/``end`` here are code points of the corpus file (the unit of the
reference spans) and its ``doc_id`` is the corpus id. The principal reads every row; flagged
chunks (``hidden_text``, ``untrusted``) are included, because the peers' chunks carry no flags.
"""

from __future__ import annotations

import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from tessera.errors import EvaluationError
from tessera.golden.metrics import Span
from tessera.golden.retriever import EvalChunk as EvalChunk
from tessera.search.principal import Principal, access_filter
from tessera.search.query import PRODUCT_FUSION, Fusion, SearchOptions, ranked_rows
from tessera.store.indexes import ensure_indexes
from tessera.store.schema import chunk_schema, sentence_column, text_checksum
from tessera.types import sha256_hex

TENANT = "eval"
_PRINCIPAL = Principal(TENANT, "eval")


@dataclass(frozen=True)
class Hit:
    """One search result as the product returns it: its token count and every source range."""

    tokens: int
    spans: tuple[Span, ...]


def _defaults(field: pa.Field) -> Any:
    if pa.types.is_list(field.type):
        return []
    if pa.types.is_integer(field.type):
        return 0
    return ""


class Collection:
    """The pooled table of one configuration; ``search`` returns the product's hits."""

    def __init__(
        self,
        chunks: Sequence[EvalChunk],
        vectors: np.ndarray,
        sentences: Sequence[np.ndarray | None] | None,
        model_key: str,
    ) -> None:
        if len(chunks) != len(vectors) or not len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if sentences is not None and len(sentences) != len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but sentence vectors for {len(sentences)}")
        import lancedb

        self.chunks = list(chunks)
        self.has_sentences = sentences is not None and any(m is not None and len(m) for m in sentences)
        self._tmp = tempfile.TemporaryDirectory(prefix="tessera-eval-")
        dim = int(vectors.shape[1])
        schema = chunk_schema(dim)
        plain = pa.schema([f for f in schema if f.name not in ("vector", "sentence_vectors")])
        base = {f.name: _defaults(f) for f in plain}
        rows = []
        for n, c in enumerate(self.chunks):
            text = c.text or c.embedding_text
            rows.append(
                {
                    **base,
                    "id": c.key,
                    "tenant": TENANT,
                    "doc_id": c.span.corpus,
                    "revision": c.span.corpus,
                    "start": c.span.start,
                    "end": c.span.end,
                    "text": text,
                    "embedding_text": c.embedding_text,
                    "position": n,
                    "token_count": c.tokens,
                    "kind": c.kind,
                    "checksum": sha256_hex(c.embedding_text),
                    "meta_hash": "",
                    "readers": [_PRINCIPAL.user],
                    "effective_to_us": 2**62,
                    "model_version": model_key,
                    "dup_group": text_checksum(text),
                    "acl_source": None,
                }
            )
        table = pa.Table.from_pylist(rows, schema=plain)
        vec = pa.FixedSizeListArray.from_arrays(pa.array(vectors.reshape(-1), pa.float32()), dim)
        table = table.append_column(schema.field("vector"), vec)
        if sentences is not None:
            table = table.append_column(schema.field("sentence_vectors"), sentence_column(sentences, dim))
        self.table = lancedb.connect(self._tmp.name).create_table("chunks", table)
        ensure_indexes(self.table)
        where = access_filter(_PRINCIPAL, datetime.now(UTC), include_flagged=True)
        if where is None:  # cannot happen for a principal with a user and a tenant
            raise EvaluationError("no access filter for the evaluation principal")
        self.where = where

    def index_text(self) -> None:
        """A BM25 index on ``text`` too (the product indexes ``embedding_text``), for comparison."""
        from lancedb.index import FTS

        self.table.create_index("text", config=FTS(), replace=True)

    def close(self) -> None:
        self._tmp.cleanup()

    def search(
        self, query: str, vector: np.ndarray, k: int, mode: str, fusion: Fusion = PRODUCT_FUSION
    ) -> list[Hit]:
        opts = SearchOptions(k=k, mode=mode, include_flagged=True)
        rows = ranked_rows(self.table, None, query, self.where, opts, vector.tolist(), fusion)
        return [
            Hit(
                int(r["token_count"] or 0),
                tuple(Span(s["doc_id"], int(s["start"]), int(s["end"])) for s, _ in r["_sources"]),
            )
            for r in rows
        ]
