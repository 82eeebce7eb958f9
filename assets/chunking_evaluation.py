from pathlib import Path
from typing import Any

from dagster import AssetExecutionContext, Config, MaterializeResult, MetadataValue, asset
from pydantic import Field

from assets.partitions import OWNERS
from resources.runs import TenantRunResource
from tessera.embedding.model_files import model_dir
from tessera.evaluation.chunking.cli import evaluate_folder
from tessera.evaluation.chunking.sweep import SweepSettings


class ChunkingEvaluationConfig(Config):
    """The corpus folder (corpus files + ``questions*.csv``) and the grid; an empty grid
    evaluates the configured chunking profile alone."""

    corpus: str
    out: str = ".tessera/chunking-eval"
    strategies: list[str] = Field(default_factory=list)
    sizes: list[int] = Field(default_factory=lambda: [64, 96, 128, 192, 256])
    overlaps: list[int] = Field(default_factory=lambda: [0, 25, 50])
    k: int = 5


@asset(group_name="evaluation", kinds={"python", "matplotlib"}, owners=OWNERS)
def chunking_evaluation(
    context: AssetExecutionContext, config: ChunkingEvaluationConfig, tenant_run: TenantRunResource
) -> MaterializeResult[Any]:
    """Recall, IoU and precision-omega of chunking profiles on questions (``tessera eval chunking``)."""
    cfg = tenant_run.config.load()
    settings = SweepSettings(
        strategies=tuple(config.strategies), sizes=tuple(config.sizes), overlaps=tuple(config.overlaps),
        k=config.k, peers=(), extra=(("configured", cfg.chunking),),
    )  # fmt: skip
    out = Path(config.out)
    report = evaluate_folder(
        Path(config.corpus), out, settings, tenant_run.embedder.get(cfg.embedding),
        model_dir(cfg.embedding), out / "cache", log=context.log.info,
    )  # fmt: skip
    configured = report["rows"][0]
    return MaterializeResult(
        metadata={
            **{
                f"{m}_{k}": configured[m][k]
                for m in report["modes"]
                for k in ("recall", "iou", "precision_omega")
            },
            "profiles": len(report["rows"]),
            "recommended": (report["recommended"] or {}).get("name", ""),
            "report": MetadataValue.path(str(out / "report.json")),
        }
    )
