"""What a process pays to import Tessera before it does any work, with and without the
deferred init of LanceDB's REST namespace client (``tessera/store/deferred_init.py``).

Every CLI call, every run process and every Dagster step process (the multiprocess executor
starts one per step) imports the store. Each case runs in fresh processes, alternated,
``--repeats`` times; "as before" imports ``lancedb`` first, so the store finds the client
imported and defers nothing: the same code paying what it paid before the change.

    python -m bench.import_cost   # writes bench/results/import_cost.json
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
from typing import Any

from bench.common import ROOT, write_result

_CHILD = """
import json, sys, time
t = time.perf_counter()
for name in {modules!r}:
    __import__(name)
print(json.dumps({{"seconds": time.perf_counter() - t,
                  "rest_api_loaded": "lance_namespace_urllib3_client.api" in sys.modules}}))
"""

CASES: dict[str, tuple[str, ...]] = {
    "lancedb_as_published": ("lancedb",),
    "store": ("tessera.store.db",),
    "cli_as_before": ("lancedb", "tessera.cli"),
    "cli": ("tessera.cli",),
    "dagster_definitions_as_before": ("lancedb", "pipelines.definitions"),
    "dagster_definitions": ("pipelines.definitions",),
}


def _once(modules: tuple[str, ...]) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": str(ROOT), "HF_HUB_OFFLINE": "1", "TESSERA_FAKE_EMBEDDER": "1"}
    proc = subprocess.run(
        [sys.executable, "-c", _CHILD.format(modules=modules)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--repeats", type=int, default=9)
    p.add_argument("--name", default="import_cost")
    args = p.parse_args()
    runs: dict[str, list[dict[str, Any]]] = {case: [] for case in CASES}
    for _ in range(args.repeats):  # alternated, so that a slow spell of the machine hits every case
        for case, modules in CASES.items():
            runs[case].append(_once(modules))
    cases = {
        case: {
            "modules": list(CASES[case]),
            "median_s": round(statistics.median(r["seconds"] for r in rs), 3),
            "seconds": [round(r["seconds"], 3) for r in rs],
            "rest_api_loaded": rs[0]["rest_api_loaded"],
        }
        for case, rs in runs.items()
    }
    saved = {
        kind: round(cases[f"{kind}_as_before"]["median_s"] - cases[kind]["median_s"], 3)
        for kind in ("cli", "dagster_definitions")
    }
    result = {"repeats": args.repeats, "cases": cases, "saved_median_s": saved}
    print(write_result(args.name, result))
    print(json.dumps(saved))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
