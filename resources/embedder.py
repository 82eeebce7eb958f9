"""Embedders: the configured real model (``embedding.backend``: torch or onnx-int8), and a fast
deterministic fake."""

from functools import lru_cache

from dagster import ConfigurableResource

from tessera.config import EmbeddingConfig
from tessera.embedding.base import Embedder
from tessera.embedding.factory import build_embedder
from tessera.embedding.fake import HashEmbedder


@lru_cache(maxsize=4)
def _load_real(cfg: EmbeddingConfig) -> Embedder:
    return build_embedder(cfg)  # torch ~8 s on first use; loaded once per process


class EmbedderResource(ConfigurableResource):  # type: ignore[type-arg]
    """Interface: returns the embedder for the embedding section of the configuration."""

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        raise NotImplementedError


class SentenceTransformerEmbedderResource(EmbedderResource):
    """The real model of the configuration: sentence-transformers (``backend: torch``) or the
    int8 onnxruntime export (``backend: onnx-int8``)."""

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return _load_real(cfg)


class FakeEmbedderResource(EmbedderResource):
    dimension: int = 64
    version: str = "1"

    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return HashEmbedder(dimension=self.dimension, version=self.version)
