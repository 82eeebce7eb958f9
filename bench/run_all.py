"""Run every benchmark, each in its own process."""

from __future__ import annotations

import subprocess
import sys

BENCHES = [
    "bench.embed_throughput",
    "bench.embed_int8",
    "bench.noop_rerun",
    "bench.incremental_cost",
    "bench.memory_scaling",  # about 20 minutes: a 100,000-document full run
    "bench.listing_cost",
    "bench.parallel_scaling",
    "bench.many_tenants",
    "bench.retrieval_latency",
    "bench.html_candidates",
    "bench.html_quality",
    "bench.html_gap",
    "bench.html_hybrid",
    "bench.office_xlsx",
    "bench.pdf_throughput",
    "bench.ocr_quality",
    "bench.chunk_throughput",
    "bench.parse_linearity",
]


def main() -> int:
    for mod in BENCHES:
        print(f"== {mod}", flush=True)
        subprocess.run([sys.executable, "-m", mod], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
