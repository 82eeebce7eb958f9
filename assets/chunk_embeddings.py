from typing import Any

from dagster import AssetExecutionContext, Output, asset

from assets.partitions import OWNERS, call_step, counts, manifest, tenant_partitions
from resources.runs import TenantRunResource
from tessera.pipeline.run import embed_step


@asset(
    partitions_def=tenant_partitions,
    group_name="indexing",
    kinds={"sentence-transformers", "pytorch", "onnx"},
    owners=OWNERS,
)
def chunk_embeddings(
    context: AssetExecutionContext, tenant_run: TenantRunResource, document_chunks: dict[str, Any]
) -> Output[dict[str, Any]]:
    """Vectors for the staged chunks: cache hits reused, misses embedded in retried batches."""
    rc = tenant_run.from_manifest(document_chunks, context.run_id)
    summary = call_step(embed_step, rc)
    return Output(manifest(summary, rc.tenant, document_chunks["workspace_id"]), metadata=counts(summary))
