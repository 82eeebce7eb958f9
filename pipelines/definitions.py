"""The Definitions object ``dagster dev`` loads (see workspace.yaml)."""

import os

from dagster import Definitions

from assets import EVALUATION_ASSETS, INDEXING_ASSETS, INDEXING_CHECKS, MAINTENANCE_ASSETS
from assets.checks import index_freshness, store_health
from pipelines.deployment import executor_from_env
from pipelines.directory import directory_refresh_sensor
from pipelines.jobs import evaluate_chunking_job, index_tenant_job, maintain_index_job
from pipelines.schedules import build_rebuild_schedule, index_maintenance_schedule
from pipelines.sensors import cli_activity_sensor, source_change_sensor, tenant_partitions_sensor
from resources import (
    ConfiguredSourceResource,
    EmbedderResource,
    FakeEmbedderResource,
    SentenceTransformerEmbedderResource,
    SourceResource,
    TenantRunResource,
    TesseraConfigResource,
)
from resources.config import BUNDLED_CONFIG

DEFAULT_CONFIG = BUNDLED_CONFIG  # an absolute path: importable from any working directory


def build_definitions(
    config_path: str | None = None, fake_embedder: bool = False, sources: SourceResource | None = None
) -> Definitions:
    config = TesseraConfigResource(
        config_path=config_path or os.environ.get("TESSERA_CONFIG", DEFAULT_CONFIG)
    )
    embedder: EmbedderResource = (
        FakeEmbedderResource() if fake_embedder else SentenceTransformerEmbedderResource()
    )
    source_resource = sources or ConfiguredSourceResource()
    return Definitions(
        executor=executor_from_env(),
        assets=[*INDEXING_ASSETS, *EVALUATION_ASSETS, *MAINTENANCE_ASSETS],
        asset_checks=[*INDEXING_CHECKS, store_health, index_freshness],
        jobs=[index_tenant_job, evaluate_chunking_job, maintain_index_job],
        schedules=[build_rebuild_schedule(config.load().schedule_cron), index_maintenance_schedule],
        sensors=[
            tenant_partitions_sensor,
            source_change_sensor,
            cli_activity_sensor,
            directory_refresh_sensor,
        ],
        resources={
            "tessera_config": config,
            "tenant_run": TenantRunResource(config=config, embedder=embedder, sources=source_resource),
        },
    )


defs = build_definitions(fake_embedder=os.environ.get("TESSERA_FAKE_EMBEDDER") == "1")
