"""Dagster orchestration of sources: the guard check, override tag, sensors, schedule, CLI."""

from __future__ import annotations

import json
from datetime import UTC, datetime

import pytest
from dagster import (
    DagsterInstance,
    SkipReason,
    build_schedule_context,
    build_sensor_context,
    instance_for_test,
    materialize,
)

from assets import INDEXING_ASSETS, INDEXING_CHECKS
from pipelines.definitions import build_definitions
from pipelines.schedules import build_rebuild_schedule
from pipelines.sensors import source_change_sensor, tenant_partitions_sensor
from resources import (
    ALLOW_MASS_DELETE_TAG,
    FakeEmbedderResource,
    FakeSourceResource,
    TenantRunResource,
    TesseraConfigResource,
)
from tessera.cli import main


def _docs(n: int) -> dict[str, str]:
    return {f"d{i:02d}.md": f"# D{i}\n\ncontent {i}\n" for i in range(n)}


def _resources(cfg_path: str, sources: FakeSourceResource) -> dict[str, object]:
    config = TesseraConfigResource(config_path=cfg_path)
    return {
        "tessera_config": config,
        "tenant_run": TenantRunResource(config=config, embedder=FakeEmbedderResource(), sources=sources),
    }


def _materialize(instance, cfg_path, sources, tags=None):  # type: ignore[no-untyped-def]
    return materialize(
        [*INDEXING_ASSETS, *INDEXING_CHECKS],
        partition_key="acme",
        instance=instance,
        resources=_resources(cfg_path, sources),
        tags=tags or {},
        raise_on_error=False,
    )


@pytest.mark.scenario("A7", "D2")
def test_guard_check_blocks_publish_until_the_override_tag(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])
    first = _materialize(instance, str(cfg.path), FakeSourceResource(documents={"acme": _docs(20)}))
    assert first.success and len(ws.rows("acme")) == 20
    version = ws.table("acme").version
    shrunk = FakeSourceResource(documents={"acme": _docs(10)})  # 50% deleted
    blocked = _materialize(instance, str(cfg.path), shrunk)
    guard = [c for c in blocked.get_asset_check_evaluations() if c.check_name == "mass_deletion_guard"]
    assert guard and not guard[0].passed
    assert guard[0].metadata["to_delete"].value == 10
    assert "d19.md" in guard[0].metadata["would_delete"].value
    assert ws.table("acme").version == version and len(ws.rows("acme")) == 20  # nothing published
    allowed = _materialize(instance, str(cfg.path), shrunk, tags={ALLOW_MASS_DELETE_TAG: "true"})
    assert allowed.success
    assert allowed.output_for_node("published_index")["docs_removed"] == 10
    assert len(ws.rows("acme")) == 10


@pytest.mark.scenario("A6")
def test_outage_fails_the_run_before_publish(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])
    assert _materialize(instance, str(cfg.path), FakeSourceResource(documents={"acme": _docs(5)})).success
    version = ws.table("acme").version
    for failure in ("raise", "bare_list", "no_proof"):
        result = _materialize(instance, str(cfg.path), FakeSourceResource(failure=failure))
        assert not result.success
        assert ws.table("acme").version == version and len(ws.rows("acme")) == 5


def test_partition_sensor_adds_and_removes_without_deleting_data(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {"a.md": "# A\n\nx\n"})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme", "oldco"])
    ctx = build_sensor_context(
        instance=instance, resources={"tessera_config": TesseraConfigResource(config_path=str(cfg.path))}
    )
    result = tenant_partitions_sensor(ctx)
    kinds = {type(r).__name__: list(r.partition_keys) for r in result.dynamic_partitions_requests}
    assert kinds == {"DeleteDynamicPartitionsRequest": ["oldco"]}
    ws.tenant("globex", {"g.md": "# G\n\ny\n"})
    cfg = ws.config()
    ctx = build_sensor_context(
        instance=instance, resources={"tessera_config": TesseraConfigResource(config_path=str(cfg.path))}
    )
    adds = [
        r for r in tenant_partitions_sensor(ctx).dynamic_partitions_requests if hasattr(r, "partition_keys")
    ]
    assert any(list(r.partition_keys) == ["globex"] for r in adds)


def test_schedule_requests_one_run_per_tenant_with_retries(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {})
    ws.tenant("globex", {})
    cfg = ws.config()
    schedule = build_rebuild_schedule("0 2 * * *")
    when = datetime(2026, 11, 30, 2, tzinfo=UTC)
    sources = FakeSourceResource(documents={"acme": _docs(2), "globex": _docs(3)})
    with instance_for_test() as instance:
        instance.add_dynamic_partitions("tenants", ["acme", "globex"])
        with build_schedule_context(
            instance=instance, scheduled_execution_time=when, resources=_resources(str(cfg.path), sources)
        ) as ctx:
            requests = list(schedule(ctx))
    assert [r.partition_key for r in requests] == ["acme", "globex"]  # never published: both run
    assert len({r.run_key for r in requests}) == 2
    assert all(r.tags["dagster/max_retries"] == "2" for r in requests)
    defs = build_definitions(config_path="examples/tessera.yaml", fake_embedder=True)
    assert defs.resolve_schedule_def("tenant_rebuild_schedule").cron_schedule == "0 2 * * *"


def test_schedule_skips_up_to_date_tenants_and_runs_the_rest(ws) -> None:  # type: ignore[no-untyped-def]
    """An up-to-date tenant gets no run; a change, a failing check or another model does."""
    ws.tenant("acme", {})
    ws.tenant("globex", {})
    cfg = ws.config()
    schedule = build_rebuild_schedule("0 2 * * *")
    docs = {"acme": _docs(2), "globex": _docs(3)}
    sources = FakeSourceResource(documents=docs)
    for t in ("acme", "globex"):
        ws.run(t, f"first-{t}", connector=sources.connector(cfg.tenant(t)))

    def tick(src: FakeSourceResource, embedder: object = None, hour: int = 2):  # type: ignore[no-untyped-def]
        resources = _resources(str(cfg.path), src)
        if embedder is not None:
            resources["tenant_run"] = TenantRunResource(
                config=TesseraConfigResource(config_path=str(cfg.path)), embedder=embedder, sources=src
            )
        when = datetime(2026, 11, 30, hour, tzinfo=UTC)
        with instance_for_test() as instance:
            instance.add_dynamic_partitions("tenants", ["acme", "globex"])
            with build_schedule_context(
                instance=instance, scheduled_execution_time=when, resources=resources
            ) as ctx:
                return schedule(ctx)

    idle = tick(sources)
    assert isinstance(idle, SkipReason) and "2 tenants are up to date" in (idle.skip_message or "")
    edited = FakeSourceResource(documents={**docs, "globex": {**docs["globex"], "d00.md": "# D0\n\nnew\n"}})
    runs = tick(edited, hour=3)
    assert [r.partition_key for r in runs] == ["globex"]
    assert runs[0].tags["tessera/reason"] == "1 changed" and runs[0].tags["tessera/trigger"] == "schedule"
    outage = tick(FakeSourceResource(failure="raise"), hour=4)  # the run records the failure
    assert [r.partition_key for r in outage] == ["acme", "globex"]
    assert all(r.tags["tessera/reason"].startswith("check failed") for r in outage)
    other_model = tick(sources, embedder=FakeEmbedderResource(version="2"), hour=5)
    assert [r.partition_key for r in other_model] == ["acme", "globex"]  # a model change rebuilds
    assert isinstance(tick(sources, hour=6), SkipReason)  # nothing ran: still up to date


def test_change_sensor_requests_runs_only_for_changed_sources(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])

    def resource(sources: FakeSourceResource) -> TenantRunResource:
        return TenantRunResource(
            config=TesseraConfigResource(config_path=str(cfg.path)),
            embedder=FakeEmbedderResource(),
            sources=sources,
        )

    run = resource(FakeSourceResource(documents={"acme": {"a.md": "# A\n\nx\n"}}))

    def tick(resource):  # type: ignore[no-untyped-def]
        with build_sensor_context(instance=instance, resources={"tenant_run": resource}) as ctx:
            return list(source_change_sensor(ctx))

    first = tick(run)
    assert len(first) == 1 and first[0].partition_key == "acme"  # never published yet
    ws.run("acme", "r1", connector=run.sources.connector(cfg.tenant("acme")))
    assert isinstance(tick(run)[0], SkipReason)  # published and unchanged
    changed = resource(FakeSourceResource(documents={"acme": {"a.md": "# A\n\nchanged\n"}}))
    again = tick(changed)
    assert len(again) == 1 and again[0].run_key != first[0].run_key
    outage = resource(FakeSourceResource(failure="raise"))
    assert isinstance(tick(outage)[0], SkipReason)  # an outage never triggers a run


def test_cli_sources_check_and_purge(ws, capsys) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", {"a.md": "# A\n\nx\n"})
    ws.tenant("globex", {"g.md": "# G\n\ny\n"})
    cfg = ws.config()
    base = ["--config", str(cfg.path), "--fake-embedder"]
    assert main([*base, "sources", "check", "--tenant", "acme", "--json"]) == 0
    status = json.loads(capsys.readouterr().out)
    assert status["verdict"] == "complete" and status["changed"] == 1
    assert main([*base, "run"]) == 0
    capsys.readouterr()
    assert main([*base, "tenant", "purge", "acme"]) == 2  # needs --yes
    assert ws.table("acme") is not None
    assert main([*base, "tenant", "purge", "acme", "--yes"]) == 0
    assert ws.table("acme") is None and ws.table("globex") is not None
    assert not (ws.root / "index" / "_sources" / "acme").exists()
    assert (ws.root / "index" / "_sources" / "globex").exists()
