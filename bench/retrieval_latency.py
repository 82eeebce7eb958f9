"""Query latency on a 100k-chunk synthetic tenant, indexed as the default chunking profile indexes.

With the default ``chunking.sentence_vectors`` on, every chunk but one in four has three
sentence vectors (as prose chunks have), so the dense side fetches the nearest chunks' vectors
and rescores them (``tessera.search.fusion``); with it off (the default since issue 16) the
column is null, as a publish writes it. ``BENCH_SENTENCE_VECTORS=1`` measures the former. Hybrid
search (BM25 + vector, RRF) with the ACL/date prefilter, measured on the path ``tessera search``
takes (``tessera.search.query.search``: table checks, ranking, duplicate folding with the copies
query, hits), as a ratio to unfiltered vector search in the same run. One principal searches
``QUERIES`` times, as a user of a search service does: from its fourth search its claims' rows
are held in memory (``tessera.search.flat``; the read's cost and size are reported);
``hybrid_acl_prefilter_first_search`` is the latency of principals searching once each, users
of the same groups (on no row's ``readers``, they share that principal's mask and held rows:
``tessera.search.masks.claims_of``), and ``..._new_groups`` of principals of groups no one
searched (the indexes answer, nothing of theirs held). Then the same search after dropping every index (flat
vector scan, BM25 without its index) to show what the indexes buy. 2% of the chunks are exact
copies of a chunk in another document, every chunk has its ``dup_group`` as a publish writes it.
Vectors are clustered unit vectors (the query engine is measured, not the embedding model);
recall@10 of the vector index is reported against exact search. Then ``PUBLISHES`` small
publishes (400 rows of 40 new documents each, as a 1 % change would add) go into the table as a
publish commits them (index deltas, see ``tessera.store.indexes``): their seconds, each index's
segments and the same two latencies after them are reported (``after_small_publishes``), since a
table in use carries deltas, not the fresh build; then once more after maintenance merged them
(``then_maintenance``: ``tessera.store.maintenance.maintain_table``, as the weekly job runs it).
``--reuse PATH`` keeps the built table between runs (and skips the publishes); ``--rows`` and
``--name`` measure another size into another result file (``--rows 1000000 --name
retrieval_latency_1m``). The machine may be shared: the result records its load average.
"""

from __future__ import annotations

import argparse
import itertools
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
from tessera.search import candidates, flat
from tessera.search.dataset import dataset
from tessera.search.masks import claims_mask
from tessera.search.principal import Principal, access_filter
from tessera.search.query import SearchOptions, search
from tessera.search.scope import scope_of
from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tessera.store.indexes import NPROBES, REFINE, ef_for, ensure_indexes, index_state, nearest
from tessera.store.maintenance import maintain_table
from tessera.store.schema import chunk_schema, sentence_column, text_checksum

DIM, QUERIES, K, SENTENCES = 384, 150, 10, 3
"""``QUERIES``: 40 until stop 46, when on a shared 2-core VM the p50 of 40 alternated hybrid
searches moved from 5.4 to 7.5 ms between consecutive windows on one table (the vector query's
from 2.7 to 3.5 ms), so one run's cells disagreed by more than the changes measured."""
PUBLISHES, PUBLISH_DOCS = 6, 40
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


def build(index: TenantIndex, rng: np.random.Generator, N: int) -> None:
    # clustered like real embeddings (topics), not uniform noise: 300 centres plus noise
    centres = rng.standard_normal((300, DIM)).astype(np.float32)
    vec = centres[rng.integers(0, 300, N)] + 0.35 * rng.standard_normal((N, DIM)).astype(np.float32)
    vec /= np.linalg.norm(vec, axis=1, keepdims=True)
    texts = [" ".join(rng.choice(WORDS, 40)) for _ in range(N)]
    for i in range(0, N, 50):  # 2% exact copies in other documents, folded by search as publish links them
        texts[i + 10] = texts[i]
    groups = [[f"g{rng.integers(0, 20)}"] for _ in range(N)]
    schema = chunk_schema(DIM)
    vector_columns = ("vector", "sentence_vectors")
    cols: dict[str, Any] = {f.name: [None] * N for f in schema if f.name not in vector_columns}
    cols.update(
        id=[f"{i:064x}" for i in range(N)], tenant=["bench"] * N, doc_id=[f"d{i // 10}" for i in range(N)],
        revision=["r"] * N, text=texts, embedding_text=texts, checksum=["c"] * N, meta_hash=["m"] * N,
        dup_group=[text_checksum(t) for t in texts],
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


def small_publishes(index: TenantIndex) -> list[dict[str, Any]]:
    """``PUBLISHES`` publishes of ``PUBLISH_DOCS`` new documents each (copies of existing rows
    under new ids), as a run commits them; the seconds and index actions of each."""
    out = []
    for k in range(PUBLISHES):
        table = index.table()
        assert table is not None
        wanted = ", ".join(f"'d{j}'" for j in range(k * PUBLISH_DOCS, (k + 1) * PUBLISH_DOCS))
        rows = table.search().where(f"doc_id IN ({wanted})").limit(None).to_arrow()
        ids = pa.array([f"p{k}-{i:060x}" for i in range(rows.num_rows)])
        docs = pa.array([f"p{k}-{d}" for d in rows.column("doc_id").to_pylist()])
        rows = rows.set_column(rows.schema.get_field_index("id"), "id", ids)
        rows = rows.set_column(rows.schema.get_field_index("doc_id"), "doc_id", docs).cast(index.schema)
        t0 = time.perf_counter()
        index.publish(rows, set(docs.to_pylist()), f"bench-small-{k}", "c")
        out.append(
            {"rows": rows.num_rows, "seconds": round(time.perf_counter() - t0, 3), **index.last_indexes}
        )
    return out


def segments(table: Any) -> dict[str, int]:
    return {i.columns[0]: int(table.index_stats(i.name).num_indices) for i in table.list_indices()}


def alternated(first: Any, second: Any) -> tuple[list[float], list[float]]:
    """Milliseconds of ``QUERIES`` calls of each, alternated, after one warm-up call of each."""
    first()
    second()
    a: list[float] = []
    b: list[float] = []
    for _ in range(QUERIES):
        a += timed(first, 1)
        b += timed(second, 1)
    return a, b


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


def recall_at_10(table: Any, where: str, rng: np.random.Generator, queries: int = 20) -> dict[str, float]:
    """recall@10 of the vector index against exact search, on queries near the data (a stored
    vector plus noise): unfiltered, as ``tessera.store.indexes.vector_recall`` checks it at
    publish, and under the ACL prefilter, as the dense list of a search reads it."""
    ds = dataset(table)
    rows = int(ds.count_rows())
    base = ds.to_table(columns=["vector"], limit=5000).column("vector").to_pylist()
    hits = {"unfiltered": 0, "acl_prefilter": 0}
    for _ in range(queries):
        q = np.asarray(base[int(rng.integers(len(base)))], np.float32) + 0.05 * rng.standard_normal(DIM)
        q = (q / np.linalg.norm(q)).astype(np.float32)
        for name, w in (("unfiltered", None), ("acl_prefilter", where)):
            exact = {**nearest(q, 10, rows), "use_index": False}
            truth = (
                ds.to_table(columns=["id", "_distance"], nearest=exact, filter=w, prefilter=True)
                .column("id")
                .to_pylist()
            )
            if w is None:
                got = ds.to_table(columns=["id", "_distance"], nearest=nearest(q, 10, rows)).column("id")
                got = got.to_pylist()
            else:
                got = [r["id"] for r in candidates.dense(table, q.tolist(), w, 10)]
            hits[name] += len(set(got) & set(truth))
    return {k: round(v / (queries * 10), 3) for k, v in hits.items()}


def first_searches(
    uri: str, embedder: Any, opts: SearchOptions, text: Any, new_groups: bool = False
) -> list[float]:
    """Hybrid search latency of principals searching once each, another user each. With the
    groups of the principal measured before (``g3``, ``g7``) and on no row's ``readers``, a
    user shares that principal's mask and held rows (``tessera.search.masks.claims_of``); with
    ``new_groups`` each has a pair of groups no one searched: nothing of theirs is known but
    the table answer."""
    others = [g for g in range(20) if g not in (3, 7)]
    pairs = list(itertools.combinations(others, 2))[: QUERIES // 2]
    out = []
    for i in range(QUERIES // 2):
        groups = (f"g{pairs[i][0]}", f"g{pairs[i][1]}") if new_groups else ("g3", "g7")
        principal = Principal("bench", f"{'new' if new_groups else 'once'}-{i}", groups)
        out += timed(lambda p=principal: search(uri, embedder, p, text(), options=opts), 1)
    return out


def held_read_ms(table: Any, where: str) -> dict[str, Any]:
    """What holding the principal's rows costs (``tessera.search.flat``): one read, timed, and
    the set's size."""
    scope = scope_of(where)
    assert scope is not None
    allowed = claims_mask(dataset(table), scope.claims)
    t0 = time.perf_counter()
    held = flat._read(dataset(table), allowed)
    seconds = time.perf_counter() - t0
    return {"rows": allowed.rows, "read_ms": round(seconds * 1000, 1), "mb": round(held.nbytes / 2**20, 1)}


def main() -> int:
    """``--reuse PATH``: build the table at PATH once and measure it again on later runs (the
    index-free comparison, which drops the indexes, is skipped then)."""
    parser = argparse.ArgumentParser(prog="python -m bench.retrieval_latency", description=__doc__)
    parser.add_argument("--rows", type=int, default=100_000, help="chunks in the synthetic tenant")
    parser.add_argument("--name", default="retrieval_latency", help="result file: bench/results/NAME.json")
    parser.add_argument("--reuse", metavar="PATH", help="build the table at PATH once, reuse it later")
    args = parser.parse_args()
    N, reuse = args.rows, args.reuse
    rng = np.random.default_rng(7)
    uri = reuse or tempfile.mkdtemp(prefix="tessera-retrieval-")
    embedder = RandomQueries(11)
    index = TenantIndex(connect(uri), "bench", embedder.identity.key, DIM)
    t0 = time.perf_counter()
    fresh = index.table() is None
    if fresh:
        build(index, rng, N)
    else:
        ensure_indexes(index.table())  # a table built by an older bench gains what is missing
    build_s = time.perf_counter() - t0
    table: Any = index.table()
    assert table is not None
    indexes = {col: kind for col, (kind, _) in index_state(table).items()}
    actions = dict(index.last_indexes)
    principal = Principal("bench", "u", ("g3", "g7"))
    where = access_filter(principal, datetime.now(UTC))
    assert where is not None
    opts = SearchOptions(k=K, mode="hybrid")
    seen: list[str] = []

    def query_text() -> str:
        return " ".join(rng.choice(WORDS, 3))

    def hybrid() -> None:  # what ``tessera search`` runs: table checks, ranking, folding, hits
        hits = search(uri, embedder, principal, query_text(), options=opts)
        seen.extend(s.citation.chunk_id for h in hits for s in h.sources)

    def vector_only() -> None:
        q = table.search(embedder.embed_query(""), vector_column_name="vector").distance_type("cosine")
        q.limit(K).select(["id", "_distance"]).to_arrow()

    h, v = alternated(hybrid, vector_only)
    first = first_searches(uri, embedder, opts, query_text)
    cold = first_searches(uri, embedder, opts, query_text, new_groups=True)
    held = held_read_ms(table, where)
    after: dict[str, Any] = {}
    if fresh and not reuse:
        publishes = small_publishes(index)
        table = index.table()
        h2, v2 = alternated(hybrid, vector_only)
        after = {
            "publishes": publishes,
            "segments": segments(table),
            "hybrid_acl_prefilter": pct(h2),
            "vector_unfiltered": pct(v2),
        }
        t0 = time.perf_counter()  # then maintenance, as the weekly job runs it: the deltas merged
        report = maintain_table(index.table(), keep_versions=10, keep_run_tags=20)
        maintained = time.perf_counter() - t0
        table = index.table()
        h3, v3 = alternated(hybrid, vector_only)
        after["then_maintenance"] = {
            "seconds": round(maintained, 1),
            "segments_merged": report.segments_merged,
            "vector_index": report.vector_index,
            "segments": segments(table),
            "hybrid_acl_prefilter": pct(h3),
            "vector_unfiltered": pct(v3),
        }
    listed = ", ".join(f"'{i}'" for i in sorted(set(seen)))
    foreign = table.count_rows(f"id IN ({listed}) AND NOT array_has_any(groups, ['g3', 'g7'])")
    assert foreign == 0, f"{foreign} rows outside the principal's groups were returned"
    recall = recall_at_10(table, where, np.random.default_rng(3))
    flat: list[float] = []
    if fresh and not reuse:
        for idx in table.list_indices():
            table.drop_index(idx.name)
        hybrid()
        flat = timed(hybrid, 10)
    hp, vp = pct(h), pct(v)
    result = {
        "rows": N,
        "dimension": DIM,
        "k": K,
        "path": "tessera.search.query.search (hybrid, ACL prefilter, duplicate folding, hits)",
        "chunking_default": ChunkingConfig().as_dict(),
        "sentence_vectors_per_row": SENTENCES * 3 / 4 if WITH_SENTENCES else 0,
        "exact_copies_fraction": 0.02,
        "build_and_index_seconds": round(build_s, 1),
        "indexes": indexes,
        "index_actions": actions,
        "vector_settings": {"nprobes": NPROBES, "refine_factor": REFINE, "ef": ef_for(N, K)},
        "vector_recall_at_10": recall,
        "vector_recall_measured": "after maintenance" if fresh and not reuse else "as found",
        "hybrid_acl_prefilter": hp,
        "vector_unfiltered": vp,
        "ratio_p50": round(hp["p50_ms"] / vp["p50_ms"], 2),
        "ratio_p95": round(hp["p95_ms"] / vp["p95_ms"], 2),
        "hybrid_acl_prefilter_first_search": {**pct(first), "principals": len(first)},
        "hybrid_acl_prefilter_first_search_new_groups": {**pct(cold), "principals": len(cold)},
        "held_rows": held,
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    if after:
        result["after_small_publishes"] = after
    if flat:
        result["hybrid_acl_prefilter_without_indexes"] = pct(flat)
        result["index_speedup_p50"] = round(pct(flat)["p50_ms"] / hp["p50_ms"], 1)
    print(write_result(args.name, result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
