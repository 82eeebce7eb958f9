"""Staged texts to staged vectors, in order, through the tenant's embedding cache.

One implementation serves the embed step (texts read back from ``chunks.parquet``) and the
chunk step when it embeds while its workers chunk (:mod:`tessera.pipeline.embed_ahead`, texts
as the workers return them): both cut the same stream into the same groups and send the
embedder the same batches, so their vectors are the same, whichever wrote them.

* A cache that holds entries for this model: groups of :data:`~tessera.pipeline.staging.BATCH_ROWS`
  texts, each looked up in the cache (one read of its keys), its misses embedded and written
  to the cache.
* A cache that holds none (a first build, a backfill after a model change: every text is a
  miss): groups of :data:`EMPTY_CACHE_GROUP` texts, looked up only among the entries this
  stream embedded since it last wrote the cache, which it does every :data:`FLUSH_ENTRIES`
  new entries and at the end. Reading the table's keys for every group would cost a pass
  over a growing key column per group; small groups are what let the chunk step keep the
  embedder busy while it waits on its workers (its last group is embedded after them). A text repeated
  before that write counts as a repeat (not a cache hit), as it does within one group; a
  text seen again after a write is embedded again (the same vector; the cache may then hold
  its key twice, which a lookup tolerates).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from tessera.embedding.base import Vectors
from tessera.embedding.batching import EmbedStats
from tessera.pipeline.context import RunContext
from tessera.pipeline.staging import BATCH_ROWS, VectorWriter
from tessera.store.embedding_cache import EmbeddingCache, VectorCache, embed_with_cache

FLUSH_ENTRIES = BATCH_ROWS
"""New entries a stream into an empty cache holds before it writes them (one append)."""
EMPTY_CACHE_GROUP = 1024
"""Texts a stream into an empty cache embeds at a time. A group's misses are sorted by length
before they are cut into embedding batches (:func:`~tessera.embedding.batching.embed_batches`),
so a group much larger than a batch is what keeps padding low: see the README's *The run*,
step 5, for the padded tokens of groups of 32, 1,024 and 4,096."""


class _Unwritten:
    """The cache as a stream into an empty one sees it: its own entries not yet written."""

    def __init__(self, cache: EmbeddingCache) -> None:
        self.cache, self.identity = cache, cache.identity
        self.entries: dict[str, Vectors] = {}
        self.answered = 0
        """Lookups answered: repeats within the stream, not hits of the cache."""

    def get(self, keys: Iterable[str]) -> dict[str, Vectors]:
        found = {k: self.entries[k] for k in keys if k in self.entries}
        self.answered += len(found)
        return found

    def put(self, entries: dict[str, Vectors]) -> None:
        self.entries.update(entries)
        if len(self.entries) >= FLUSH_ENTRIES:
            self.flush()

    def flush(self) -> None:
        if self.entries:
            self.cache.get(())  # the version the append builds on (no key is read)
            self.cache.put(self.entries)
            self.entries = {}


class EmbedStream:
    """Texts added in staging order; their vectors written to ``writer`` in that order."""

    def __init__(
        self, rc: RunContext, writer: VectorWriter, progress: Callable[[int], None] | None = None
    ) -> None:
        cfg = rc.config.embedding
        cache = rc.embedding_cache()
        self.empty_cache = cache.count() == 0
        self._cache: VectorCache = _Unwritten(cache) if self.empty_cache else cache
        self._group = max(EMPTY_CACHE_GROUP, cfg.batch_size) if self.empty_cache else BATCH_ROWS
        self._embedder, self._batch_size, self._sleep = rc.embedder, cfg.batch_size, rc.sleep
        self._policy = rc.retry_policy()
        self._writer, self._progress = writer, progress
        self._texts: list[str] = []
        self.stats = EmbedStats()

    def add(self, texts: Sequence[str]) -> None:
        self._texts.extend(texts)
        while len(self._texts) >= self._group:
            self._embed(self._texts[: self._group])
            del self._texts[: self._group]

    def close(self) -> None:
        """Embed what is left, write the cache's last entries and close the vector file."""
        if self._texts:
            self._embed(self._texts)
            self._texts = []
        if isinstance(self._cache, _Unwritten):
            self._cache.flush()
        self._writer.close()

    def _embed(self, texts: list[str]) -> None:
        answered = self._cache.answered if isinstance(self._cache, _Unwritten) else 0
        try:
            vectors, _ = embed_with_cache(
                self._embedder,
                self._cache,
                texts,
                self._batch_size,
                self._policy,
                self.stats,
                sleep=self._sleep,
                progress=self._progress,
            )
        except BaseException as e:  # the groups before this one stay cached, as each group's
            if isinstance(self._cache, _Unwritten):  # own write keeps them with a filled cache
                try:
                    self._cache.flush()
                except Exception as flush_error:
                    e.add_note(f"their vectors were not cached either: {flush_error!r}")
            raise
        if isinstance(self._cache, _Unwritten):  # a repeat of the stream's own text is no new text
            repeats = self._cache.answered - answered
            self.stats.unique -= repeats
            self.stats.cache_hits -= repeats
        self._writer.write(vectors)
