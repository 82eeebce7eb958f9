"""The tenant job with Dagster's multiprocess executor: every step runs in its own process and
finds what the previous step staged through the run workspace on shared storage
(``store.work_dir``), and the published table is the one an in-process CLI run publishes."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import DagsterEventType, execute_job, instance_for_test, reconstructable

from tests.conftest import Workspace
from tests.pipeline.dagster_jobs import index_tenant_job
from tests.pipeline.test_executors import COLUMNS

DOCS: dict[str, str | bytes] = {
    f"notes/{i}.md": f"# Note {i}\n\n## Body\n\nThe body of note {i} says something useful.\n"
    for i in range(6)
}


@pytest.mark.slow
def test_each_step_in_its_own_process_publishes_the_cli_table(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "cli")
    cli = [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]

    ws2 = Workspace(tmp_path / "dagster")
    ws2.tenant("acme", DOCS)
    config = ws2.root / "tessera.yaml"
    ws2.config()  # writes tessera.yaml
    monkeypatch.setenv("TESSERA_CONFIG", str(config))
    monkeypatch.setenv("TESSERA_EXECUTOR", "multiprocess")
    home = tmp_path / "dagster-home"
    home.mkdir()
    with instance_for_test(temp_dir=str(home)) as instance:
        instance.add_dynamic_partitions("tenants", ["acme"])
        result = execute_job(
            reconstructable(index_tenant_job),
            instance=instance,
            tags={"dagster/partition": "acme"},
            raise_on_error=False,
        )
        assert result.success, [e.message for e in result.all_events if e.is_failure]
        pids = {
            e.pid
            for e in result.all_events
            if e.event_type == DagsterEventType.STEP_SUCCESS and e.pid is not None
        }
        steps = [e for e in result.all_events if e.event_type == DagsterEventType.STEP_SUCCESS]
    assert len(steps) >= 5 and len(pids) == len(steps)  # one process per step
    assert [tuple(r[c] for c in COLUMNS) for r in ws2.rows("acme")] == cli
