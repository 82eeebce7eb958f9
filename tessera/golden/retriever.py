"""The in-memory retriever of the quality gate (``tessera.pipeline.gate``): dense and hybrid top-k
over one chunk collection (:class:`EvalChunk`: a chunk as a reference-span scorer sees it),
without a LanceDB chunk table; and :func:`code_points`, byte offsets to code points.

``tessera eval chunking`` no longer uses it: it searches a real tenant table through the
product's ranking (:mod:`tessera.evaluation.chunking.collection`). Here exact score ties go
to the chunk whose span hashes lower (never to the first copy of a repeated passage), and
hybrid fuses :func:`tessera.search.query.fusion_depth` candidates per list, as search does.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from tessera.errors import EvaluationError
from tessera.golden.metrics import Span
from tessera.search.fusion import SentenceVectors, candidate_depth, fuse
from tessera.types import sha256_hex


@dataclass(frozen=True)
class EvalChunk:
    span: Span
    embedding_text: str
    tokens: int
    probes: tuple[str, ...] = ()
    """Sentence probe texts (``tessera.chunking.probes``) when the profile embeds them."""
    text: str = ""
    """The chunk text (what a hit returns; duplicates fold on it); ``embedding_text`` if empty."""
    chunk_id: str = ""
    """The product's chunk id; empty: a sha256 of the span (peers)."""
    kind: str = "text"

    @property
    def key(self) -> str:
        return self.chunk_id or sha256_hex(f"{self.span.corpus}\0{self.span.start}\0{self.span.end}")


def code_points(raw: bytes) -> Callable[[int], int]:
    """Map a byte offset of UTF-8 ``raw`` to the code point offset of the decoded text."""
    starts = np.cumsum([0] + [len(ch.encode("utf-8")) for ch in raw.decode("utf-8")])

    def at(byte: int) -> int:
        i = int(np.searchsorted(starts, byte))
        if i >= len(starts) or starts[i] != byte:
            raise EvaluationError(f"byte offset {byte} is inside a character")
        return i

    return at


class Retriever:
    """Dense and hybrid top-k over one chunk collection."""

    def __init__(
        self, chunks: Sequence[EvalChunk], vectors: np.ndarray, sentences: SentenceVectors | None = None
    ) -> None:
        if len(chunks) != len(vectors) or not len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but {len(vectors)} vectors")
        if sentences is not None and sentences.chunks != len(chunks):
            raise EvaluationError(f"{len(chunks)} chunks but sentence vectors for {sentences.chunks}")
        self.chunks = list(chunks)
        self.vectors = np.asarray(vectors, dtype=np.float32)
        self.sentences = sentences
        self.keys = [c.key for c in self.chunks]
        self._tmp = tempfile.TemporaryDirectory(prefix="tessera-eval-")
        self._fts: Any = None

    def close(self) -> None:
        self._tmp.cleanup()

    def _lexical_table(self) -> Any:
        if self._fts is None:
            import lancedb
            import pyarrow as pa
            from lancedb.index import FTS

            db = lancedb.connect(self._tmp.name)
            data = pa.table(
                {
                    "id": pa.array([str(i) for i in range(len(self.chunks))]),
                    "embedding_text": pa.array([c.embedding_text for c in self.chunks]),
                }
            )
            self._fts = db.create_table("chunks", data)
            self._fts.create_index("embedding_text", config=FTS())
        return self._fts

    def dense(self, qvec: np.ndarray, n: int) -> list[int]:
        sims = self.vectors @ qvec
        if self.sentences is not None:  # as search does: rescore the nearest chunks
            m = min(candidate_depth(n), len(sims))
            near = np.argpartition(-sims, m - 1)[:m]
            fused = np.full(len(sims), -np.inf)
            fused[near] = fuse(sims[near], self.sentences.best(qvec)[near])
            sims = fused
        n = min(n, len(sims))
        cut = np.partition(-sims, n - 1)[n - 1]  # the n-th best score; every tie with it competes
        near = np.flatnonzero(-sims <= cut)
        order = sorted(near, key=lambda i: (-sims[i], self.keys[i]))
        return [int(i) for i in order[:n]]

    def lexical(self, query: str, n: int) -> list[int]:
        rows = (
            self._lexical_table().search(query, query_type="fts").select(["id", "_score"]).limit(n).to_list()
        )
        return [int(r["id"]) for r in rows]

    def top(self, query: str, qvec: np.ndarray, k: int, mode: str) -> list[int]:
        if mode == "dense":
            return self.dense(qvec, k)
        from tessera.search.query import fusion_depth, rrf

        depth = fusion_depth(k)
        lists = [[{"id": self.keys[i], "i": i} for i in self.dense(qvec, depth)]]
        lists.append([{"id": self.keys[i], "i": i} for i in self.lexical(query, depth)])
        return [int(r["i"]) for r in rrf(lists, k)]
