"""Thin asset definitions: each calls one core step and attaches metadata."""

from assets.active_model import active_model
from assets.checks import mass_deletion_guard, published_index_integrity, quality_gate
from assets.chunk_embeddings import chunk_embeddings
from assets.chunking_evaluation import chunking_evaluation
from assets.document_chunks import document_chunks
from assets.index_maintenance import index_maintenance
from assets.parsed_documents import parsed_documents
from assets.partitions import tenant_partitions
from assets.published_index import published_index
from assets.source_listing import source_listing

INDEXING_ASSETS = [
    source_listing,
    parsed_documents,
    document_chunks,
    chunk_embeddings,
    published_index,
    active_model,
]
INDEXING_CHECKS = [mass_deletion_guard, quality_gate, published_index_integrity]
EVALUATION_ASSETS = [chunking_evaluation]
MAINTENANCE_ASSETS = [index_maintenance]

__all__ = [
    "EVALUATION_ASSETS",
    "INDEXING_ASSETS",
    "INDEXING_CHECKS",
    "MAINTENANCE_ASSETS",
    "tenant_partitions",
]
