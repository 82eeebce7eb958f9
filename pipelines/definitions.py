"""The Definitions object ``dagster dev`` loads (see workspace.yaml)."""

import os

from dagster import Definitions

from assets import INDEXING_ASSETS, INDEXING_CHECKS
from pipelines.jobs import index_tenant_job
from pipelines.sensors import tenant_partitions_sensor
from resources import (
    EmbedderResource,
    FakeEmbedderResource,
    SentenceTransformerEmbedderResource,
    TenantRunResource,
    TesseraConfigResource,
)


def build_definitions(config_path: str | None = None, fake_embedder: bool = False) -> Definitions:
    config = TesseraConfigResource(
        config_path=config_path or os.environ.get("TESSERA_CONFIG", "examples/tessera.yaml")
    )
    embedder: EmbedderResource = (
        FakeEmbedderResource() if fake_embedder else SentenceTransformerEmbedderResource()
    )
    return Definitions(
        assets=INDEXING_ASSETS,
        asset_checks=INDEXING_CHECKS,
        jobs=[index_tenant_job],
        sensors=[tenant_partitions_sensor],
        resources={
            "tessera_config": config,
            "tenant_run": TenantRunResource(config=config, embedder=embedder),
        },
    )


defs = build_definitions(fake_embedder=os.environ.get("TESSERA_FAKE_EMBEDDER") == "1")
