"""Many small tenants: the change sensor's tick, and a no-op run through Dagster against the
same no-op through the CLI path (``run_tenant``).

``--tenants`` tenants of ``--docs`` small Markdown documents each (folder sources, hash
embedder), all indexed once first. Then, in one process:

- one tick of ``source_change_sensor`` over every tenant (nothing changed: no run requested);
- the no-op of every tenant through Dagster, i.e. one evaluation of ``tenant_rebuild_schedule``
  (it requests a run only for a tenant that needs one: none here), against the same no-op of
  every tenant through the CLI path (``run_tenant`` per tenant, what ``tessera run`` does);
- for a sample of ``--sample`` tenants, a no-op *run* through ``index_tenant`` executed in
  process by Dagster against ``run_tenant``, alternating per tenant: the floor of one Dagster
  run, which the schedule no longer pays for an up-to-date tenant.

    python -m bench.many_tenants --tenants 1000     # writes bench/results/many_tenants.json

Targets (issue 17): the tick under 30 s at 1,000 tenants; the no-op of every tenant through
Dagster <= 2x the CLI one.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from bench.common import peak_rss_mb, write_result

MODEL_SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"


def make_project(root: Path, tenants: int, docs: int) -> Path:
    cfg: dict[str, Any] = {
        "store": {"uri": "index", "work_dir": "work"},
        "embedding": {"model": "sentence-transformers/all-MiniLM-L6-v2", "sha256": MODEL_SHA},
        "execution": {"executor": "inline"},
        "tenants": {},
    }
    for t in range(tenants):
        name = f"t{t:04d}"
        src = root / "corpus" / name
        src.mkdir(parents=True)
        (src / ".tessera-root").write_bytes(b"")
        for d in range(docs):
            body = f"# Tenant {t} note {d}\n\n## Part\n\nNote {d} of tenant {t} explains item {d * 7 % 13}.\n"
            (src / f"n{d:02d}.md").write_text(body, encoding="utf-8")
        cfg["tenants"][name] = {
            "source": {"kind": "folder", "path": f"corpus/{name}"},
            "access": {"default": {"groups": ["staff"]}},
        }
    path = root / "tessera.yaml"
    path.write_text(yaml.safe_dump(cfg), encoding="utf-8")
    return path


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--tenants", type=int, default=1000)
    p.add_argument("--docs", type=int, default=20)
    p.add_argument("--sample", type=int, default=10)
    args = p.parse_args()
    logging.disable(logging.WARNING)
    from dagster import DagsterInstance, build_schedule_context, build_sensor_context

    from pipelines.definitions import build_definitions
    from pipelines.sensors import source_change_sensor
    from tessera.config import load_config
    from tessera.embedding.fake import HashEmbedder
    from tessera.pipeline.run import RunContext, run_tenant

    root = Path(tempfile.mkdtemp(prefix="tessera-tenants-"))
    config = make_project(root, args.tenants, args.docs)
    cfg = load_config(config)
    names = sorted(cfg.tenants)
    t0 = time.perf_counter()
    for name in names:
        run_tenant(RunContext(cfg, name, f"build-{name}", HashEmbedder()))
    build = time.perf_counter() - t0
    print(f"built {len(names)} tenants in {build:.1f} s", flush=True)

    defs = build_definitions(config_path=str(config), fake_embedder=True)
    home = root / "dagster"
    home.mkdir()
    os.environ["DAGSTER_HOME"] = str(home)
    (home / "dagster.yaml").write_text("telemetry:\n  enabled: false\n", encoding="utf-8")
    instance = DagsterInstance.get()
    instance.add_dynamic_partitions("tenants", names)
    assert defs.resources is not None
    resources = {"tenant_run": defs.resources["tenant_run"]}
    t0 = time.perf_counter()
    with build_sensor_context(instance=instance, resources=resources) as ctx:
        evaluation = source_change_sensor(ctx)
        results: list[Any] = list(evaluation) if isinstance(evaluation, Iterator) else [evaluation]
    tick = time.perf_counter() - t0
    requested = sum(1 for r in results if type(r).__name__ == "RunRequest")
    print(f"sensor tick over {len(names)} tenants: {tick:.1f} s, {requested} runs requested", flush=True)

    schedule = defs.resolve_schedule_def("tenant_rebuild_schedule")
    now = datetime.now(UTC)
    t0 = time.perf_counter()
    with build_schedule_context(instance=instance, resources=resources, scheduled_execution_time=now) as sctx:
        scheduled = schedule.evaluate_tick(sctx)
    schedule_all = time.perf_counter() - t0
    scheduled_runs = len(scheduled.run_requests or [])
    print(f"schedule over {len(names)} tenants: {schedule_all:.1f} s, {scheduled_runs} runs", flush=True)
    t0 = time.perf_counter()
    for name in names:
        out = run_tenant(RunContext(cfg, name, f"noop-all-{name}", HashEmbedder()))
        assert not out["publish"]["committed"]
    cli_all = time.perf_counter() - t0
    print(f"CLI no-op over {len(names)} tenants: {cli_all:.1f} s", flush=True)

    job = defs.resolve_job_def("index_tenant")
    cli, dagster = [], []
    for name in names[: args.sample]:
        t0 = time.perf_counter()
        out = run_tenant(RunContext(cfg, name, f"noop-cli-{time.time_ns()}", HashEmbedder()))
        cli.append(time.perf_counter() - t0)
        assert not out["publish"]["committed"]
        t0 = time.perf_counter()
        res = job.execute_in_process(partition_key=name, instance=instance, raise_on_error=True)
        dagster.append(time.perf_counter() - t0)
        assert res.success
    result = {
        "tenants": len(names),
        "documents_per_tenant": args.docs,
        "first_build_seconds": round(build, 1),
        "sensor_tick_seconds": round(tick, 2),
        "sensor_runs_requested": requested,
        "noop_all_tenants": {
            "dagster_schedule_seconds": round(schedule_all, 2),
            "dagster_runs_requested": scheduled_runs,
            "cli_seconds": round(cli_all, 2),
        },
        "dagster_vs_cli": round(schedule_all / cli_all, 3),
        "noop_sample": args.sample,
        "noop_cli_median_s": round(statistics.median(cli), 3),
        "noop_dagster_in_process_median_s": round(statistics.median(dagster), 3),
        "dagster_run_vs_cli_run": round(statistics.median(dagster) / statistics.median(cli), 2),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average_1m_at_end": round(os.getloadavg()[0], 2),
        "targets": {"sensor_tick_seconds": 30, "dagster_vs_cli": 2.0},
    }
    print(write_result("many_tenants", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
