"""Incremental cost: a no-op, a 1 % content change and a 1 % ACL-only change against a full run.

One tenant of ``--docs`` generated Markdown documents (about 3 KB each: headings, lists, a
table, a code fence), folder source, hash embedder, so only the pipeline's own cost counts.
Each phase runs in its own process (``--phase``) so that each has its own peak RSS; the
phases run in order on one store: ``full``, ``noop``, ``content`` (1 % of the documents
rewritten), ``acl`` (the groups of another 1 % changed in ``_access.yaml``), ``noop``.

    python -m bench.incremental_cost --docs 10000   # writes bench/results/incremental_cost.json

Targets (issue 17): a 1 % change <= 5 % of the full run, ACL-only <= 3 %, a no-op <= 2 %.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import yaml

from bench.common import peak_rss_mb, write_result

MODEL_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TENANT = "acme"
TARGETS = {"noop": 0.02, "content": 0.05, "acl": 0.03}
# fmt: off
_WORDS = (
    "index", "vector", "chunk", "tenant", "publish", "lance", "table", "query", "policy", "source",
    "revision", "cache", "embed", "token", "section", "heading", "list", "fence", "merge", "delete",
    "scope", "version", "tag", "audit", "access", "reader", "group", "latency", "memory", "batch",
    "stream", "worker", "commit", "manifest", "listing", "parse", "quality", "golden", "recall",
)
# fmt: on


def _prose(rng: random.Random, words: int) -> str:
    text = " ".join(rng.choice(_WORDS) for _ in range(words))
    return text[0].upper() + text[1:] + "."


def document(i: int, variant: int = 0) -> str:
    """About 3 KB of Markdown, deterministic in ``(i, variant)``."""
    rng = random.Random(f"{i}:{variant}")
    parts = [f"# Document {i} (v{variant})", "", _prose(rng, 60), ""]
    for s in range(3):
        parts += [f"## Section {s} of {i}", "", _prose(rng, 50), ""]
        parts += [f"- {_prose(rng, 8)}" for _ in range(4)] + [""]
        if s == 1:
            parts += ["| key | value | note |", "|---|---|---|"]
            parts += [f"| k{r} | {rng.randint(0, 999)} | {_prose(rng, 4)} |" for r in range(5)] + [""]
        if s == 2:
            parts += ["```python", f"def f_{i}(x):", f"    return x * {rng.randint(1, 9)}", "```", ""]
    return "\n".join(parts)


def _policy(root: Path, acl_groups: str) -> None:
    rules = {"documents": [{"match": "acl-*.md", "groups": [acl_groups]}]}
    (root / "corpus" / TENANT / "_access.yaml").write_text(yaml.safe_dump(rules), encoding="utf-8")


def make_project(root: Path, docs: int) -> None:
    src = root / "corpus" / TENANT
    src.mkdir(parents=True, exist_ok=True)
    (src / ".tessera-root").write_bytes(b"")
    step = max(1, docs // max(1, docs // 100))  # 1 % of the documents carry the ACL rule
    for i in range(docs):
        name = f"acl-{i:06d}.md" if i % step == step // 2 else f"doc-{i:06d}.md"
        (src / name).write_text(document(i), encoding="utf-8")
    _policy(root, "staff")
    data: dict[str, Any] = {
        "store": {"uri": "index", "work_dir": "work"},
        "embedding": {"model": "sentence-transformers/all-MiniLM-L6-v2", "sha256": MODEL_SHA},
        "tenants": {
            TENANT: {"source": {"kind": "folder", "path": f"corpus/{TENANT}"},
                     "access": {"default": {"groups": ["staff"]}}}
        },
    }  # fmt: skip
    (root / "tessera.yaml").write_text(yaml.safe_dump(data), encoding="utf-8")


def change(root: Path, phase: str, docs: int) -> None:
    """Apply the phase's change to the source folder (outside the timed run)."""
    if phase == "content":
        step = max(1, docs // max(1, docs // 100))
        for i in range(0, docs, step):
            if i % step != step // 2:  # an ordinary document (the ACL ones change in the next phase)
                (root / "corpus" / TENANT / f"doc-{i:06d}.md").write_text(document(i, 1), encoding="utf-8")
    elif phase == "acl":
        _policy(root, "board")


def phase(name: str, root: Path) -> dict[str, Any]:
    from tessera.config import load_config
    from tessera.embedding.fake import HashEmbedder
    from tessera.pipeline.run import RunContext, run_tenant

    cfg = load_config(root / "tessera.yaml")
    embedder = HashEmbedder()
    rc = RunContext(cfg, TENANT, f"bench-{name}-{time.time_ns()}", embedder)
    t0 = time.perf_counter()
    out = run_tenant(rc)
    seconds = time.perf_counter() - t0
    cache = getattr(rc.connector, "cache", None)
    stats = getattr(cache, "last", None)
    publish = out.get("publish", {})
    return {
        "seconds": round(seconds, 3),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "worker_peak_rss_mb": max(out[s].get("worker_peak_rss_mb", 0.0) for s in ("parse", "chunk")),
        "executor": out["parse"].get("executor", "inline"),
        "changed": out["listing"]["changed"],
        "meta_only": out["listing"]["meta_only"],
        "chunks": out["chunk"]["chunks"],
        "embedded": out["embed"]["embedded"],
        "inserted": publish.get("inserted", 0),
        "updated": publish.get("updated", 0),
        "deleted": publish.get("deleted", 0),
        "committed": publish.get("committed", False),
        # revisions the folder listing took from its cache / read and hashed
        "revision_cache": [stats.hits, stats.misses] if stats is not None else None,
    }


PHASES = ("full", "noop", "content", "acl", "noop_after")


def run_phase(name: str, root: Path) -> dict[str, Any]:
    """:func:`phase` in a process of its own, so it has its own peak RSS."""
    proc = subprocess.run(
        [sys.executable, "-m", "bench.incremental_cost", "--phase", name, "--root", str(root)],
        check=True,
        capture_output=True,
        text=True,
    )
    return dict(json.loads(proc.stdout.strip().splitlines()[-1]))


def _sequence(docs: int) -> dict[str, dict[str, Any]]:
    """One project, its phases in order, each in its own process."""
    root = Path(tempfile.mkdtemp(prefix="tessera-incr-"))
    make_project(root, docs)
    phases: dict[str, dict[str, Any]] = {}
    for name in PHASES:
        change(root, name, docs)
        phases[name] = run_phase(name, root)
        print(name, phases[name], flush=True)
    shutil.rmtree(root, ignore_errors=True)
    return phases


def median_phase(runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The first repeat's counts, with the median seconds and peak RSS of all repeats."""
    return {
        **runs[0],
        "seconds": round(statistics.median(r["seconds"] for r in runs), 3),
        "seconds_all": [r["seconds"] for r in runs],
        "peak_rss_mb": round(statistics.median(r["peak_rss_mb"] for r in runs), 1),
    }


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--docs", type=int, default=10_000)
    p.add_argument("--phase")
    p.add_argument("--root")
    p.add_argument("--repeats", type=int, default=3, help="whole sequences, each on a new project")
    p.add_argument("--name", default="incremental_cost", help="result file name (bench/results/NAME.json)")
    args = p.parse_args()
    if args.phase:
        print(json.dumps(phase(args.phase, Path(args.root))))
        return 0
    runs = [_sequence(args.docs) for _ in range(args.repeats)]
    phases = {name: median_phase([r[name] for r in runs]) for name in PHASES}
    full = phases["full"]["seconds"]
    ratios = {k: round(phases[k]["seconds"] / full, 4) for k in PHASES[1:]}
    result = {
        "documents": args.docs,
        "repeats": args.repeats,
        "phases": phases,  # per phase: the median seconds and peak RSS of the repeats
        "ratio_to_full": ratios,  # median phase over median full run
        "ratio_to_full_per_repeat": [
            {k: round(r[k]["seconds"] / r["full"]["seconds"], 4) for k in PHASES[1:]} for r in runs
        ],
        "targets": TARGETS,
        "meets_targets": {k: ratios[k] <= t for k, t in TARGETS.items()},
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),  # the ratios need a quiet machine
    }
    print(write_result(args.name, result))
    print(json.dumps(result["ratio_to_full"]))
    return 0


if __name__ == "__main__":
    sys.exit(main())
