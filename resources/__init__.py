"""Dagster resources: thin ConfigurableResources around core interfaces, each real and fake."""

from resources.config import TesseraConfigResource
from resources.embedder import EmbedderResource, FakeEmbedderResource, SentenceTransformerEmbedderResource
from resources.runs import ALLOW_MASS_DELETE_TAG, TenantRunResource
from resources.sources import ConfiguredSourceResource, FakeSourceResource, SourceResource

__all__ = [
    "ALLOW_MASS_DELETE_TAG",
    "ConfiguredSourceResource",
    "EmbedderResource",
    "FakeEmbedderResource",
    "FakeSourceResource",
    "SentenceTransformerEmbedderResource",
    "SourceResource",
    "TenantRunResource",
    "TesseraConfigResource",
]
