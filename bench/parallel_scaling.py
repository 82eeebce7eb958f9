"""Parallel steps: the same tenant run with 1 worker (inline) and with N worker processes
(and on a local Ray cluster with ``--ray``), each in its own process, step by step; plus the
pipeline's throughput without the model against the real model's CPU embedding rate.

One tenant of ``--docs`` generated Markdown documents (the corpus of
:mod:`bench.incremental_cost`), folder source, hash embedder. Reported per executor: seconds
per step (list, parse, chunk, embed, publish), the whole run, chunks per second, peak RSS,
and the speed-up of parse + chunk and of the whole run against 1 worker. The model's rate is
measured in the same run on a sample of the same chunk texts (``--model-texts``).

    python -m bench.parallel_scaling --docs 2000     # writes bench/results/parallel_scaling.json
    python -m bench.parallel_scaling --docs 10000 --name parallel_scaling_10k   # another size

The serial steps (listing, embed, publish) bound the speed-up (Amdahl): fixed costs in them
(the worker pool's start, imports) weigh less in a larger run, so the ratio depends on the size.

With 2 workers, each repeat also starts two inline runs at once (``host_ceiling_2_processes``):
what this machine gives two processes doing the same work together, the ceiling of a 2-worker
run here (on a VM two busy processes can each run slower than one alone), and from it
``whole_run_bound``: the whole run's speed-up if parse + chunk reached that ceiling and the
serial steps stayed as they are (:func:`amdahl_bound`).

Targets (issue 17): a 2-worker run >= 1.7x a 1-worker run on 2 cores; pipeline throughput
without the model >= 10x the model's CPU embedding rate.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np
import yaml

from bench.common import peak_rss_mb, write_result
from bench.incremental_cost import TENANT, make_project

STEPS = ("listing", "parse", "chunk", "embed", "publish")
CONTENT = ("id", "doc_id", "text", "embedding_text", "byte_start", "byte_end", "flags", "dup_group", "vector")
"""The published columns every executor must give alike (issue 17: ids, texts, vectors); the
run's own columns (run id, times) differ between any two runs."""


def table_digest(table: Any) -> str:
    """sha256 of the table's :data:`CONTENT` columns, rows sorted by id, as JSON lines (vectors
    as float32 bytes in hex): equal digests, equal contents."""
    rows = table.to_arrow().select(list(CONTENT)).sort_by("id").to_pylist()
    h = hashlib.sha256()
    for row in rows:
        row["vector"] = np.asarray(row["vector"], np.float32).tobytes().hex()
        h.update(json.dumps(row, sort_keys=True).encode())
        h.update(b"\n")
    return h.hexdigest()


def _configure(root: Path, execution: dict[str, Any]) -> None:
    path = root / "tessera.yaml"
    data = yaml.safe_load(path.read_text("utf-8"))
    data["execution"] = execution
    path.write_text(yaml.safe_dump(data), encoding="utf-8")


def phase(root: Path) -> dict[str, Any]:
    from tessera.config import load_config
    from tessera.embedding.fake import HashEmbedder
    from tessera.pipeline.listing import list_step
    from tessera.pipeline.run import RunContext, chunk_step, embed_step, parse_step, publish_step

    rc = RunContext(load_config(root / "tessera.yaml"), TENANT, f"bench-{time.time_ns()}", HashEmbedder())
    seconds: dict[str, float] = {}
    out: dict[str, Any] = {}
    t_all = time.perf_counter()
    listing = partial(list_step, prestart=True)  # as ``run_tenant`` runs it: the pool starts while it lists
    steps: tuple[Callable[[RunContext], dict[str, Any]], ...] = (
        listing, parse_step, chunk_step, embed_step, publish_step
    )  # fmt: skip
    for name, step in zip(STEPS, steps, strict=True):
        t0 = time.perf_counter()
        out[name] = step(rc)
        seconds[name] = round(time.perf_counter() - t0, 3)
    total = time.perf_counter() - t_all
    peak = round(peak_rss_mb(), 1)
    digest = table_digest(rc.index.table())  # after the timed steps and the peak
    if rc.config.execution.executor == "ray":
        import ray

        ray.shutdown()
    return {
        "seconds": seconds,
        "total": round(total, 3),
        "chunks": out["chunk"]["chunks"],
        "chunks_per_second": round(out["chunk"]["chunks"] / total, 1),
        "executor": out["parse"]["executor"],
        "workers": out["parse"]["workers"],
        "peak_rss_mb": peak,
        "worker_peak_rss_mb": max(out[s].get("worker_peak_rss_mb", 0.0) for s in ("parse", "chunk")),
        "table_digest": digest,
    }


def model_rate(root: Path, texts: int) -> dict[str, Any]:
    """Texts per second of the real model (CPU) on staged chunk texts of this corpus."""
    from tessera.config import load_config
    from tessera.embedding.sentence import SentenceTransformerEmbedder
    from tessera.store.db import connect, list_tables

    cfg = load_config(root / "tessera.yaml")
    db = connect(cfg.store.uri)
    name = next(n for n in list_tables(db) if n.startswith("chunks__"))
    sample = db.open_table(name).search().select(["embedding_text"]).limit(texts).to_arrow()
    batch = [str(t) for t in sample.column("embedding_text").to_pylist()]
    model = SentenceTransformerEmbedder(cfg.embedding)
    model.embed_documents(batch[:32])  # warm-up
    t0 = time.perf_counter()
    model.embed_documents(batch)
    seconds = time.perf_counter() - t0
    return {
        "texts": len(batch),
        "seconds": round(seconds, 3),
        "texts_per_second": round(len(batch) / seconds, 1),
    }


def _run(root: Path, execution: dict[str, Any]) -> dict[str, Any]:
    return _runs([root], execution)[0]


def _runs(roots: list[Path], execution: dict[str, Any]) -> list[dict[str, Any]]:
    """One run per root, all at once, each in its own process."""
    for root in roots:
        _configure(root, execution)
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "bench.parallel_scaling", "--phase", "--root", str(root)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env={**os.environ, "RAY_USAGE_STATS_ENABLED": "0"},
        )
        for root in roots
    ]
    done = [(proc, *proc.communicate()) for proc in procs]  # every run ends before any error
    for proc, stdout, stderr in done:
        if proc.returncode:
            raise subprocess.CalledProcessError(proc.returncode, proc.args, stdout, stderr)
    return [dict(json.loads(stdout.strip().splitlines()[-1])) for _, stdout, _ in done]


def host_ceiling(alone: list[dict[str, Any]], pairs: list[list[dict[str, Any]]]) -> dict[str, Any]:
    """What this machine gives two processes doing the pipeline's inline work at once, against
    one alone, per repeat: ``2 * alone / together``, where together is the slower of two inline
    runs started at once beside the inline run of that repeat. ``parse_chunk`` (single-threaded
    Python either way, and split evenly, nothing to coordinate) is the most the 2-worker run's
    parse + chunk could reach here; ``total`` also pairs the steps whose libraries use both
    cores alone (Lance's writes and index builds), so it understates what they could reach."""

    Of = Callable[[dict[str, Any]], float]

    def ratio(one: dict[str, Any], pair: list[dict[str, Any]], of: Of) -> float:
        return round(2 * of(one) / max(of(r) for r in pair), 2)

    def parse_chunk(r: dict[str, Any]) -> float:
        return float(r["seconds"]["parse"] + r["seconds"]["chunk"])

    def total(r: dict[str, Any]) -> float:
        return float(r["total"])

    out: dict[str, Any] = {}
    measures: tuple[tuple[str, Of], ...] = (("parse_chunk", parse_chunk), ("total", total))
    for name, of in measures:
        per = [ratio(one, pair, of) for one, pair in zip(alone, pairs, strict=True)]
        out[name] = round(statistics.median(per), 2)
        out[f"{name}_per_repeat"] = per
    out["pair_totals"] = [[r["total"] for r in pair] for pair in pairs]
    ceilings = zip(alone, out["parse_chunk_per_repeat"], strict=True)
    bounds = [amdahl_bound(one, ceiling) for one, ceiling in ceilings]
    out["whole_run_bound"] = round(statistics.median(bounds), 2)
    out["whole_run_bound_per_repeat"] = bounds
    return out


def amdahl_bound(inline: dict[str, Any], parse_chunk_ceiling: float) -> float:
    """The most a 2-worker whole run could reach against ``inline`` on this machine: its
    parse + chunk sped up by the machine's own 2-process ceiling, everything else (listing,
    embed, publish, the run's own overhead) as long as inline (Amdahl). The 2-worker run's
    target is met only where this bound is above it."""
    pc = float(inline["seconds"]["parse"] + inline["seconds"]["chunk"])
    total = float(inline["total"])
    return round(total / (total - pc + pc / parse_chunk_ceiling), 2)


def _median_run(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first run's counts with the median of every timing over the runs."""
    seconds = {s: round(statistics.median(r["seconds"][s] for r in runs), 3) for s in STEPS}
    total = statistics.median(r["total"] for r in runs)
    return {
        **runs[0],
        "seconds": seconds,
        "total": round(total, 3),
        "totals": [r["total"] for r in runs],
        "chunks_per_second": round(runs[0]["chunks"] / total, 1),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--workers", type=int, default=len(os.sched_getaffinity(0)))
    p.add_argument("--ray", action="store_true", help="also run on a local Ray cluster")
    p.add_argument("--model-texts", type=int, default=256)
    p.add_argument("--repeats", type=int, default=3, help="runs per executor, alternated")
    p.add_argument("--name", default="parallel_scaling", help="result file: bench/results/NAME.json")
    p.add_argument("--phase", action="store_true")
    p.add_argument("--root")
    args = p.parse_args()
    if args.phase:
        print(json.dumps(phase(Path(args.root))))
        return 0
    base = Path(tempfile.mkdtemp(prefix="tessera-par-"))
    runs: dict[str, dict[str, Any]] = {}
    plans = {
        "inline": {"executor": "inline"},
        f"process_{args.workers}": {"executor": "process", "workers": args.workers, "min_documents": 0},
    }
    if args.ray:
        plans[f"ray_{args.workers}"] = {"executor": "ray", "workers": args.workers, "min_documents": 0}
    every: dict[str, list[dict[str, Any]]] = {label: [] for label in plans}
    pairs: list[list[dict[str, Any]]] = []
    for rep in range(args.repeats):  # executors alternated, so a slower stretch of a shared
        for label, execution in plans.items():  # machine hits each of them alike
            root = base / f"{label}-{rep}"
            make_project(root, args.docs)
            os.sync()  # the generated corpus on disk before the clock starts, not written back during the run
            every[label].append(_run(root, execution))
            print(label, rep, every[label][-1], flush=True)
        if args.workers == 2:  # the machine's own ceiling: two inline runs at once
            roots = [base / f"pair-{rep}-{i}" for i in range(2)]
            for root in roots:
                make_project(root, args.docs)
            os.sync()
            pairs.append(_runs(roots, plans["inline"]))
            print("inline pair", rep, [r["total"] for r in pairs[-1]], flush=True)
    runs = {label: _median_run(rs) for label, rs in every.items()}
    one = runs["inline"]
    speedups = {
        label: {
            "parse_chunk": round(
                (one["seconds"]["parse"] + one["seconds"]["chunk"])
                / (r["seconds"]["parse"] + r["seconds"]["chunk"]),
                2,
            ),
            "total": round(one["total"] / r["total"], 2),
            "total_per_repeat": [
                round(a["total"] / b["total"], 2) for a, b in zip(every["inline"], every[label], strict=True)
            ],
        }
        for label, r in runs.items()
        if label != "inline"
    }
    digests = {label: sorted({r["table_digest"] for r in rs}) for label, rs in every.items()}
    model = model_rate(base / "inline-0", args.model_texts)
    best = max(r["chunks_per_second"] for r in runs.values())
    result = {
        "documents": args.docs,
        "repeats": args.repeats,
        "runs": runs,  # per executor: median seconds of each step and of the run over the repeats
        "speedup_vs_1_worker": speedups,
        **({"host_ceiling_2_processes": host_ceiling(every["inline"], pairs)} if pairs else {}),
        "model_cpu": model,
        "pipeline_vs_model": round(best / model["texts_per_second"], 2),
        # every run of every executor published the same rows (CONTENT columns)
        "table_digests": digests,
        "identical_tables": len({d for ds in digests.values() for d in ds}) == 1,
        "targets": {"speedup_2_workers_total": 1.7, "pipeline_vs_model": 10.0},
    }
    print(write_result(args.name, result))
    print(
        json.dumps(
            {
                "speedups": speedups,
                "host_ceiling": result.get("host_ceiling_2_processes"),
                "pipeline_vs_model": result["pipeline_vs_model"],
                "identical_tables": result["identical_tables"],
            }
        )
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
