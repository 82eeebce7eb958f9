"""Query latency on a 100k-chunk synthetic tenant, indexed as the default chunking profile indexes.

With the default ``chunking.sentence_vectors`` on, every chunk but one in four has three
sentence vectors (as prose chunks have), so the dense side fetches the nearest chunks' vectors
and rescores them (``tessera.search.fusion``); with it off (the default since issue 16) the
column is null, as a publish writes it. ``BENCH_SENTENCE_VECTORS=1`` measures the former.
Hybrid search (BM25 + vector, RRF) with the ACL/date prefilter, as a ratio to unfiltered
vector search in the same run; then the same hybrid query after dropping every index (flat
vector scan, exact BM25 over the filtered rows) to show what the indexes buy. Vectors are
random unit vectors (the query engine is measured, not the embedding model).
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from datetime import UTC, datetime
from typing import Any

import numpy as np
import pyarrow as pa

from bench.common import peak_rss_mb, write_result
from tessera.config import ChunkingConfig
from tessera.embedding.identity import ModelIdentity
from tessera.search.principal import Principal, access_filter
from tessera.search.query import SearchOptions, retrieve
from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tessera.store.indexes import index_state
from tessera.store.schema import chunk_schema, sentence_column

N, DIM, QUERIES, K, SENTENCES = 100_000, 384, 40, 10, 3
WORDS = [f"w{i}" for i in range(5000)]
WITH_SENTENCES = os.environ.get("BENCH_SENTENCE_VECTORS", "") == "1" or ChunkingConfig().sentence_vectors


class RandomQueries:
    def __init__(self, seed: int) -> None:
        self.rng = np.random.default_rng(seed)
        self.identity = ModelIdentity("bench/random", "0" * 64, DIM, 256, True)

    def embed_query(self, text: str) -> Any:
        v = self.rng.standard_normal(DIM).astype(np.float32)
        return v / np.linalg.norm(v)

    def embed_documents(self, texts: Any) -> Any:
        raise NotImplementedError


def build(index: TenantIndex, rng: np.random.Generator) -> None:
    # clustered like real embeddings (topics), not uniform noise: 300 centres plus noise
    centres = rng.standard_normal((300, DIM)).astype(np.float32)
    vec = centres[rng.integers(0, 300, N)] + 0.35 * rng.standard_normal((N, DIM)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, 40)) for _ in range(N)]
    groups = [[f"g{rng.integers(0, 20)}"] for _ in range(N)]
    schema = chunk_schema(DIM)
    vector_columns = ("vector", "sentence_vectors")
    cols: dict[str, Any] = {f.name: [None] * N for f in schema if f.name not in vector_columns}
    cols.update(
        id=[f"{i:064x}" for i in range(N)], tenant=["bench"] * N, doc_id=[f"d{i // 10}" for i in range(N)],
        revision=["r"] * N, text=texts, embedding_text=texts, checksum=["c"] * N, meta_hash=["m"] * N,
        readers=[[] for _ in range(N)], groups=groups, flags=[[] for _ in range(N)],
        effective_from_us=[0] * N, effective_to_us=[2**62] * N, model_version=[index.model_key] * N,
        start=[0] * N, end=[1] * N, byte_start=[0] * N, byte_end=[1] * N, position=list(range(N)),
        token_count=[40] * N, heading_path=[[] for _ in range(N)], pages=[[] for _ in range(N)],
    )  # fmt: skip
    first = schema.get_field_index("vector")
    plain = pa.schema([f for f in list(schema)[:first] if f.name not in vector_columns])
    table = pa.Table.from_pydict(cols, schema=plain)
    table = table.append_column(
        schema.field("vector"), pa.FixedSizeListArray.from_arrays(pa.array(vec.ravel()), DIM)
    )
    per_row: list[Any] = [None] * N
    if WITH_SENTENCES:
        sent = vec[:, None, :] + 0.3 * rng.standard_normal((N, SENTENCES, DIM)).astype(np.float32)
        sent /= np.linalg.norm(sent, axis=2, keepdims=True)
        per_row = [None if i % 4 == 0 else sent[i] for i in range(N)]
    table = table.append_column(schema.field("sentence_vectors"), sentence_column(per_row, DIM))
    for f in schema:  # columns after the vectors (acl_source), in the table's order
        if f.name not in table.schema.names:
            table = table.append_column(f, pa.nulls(N, f.type))
    index.publish(table, {f"d{i}" for i in range(N // 10)}, "bench-build", "c")


def timed(fn: Any, n: int) -> list[float]:
    out = []
    for _ in range(n):
        t0 = time.perf_counter()
        fn()
        out.append((time.perf_counter() - t0) * 1000)
    return out


def pct(values: list[float]) -> dict[str, float]:
    return {
        "p50_ms": round(float(np.percentile(values, 50)), 2),
        "p95_ms": round(float(np.percentile(values, 95)), 2),
    }


def main() -> int:
    rng = np.random.default_rng(7)
    db = connect(tempfile.mkdtemp(prefix="tessera-retrieval-"))
    embedder = RandomQueries(11)
    index = TenantIndex(db, "bench", embedder.identity.key, DIM)
    t0 = time.perf_counter()
    build(index, rng)
    build_s = time.perf_counter() - t0
    table: Any = index.table()
    assert table is not None
    indexes = {col: kind for col, (kind, _) in index_state(table).items()}
    actions = dict(index.last_indexes)
    where = access_filter(Principal("bench", "u", ("g3", "g7")), datetime.now(UTC))
    assert where is not None
    opts = SearchOptions(k=K, mode="hybrid")

    def query_text() -> str:
        return " ".join(rng.choice(WORDS, 3))

    def hybrid() -> None:
        rows = retrieve(table, embedder, query_text(), where, opts)
        assert all(r["groups"][0] in ("g3", "g7") for r in rows)

    def vector_only() -> None:
        q = table.search(embedder.embed_query(""), vector_column_name="vector").distance_type("cosine")
        q.limit(K).select(["id", "_distance"]).to_arrow()

    hybrid()  # warm-up
    vector_only()
    h, v = [], []
    for _ in range(QUERIES):  # alternated
        h += timed(hybrid, 1)
        v += timed(vector_only, 1)
    for idx in table.list_indices():
        table.drop_index(idx.name)
    table = index.table()
    assert table is not None
    hybrid()
    flat = timed(hybrid, 10)
    hp, vp = pct(h), pct(v)
    result = {
        "rows": N,
        "dimension": DIM,
        "k": K,
        "chunking_default": ChunkingConfig().as_dict(),
        "sentence_vectors_per_row": SENTENCES * 3 / 4 if WITH_SENTENCES else 0,
        "build_and_index_seconds": round(build_s, 1),
        "indexes": indexes,
        "index_actions": actions,
        "hybrid_acl_prefilter": hp,
        "vector_unfiltered": vp,
        "ratio_p50": round(hp["p50_ms"] / vp["p50_ms"], 2),
        "ratio_p95": round(hp["p95_ms"] / vp["p95_ms"], 2),
        "hybrid_acl_prefilter_without_indexes": pct(flat),
        "index_speedup_p50": round(pct(flat)["p50_ms"] / hp["p50_ms"], 1),
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(write_result("retrieval_latency", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
