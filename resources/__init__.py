"""Dagster resources: thin ConfigurableResources around core interfaces, each real and fake."""

from resources.config import TesseraConfigResource
from resources.embedder import EmbedderResource, FakeEmbedderResource, SentenceTransformerEmbedderResource
from resources.runs import TenantRunResource

__all__ = [
    "EmbedderResource",
    "FakeEmbedderResource",
    "SentenceTransformerEmbedderResource",
    "TenantRunResource",
    "TesseraConfigResource",
]
