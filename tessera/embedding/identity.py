"""Model identity: everything that changes a vector. Its hash keys the cache and the tables."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

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
    backend: str = "torch"
    """What computes the vectors from the weights: ``torch`` (the model as published) or a
    derived runtime such as ``onnx-int8``, whose vectors are a different model's."""
    quantization: str = ""
    """The recipe that derived the weights (quantizer settings and tool versions), if any."""

    @property
    def hash(self) -> str:
        fields: dict[str, Any] = {
            "name": self.name,
            "weights_sha256": self.weights_sha256,
            "dimension": self.dimension,
            "normalize": self.normalize,
            "document_prefix": self.document_prefix,
            "query_prefix": self.query_prefix,
        }
        if self.backend != "torch" or self.quantization:  # fp32 hashes stay what they were
            fields |= {"backend": self.backend, "quantization": self.quantization}
        return canonical_hash(fields)

    @property
    def key(self) -> str:
        """Short, table-name-safe version string, e.g. ``all-minilm-l6-v2-3f9a0c1d2e4b``
        (``all-minilm-l6-v2-onnx-int8-…`` for a derived backend)."""
        base = re.sub(r"[^a-z0-9]+", "-", self.name.rsplit("/", 1)[-1].lower()).strip("-")[:40]
        if self.backend != "torch":
            base += "-" + re.sub(r"[^a-z0-9]+", "-", self.backend.lower()).strip("-")[:16]
        return f"{base}-{self.hash[:12]}"
