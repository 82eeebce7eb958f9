"""The sentence-transformers embedder, loaded offline from the bundled package."""

from __future__ import annotations

import os
from collections.abc import Sequence
from typing import Any

import numpy as np

from tessera.config import EmbeddingConfig
from tessera.embedding.base import Vectors
from tessera.embedding.identity import ModelIdentity
from tessera.embedding.model_files import model_dir, verified_weights_hash
from tessera.errors import ModelIdentityError


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any local sentence-transformers folder), hash-verified."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        path = model_dir(cfg)
        weights = verified_weights_hash(cfg)
        try:
            from sentence_transformers import SentenceTransformer

            self._model: Any = SentenceTransformer(str(path), device=cfg.device, local_files_only=True)
            dimension = self._model.get_embedding_dimension()
            max_seq = self._model.max_seq_length
        except Exception as e:
            raise ModelIdentityError(f"cannot load model from {path}: {e}") from e
        if dimension is None or max_seq is None:
            raise ModelIdentityError(f"model at {path} reports no embedding dimension or max_seq_length")
        self._cfg = cfg
        self.identity = ModelIdentity(
            name=cfg.model,
            weights_sha256=weights,
            dimension=int(dimension),
            max_seq_length=int(max_seq),
            normalize=cfg.normalize,
            document_prefix=cfg.document_prefix,
            query_prefix=cfg.query_prefix,
        )

    def _encode(self, texts: Sequence[str]) -> Vectors:
        out = self._model.encode(
            list(texts),
            batch_size=self._cfg.batch_size,
            normalize_embeddings=self._cfg.normalize,
            convert_to_numpy=True,
            show_progress_bar=False,
        )
        return np.asarray(out, dtype=np.float32)

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self._encode([self._cfg.document_prefix + t for t in texts])

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._encode([self._cfg.query_prefix + text])[0]
        return vector
