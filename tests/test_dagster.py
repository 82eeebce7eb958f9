"""Dagster layer: definitions load, direct asset calls, one in-process materialize, the sensor."""

from __future__ import annotations

from pathlib import Path

import pytest
from dagster import (
    DagsterInstance,
    MetadataValue,
    build_asset_context,
    build_sensor_context,
    materialize,
)

from assets import INDEXING_ASSETS, INDEXING_CHECKS, tenant_partitions
from assets.chunk_embeddings import chunk_embeddings
from assets.document_chunks import document_chunks
from assets.parsed_documents import parsed_documents
from assets.partitions import counts
from assets.published_index import published_index
from assets.source_listing import source_listing
from pipelines.definitions import build_definitions
from pipelines.sensors import tenant_partitions_sensor
from resources import ConfiguredSourceResource, FakeEmbedderResource, TenantRunResource, TesseraConfigResource

DOCS = {
    "guide.md": (
        "# Guide\n\n## Install\n\nRun the installer.\n\n## Use\n\n```bash\n# not a heading\nrun it\n```\n"
    ),
    "faq.md": "FAQ\n===\n\nQuestions and answers.\n",
}


def _resources(config_path: str) -> dict[str, object]:
    config = TesseraConfigResource(config_path=config_path)
    return {
        "tessera_config": config,
        "tenant_run": TenantRunResource(
            config=config, embedder=FakeEmbedderResource(), sources=ConfiguredSourceResource()
        ),
    }


def test_definitions_load() -> None:
    defs = build_definitions(config_path="examples/tessera.yaml", fake_embedder=True)
    job = defs.resolve_job_def("index_tenant")
    assert job.partitions_def == tenant_partitions
    keys = {k.to_user_string() for k in defs.resolve_asset_graph().get_all_asset_keys()}
    assert keys == {
        "source_listing",
        "parsed_documents",
        "document_chunks",
        "chunk_embeddings",
        "published_index",
        "active_model",
        "chunking_evaluation",
        "index_maintenance",
    }
    assert defs.resolve_job_def("evaluate_chunking") is not None
    assert defs.resolve_job_def("maintain_index").partitions_def == tenant_partitions
    assert defs.resolve_schedule_def("index_maintenance_schedule") is not None
    assert defs.resolve_sensor_def("tenant_partitions_sensor") is not None
    import pipelines.definitions as module

    assert module.defs is not None


def test_assets_can_be_called_directly(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", DOCS)
    cfg = ws.config()
    run = TenantRunResource(
        config=TesseraConfigResource(config_path=str(cfg.path)),
        embedder=FakeEmbedderResource(),
        sources=ConfiguredSourceResource(),
    )
    ctx = build_asset_context(partition_key="acme")
    listing = source_listing(ctx, tenant_run=run).value
    assert listing["documents"] == 2 and listing["changed"] == 2 and listing["verdict"] == "complete"
    parsed = parsed_documents(ctx, tenant_run=run, source_listing=listing).value
    assert parsed["parsed"] == 2 and parsed["quarantined"] == 0
    chunks = document_chunks(ctx, tenant_run=run, parsed_documents=parsed).value
    assert chunks["chunks"] >= 3 and chunks["max_tokens"] <= 256
    emb = chunk_embeddings(ctx, tenant_run=run, document_chunks=chunks).value
    assert emb["embedded"] == chunks["chunks"]
    pub = published_index(ctx, tenant_run=run, chunk_embeddings=emb).value
    assert pub["committed"] and pub["inserted"] == chunks["chunks"]
    assert len(ws.rows("acme")) == chunks["chunks"]


@pytest.mark.scenario("A1")
def test_materialize_one_partition_then_noop(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", DOCS)
    ws.tenant("globex", {"x.md": "# X\n\nglobex only\n"})
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme", "globex"])
    resources = _resources(str(cfg.path))
    first = materialize(
        [*INDEXING_ASSETS, *INDEXING_CHECKS], partition_key="acme", instance=instance, resources=resources
    )
    assert first.success
    checks = first.get_asset_check_evaluations()
    assert {c.check_name for c in checks} == {
        "mass_deletion_guard",
        "quality_gate",
        "published_index_integrity",
    }
    assert all(c.passed for c in checks)
    integrity = next(c for c in checks if c.check_name == "published_index_integrity")
    assert integrity.metadata["peak_rss_mb"].value > 0  # verify's footprint, as the steps report theirs
    pub = first.output_for_node("published_index")
    assert pub["committed"] and pub["version"] is not None
    mats = first.asset_materializations_for_node("published_index")
    assert mats and mats[0].metadata["inserted"].value == pub["inserted"]
    assert mats[0].metadata["dagster/row_count"].value == len(ws.rows("acme"))  # the live table's rows
    schema = mats[0].metadata["dagster/column_schema"].value
    assert {"id", "doc_id", "text", "vector", "readers", "groups"} <= {c.name for c in schema.columns}
    report = Path(mats[0].metadata["lineage_report"].value)  # the materialization links its lineage
    assert report.exists() and "guide.md" in report.read_text()
    sample = mats[0].metadata["provenance_sample"].value
    assert "| chunk | document |" in sample and "guide.md @" in sample
    nodes = ("source_listing", "parsed_documents", "document_chunks", "chunk_embeddings", "published_index")
    for node in nodes:
        metadata = first.asset_materializations_for_node(node)[0].metadata  # each step's footprint
        assert metadata["peak_rss_mb"].value > 0 and metadata["raised_peak_mb"].value >= 0, node
    assert ws.table("globex") is None  # another tenant's partition is never touched
    second = materialize(
        [*INDEXING_ASSETS, *INDEXING_CHECKS], partition_key="acme", instance=instance, resources=resources
    )
    again = second.output_for_node("published_index")
    assert again["committed"] is False and again["version"] == pub["version"]
    assert second.output_for_node("chunk_embeddings")["embedded"] == 0


def test_a_footprint_becomes_numbers_dagster_can_plot_and_nothing_else_changes() -> None:
    summary = {
        "documents": 2,
        "complete": True,
        "failures": {"failed": 0},
        "memory": {"peak_rss_mb": 412.5, "raised_peak_mb": 0.0, "rss_mb": None},
    }
    metadata = counts(summary)
    assert metadata["peak_rss_mb"] == 412.5 and metadata["raised_peak_mb"] == 0.0
    assert "rss_mb" not in metadata and "memory" not in metadata  # unknown is left out, not 0
    assert metadata["documents"] == 2 and metadata["complete"] is True
    assert metadata["failures"] == MetadataValue.json({"failed": 0})


def test_sensor_adds_configured_tenants(ws) -> None:  # type: ignore[no-untyped-def]
    ws.tenant("acme", DOCS)
    ws.tenant("globex", DOCS)
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])
    ctx = build_sensor_context(
        instance=instance, resources={"tessera_config": TesseraConfigResource(config_path=str(cfg.path))}
    )
    result = tenant_partitions_sensor(ctx)
    requests = result.dynamic_partitions_requests
    assert len(requests) == 1 and list(requests[0].partition_keys) == ["globex"]


def test_workspace_yaml_points_at_the_definitions() -> None:
    import importlib

    import yaml
    from dagster import Definitions

    with open("workspace.yaml", encoding="utf-8") as f:
        spec = yaml.safe_load(f)["load_from"][0]["python_module"]
    module = importlib.import_module(spec["module_name"])
    assert isinstance(getattr(module, spec["attribute"]), Definitions)
