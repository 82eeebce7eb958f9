"""D1: op retries vs run retries, on a real Dagster instance.

(a) A transient embedding failure is retried inside the ``chunk_embeddings`` step, in the same
run, at most ``embedding.max_retries`` times per batch; a failure that outlasts them fails the
step, and the run is not retried (``retry_on_asset_or_op_failure: false``).
(b) The run worker (a real subprocess running the ``index_tenant`` job) is SIGKILLed in the
middle of the partition. The instance (a temporary ``DAGSTER_HOME`` with the ``dagster.yaml``
that ``pipelines.main`` writes) marks the run failed, as run monitoring does; the daemon's own
``should_retry`` and ``get_reexecution_strategy`` decide the retry, which re-executes
``FROM_FAILURE``: finished steps are reused through the IO manager, nothing is published twice.
Attempts are bounded: at most ``1 + dagster/max_retries`` runs, each step started at most once
per run, and at most ``max_retries + 1`` embedding calls per batch per run.
"""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from dagster import (
    DagsterEventType,
    DagsterInstance,
    DagsterRunStatus,
    JobDefinition,
    materialize,
)
from dagster._core.storage.tags import MAX_RETRIES_TAG, RETRY_STRATEGY_TAG
from dagster._daemon.auto_run_reexecution.auto_run_reexecution import get_reexecution_strategy, should_retry

from assets import INDEXING_ASSETS, INDEXING_CHECKS
from pipelines.deployment import storage_yaml
from pipelines.main import DAGSTER_YAML
from resources import ConfiguredSourceResource, FakeEmbedderResource, TenantRunResource, TesseraConfigResource
from tessera.config import EmbeddingConfig
from tessera.embedding.base import Embedder, Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import TransientEmbeddingError
from tests.conftest import Workspace

from .test_lifecycle import md_sections

ROOT = Path(__file__).resolve().parent.parent
DOCS = {f"d{i}.md": md_sections(f"Doc{i}", 3) for i in range(4)}
CALLS: Counter[tuple[str, ...]] = Counter()  # batch -> embedding calls, in this process


class FlakyEmbedder:
    """A hash embedder whose every batch fails ``failures`` times (None: always) with a 503."""

    def __init__(self, failures: int | None) -> None:
        self.inner = HashEmbedder()
        self.identity = self.inner.identity
        self.failures = failures

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        CALLS[tuple(texts)] += 1
        if self.failures is None or CALLS[tuple(texts)] <= self.failures:
            raise TransientEmbeddingError(f"503 overloaded (call {CALLS[tuple(texts)]})")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)


class FlakyEmbedderResource(FakeEmbedderResource):
    failures: int = 1  # -1: always

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return FlakyEmbedder(None if self.failures < 0 else self.failures)  # type: ignore[return-value]


def _resources(cfg_path: Path, embedder: FakeEmbedderResource) -> dict[str, object]:
    config = TesseraConfigResource(config_path=str(cfg_path))
    sources = ConfiguredSourceResource()
    return {
        "tessera_config": config,
        "tenant_run": TenantRunResource(config=config, embedder=embedder, sources=sources),
    }


def _failures(result: Any) -> list[str]:
    """Each failed step with the innermost error of its chain."""
    out = []
    for event in result.get_step_failure_events():
        error = event.step_failure_data.error
        while error is not None and error.cause is not None:
            error = error.cause
        out.append(f"{event.step_key}: {error.cls_name if error else ''}: {error.message if error else ''}")
    return out


def _started(instance: DagsterInstance, run_id: str) -> list[str]:
    events = instance.all_logs(run_id, of_type=DagsterEventType.STEP_START)
    return [e.step_key for e in events if e.step_key]


@pytest.mark.scenario("D1", "B1")
def test_a_transient_embedding_failure_is_retried_in_the_same_run_and_bounded(ws: Workspace) -> None:
    ws.chunking["sentence_vectors"] = True  # chunk and sentence batches are both retried
    ws.tenant("acme", DOCS)
    cfg = ws.config()
    max_retries = cfg.embedding.max_retries
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])

    def run(embedder: FakeEmbedderResource) -> Any:
        assets = [*INDEXING_ASSETS, *INDEXING_CHECKS]
        resources = _resources(cfg.path, embedder)
        return materialize(
            assets, partition_key="acme", instance=instance, resources=resources, raise_on_error=False
        )

    CALLS.clear()
    always = run(FlakyEmbedderResource(failures=-1))  # outlasts the retries: the step fails
    assert not always.success
    assert [e.step_key for e in always.get_step_failure_events()] == ["chunk_embeddings"]
    assert CALLS and set(CALLS.values()) == {max_retries + 1}  # the first batch, then it gives up
    assert ws.table("acme") is None  # nothing was published
    assert _started(instance, always.run_id).count("chunk_embeddings") == 1

    CALLS.clear()
    flaky = run(FlakyEmbedderResource(failures=max_retries))  # every batch fails max_retries times
    assert flaky.success
    assert _started(instance, flaky.run_id).count("chunk_embeddings") == 1  # retried inside the step
    batches = len(CALLS)
    assert set(CALLS.values()) == {max_retries + 1}
    emb = flaky.output_for_node("chunk_embeddings")
    assert emb["retries"] + emb["sentences"]["retries"] == batches * max_retries
    assert emb["batches"] + emb["sentences"]["batches"] == batches

    clean = Workspace(ws.root / "clean")  # the final table equals a fault-free run
    clean.chunking = dict(ws.chunking)
    clean.tenant("acme", DOCS)
    clean.run("acme", "r1")
    assert [(r["id"], r["vector"]) for r in ws.rows("acme")] == [
        (r["id"], r["vector"]) for r in clean.rows("acme")
    ]


# ----------------------------------------------------------------------------- (b) SIGKILL + run retry

KILL_AT = {
    "embed": ("assets.chunk_embeddings", "embed_step"),  # mid-partition, before the commit
    "after_commit": ("assets.published_index", "lineage_step"),  # committed, tagged, logged
}

WORKER = textwrap.dedent(
    """
    import importlib, os, signal, sys
    sys.path.insert(0, {root!r})
    from dagster import DagsterInstance, execute_job, reconstructable
    from tests.test_reliability_orchestration import KILL_AT, index_tenant

    module_name, name = KILL_AT[sys.argv[1]]
    module = importlib.import_module(module_name)
    original = getattr(module, name)

    def killed(*args, **kwargs):
        if name == "lineage_step":  # the commit, its tag and its log entry are done
            original(*args, **kwargs)
        os.kill(os.getpid(), signal.SIGKILL)

    setattr(module, name, killed)
    execute_job(reconstructable(index_tenant), DagsterInstance.get(), tags={{"dagster/partition": "acme"}})
    """
)

# A fresh run worker for the retry, as the daemon launches one (Dagster also caches a
# reconstructed job per process, so the test process could not rebuild it for a new config).
RETRY_WORKER = textwrap.dedent(
    """
    import sys
    sys.path.insert(0, {root!r})
    from dagster import DagsterInstance, ReexecutionOptions, execute_job, reconstructable
    from tests.test_reliability_orchestration import _failures, index_tenant

    instance = DagsterInstance.get()
    result = execute_job(
        reconstructable(index_tenant),
        instance,
        reexecution_options=ReexecutionOptions.from_failure(sys.argv[1], instance),
        tags={{"dagster/partition": "acme"}},  # the daemon copies the parent's tags
    )
    print(result.run_id)
    print("\\n".join(_failures(result)), file=sys.stderr)
    sys.exit(0 if result.success else 1)
    """
)


def index_tenant() -> JobDefinition:
    """The production ``index_tenant`` job, rebuilt in every process from ``TESSERA_CONFIG``."""
    from pipelines.definitions import build_definitions

    defs = build_definitions(config_path=os.environ["TESSERA_CONFIG"], fake_embedder=True)
    return defs.resolve_job_def("index_tenant")


@pytest.mark.scenario("D1")
@pytest.mark.parametrize("phase", ["embed", "after_commit"])
def test_sigkilled_run_worker_is_retried_from_failure_without_double_publication(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, phase: str
) -> None:
    ws.tenant("acme", DOCS)
    cfg = ws.config()
    home = tmp_path / "dagster"
    home.mkdir()
    (home / "dagster.yaml").write_text(DAGSTER_YAML + storage_yaml({}), encoding="utf-8")
    env = {"DAGSTER_HOME": str(home), "TESSERA_CONFIG": str(cfg.path), "TESSERA_EXECUTOR": "in_process"}
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    instance = DagsterInstance.get()
    instance.add_dynamic_partitions("tenants", ["acme"])

    script = tmp_path / "worker.py"
    script.write_text(WORKER.format(root=str(ROOT)), encoding="utf-8")
    proc = subprocess.run(
        [sys.executable, str(script), phase],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=240,
    )
    assert proc.returncode == -signal.SIGKILL, proc.stderr.decode(errors="replace")[-3000:]

    (run,) = instance.get_runs()
    assert run.status == DagsterRunStatus.STARTED  # the worker died: nobody recorded the end
    first = _started(instance, run.run_id)
    done = {"source_listing", "parsed_documents", "document_chunks"} | (
        {"chunk_embeddings"} if phase != "embed" else set()
    )
    assert done <= set(first) and len(first) == len(set(first))
    committed = phase == "after_commit"
    assert len(ws.context("acme").index.publications()) == int(committed)

    # What run monitoring does for a dead worker, then the retry daemon's own decision.
    instance.report_run_failed(run, f"Detected run worker status FAILED. Marking run {run.run_id} as failed.")
    failed = instance.get_run_by_id(run.run_id)
    assert failed is not None and failed.status == DagsterRunStatus.FAILURE
    assert failed.tags[MAX_RETRIES_TAG] == "2" and failed.tags[RETRY_STRATEGY_TAG] == "FROM_FAILURE"
    assert should_retry(failed, instance)
    strategy = get_reexecution_strategy(failed, instance)
    assert strategy is not None and strategy.name == "FROM_FAILURE"

    retry_script = tmp_path / "retry.py"
    retry_script.write_text(RETRY_WORKER.format(root=str(ROOT)), encoding="utf-8")
    retried = subprocess.run(
        [sys.executable, str(retry_script), run.run_id],
        env={**os.environ, "PYTHONPATH": str(ROOT)},
        capture_output=True,
        timeout=240,
    )
    assert retried.returncode == 0, retried.stderr.decode(errors="replace")[-3000:]
    retry_id = retried.stdout.decode().split()[-1]
    (mat,) = [
        e.asset_materialization
        for e in instance.all_logs(retry_id, of_type=DagsterEventType.ASSET_MATERIALIZATION)
        if e.asset_materialization and e.asset_materialization.asset_key.to_user_string() == "published_index"
    ]
    again = _started(instance, retry_id)
    assert not done & set(again), again  # finished steps reused, not re-executed
    assert "published_index" in again and "active_model" in again
    assert len(instance.get_runs()) == 2 <= 1 + int(failed.tags[MAX_RETRIES_TAG])
    assert len(again) == len(set(again))  # each step at most once per run

    # No double publication: one publication, one run tag, no duplicate ids, every document.
    pubs = ws.context("acme").index.publications()
    assert len(pubs) == 1
    rows = ws.rows("acme")
    assert len({r["id"] for r in rows}) == len(rows) and {r["doc_id"] for r in rows} == set(DOCS)
    assert [t for t in ws.table("acme").tags.list() if t.startswith("run-")] == [pubs[0]["tag"]]
    assert mat.metadata["committed"].value is (not committed)  # the retry found the work done
    assert ws.run("acme", "after")["publish"]["committed"] is False  # converged
