"""Query vectors remembered in a long-lived process (the HTTP API): the same question asked
again, or its next page, is not embedded again.

all-MiniLM-L6-v2 embeds one query in 6.9 ms (p50 of 40 questions; 10.8 ms in an earlier
session) on this 2-core machine, where the hybrid search after it takes 5-6 ms on 100k chunks
(``bench/retrieval_latency.py``), so a repeated question paid the model more than the index; a
remembered vector comes back in about a microsecond. The memo is keyed by the exact text, per wrapped
embedder (one model identity, prefixes included); it holds ``KEEP`` vectors (1.5 MB at 384
dimensions), least recently used first out, and hands out copies, so a caller that changes a
vector never changes what the next caller gets. A failed embedding is not remembered.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from tessera.embedding.base import Embedder, Vectors
from tessera.embedding.identity import ModelIdentity

KEEP = 1024
"""Query vectors remembered per embedder."""


class QueryMemo:
    """``embedder`` with its query vectors remembered; documents pass through."""

    def __init__(self, embedder: Embedder, keep: int = KEEP) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.embedder = embedder
        self.identity: ModelIdentity = embedder.identity
        self._keep = keep
        self._known: OrderedDict[str, Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        with self._lock:
            known = self._known.get(text)
            if known is not None:
                self._known.move_to_end(text)
                return known.copy()
        vector = self.embedder.embed_query(text)  # outside the lock: a slow model blocks no hit
        with self._lock:
            self._known[text] = vector.copy()
            self._known.move_to_end(text)
            while len(self._known) > self._keep:
                self._known.popitem(last=False)
        return vector

    def __len__(self) -> int:
        with self._lock:
            return len(self._known)


def remember_queries(embedder: Embedder, keep: int = KEEP) -> Embedder:
    """``embedder`` behind a :class:`QueryMemo` (once: a memo is not wrapped again)."""
    return embedder if isinstance(embedder, QueryMemo) else QueryMemo(embedder, keep)
