"""The int8 backend (``embedding.backend: onnx-int8``) against the fp32 torch one, in one run.

1. **Throughput.** The texts of ``bench.embed_throughput`` (the example corpus's chunks, two
   distinct copies), embedded by each backend's ``embed_documents`` (same batch size, same
   length sorting), alternated over :data:`ROUNDS` rounds after a warm-up; medians. Target:
   int8 at least :data:`TARGET_RATIO` times the fp32 texts/s. Also the per-text cosine of the
   int8 vectors to the fp32 ones, the one-off quantization time and the artifact size.
2. **Recall.** The chunking evaluation (``tessera eval chunking``'s harness) of the
   recommended profile on the eight development corpora of ``../shared/data/chroma`` and
   ``../shared/data/retrieval_dev`` (read in place, pooled into one collection, k = 5), once
   with each backend and its own empty embedding cache. Target: the int8 mean of the
   per-corpus recall at most :data:`RECALL_POINTS` points below fp32, in both modes.

The machine is shared: the load average before and after is recorded beside the timings.
"""

from __future__ import annotations

import os
import sys
import tempfile
import time
from dataclasses import replace
from pathlib import Path
from statistics import mean
from typing import Any

import numpy as np

from bench.common import ROOT, isolated_config, median, peak_rss_mb, write_result
from bench.embed_throughput import corpus_texts
from tessera.config import EmbeddingConfig
from tessera.embedding.base import Embedder
from tessera.embedding.model_files import WEIGHTS_FILE, model_dir
from tessera.embedding.onnx_int8 import OnnxInt8Embedder
from tessera.embedding.sentence import SentenceTransformerEmbedder

ROUNDS = 3
TARGET_RATIO = 1.8
RECALL_POINTS = 1.0
DATA = ROOT.parent / "shared" / "data"
CORPORA = (DATA / "chroma", DATA / "retrieval_dev")
PROFILE = "structural-256-0"


def _load() -> list[float]:
    return [round(x, 2) for x in os.getloadavg()]


def throughput(fp32: SentenceTransformerEmbedder, int8: OnnxInt8Embedder, texts: list[str]) -> dict[str, Any]:
    fp32.embed_documents(texts[:64])  # warm-up: torch loads the weights, onnxruntime its session
    int8.embed_documents(texts[:64])
    times: dict[str, list[float]] = {"fp32": [], "int8": []}
    vectors: dict[str, np.ndarray] = {}
    for _ in range(ROUNDS):
        for name, emb in (("fp32", fp32), ("int8", int8)):
            t0 = time.perf_counter()
            vectors[name] = emb.embed_documents(texts)
            times[name].append(round(time.perf_counter() - t0, 3))
    cos = (vectors["fp32"] * vectors["int8"]).sum(axis=1)
    rate = {n: len(texts) / median(t) for n, t in times.items()}
    return {
        "fp32_seconds": times["fp32"],
        "int8_seconds": times["int8"],
        "fp32_texts_per_s_median": round(rate["fp32"], 2),
        "int8_texts_per_s_median": round(rate["int8"], 2),
        "throughput_ratio": round(rate["int8"] / rate["fp32"], 3),
        "cosine_vs_fp32": {
            "min": round(float(cos.min()), 5),
            "p1": round(float(np.percentile(cos, 1)), 5),
            "mean": round(float(cos.mean()), 5),
        },
    }


def recall(embedders: dict[str, Embedder], model_path: Path) -> dict[str, Any]:
    from tessera.chunking.tokens import load_counter
    from tessera.evaluation.chunking.corpus import load_corpus, pool
    from tessera.evaluation.chunking.sweep import CANDIDATES, Embedding, SweepSettings, run_sweep
    from tessera.store.db import connect
    from tessera.store.embedding_cache import EmbeddingCache

    corpus = pool([load_corpus(d) for d in CORPORA])
    settings = SweepSettings(
        extra=tuple(c for c in CANDIDATES if c[0] == PROFILE), peers=(), sentence_ablation=False
    )
    rows: dict[str, dict[str, Any]] = {}
    for name, emb in embedders.items():
        cache = EmbeddingCache(connect(tempfile.mkdtemp(prefix=f"bench-int8-{name}-")), "eval", emb.identity)
        t0 = time.perf_counter()
        report = run_sweep(corpus, Embedding(emb, cache), load_counter(model_path), model_path, settings)
        rows[name] = {"row": report["rows"][0], "seconds": round(time.perf_counter() - t0, 1)}
        print(f"recall run {name}: {rows[name]['seconds']} s", flush=True)
    corpora = sorted(corpus.texts)
    out: dict[str, Any] = {"profile": PROFILE, "k": settings.k, "questions": len(corpus.questions)}
    for mode in settings.modes:
        per = {c: {n: rows[n]["row"]["per_corpus"][c][mode]["recall"] for n in embedders} for c in corpora}
        for v in per.values():
            v["delta"] = round(v["int8"] - v["fp32"], 2)
        means = {n: round(mean(per[c][n] for c in corpora), 2) for n in embedders}
        out[mode] = {
            "per_corpus": per,
            "mean_of_corpora": {**means, "delta": round(means["int8"] - means["fp32"], 2)},
            "pooled": {n: rows[n]["row"][mode]["recall"] for n in embedders},
        }
    out["eval_seconds"] = {n: r["seconds"] for n, r in rows.items()}
    out["passes"] = all(out[m]["mean_of_corpora"]["delta"] >= -RECALL_POINTS for m in settings.modes)
    return out


def main() -> int:
    cfg = isolated_config()
    scratch = Path(tempfile.mkdtemp(prefix="bench-int8-models-"))
    fp32_cfg: EmbeddingConfig = replace(cfg.embedding, backend="torch")
    fp32 = SentenceTransformerEmbedder(fp32_cfg)
    int8 = OnnxInt8Embedder(replace(fp32_cfg, backend="onnx-int8", artifact_dir=scratch))
    load_before = _load()
    art = int8.artifact  # built here, timed by the build itself
    texts = corpus_texts(copies=2)
    result: dict[str, Any] = {
        "texts": len(texts),
        "batch_size": fp32_cfg.batch_size,
        "threads": {"torch": _torch_threads(), "onnxruntime_intra_op": int8.threads},
        "rounds": ROUNDS,
        **throughput(fp32, int8, texts),
        "target_ratio": TARGET_RATIO,
        "quantization": {
            "recipe": int8.identity.quantization,
            "build_seconds": art.build_seconds,
            "artifact_bytes": art.bytes,
            "fp32_weights_bytes": (model_dir(fp32_cfg) / WEIGHTS_FILE).stat().st_size,
            "artifact_sha256": art.sha256,
            "probe_cosine": art.probe_cosine,
        },
        "identities": {"fp32": fp32.identity.key, "int8": int8.identity.key},
    }
    if all(d.is_dir() for d in CORPORA):
        result["recall"] = recall({"fp32": fp32, "int8": int8}, model_dir(fp32_cfg))
    else:
        result["recall"] = {"skipped": f"evaluation data not found under {DATA}"}
    result["loadavg_before_after"] = [load_before, _load()]
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    print(write_result("embed_int8", result))
    print(result)
    return 0


def _torch_threads() -> int:
    import torch

    return int(torch.get_num_threads())


if __name__ == "__main__":
    sys.exit(main())
