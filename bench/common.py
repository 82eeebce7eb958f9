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
    data = {"benchmark": name, "machine": {"python": platform.python_version(), "cpus": _cpus()}, **data}
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    return path


def _cpus() -> int:
    import os

    return len(os.sched_getaffinity(0))
