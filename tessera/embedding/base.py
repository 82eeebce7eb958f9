"""The Embedder protocol and vector validation."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

import numpy as np
import numpy.typing as npt

from tessera.embedding.identity import ModelIdentity
from tessera.errors import EmbeddingError

Vectors = npt.NDArray[np.float32]


class Embedder(Protocol):
    identity: ModelIdentity

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        """Vectors for document texts (the identity's document prefix is applied here)."""
        ...

    def embed_query(self, text: str) -> Vectors:
        """One query vector, shape ``(dimension,)`` (query prefix applied)."""
        ...


def validate_vectors(vectors: object, expected: int, dimension: int) -> Vectors:
    """Reject anything but a finite float matrix of ``expected`` rows of ``dimension``."""
    arr = np.asarray(vectors, dtype=np.float32)
    if arr.ndim != 2 or arr.shape[0] != expected:
        raise EmbeddingError(f"embedder returned shape {arr.shape} for {expected} inputs")
    if arr.shape[1] != dimension:
        raise EmbeddingError(f"embedder returned dimension {arr.shape[1]}, expected {dimension}")
    if not np.isfinite(arr).all():
        raise EmbeddingError("embedder returned non-finite values (NaN or inf)")
    return arr
