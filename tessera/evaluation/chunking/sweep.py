"""The chunking sweep: named profiles (and optionally a grid), plus peer splitters, in one run.

Every configuration is a separately versioned chunking profile (its ``config_hash`` is in
the report). The embedding model, k, the questions and the retrieval code stay fixed. All
corpora are pooled into one collection per configuration (as the Chroma study does); every
score is kept per question, so the report has it pooled and per corpus, which is what the
leave-one-corpus-out selection (:mod:`tessera.evaluation.chunking.loco`) needs. Embeddings
go through the embedding cache, so a text embedded once (in an earlier configuration, or an
earlier run with the same cache) is never embedded again.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np

from tessera.chunking.base import ChunkContext
from tessera.chunking.profile import AdaptiveConfig, ChunkingConfig
from tessera.chunking.tokens import TokenCounter
from tessera.embedding.base import Embedder
from tessera.embedding.batching import EmbedStats, RetryPolicy
from tessera.errors import ConfigError
from tessera.evaluation.chunking import bootstrap, frontier, loco
from tessera.evaluation.chunking.collection import Collection
from tessera.evaluation.chunking.corpus import Corpus
from tessera.evaluation.chunking.harness import (
    EvalChunk,
    chunk_corpus,
    evaluate,
    intact_coverage,
    peer_chunks,
    summarize,
)
from tessera.evaluation.chunking.peers import PEERS, Peer, splitter
from tessera.golden.metrics import TokenGrid
from tessera.search.fusion import split
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache

MODEL_MAX_TOKENS = 256
QUESTIONS = "_questions"


def _profile(strategy: str, size: int, overlap: int, sv: bool = False, **adaptive: int) -> ChunkingConfig:
    return ChunkingConfig(
        strategy=strategy,
        target_tokens=size,
        overlap_tokens=overlap,
        sentence_vectors=sv,
        adaptive=AdaptiveConfig(**adaptive) if adaptive else AdaptiveConfig(),
    )


CANDIDATES: tuple[tuple[str, ChunkingConfig], ...] = (
    ("structural-144-0+sv", _profile("structural", 144, 0, True)),
    ("structural-144-0", _profile("structural", 144, 0)),
    ("structural-256-0", _profile("structural", 256, 0)),
    ("token-250-125", _profile("token", 250, 125)),
    ("adaptive-144/256@512", _profile("adaptive", 144, 0, long_section_tokens=512)),
    ("adaptive-144/256@1024", _profile("adaptive", 144, 0, long_section_tokens=1024)),
    ("adaptive-144/256@2048", _profile("adaptive", 144, 0, long_section_tokens=2048)),
)
"""The profiles of the default run: the previous default with and without sentence vectors,
structural at three sizes, Tessera's token windows of the study, and adaptive profiles whose
parts are those structural sizes (so they re-embed almost nothing)."""


@dataclass(frozen=True)
class SweepSettings:
    strategies: tuple[str, ...] = ()
    sizes: tuple[int, ...] = (64, 96, 128, 192, 256)
    overlaps: tuple[int, ...] = (0, 25, 50)  # percent of the size
    k: int = 5
    modes: tuple[str, ...] = ("dense", "hybrid")
    token_budget: int = 640
    peers: tuple[Peer, ...] = PEERS
    base: ChunkingConfig = field(default_factory=lambda: replace(ChunkingConfig(), sentence_vectors=False))
    extra: tuple[tuple[str, ChunkingConfig], ...] = CANDIDATES  # named profiles evaluated as they are
    sentence_ablation: bool = True
    """Also run the recommended profile with ``sentence_vectors`` toggled (its cost and gain)."""
    fusion_study: bool = False
    """Compare hybrid fusion variants on the recommended profile's chunks (:mod:`.fusion`)."""

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


@dataclass(frozen=True)
class Inputs:
    corpus: Corpus
    qvecs: np.ndarray
    grids: dict[str, TokenGrid]
    counter: TokenCounter


def _measure(
    name: str, chunks: list[EvalChunk], embedding: Embedding, inp: Inputs, s: SweepSettings
) -> dict[str, Any]:
    before = (embedding.stats.embedded, embedding.stats.seconds)
    vectors = embedding([c.embedding_text for c in chunks])
    probes = [p for c in chunks for p in c.probes]
    sentences = split(embedding(probes), [len(c.probes) for c in chunks]) if probes else None
    collection = Collection(chunks, vectors, sentences, embedding.embedder.identity.key)
    per_corpus: dict[str, dict[str, Any]] = {c: {} for c in inp.corpus.texts}
    pooled: dict[str, Any] = {}
    latency: dict[str, float] = {}
    questions: dict[str, dict[str, list[float]]] = {}
    try:
        for m in s.modes:
            t0 = time.perf_counter()
            records = evaluate(collection, inp.corpus.questions, inp.qvecs, s.k, m, s.token_budget, inp.grids)
            latency[m] = round(1000 * (time.perf_counter() - t0) / (2 * len(records)), 2)
            pooled[m] = summarize(records)
            questions[m] = {k: [float(r[k]) for r in records] for k in ("recall", "iou")}
            for c in per_corpus:
                per_corpus[c][m] = summarize(records, c)
    finally:
        collection.close()
    tokens = [c.tokens for c in chunks]
    probe_tokens = int(sum(inp.counter.count_many(probes))) if probes else 0
    dim = int(vectors.shape[1])
    return {
        "name": name,
        "chunks": len(chunks),
        "mean_tokens": round(float(np.mean(tokens)), 1),
        "max_tokens_seen": max(tokens),
        "indexed_tokens": int(sum(tokens)),
        "sentence_probes": len(probes),
        "cost": {
            "embedded_tokens": int(sum(tokens)) + probe_tokens,
            "stored_vectors": len(chunks) + len(probes),
            "vector_bytes": 4 * dim * (len(chunks) + len(probes)),
            "search_ms": latency,
        },
        "intact_span_coverage": intact_coverage(chunks, inp.corpus.questions),
        "embedded_texts": embedding.stats.embedded - before[0],
        "embed_seconds": round(embedding.stats.seconds - before[1], 2),
        **pooled,
        "per_corpus": per_corpus,
        QUESTIONS: questions,  # per-question scores for the bootstrap; not written to the report
    }


def _tessera_row(
    name: str, cfg: ChunkingConfig, embedding: Embedding, inp: Inputs, s: SweepSettings
) -> dict[str, Any]:
    ident = embedding.embedder.identity
    t0 = time.perf_counter()
    ctx = ChunkContext(cfg, inp.counter, ident.hash, ident.document_prefix, embed=embedding)
    chunks = chunk_corpus(inp.corpus, cfg, ctx)
    chunk_seconds = time.perf_counter() - t0
    row = _measure(name, chunks, embedding, inp, s)
    row.update(
        family="tessera", strategy=cfg.strategy, size=cfg.target_tokens, overlap=cfg.overlap_tokens,
        overlap_pct=round(100 * cfg.overlap_tokens / cfg.target_tokens), config=cfg.as_dict(),
        config_hash=ctx.config_hash, chunk_seconds=round(chunk_seconds, 2), chunker_stats=ctx.stats.as_dict(),
    )  # fmt: skip
    return row


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
    grids = {cid: TokenGrid(cid, counter.spans(text)[0]) for cid, text in corpus.texts.items()}
    inp = Inputs(corpus, qvecs, grids, counter)
    peers: list[dict[str, Any]] = []
    skipped: dict[str, str] = {}
    for peer in settings.peers:
        try:
            split_fn = splitter(peer, model_path)
        except ImportError as e:
            skipped[peer.name] = f"not installed: {e.name}"
            continue
        row = _measure(peer.name, peer_chunks(corpus, split_fn, counter), embedding, inp, settings)
        row.update(family="peer", library=peer.library, size=peer.size, overlap=peer.overlap)
        peers.append(row)
        log(_line(row, settings.modes))
    profiles = dict(settings.profiles())
    rows: list[dict[str, Any]] = []
    for name, cfg in profiles.items():
        rows.append(_tessera_row(name, cfg, embedding, inp, settings))
        log(_line(rows[-1], settings.modes))
    corpora = sorted(corpus.texts)  # peers ran first: they only read the cache the profiles fill
    selection = loco.leave_one_out(rows, peers, corpora, settings.modes)
    best_row = next((r for r in rows if r["name"] == selection["recommended"]), None)
    ablation: list[dict[str, Any]] = []
    if best_row is not None and settings.sentence_ablation:
        cfg = profiles[best_row["name"]]
        cfg = replace(cfg, sentence_vectors=not cfg.sentence_vectors)
        twin = next((r for r in rows if r.get("config") == cfg.as_dict()), None)
        if twin is None:
            twin = _tessera_row(
                f"{best_row['name']} sentence_vectors={cfg.sentence_vectors}", cfg, embedding, inp, settings
            )
            log(_line(twin, settings.modes))
        ablation.append(twin)
    for r in [*rows, *ablation]:
        r["margins"] = frontier.margins(r, peers, settings.modes) if peers else {}
    if best_row is not None and peers and "hybrid" in settings.modes:
        labels = [q.corpus for q in corpus.questions]
        selection["bootstrap"] = bootstrap.ahead(best_row[QUESTIONS], [p[QUESTIONS] for p in peers], labels)
    for r in [*rows, *ablation, *peers]:
        r.pop(QUESTIONS, None)
    fusion_report = None
    if best_row is not None and settings.fusion_study:
        fusion_report = _fusion(profiles[best_row["name"]], embedding, inp, settings)
        per = {c: best_row["per_corpus"][c]["hybrid"] for c in corpora}
        fusion_report["product"] = {"pooled": best_row["hybrid"], "per_corpus": per}
        from tessera.evaluation.chunking.fusion import select as fusion_select

        fusion_report["selection"] = fusion_select(fusion_report, corpora)
        variants = fusion_report["variants"].items()
        log(
            f"fusion on {best_row['name']}: "
            + ", ".join(f"{n} {v['pooled']['recall']:.1f}" for n, v in variants)
            + f"; held out {fusion_report['selection']['held_out_recall']:.1f} "
            f"(product {fusion_report['selection']['product_recall']:.1f})"
        )
    return {
        "model": ident.key,
        "k": settings.k,
        "modes": list(settings.modes),
        "token_budget": settings.token_budget,
        "questions": len(corpus.questions),
        "corpora": {cid: {"chars": len(text), "questions": sum(q.corpus == cid for q in corpus.questions)}
                    for cid, text in corpus.texts.items()},
        "pooled": "all corpora in one collection per configuration; scores per question, "
                  "averaged per corpus and over the pool",
        "rows": rows,
        "peers": peers,
        "peers_skipped": skipped,
        "ablation": ablation,
        "selection": selection,
        "sentence_vectors": _sentence_evidence([*rows, *ablation], corpora, settings.modes),
        "fusion_study": fusion_report,
        "recommended": {"name": best_row["name"], "config": best_row["config"]} if best_row else None,
        "embedding": {"embedded": embedding.stats.embedded, "cache_hits": embedding.stats.cache_hits,
                      "seconds": round(embedding.stats.seconds, 1)},
        "elapsed_seconds": round(time.perf_counter() - started, 1),
    }  # fmt: skip


def _fusion(cfg: ChunkingConfig, embedding: Embedding, inp: Inputs, s: SweepSettings) -> dict[str, Any]:
    from tessera.evaluation.chunking.fusion import study

    ident = embedding.embedder.identity
    chunks = chunk_corpus(inp.corpus, cfg, ChunkContext(cfg, inp.counter, ident.hash, ident.document_prefix))
    vectors = embedding([c.embedding_text for c in chunks])
    probes = [p for c in chunks for p in c.probes]
    sentences = split(embedding(probes), [len(c.probes) for c in chunks]) if probes else None
    collection = Collection(chunks, vectors, sentences, ident.key)
    try:
        return study(
            collection, inp.corpus.questions, inp.qvecs, s.k, s.token_budget, sorted(inp.corpus.texts)
        )
    finally:
        collection.close()


def _sentence_evidence(
    rows: Sequence[dict[str, Any]], corpora: Sequence[str], modes: Sequence[str]
) -> list[Any]:
    """For each pair of profiles that differ only by ``sentence_vectors``: the per-corpus gain
    of turning them on (mean and noise, :func:`loco.paired_gain`) and the cost ratio."""
    out = []
    by_cfg = {_key(r["config"]): r for r in rows if "config" in r}
    for r in rows:
        if not r.get("config", {}).get("sentence_vectors"):
            continue
        twin = by_cfg.get(_key({**r["config"], "sentence_vectors": False}))
        if twin is None:
            continue
        gains = {
            f"{m} {k}": loco.paired_gain(r, twin, corpora, m, k) for m in modes for k in ("recall", "iou")
        }
        cost = r["cost"]["embedded_tokens"] / max(1, twin["cost"]["embedded_tokens"])
        ms = {"with": r["cost"]["search_ms"], "without": twin["cost"]["search_ms"]}
        pair = {"with": r["name"], "without": twin["name"], "gains": gains}
        out.append({**pair, "embedded_tokens_ratio": round(cost, 2), "search_ms": ms})
    return out


def _key(cfg: dict[str, Any]) -> str:
    return repr(sorted(cfg.items()))


def _line(row: dict[str, Any], modes: Sequence[str]) -> str:
    scores = "  ".join(f"{m} R {row[m]['recall']:.1f} IoU {row[m]['iou']:.1f}" for m in modes)
    per = {c: {m: (v[m]["recall"], v[m]["iou"]) for m in modes} for c, v in row["per_corpus"].items()}
    return f"{row['name']:<28} {row['chunks']:>5} chunks {row['mean_tokens']:>6} tok  {scores}  {per}"
