"""Embedding during the chunk step against embedding after it, with an embedder whose work is
partly off the CPU, as a model on a GPU is.

No accelerator here, so the device is modelled: the hash embedder (its CPU work stands for
tokenization and the host's share) followed by a sleep of ``--device-ms-per-text`` per text
(the device's share; a sleep gives up the CPU and the GIL, as a process waiting on a GPU
does). 0.1 ms a text is 10,000 texts/s, an order of what all-MiniLM-L6-v2 reaches on one data
centre GPU at our chunk lengths (not measured here: the 10,000 is the model's assumption).

One tenant of ``--docs`` generated documents (the corpus of :mod:`bench.incremental_cost`),
2 worker processes, ``execution.embed_during_chunk`` off and on, each run in its own process
on a new project, alternated ``--repeats`` times; per run the chunk and embed steps' seconds
and the whole run. Also with ``--device-ms-per-text 0`` (the hash embedder alone, all CPU),
where the two can only share the same two cores.

    python -m bench.embed_overlap                       # writes bench/results/embed_overlap.json
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import yaml

from bench.common import write_result
from bench.incremental_cost import TENANT, make_project
from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder


class DeviceModel(HashEmbedder):
    """The hash embedder, then ``ms_per_text`` off the CPU per text embedded."""

    def __init__(self, ms_per_text: float) -> None:
        super().__init__()
        self.ms_per_text = ms_per_text

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        vectors = super().embed_documents(texts)
        time.sleep(self.ms_per_text * len(texts) / 1000.0)
        return vectors


def phase(root: Path, ms_per_text: float) -> dict[str, Any]:
    from tessera.config import load_config
    from tessera.pipeline.run import RunContext, run_tenant

    rc = RunContext(
        load_config(root / "tessera.yaml"), TENANT, f"bench-{time.time_ns()}", DeviceModel(ms_per_text)
    )
    t0 = time.perf_counter()
    seconds: dict[str, float] = {}
    import tessera.pipeline.run as run

    for name in ("parse_step", "chunk_step", "embed_step", "publish_step"):
        step = getattr(run, name)

        def timed(rc: RunContext, step: Any = step, name: str = name) -> dict[str, Any]:
            t = time.perf_counter()
            out: dict[str, Any] = step(rc)
            seconds[name.removesuffix("_step")] = round(time.perf_counter() - t, 3)
            return out

        setattr(run, name, timed)
    out = run_tenant(rc)
    return {
        "total": round(time.perf_counter() - t0, 3),
        "seconds": seconds,
        "during_chunk": out["embed"]["during_chunk"],
        "embedded": out["embed"]["embedded"],
    }


def _run(docs: int, overlap: bool, ms_per_text: float) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix="tessera-overlap-"))
    try:
        make_project(root, docs)
        path = root / "tessera.yaml"
        data = yaml.safe_load(path.read_text("utf-8"))
        data["execution"] = {"executor": "process", "workers": 2, "embed_during_chunk": overlap}
        path.write_text(yaml.safe_dump(data), encoding="utf-8")
        cmd = [sys.executable, "-m", "bench.embed_overlap", "--phase", str(root), "--device-ms-per-text"]
        proc = subprocess.run([*cmd, str(ms_per_text)], check=True, capture_output=True, text=True)
        return dict(json.loads(proc.stdout.strip().splitlines()[-1]))
    finally:
        shutil.rmtree(root, ignore_errors=True)


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--docs", type=int, default=2000)
    p.add_argument("--repeats", type=int, default=3)
    p.add_argument("--device-ms-per-text", type=float, nargs="+", default=[0.1, 0.0])
    p.add_argument("--name", default="embed_overlap")
    p.add_argument("--phase")
    args = p.parse_args()
    if args.phase:
        print(json.dumps(phase(Path(args.phase), args.device_ms_per_text[0])))
        return 0
    cells: dict[str, Any] = {}
    for ms in args.device_ms_per_text:
        runs: dict[str, list[dict[str, Any]]] = {"after": [], "during": []}
        for _ in range(args.repeats):
            for label, overlap in (("after", False), ("during", True)):
                runs[label].append(_run(args.docs, overlap, ms))
                print(ms, label, runs[label][-1], flush=True)
        medians = {k: statistics.median(r["total"] for r in v) for k, v in runs.items()}
        cells[f"{ms}_ms_per_text"] = {
            "runs": runs,
            "median_total": medians,
            "saved_seconds": round(medians["after"] - medians["during"], 3),
            "ratio": round(medians["after"] / medians["during"], 3),
            "per_pair_ratio": [
                round(a["total"] / d["total"], 3) for a, d in zip(runs["after"], runs["during"], strict=True)
            ],
        }
    print(write_result(args.name, {"documents": args.docs, "repeats": args.repeats, "cells": cells}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
