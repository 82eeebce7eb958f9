"""Wall time of a no-op re-run as a ratio to the first full run (example corpus, real model).

Each phase runs in its own process (``--phase first|noop``) so that each has its own peak RSS;
the model load is excluded from both timings.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench.common import isolated_config, peak_rss_mb, write_result


def phase(name: str, store: Path) -> dict[str, float]:
    from tessera.embedding.sentence import SentenceTransformerEmbedder
    from tessera.pipeline.run import RunContext, run_tenant

    cfg = isolated_config(store)
    embedder = SentenceTransformerEmbedder(cfg.embedding)
    t0 = time.perf_counter()
    chunks = embedded = sentences = 0
    for tenant in sorted(cfg.tenants):
        out = run_tenant(RunContext(cfg, tenant, f"bench-{name}", embedder))
        chunks += out["chunk"]["chunks"]
        embedded += out["embed"]["embedded"]
        sentences += out["embed"].get("sentences", {}).get("embedded", 0)
    return {
        "seconds": time.perf_counter() - t0,
        "chunks": chunks,
        "embedded": embedded,
        "sentences_embedded": sentences,
        "peak_rss_mb": peak_rss_mb(),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--phase", choices=["first", "noop"])
    p.add_argument("--store")
    args = p.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.store))))
        return 0
    store = Path(tempfile.mkdtemp(prefix="tessera-noop-"))
    results: dict[str, list[dict[str, float]]] = {}
    for name in ("first", "noop", "noop", "noop"):
        out = subprocess.run(
            [sys.executable, "-m", "bench.noop_rerun", "--phase", name, "--store", str(store)],
            check=True,
            capture_output=True,
            text=True,
        )
        results.setdefault(name, []).append(json.loads(out.stdout.strip().splitlines()[-1]))
    first = results["first"][0]
    noop_s = sorted(r["seconds"] for r in results["noop"])[1]
    result = {
        "first_run": first,
        "noop_runs": results["noop"],
        "noop_seconds_median": round(noop_s, 4),
        "noop_ratio": round(noop_s / first["seconds"], 4),
        "target_ratio": 0.05,
        "noop_embedded": [r["embedded"] for r in results["noop"]],
    }
    print(write_result("noop_rerun", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
