"""The chunking sweep: strategies × sizes × overlaps, plus peer splitters, in one run.

Every configuration is a separately versioned chunking profile (its ``config_hash`` is in
the report). The embedding model, k, the questions and the retrieval code stay fixed.
Embeddings go through the embedding cache, so a text embedded once (in an earlier
configuration, or an earlier run with the same cache) is never embedded again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tessera.chunking.base import ChunkContext
from tessera.chunking.tokens import TokenCounter
from tessera.config_chunking import ChunkingConfig
from tessera.embedding.base import Embedder
from tessera.embedding.batching import EmbedStats, RetryPolicy
from tessera.embedding.cache import EmbeddingCache, embed_with_cache
from tessera.errors import ConfigError
from tessera.evaluation.chunking import frontier
from tessera.evaluation.chunking.corpus import Corpus
from tessera.evaluation.chunking.harness import EvalChunk, Retriever, chunk_corpus, evaluate, peer_chunks
from tessera.evaluation.chunking.peers import PEERS, Peer, splitter
from tessera.search.fusion import SentenceVectors, split

MODEL_MAX_TOKENS = 256
TARGETS = {"dense": {"recall": 88.0, "iou": 8.0}, "hybrid": {"recall": 93.0, "iou": 9.0}}


@dataclass(frozen=True)
class SweepSettings:
    strategies: tuple[str, ...] = ("token", "recursive", "structural", "semantic")
    sizes: tuple[int, ...] = (64, 96, 128, 192, 256)
    overlaps: tuple[int, ...] = (0, 25, 50)  # percent of the size
    k: int = 5
    modes: tuple[str, ...] = ("dense", "hybrid")
    token_budget: int = 640
    peers: tuple[Peer, ...] = PEERS
    base: ChunkingConfig = field(default_factory=ChunkingConfig)
    extra: tuple[tuple[str, ChunkingConfig], ...] = ()  # named profiles evaluated as they are

    def profiles(self) -> list[tuple[str, ChunkingConfig]]:
        out: list[tuple[str, ChunkingConfig]] = list(self.extra)
        for strategy in self.strategies:
            for size in self.sizes:
                for pct in self.overlaps if strategy != "semantic" else (0,):
                    overlap = size * pct // 100
                    if size > MODEL_MAX_TOKENS or overlap >= size:
                        raise ConfigError(
                            "eval.sizes", f"size {size} / overlap {pct}% is not a valid profile"
                        )
                    cfg = replace(
                        self.base,
                        strategy=strategy,
                        max_tokens=MODEL_MAX_TOKENS,
                        target_tokens=size,
                        overlap_tokens=overlap,
                    )
                    out.append((f"{strategy}-{size}-{pct}", cfg))
        return out


@dataclass
class Embedding:
    """The model behind the embedding cache, plus what it cost during the sweep."""

    embedder: Embedder
    cache: EmbeddingCache
    batch_size: int = 32
    stats: EmbedStats = field(default_factory=EmbedStats)

    def __call__(self, texts: Sequence[str]) -> np.ndarray:
        vectors, _ = embed_with_cache(
            self.embedder, self.cache, list(texts), self.batch_size, RetryPolicy(), self.stats
        )
        return np.asarray(vectors, dtype=np.float32)


def _measure(
    name: str,
    chunks: list[EvalChunk],
    embedding: Embedding,
    corpus: Corpus,
    qvecs: np.ndarray,
    settings: SweepSettings,
) -> dict[str, Any]:
    before = (embedding.stats.embedded, embedding.stats.seconds)
    vectors = embedding([c.embedding_text for c in chunks])
    probes = [p for c in chunks for p in c.probes]
    sentences = None
    if probes:
        flat = embedding(probes)
        per_chunk = split(flat, [len(c.probes) for c in chunks])
        sentences = SentenceVectors.of(per_chunk, vectors.shape[1])
    retriever = Retriever(chunks, vectors, sentences)
    try:
        scores = {
            m: evaluate(retriever, corpus.questions, qvecs, settings.k, m, settings.token_budget)
            for m in settings.modes
        }
    finally:
        retriever.close()
    tokens = [c.tokens for c in chunks]
    return {
        "name": name,
        "chunks": len(chunks),
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "max_tokens_seen": max(tokens),
        "indexed_tokens": int(sum(tokens)),
        "sentence_probes": len(probes),
        "embedded_texts": embedding.stats.embedded - before[0],
        "embed_seconds": round(embedding.stats.seconds - before[1], 2),
        **{m: {key: round(v, 2) for key, v in s.items()} for m, s in scores.items()},
    }


def run_sweep(
    corpus: Corpus,
    embedding: Embedding,
    counter: TokenCounter,
    model_path: Path,
    settings: SweepSettings,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    started = time.perf_counter()
    ident = embedding.embedder.identity
    qvecs = np.stack([embedding.embedder.embed_query(q.text) for q in corpus.questions])
    rows: list[dict[str, Any]] = []
    profiles = dict(settings.profiles())
    for name, cfg in profiles.items():
        t0 = time.perf_counter()
        ctx = ChunkContext(cfg, counter, ident.hash, ident.document_prefix, embed=embedding)
        chunks = chunk_corpus(corpus, cfg, ctx)
        chunk_seconds = time.perf_counter() - t0
        row = _measure(name, chunks, embedding, corpus, qvecs, settings)
        row.update(
            family="tessera",
            strategy=cfg.strategy,
            size=cfg.target_tokens,
            overlap=cfg.overlap_tokens,
            overlap_pct=round(100 * cfg.overlap_tokens / cfg.target_tokens),
            config=cfg.as_dict(),
            config_hash=ctx.config_hash,
            chunk_seconds=round(chunk_seconds, 2),
            chunker_stats=dict(vars(ctx.stats)),
        )
        rows.append(row)
        log(_line(row, settings.modes))
    peers: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    splits: dict[str, Callable[[str], list[tuple[int, int]]]] = {}
    for peer in settings.peers:
        try:
            splits[peer.name] = splitter(peer, model_path)
        except ImportError as e:
            skipped[peer.name] = f"not installed: {e.name}"
            continue
        chunks = peer_chunks(corpus, splits[peer.name], counter)
        row = _measure(peer.name, chunks, embedding, corpus, qvecs, settings)
        row.update(family="peer", library=peer.library, size=peer.size, overlap=peer.overlap)
        peers.append(row)
        log(_line(row, settings.modes))
    best = frontier.recommend(rows, peers, settings.modes, TARGETS)
    best_row = next((r for r in rows if best and r["name"] == best["name"]), None)
    ablation: list[dict[str, Any]] = []
    if best_row is not None:  # the recommended profile with sentence vectors toggled
        cfg = profiles[best_row["name"]]
        cfg = replace(cfg, sentence_vectors=not cfg.sentence_vectors)
        ctx = ChunkContext(cfg, counter, ident.hash, ident.document_prefix, embed=embedding)
        name = f"{best_row['name']} sentence_vectors={cfg.sentence_vectors}"
        ablation.append(
            {
                **_measure(name, chunk_corpus(corpus, cfg, ctx), embedding, corpus, qvecs, settings),
                "family": "tessera",
                "config": cfg.as_dict(),
            }
        )
        log(_line(ablation[-1], settings.modes))
    for peer_name, peer_split in splits.items():  # does a peer's chunking reach the targets with them?
        chunks = peer_chunks(corpus, peer_split, counter, probes=True)
        name = f"{peer_name} sentence_vectors=True"
        ablation.append({**_measure(name, chunks, embedding, corpus, qvecs, settings), "family": "peer"})
        log(_line(ablation[-1], settings.modes))
    for r in ablation:
        r["targets_met"] = frontier.targets_met(r, TARGETS)
    for r in rows:
        r["margins"] = frontier.margins(r, peers, settings.modes) if peers else {}
        r["targets_met"] = frontier.targets_met(r, TARGETS)
    return {
        "model": ident.key,
        "k": settings.k,
        "modes": list(settings.modes),
        "token_budget": settings.token_budget,
        "questions": len(corpus.questions),
        "corpora": {cid: len(text) for cid, text in corpus.texts.items()},
        "targets": TARGETS,
        "rows": rows,
        "peers": peers,
        "peers_skipped": skipped,
        "ablation": ablation,
        "recommended": {**best, "config": best_row["config"]} if best and best_row else None,
        "embedding": {"embedded": embedding.stats.embedded, "cache_hits": embedding.stats.cache_hits,
                      "seconds": round(embedding.stats.seconds, 1)},
        "elapsed_seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip


def _line(row: dict[str, Any], modes: Sequence[str]) -> str:
    scores = "  ".join(f"{m} R {row[m]['recall']:.1f} IoU {row[m]['iou']:.1f}" for m in modes)
    return f"{row['name']:<28} {row['chunks']:>5} chunks {row['mean_tokens']:>6} tok  {scores}"
