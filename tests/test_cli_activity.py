"""What the CLI changes is visible in Dagster: a CLI run, restore, maintenance or purge becomes
a materialization of that asset and tenant partition in Dagster's event log.

The sensor is evaluated as the daemon evaluates it, and its asset events are reported to the
instance as the daemon reports them (``instance.report_runless_asset_event``). Attacks: a
no-op run (nothing to show), a refused restore (nothing committed), another tenant's partition,
a second tick (nothing twice), and a journal that cannot be written (the change still stands).
"""

from __future__ import annotations

import json
from typing import Any

import pytest
from dagster import AssetKey, AssetRecordsFilter, DagsterInstance, build_sensor_context, materialize

from assets import INDEXING_ASSETS, INDEXING_CHECKS
from pipelines.sensors import cli_activity_sensor
from resources import TesseraConfigResource
from tessera.cli import main
from tessera.store.activity import journal_path

from .test_dagster import DOCS, _resources

INDEX = AssetKey("published_index")


def _cli(ws: Any, *args: str) -> int:
    return main(["--config", str(ws.config().path), "--fake-embedder", *args])


def _tick(instance: DagsterInstance, config: str, cursor: str | None) -> tuple[Any, str | None]:
    """One sensor tick: evaluate, then report the asset events as the daemon does."""
    ctx = build_sensor_context(
        instance=instance,
        cursor=cursor,
        resources={"tessera_config": TesseraConfigResource(config_path=config)},
    )
    result = cli_activity_sensor(ctx)
    for event in result.asset_events:
        instance.report_runless_asset_event(event)
    return result, result.cursor


def _history(instance: DagsterInstance, key: AssetKey, tenant: str) -> list[dict[str, Any]]:
    """The partition's materializations, oldest first, as plain metadata values."""
    records = instance.fetch_materializations(
        AssetRecordsFilter(asset_key=key, asset_partitions=[tenant]), limit=100, ascending=True
    ).records
    out = []
    for r in records:
        mat = r.asset_materialization
        assert mat is not None and mat.partition == tenant
        out.append({k: getattr(v, "value", v) for k, v in mat.metadata.items()})
    return out


@pytest.fixture
def indexed(ws: Any) -> tuple[Any, DagsterInstance, str]:
    ws.tenant("acme", DOCS)
    ws.tenant("globex", {"x.md": "# X\n\nglobex only\n"})
    config = str(ws.config().path)
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme", "globex"])
    done = materialize(
        [*INDEXING_ASSETS, *INDEXING_CHECKS],
        partition_key="acme",
        instance=instance,
        resources=_resources(config),
    )
    assert done.success
    return ws, instance, config


def test_a_cli_restore_is_the_partitions_latest_materialization(
    indexed: tuple[Any, DagsterInstance, str], capsys: Any
) -> None:
    ws, instance, config = indexed
    [job] = _history(instance, INDEX, "acme")
    first = job["version"]
    (ws.root / "corpus" / "acme" / "faq.md").write_text("FAQ\n===\n\nNew answers.\n", encoding="utf-8")
    assert _cli(ws, "run", "--tenant", "acme", "--json") == 0
    assert _cli(ws, "run", "--tenant", "acme", "--json") == 0  # a no-op: nothing to show
    assert _cli(ws, "restore", "--tenant", "acme", "--version", "999") == 1  # refused, nothing committed
    capsys.readouterr()
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(first)) == 0
    restored = ws.table("acme").version
    assert restored > first

    result, cursor = _tick(instance, config, None)
    assert len(result.asset_events) == 2
    history = _history(instance, INDEX, "acme")
    assert [h.get("tessera/action") for h in history] == [None, "run", "restore"]  # the job's, then the CLI's
    latest = history[-1]
    assert latest["version"] == restored and latest["tessera/surface"] == "cli"
    assert latest["dagster/row_count"] == len(ws.rows("acme"))
    assert history[1]["version"] < restored and history[1]["inserted"] >= 1
    assert _history(instance, INDEX, "globex") == []  # another tenant's partition is untouched

    again, cursor2 = _tick(instance, config, cursor)  # nothing twice
    assert again.asset_events == [] and again.skip_reason and cursor2 == cursor
    assert len(_history(instance, INDEX, "acme")) == 3


def test_maintenance_and_purge_show_on_their_assets(indexed: tuple[Any, DagsterInstance, str]) -> None:
    ws, instance, config = indexed
    assert _cli(ws, "maintain", "--tenant", "acme", "--json") == 0
    assert _cli(ws, "tenant", "purge", "acme", "--yes", "--json") == 0
    _tick(instance, config, None)
    [maintained] = _history(instance, AssetKey("index_maintenance"), "acme")
    assert maintained["tessera/action"] == "maintain"
    purged = _history(instance, INDEX, "acme")[-1]
    assert purged["tessera/action"] == "purge" and purged["dagster/row_count"] == 0
    assert ws.table("acme") is None


def test_an_unwritable_journal_warns_and_the_restore_still_stands(
    indexed: tuple[Any, DagsterInstance, str], capsys: Any
) -> None:
    ws, instance, config = indexed
    first = ws.table("acme").version
    (ws.root / "corpus" / "acme" / "faq.md").write_text("FAQ\n===\n\nOther answers.\n", encoding="utf-8")
    assert _cli(ws, "run", "--tenant", "acme", "--json") == 0
    journal = journal_path(ws.config().store.work_dir)
    lines = journal.read_bytes()
    journal.unlink()
    journal.mkdir()  # a folder where the file should be: the append fails
    capsys.readouterr()
    assert _cli(ws, "restore", "--tenant", "acme", "--version", str(first)) == 0
    err = capsys.readouterr().err
    assert "Dagster will not show it" in err and "activity journal" in err
    assert ws.table("acme").version > first  # the restore was committed all the same
    journal.rmdir()
    journal.write_bytes(lines)
    _tick(instance, config, None)
    assert [h.get("tessera/action") for h in _history(instance, INDEX, "acme")] == [None, "run"]
    assert json.loads(lines.splitlines()[0])["action"] == "run"
