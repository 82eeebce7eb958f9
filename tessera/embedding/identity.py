"""Model identity: everything that changes a vector. Its hash keys the cache and the tables."""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.types import canonical_hash


@dataclass(frozen=True)
class ModelIdentity:
    name: str
    weights_sha256: str
    dimension: int
    max_seq_length: int
    normalize: bool
    document_prefix: str = ""
    query_prefix: str = ""

    @property
    def hash(self) -> str:
        return canonical_hash(
            {
                "name": self.name,
                "weights_sha256": self.weights_sha256,
                "dimension": self.dimension,
                "normalize": self.normalize,
                "document_prefix": self.document_prefix,
                "query_prefix": self.query_prefix,
            }
        )

    @property
    def key(self) -> str:
        """Short, table-name-safe version string, e.g. ``all-minilm-l6-v2-3f9a0c1d2e4b``."""
        base = re.sub(r"[^a-z0-9]+", "-", self.name.rsplit("/", 1)[-1].lower()).strip("-")[:40]
        return f"{base}-{self.hash[:12]}"
