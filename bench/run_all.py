"""Run every benchmark, each in its own process (a module and its arguments)."""

from __future__ import annotations

import subprocess
import sys

BENCHES = [
    "bench.embed_throughput",
    "bench.embed_int8",
    "bench.noop_rerun",
    "bench.import_cost",  # what a process pays to import the store, the CLI and the definitions
    "bench.incremental_cost",
    # about 35 minutes on a 2-core machine: three 100,000-document full runs, each after a
    # 10,000-document one; the ratio of the medians and each pair's (one pair is too noisy)
    "bench.memory_scaling --repeats 3",
    "bench.listing_cost",
    "bench.parallel_scaling",
    "bench.parallel_scaling --docs 10000 --repeats 3 --name parallel_scaling_10k",  # about 4 minutes
    "bench.parallel_scaling --docs 2000 --repeats 3 --ray --name parallel_scaling_ray",  # same table on Ray
    "bench.embed_overlap",  # embedding during the chunk step, a modelled off-CPU device and none
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
    for bench in BENCHES:
        print(f"== {bench}", flush=True)
        subprocess.run([sys.executable, "-m", *bench.split()], check=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
