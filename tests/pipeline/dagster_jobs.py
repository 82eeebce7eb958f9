"""Reconstructable jobs for tests that run Dagster steps in separate processes: each step
process rebuilds the definitions from ``TESSERA_CONFIG`` (and the executor from
``TESSERA_EXECUTOR``), as a multiprocess, Celery or k8s worker would."""

from __future__ import annotations

import os

from dagster import JobDefinition

from pipelines.definitions import build_definitions


def index_tenant_job() -> JobDefinition:
    defs = build_definitions(config_path=os.environ["TESSERA_CONFIG"], fake_embedder=True)
    return defs.resolve_job_def("index_tenant")
