"""A deterministic, fast test embedder: hashed bag of words, L2-normalized.

It has a real identity (its own name and version), so its vectors never mix with a real
model's, and it is good enough to rank lexical matches first in tests.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from tessera.embedding.base import Vectors
from tessera.embedding.identity import ModelIdentity

_WORD = re.compile(r"\w+")


class HashEmbedder:
    def __init__(self, dimension: int = 64, name: str = "tessera/hash-embedder", version: str = "1") -> None:
        self.identity = ModelIdentity(
            name=name,
            weights_sha256=hashlib.sha256(f"{name}:{version}:{dimension}".encode()).hexdigest(),
            dimension=dimension,
            max_seq_length=256,
            normalize=True,
        )
        self.calls: list[int] = []  # batch sizes seen, for tests

    def _vec(self, text: str) -> Vectors:
        v = np.zeros(self.identity.dimension, dtype=np.float32)
        for w in _WORD.findall(text.lower()):
            h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
            v[h % self.identity.dimension] += 1.0 if (h >> 32) & 1 else -1.0
        norm = float(np.linalg.norm(v))
        if norm == 0.0:
            v[0] = 1.0
            return v
        return v / norm

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return (
            np.stack([self._vec(t) for t in texts])
            if texts
            else np.zeros((0, self.identity.dimension), np.float32)
        )

    def embed_query(self, text: str) -> Vectors:
        return self._vec(text)
