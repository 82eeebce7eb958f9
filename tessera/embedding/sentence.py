"""The sentence-transformers embedder, loaded offline from the bundled package.

The identity (dimension, max_seq_length) is read from the model folder's config files and
the weights hash is verified at construction; torch and the weights are loaded only on the
first embedding call, so a run that embeds nothing (a no-op re-run) never pays for them.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from tessera.config import EmbeddingConfig
from tessera.embedding.base import Vectors
from tessera.embedding.identity import ModelIdentity
from tessera.embedding.model_files import model_dir, verified_weights_hash
from tessera.errors import ModelIdentityError


def declared_shape(path: Path) -> tuple[int, int] | None:
    """(dimension, max_seq_length) from the folder's configs, when a plain stack declares them."""
    try:
        modules = json.loads((path / "modules.json").read_text("utf-8"))
        if any(m["type"].rsplit(".", 1)[-1] not in ("Transformer", "Pooling", "Normalize") for m in modules):
            return None  # e.g. a Dense layer changes the dimension: ask the loaded model
        pooling = next(m for m in modules if m["type"].endswith("Pooling"))
        dim = json.loads((path / pooling["path"] / "config.json").read_text("utf-8"))[
            "word_embedding_dimension"
        ]
        seq = json.loads((path / "sentence_bert_config.json").read_text("utf-8"))["max_seq_length"]
        return int(dim), int(seq)
    except (OSError, KeyError, StopIteration, ValueError, TypeError):
        return None


class SentenceTransformerEmbedder:
    """all-MiniLM-L6-v2 (or any local sentence-transformers folder), hash-verified."""

    def __init__(self, cfg: EmbeddingConfig) -> None:
        os.environ.setdefault("HF_HUB_OFFLINE", "1")
        os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
        self._path = model_dir(cfg)
        self._cfg = cfg
        self._model: Any = None
        self._lock = threading.Lock()
        weights = verified_weights_hash(cfg)
        shape = declared_shape(self._path)
        if shape is None:
            model = self._load()
            shape = (int(model.get_embedding_dimension()), int(model.max_seq_length))
        self.identity = ModelIdentity(
            name=cfg.model,
            weights_sha256=weights,
            dimension=shape[0],
            max_seq_length=shape[1],
            normalize=cfg.normalize,
            document_prefix=cfg.document_prefix,
            query_prefix=cfg.query_prefix,
        )

    def _load(self) -> Any:
        with self._lock:
            if self._model is None:
                try:
                    from sentence_transformers import SentenceTransformer
                    from transformers.utils import logging as hf_logging

                    hf_logging.disable_progress_bar()  # type: ignore[no-untyped-call]

                    model = SentenceTransformer(
                        str(self._path), device=self._cfg.device, local_files_only=True
                    )
                except Exception as e:
                    raise ModelIdentityError(f"cannot load model from {self._path}: {e}") from e
                dim, seq = model.get_embedding_dimension(), model.max_seq_length
                ident = getattr(self, "identity", None)
                if ident is not None and (dim, seq) != (ident.dimension, ident.max_seq_length):
                    raise ModelIdentityError(
                        f"{self._path}: loaded model has dimension {dim} and max_seq_length {seq}, "
                        f"its configs declare {ident.dimension} and {ident.max_seq_length}"
                    )
                self._model = model
            return self._model

    @property
    def model(self) -> Any:
        """The underlying SentenceTransformer (loaded on first use)."""
        return self._load()

    def _encode(self, texts: Sequence[str]) -> Vectors:
        out = self._load().encode(
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
