"""Embedders: the real sentence-transformers model, and a fast deterministic fake."""

from functools import lru_cache

from dagster import ConfigurableResource

from tessera.config import EmbeddingConfig
from tessera.embedding.base import Embedder
from tessera.embedding.fake import HashEmbedder
from tessera.embedding.sentence import SentenceTransformerEmbedder


@lru_cache(maxsize=2)
def _load_real(cfg: EmbeddingConfig) -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(cfg)  # ~8 s: loaded once per process


class EmbedderResource(ConfigurableResource):  # type: ignore[type-arg]
    """Interface: returns the embedder for the embedding section of the configuration."""

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        raise NotImplementedError


class SentenceTransformerEmbedderResource(EmbedderResource):
    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return _load_real(cfg)


class FakeEmbedderResource(EmbedderResource):
    dimension: int = 64
    version: str = "1"

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return HashEmbedder(dimension=self.dimension, version=self.version)
