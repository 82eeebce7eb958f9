"""Shared helpers: example-corpus chunk texts, peak RSS, result files."""

from __future__ import annotations

import json
import platform
import resource
import statistics
import tempfile
from dataclasses import replace
from pathlib import Path
from typing import Any

from tessera.config import TesseraConfig, load_config

ROOT = Path(__file__).resolve().parent.parent
RESULTS = ROOT / "bench" / "results"
EXAMPLE_CONFIG = ROOT / "examples" / "tessera.yaml"


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0


def isolated_config(store: Path | None = None) -> TesseraConfig:
    """The example config with its index and work dir moved to a scratch folder."""
    cfg = load_config(EXAMPLE_CONFIG)
    base = store or Path(tempfile.mkdtemp(prefix="tessera-bench-"))
    return replace(cfg, store=replace(cfg.store, uri=str(base / "index"), work_dir=base / "work"))


def median(values: list[float]) -> float:
    return float(statistics.median(values))


def write_result(name: str, data: dict[str, Any]) -> Path:
    RESULTS.mkdir(parents=True, exist_ok=True)
    machine = {"python": platform.python_version(), "cpus": _cpus(), **cpu_description()}
    data = {"benchmark": name, "machine": machine, **data}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


ISA_FLAGS = ("avx2", "avx512f", "avx512_vnni", "avx_vnni", "amx_int8")
"""The vector instructions that decide int8 and fp32 matrix speed (VNNI: int8 dot products)."""


def cpu_description() -> dict[str, Any]:
    """The CPU model and which of :data:`ISA_FLAGS` it has (Linux ``/proc/cpuinfo``): results
    measured on machines of the same kind can differ by CPU, and int8 ratios do by a lot."""
    try:
        info = Path("/proc/cpuinfo").read_text("utf-8", errors="replace")
    except OSError:
        return {"cpu": platform.processor() or "unknown", "isa": []}
    fields = dict(
        (k.strip(), v.strip()) for k, _, v in (line.partition(":") for line in info.splitlines()) if v
    )
    flags = set(fields.get("flags", "").split())
    return {"cpu": fields.get("model name", "unknown"), "isa": [f for f in ISA_FLAGS if f in flags]}


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))
