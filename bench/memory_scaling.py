"""Peak memory against corpus size: full runs of 10,000 and 100,000 documents, then a no-op.

The corpus of :mod:`bench.incremental_cost` (about 3 KB of Markdown a document, folder source,
hash embedder, the default executor), one project per size, each phase in its own process so
each has its own peak RSS (the run's process; the worker processes are reported apart).
Steps stream bounded batches, so memory should grow with what a run must hold per document
(its listing entry, the live manifest), not with the text.

    python -m bench.memory_scaling            # writes bench/results/memory_scaling.json
    python -m bench.memory_scaling --repeats 3 --name memory_scaling_3   # medians and spread

With ``--repeats N`` the two sizes are measured N times, alternated (small, large, small, ...),
each on a new project: the result holds each size's median phase (:func:`median_phase`), every
run's peak, the ratio of the medians and the ratio of each repeat's pair. One run of each size
moved the ratio by about 0.03 from one invocation to the next (`bench/HISTORY.md`), as much as
the margin to the target, so one pair cannot tell which side of it a change is on.

Target (issue 17): peak RSS at 100,000 documents <= 1.5x peak RSS at 10,000, and the
100,000-document run completes on this 2-core, 24 GiB machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.incremental_cost import make_project, median_phase, run_phase

TARGET = 1.5


def measure(docs: int) -> dict[str, Any]:
    root = Path(tempfile.mkdtemp(prefix=f"tessera-mem-{docs}-"))
    try:
        make_project(root, docs)
        out = {"documents": docs, "full": run_phase("full", root), "noop": run_phase("noop", root)}
    finally:
        shutil.rmtree(root, ignore_errors=True)
    print(docs, out, flush=True)
    return out


def summarize(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """One size's repeats: the median of each phase, and every full run's peak RSS."""
    return {
        "documents": runs[0]["documents"],
        "full": median_phase([r["full"] for r in runs]),
        "noop": median_phase([r["noop"] for r in runs]),
        "full_peak_rss_mb_all": [r["full"]["peak_rss_mb"] for r in runs],
    }


def ratios(small: list[dict[str, Any]], large: list[dict[str, Any]]) -> dict[str, Any]:
    """Peak RSS of the large run over the small one: of the medians, and of each repeat's pair."""
    each = [b["full"]["peak_rss_mb"] / a["full"]["peak_rss_mb"] for a, b in zip(small, large, strict=True)]
    median = statistics.median(r["full"]["peak_rss_mb"] for r in large) / statistics.median(
        r["full"]["peak_rss_mb"] for r in small
    )
    return {
        "peak_rss_ratio": round(median, 2),
        "peak_rss_ratio_per_repeat": [round(r, 3) for r in each],
        "meets_target": median <= TARGET,
        "meets_target_every_repeat": all(r <= TARGET for r in each),
    }


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--small", type=int, default=10_000)
    p.add_argument("--large", type=int, default=100_000)
    p.add_argument("--repeats", type=int, default=1, help="pairs of runs, alternated, each on a new project")
    p.add_argument("--name", default="memory_scaling", help="result file: bench/results/NAME.json")
    args = p.parse_args()
    if args.repeats < 1:
        p.error("--repeats must be at least 1")
    small: list[dict[str, Any]] = []
    large: list[dict[str, Any]] = []
    for _ in range(args.repeats):
        small.append(measure(args.small))
        large.append(measure(args.large))
    s, big = summarize(small), summarize(large)
    result = {
        "small": s,
        "large": big,
        **ratios(small, large),
        "seconds_ratio": round(big["full"]["seconds"] / s["full"]["seconds"], 2),
        "repeats": args.repeats,
        "target": TARGET,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }
    print(write_result(args.name, result))
    print(json.dumps({k: result[k] for k in ("peak_rss_ratio", "peak_rss_ratio_per_repeat", "meets_target")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
