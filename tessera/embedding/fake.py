"""A deterministic, fast test embedder: hashed bag of words, L2-normalized.

It has a real identity (its own name and version), so its vectors never mix with a real
model's, and it is good enough to rank lexical matches first in tests.

A word's bucket and sign come from its blake2b hash, remembered per embedder (a bounded
dict): benchmarks run the pipeline with this embedder so that only the pipeline's own cost is
counted, and hashing every word of every text took 1.0 s of a 12 s run of 8,000 chunks. The
vectors of a batch are counted in one ``bincount``; they are the same, bit for bit, as adding
the words one at a time (whole counts are exact in float32, so the order of the sums does not
matter).
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Sequence

import numpy as np

from tessera.embedding.base import Vectors
from tessera.embedding.identity import ModelIdentity

_WORD = re.compile(r"\w+")
_KEEP_WORDS = 1 << 15
"""Words whose bucket an embedder remembers; the memo starts over when it is full. Small, so
that the benchmarks' memory is the pipeline's: a 100,000-document corpus has about 200,000
distinct words (numbers, one function name per document), about 25 MB held in a larger memo."""


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
        self._codes: dict[str, int] = {}

    def _code(self, word: str) -> int:
        """``bucket + 1``, negative when the word counts -1."""
        code = self._codes.get(word)
        if code is None:
            h = int.from_bytes(hashlib.blake2b(word.encode(), digest_size=8).digest(), "little")
            code = (h % self.identity.dimension + 1) * (1 if (h >> 32) & 1 else -1)
            if len(self._codes) >= _KEEP_WORDS:
                self._codes.clear()
            self._codes[word] = code
        return code

    def _vectors(self, texts: Sequence[str]) -> Vectors:
        dim = self.identity.dimension
        rows: list[int] = []
        codes: list[int] = []
        known = self._codes.get
        for i, text in enumerate(texts):
            found = [known(w) or self._code(w) for w in _WORD.findall(text.lower())]  # a code is never 0
            codes.extend(found)
            rows.extend([i] * len(found))
        code = np.asarray(codes, np.int64)
        cells = np.asarray(rows, np.int64) * dim + np.abs(code) - 1
        counts = np.bincount(cells, weights=np.sign(code).astype(np.float64), minlength=len(texts) * dim)
        out = counts.astype(np.float32).reshape(len(texts), dim)
        for v in out:  # one row at a time, as a single text is normalized
            norm = float(np.linalg.norm(v))
            if norm == 0.0:
                v[0] = 1.0
            else:
                v /= norm
        return out

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.calls.append(len(texts))
        return self._vectors(texts)

    def embed_query(self, text: str) -> Vectors:
        vector: Vectors = self._vectors([text])[0]
        return vector
