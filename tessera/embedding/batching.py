"""Embed cache misses in batches; retry only the batch that failed, with bounded backoff."""

from __future__ import annotations

import random
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import numpy as np

from tessera.embedding.base import Embedder, Vectors, validate_vectors
from tessera.errors import EmbeddingError, PermanentEmbeddingError


@dataclass
class EmbedStats:
    texts: int = 0
    unique: int = 0
    cache_hits: int = 0
    embedded: int = 0
    batches: int = 0
    retries: int = 0
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class RetryPolicy:
    max_retries: int = 3
    backoff_seconds: float = 0.5
    max_backoff_seconds: float = 8.0

    def delay(self, attempt: int) -> float:
        base = min(self.max_backoff_seconds, self.backoff_seconds * float(2**attempt))
        jitter: float = 0.5 + random.random() / 2
        return base * jitter


def embed_batches(
    embedder: Embedder,
    texts: Sequence[str],
    batch_size: int,
    policy: RetryPolicy,
    stats: EmbedStats,
    sleep: Callable[[float], None] = time.sleep,
    progress: Callable[[int], None] | None = None,
) -> Vectors:
    """Vectors for ``texts`` (in order). Texts are sorted by length so batches pad little;
    ``progress`` is told each batch's size once it is embedded."""
    dim = embedder.identity.dimension
    out = np.zeros((len(texts), dim), dtype=np.float32)
    order = sorted(range(len(texts)), key=lambda i: len(texts[i]), reverse=True)
    t0 = time.perf_counter()
    for b in range(0, len(order), batch_size):
        idx = order[b : b + batch_size]
        batch = [texts[i] for i in idx]
        for attempt in range(policy.max_retries + 1):
            try:
                out[idx] = validate_vectors(embedder.embed_documents(batch), len(batch), dim)
                break
            except PermanentEmbeddingError:
                raise
            except Exception as e:
                stats.failures.append(f"batch {b // batch_size} attempt {attempt + 1}: {e!r}")
                if attempt == policy.max_retries:
                    raise EmbeddingError(
                        f"batch {b // batch_size} failed after {attempt + 1} attempts: {e!r}"
                    ) from e
                stats.retries += 1
                sleep(policy.delay(attempt))
        stats.batches += 1
        if progress is not None:
            progress(len(batch))
    stats.embedded += len(texts)
    stats.seconds += time.perf_counter() - t0
    return out
