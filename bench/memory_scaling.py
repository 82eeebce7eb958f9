"""Peak memory against corpus size: full runs of 10,000 and 100,000 documents, then a no-op.

The corpus of :mod:`bench.incremental_cost` (about 3 KB of Markdown a document, folder source,
hash embedder, the default executor), one project per size, each phase in its own process so
each has its own peak RSS (the run's process; the worker processes are reported apart).
Steps stream bounded batches, so memory should grow with what a run must hold per document
(its listing entry, the live manifest), not with the text.

    python -m bench.memory_scaling            # writes bench/results/memory_scaling.json

Target (issue 17): peak RSS at 100,000 documents <= 1.5x peak RSS at 10,000, and the
100,000-document run completes on this 2-core, 24 GiB machine.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from bench.common import write_result
from bench.incremental_cost import make_project, run_phase

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


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    p.add_argument("--small", type=int, default=10_000)
    p.add_argument("--large", type=int, default=100_000)
    args = p.parse_args()
    small, large = measure(args.small), measure(args.large)
    ratio = large["full"]["peak_rss_mb"] / small["full"]["peak_rss_mb"]
    result = {
        "small": small,
        "large": large,
        "peak_rss_ratio": round(ratio, 2),
        "seconds_ratio": round(large["full"]["seconds"] / small["full"]["seconds"], 2),
        "target": TARGET,
        "meets_target": ratio <= TARGET,
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
    }
    print(write_result("memory_scaling", result))
    print(json.dumps({k: result[k] for k in ("peak_rss_ratio", "seconds_ratio", "meets_target")}))
    return 0


if __name__ == "__main__":
    sys.exit(main())
