"""Query vectors remembered in a long-lived process (the HTTP API): the same question asked
again by the same caller, or its next page, is not embedded again.

all-MiniLM-L6-v2 embeds one query in 6.9 ms (p50 of 40 questions; 10.8 ms in an earlier
session) on this 2-core machine, where the hybrid search after it takes 5-6 ms on 100k chunks
(``bench/retrieval_latency.py``), so a repeated question paid the model more than the index; a
remembered vector comes back in about a microsecond.

A remembered vector is also a clock: a hit answers about 7 ms sooner than a miss. Were vectors
shared between callers, anyone could learn whether someone else had just asked a given text
(another tenant's "layoffs in Q3?") by timing the same question. So vectors are remembered per
owner (the API uses tenant and user: ``QueryMemo.scoped``); a call without an owner is never
remembered. Per wrapped embedder (one model identity, prefixes included) the memo holds
``KEEP`` vectors (1.5 MB at 384 dimensions, and their texts: at most 2,000 characters each,
some 10 MB in all at worst), least recently used first out, and hands out copies, so a caller
that changes a vector never changes what the next call gets. A failed embedding is not
remembered.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Sequence

from tessera.embedding.base import Embedder, Vectors
from tessera.embedding.identity import ModelIdentity

KEEP = 1024
"""Query vectors remembered per embedder (all owners together)."""


class QueryMemo:
    """``embedder`` with its query vectors remembered per owner (``scoped``); documents, and
    queries without an owner, pass through."""

    def __init__(self, embedder: Embedder, keep: int = KEEP) -> None:
        if keep < 1:
            raise ValueError(f"keep must be at least 1, got {keep}")
        self.embedder = embedder
        self.identity: ModelIdentity = embedder.identity
        self._keep = keep
        self._known: OrderedDict[tuple[str, str], Vectors] = OrderedDict()
        self._lock = threading.Lock()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.embedder.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        """Embedded every time: no owner, nothing remembered."""
        return self.embedder.embed_query(text)

    def scoped(self, owner: str) -> Embedder:
        """This embedder for one owner: its query vectors remembered for that owner alone."""
        return _Scoped(self, owner)

    def embed_query_for(self, owner: str, text: str) -> Vectors:
        key = (owner, text)
        with self._lock:
            known = self._known.get(key)
            if known is not None:
                self._known.move_to_end(key)
                return known.copy()
        vector = self.embedder.embed_query(text)  # outside the lock: a slow model blocks no hit
        with self._lock:
            self._known[key] = vector.copy()
            self._known.move_to_end(key)
            while len(self._known) > self._keep:
                self._known.popitem(last=False)
        return vector

    def __len__(self) -> int:
        with self._lock:
            return len(self._known)


class _Scoped:
    def __init__(self, memo: QueryMemo, owner: str) -> None:
        self.memo, self.owner = memo, owner
        self.identity: ModelIdentity = memo.identity

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        return self.memo.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.memo.embed_query_for(self.owner, text)


def remember_queries(embedder: Embedder, keep: int = KEEP) -> Embedder:
    """``embedder`` behind a :class:`QueryMemo` (once: a memo is not wrapped again)."""
    return embedder if isinstance(embedder, QueryMemo) else QueryMemo(embedder, keep)


def for_owner(embedder: Embedder, owner: str) -> Embedder:
    """``embedder`` remembering ``owner``'s query vectors when it is a :class:`QueryMemo`; any
    other embedder as it is."""
    return embedder.scoped(owner) if isinstance(embedder, QueryMemo) else embedder
