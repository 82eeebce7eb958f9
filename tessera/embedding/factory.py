"""The embedder for an ``embedding:`` section: its ``backend`` chooses the implementation."""

from __future__ import annotations

from tessera.config import EMBEDDING_BACKENDS, EmbeddingConfig, TesseraConfig
from tessera.embedding.base import Embedder
from tessera.errors import ConfigError


def build_embedder(cfg: EmbeddingConfig) -> Embedder:
    """``torch``: sentence-transformers (fp32); ``onnx-int8``: onnxruntime on the int8 export.

    Both verify the weights hash here and load their runtime on the first embedding call."""
    if cfg.backend == "torch":
        from tessera.embedding.sentence import SentenceTransformerEmbedder

        return SentenceTransformerEmbedder(cfg)
    if cfg.backend == "onnx-int8":
        from tessera.embedding.onnx_int8 import OnnxInt8Embedder

        return OnnxInt8Embedder(cfg)
    raise ConfigError("embedding.backend", f"expected one of {list(EMBEDDING_BACKENDS)}, got {cfg.backend!r}")


def configured_embedders(cfg: TesseraConfig, fake: bool = False) -> list[Embedder]:
    """The configured model first, then ``embedding.previous`` (still servable); with ``fake``,
    the hash embedder alone (tests, demos)."""
    if fake:
        from tessera.embedding.fake import HashEmbedder

        return [HashEmbedder()]
    return [build_embedder(c) for c in (cfg.embedding, *cfg.embedding.previous)]
