"""The same tenant indexed in-process and on a real local Ray cluster (started here, on
loopback, and stopped here) gives identical table contents: ids, texts, offsets, vectors."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

from tests.conftest import Workspace
from tests.pipeline.test_executors import COLUMNS, DOCS

ray = pytest.importorskip("ray")


@pytest.fixture(scope="module")
def local_ray() -> Iterator[Any]:
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")
    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False, namespace="tessera-tests")
    try:
        yield ray
    finally:
        ray.shutdown()


def test_ray_stages_the_same_rows_as_inline(ws: Workspace, local_ray: Any) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "inline")
    inline = [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]

    ws2 = Workspace(ws.root / "ray")
    ws2.tenant("acme", DOCS)
    ws2.execution = {"executor": "ray", "workers": 2, "min_documents": 0, "batch_documents": 4}
    summary = ws2.run("acme", "ray")
    assert summary["parse"]["executor"] == summary["chunk"]["executor"] == "ray"
    assert summary["parse"]["quarantined"] == 1
    assert [tuple(r[c] for c in COLUMNS) for r in ws2.rows("acme")] == inline
    assert local_ray.cluster_resources()["CPU"] == 2  # the steps ran on this local cluster
