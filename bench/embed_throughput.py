"""Embed stage throughput vs raw ``SentenceTransformer.encode`` on the same texts, same run.

Ours = ``embed_with_cache`` on a cold cache: hashing, cache lookup, length-sorted batches with
retry and validation, and the cache write. Raw = one ``encode`` call. Alternated, medians.
"""

from __future__ import annotations

import sys
import tempfile
import time

from bench.common import isolated_config, median, peak_rss_mb, write_result
from tessera.chunking.base import ChunkContext
from tessera.chunking.registry import get_chunker
from tessera.chunking.tokens import load_counter
from tessera.embedding.batching import RetryPolicy
from tessera.embedding.model_files import model_dir
from tessera.embedding.sentence import SentenceTransformerEmbedder
from tessera.parsing.base import get_parser
from tessera.sources.registry import connector_for
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache


def corpus_texts(copies: int) -> list[str]:
    cfg = isolated_config()
    emb_key = "bench"
    texts: list[str] = []
    for _tenant, tcfg in sorted(cfg.tenants.items()):
        conn = connector_for(tcfg)
        ctx = ChunkContext(cfg.chunking, load_counter(model_dir(cfg.embedding)), emb_key)
        for doc in conn.list().documents:
            parsed = get_parser(doc.content_type).parse(doc, conn.read(doc))
            texts += [c.embedding_text for c in get_chunker(cfg.chunking.strategy).chunk(doc, parsed, ctx)]
    # distinct copies so that the cache cannot dedupe them
    return [f"{t}\n(copy {k})" for k in range(copies) for t in texts]


def main() -> int:
    cfg = isolated_config()
    embedder = SentenceTransformerEmbedder(cfg.embedding)
    model = embedder.model
    texts = corpus_texts(copies=2)
    bs = cfg.embedding.batch_size
    model.encode(texts[:64], batch_size=bs, normalize_embeddings=True)  # warm-up
    raw_s, ours_s = [], []
    for _ in range(3):
        t0 = time.perf_counter()
        model.encode(texts, batch_size=bs, normalize_embeddings=True, convert_to_numpy=True)
        raw_s.append(time.perf_counter() - t0)
        cache = EmbeddingCache(connect(tempfile.mkdtemp(prefix="bench-cache-")), "bench", embedder.identity)
        t0 = time.perf_counter()
        _, stats = embed_with_cache(embedder, cache, texts, bs, RetryPolicy())
        ours_s.append(time.perf_counter() - t0)
        assert stats.embedded == len(set(texts))
    raw, ours = median(raw_s), median(ours_s)
    result = {
        "texts": len(texts),
        "batch_size": bs,
        "raw_encode_seconds": raw_s,
        "tessera_embed_seconds": ours_s,
        "raw_texts_per_s_median": round(len(texts) / raw, 2),
        "tessera_texts_per_s_median": round(len(texts) / ours, 2),
        "throughput_ratio": round(raw / ours, 3),
        "target_ratio": 0.95,
        "peak_rss_mb": round(peak_rss_mb(), 1),
    }
    print(write_result("embed_throughput", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
