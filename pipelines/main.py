"""``make run``: index every configured tenant through Dagster, then print a summary and a search.

Runs the ``index_tenant`` job in-process, one run per tenant partition, against a persistent
instance in ``$DAGSTER_HOME`` (default ``.tessera/dagster``), so ``make dev`` shows the runs.
"""

import argparse
import os
import sys
import time
import warnings
from pathlib import Path
from typing import Any

from pipelines.noop import LiveTenant, RememberedQuery, up_to_date
from tessera.cli_search import print_hits
from tessera.config import TesseraConfig, load_config
from tessera.embedding.base import Embedder
from tessera.pipeline.footprint import peak_step
from tessera.pipeline.progress import printing_progress
from tessera.search import principal_from_config, search

BUNDLED_CONFIG = str(Path(__file__).resolve().parents[1] / "examples" / "tessera.yaml")
"""The bundled example (``resources.config.BUNDLED_CONFIG``, not imported: that imports Dagster)."""

DAGSTER_YAML = """\
# Written by pipelines.main. One run per tenant at a time (enforced by the queued run
# coordinator that `dagster dev` starts; in-process runs rely on the core's tenant lock).
concurrency:
  runs:
    tag_concurrency_limits:
      - key: dagster/partition
        value:
          applyLimitPerUniqueValue: true
        limit: 1
# Run-level retries re-run a crashed run worker (e.g. SIGKILL) from the failed step; step
# failures are not retried at run level: transient embedding errors are retried per batch in
# the core, and permanent ones (bad config, the mass-deletion guard) must not be retried.
run_retries:
  enabled: true
  max_retries: 0
  retry_on_asset_or_op_failure: false
run_monitoring:
  enabled: true
telemetry:
  enabled: false
# The core logs through Python's logging (progress on tessera.progress): into each run's log.
python_logs:
  managed_python_loggers:
    - tessera
  python_log_level: INFO
"""


QUIET = {"loggers": {"console": {"config": {"log_level": "WARNING"}}}}


def instance_home(default: str = ".tessera/dagster") -> Path:
    from pipelines.deployment import storage_yaml

    home = Path(os.environ.get("DAGSTER_HOME") or default).resolve()
    home.mkdir(parents=True, exist_ok=True)
    if not (home / "dagster.yaml").exists():
        (home / "dagster.yaml").write_text(DAGSTER_YAML + storage_yaml(), encoding="utf-8")
    os.environ["DAGSTER_HOME"] = str(home)
    return home


def run_all(
    config_path: str, fake: bool, tenants: list[str] | None = None, allow_mass_delete: bool = False
) -> dict[str, dict[str, Any]]:
    from dagster import DagsterInstance

    from assets import tenant_partitions
    from pipelines.definitions import build_definitions
    from resources.runs import ALLOW_MASS_DELETE_TAG

    cfg = load_config(config_path)
    defs = build_definitions(config_path=config_path, fake_embedder=fake)
    job = defs.resolve_job_def("index_tenant")
    instance_home()
    instance = DagsterInstance.get()
    selected = tenants or sorted(cfg.tenants)
    known = set(instance.get_dynamic_partitions(tenant_partitions.name or "tenants"))
    instance.add_dynamic_partitions(
        tenant_partitions.name or "tenants", [t for t in selected if t not in known]
    )
    results: dict[str, dict[str, Any]] = {}
    for tenant in selected:  # every tenant is attempted: one failure never stops another's publish
        print(f"{tenant}: indexing through Dagster", flush=True)
        started = time.perf_counter()
        res = job.execute_in_process(
            partition_key=tenant,
            instance=instance,
            raise_on_error=False,
            run_config=QUIET,
            tags={ALLOW_MASS_DELETE_TAG: "true"} if allow_mass_delete else None,
        )
        if not res.success:
            failures = [e for e in res.all_events if e.is_step_failure]
            why = failures[0].event_specific_data.error.message.strip() if failures else "run failed"  # type: ignore[union-attr]
            results[tenant] = {"run_id": res.run_id, "error": why}
            continue
        memory = {step: res.output_for_node(node).get("memory") for step, node in STEP_NODES.items()}
        took = time.perf_counter() - started
        print(f"{tenant}: done in {took:.1f} s (run {res.run_id}); {peak_line(memory)}", flush=True)
        results[tenant] = {
            "run_id": res.run_id,
            "listing": res.output_for_node("source_listing"),
            "chunks": res.output_for_node("document_chunks"),
            "embed": res.output_for_node("chunk_embeddings"),
            "publish": res.output_for_node("published_index"),
        }
    return results


STEP_NODES = {
    "list": "source_listing",
    "parse": "parsed_documents",
    "chunk": "document_chunks",
    "embed": "chunk_embeddings",
    "publish": "published_index",
}


def peak_line(memory: dict[str, Any]) -> str:
    """Which step set the process's peak memory in this tenant's run (``tessera.pipeline.footprint``)."""
    found = peak_step({step: m for step, m in memory.items() if m})
    if found is None:
        return "peak RSS set before this tenant"
    step, peak = found
    return f"peak RSS {peak:.0f} MB, set in its {step} step"


def print_summary(results: dict[str, dict[str, Any]]) -> None:
    cols = [
        "tenant",
        "docs",
        "changed",
        "meta",
        "removed",
        "chunks",
        "embedded",
        "cache",
        "sentences",
        "committed",
        "version",
    ]
    print(" | ".join(f"{c:>9}" for c in cols))
    for tenant, r in results.items():
        if "error" in r:
            print(f"{tenant:>9} | FAILED: {r['error'].splitlines()[0]}")
            continue
        li, ch, em, pu = r["listing"], r["chunks"], r["embed"], r["publish"]
        row = [
            tenant,
            li["documents"],
            li["changed"],
            li["meta_only"],
            li["removed"],
            ch["chunks"],
            em["embedded"],
            em["cache_hits"],
            em.get("sentences", {}).get("embedded", 0),  # sentence vectors embedded (cache misses)
            pu["committed"],
            pu["version"],
        ]
        print(" | ".join(f"{v!s:>9}" for v in row))


def embedder_for(cfg: TesseraConfig, fake: bool) -> Embedder:
    """The sample search's embedder: the job's (loaded once per process) when it ran, else the
    configured model, built lazily (torch loads on the first embedding, if any)."""
    if not fake and "dagster" in sys.modules:
        from resources.embedder import SentenceTransformerEmbedderResource

        return SentenceTransformerEmbedderResource().get(cfg.embedding)
    from tessera.embedding.factory import configured_embedders

    return configured_embedders(cfg, fake)[0]


def print_live(live: list[LiveTenant]) -> None:
    print("every tenant is up to date with its source (checked without Dagster): nothing to run")
    print("(make run ARGS=--always runs the job anyway)")
    print(" | ".join(f"{c:>9}" for c in ("tenant", "docs", "changed", "version")))
    for t in live:
        print(" | ".join(f"{v!s:>9}" for v in (t.tenant, t.documents, 0, t.version)))


def main(argv: list[str] | None = None) -> int:
    warnings.filterwarnings("ignore")
    p = argparse.ArgumentParser(prog="python -m pipelines.main", description=__doc__)
    p.add_argument("--config", default=os.environ.get("TESSERA_CONFIG", BUNDLED_CONFIG))
    p.add_argument("--tenant", action="append", help="index only this tenant (repeatable)")
    p.add_argument("--fake-embedder", action="store_true", help="use the hash embedder (tests, demos)")
    p.add_argument("--query", default="how do I page the on-call engineer")
    p.add_argument("--user", default="alice")
    p.add_argument("--allow-mass-delete", action="store_true", help="override the mass-deletion guard")
    p.add_argument("--always", action="store_true", help="run the job even when every tenant is up to date")
    args = p.parse_args(argv)
    with printing_progress("stdout"):  # each step's counts and rates, while the runs work
        return _main(args)


def _main(args: argparse.Namespace) -> int:
    cfg = load_config(args.config)
    tenants = args.tenant or sorted(cfg.tenants)
    live = None if args.always else up_to_date(cfg, tenants, embedder_for(cfg, args.fake_embedder))
    failed: list[str] = []
    if live is not None:
        print_live(live)
        ok = tenants
    else:
        results = run_all(args.config, args.fake_embedder, args.tenant, args.allow_mass_delete)
        print_summary(results)
        failed = sorted(t for t, r in results.items() if "error" in r)
        ok = sorted(t for t in results if t not in failed)
    if not ok:
        print(f"every tenant failed: {failed}", file=sys.stderr)
        return 1
    tenant = ok[0]
    embedder = RememberedQuery(
        embedder_for(cfg, args.fake_embedder), cfg.store.work_dir / "make-run" / "sample-query.json"
    )
    principal = principal_from_config(cfg, tenant, args.user)
    print(f"\nsample search: tenant={tenant} user={args.user} query={args.query!r}")
    print_hits(search(cfg.store.uri, embedder, principal, args.query, k=3))
    if failed:
        print(f"\nfailed tenants (their previous versions stay current): {failed}", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
