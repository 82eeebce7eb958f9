"""Embedding while the chunk step's workers chunk.

When the chunk step runs on worker processes (or Ray), its own process only waits for their
results and stages them. With ``execution.embed_during_chunk`` it also embeds each staged
batch's texts on a thread (:class:`EmbedAhead`), through the same :class:`EmbedStream` the
embed step uses, so a model on another device (a GPU) works while the CPUs chunk, and on a
CPU the embedder's serial work shares the cores with the workers instead of following them.

What it wrote counts only if it provably belongs to the chunks staged: the step records the
model, the row count and the sha256 of the final ``chunks.parquet`` beside the vectors
(:data:`~tessera.pipeline.staging.EMBEDDED_AHEAD`), and the embed step checks all three before
it keeps them (:func:`embedded_ahead`); otherwise it embeds as it always did. An embedding
error on the thread is logged and leaves nothing behind: the embed step then embeds, and its
retries and typed errors apply as they do without this.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from dataclasses import asdict
from pathlib import Path
from typing import Any

from tessera.embedding.batching import EmbedStats
from tessera.pipeline.context import RunContext
from tessera.pipeline.embed_stream import EmbedStream
from tessera.pipeline.progress import Progress
from tessera.pipeline.staging import EMBEDDED_AHEAD, VECTORS, VectorWriter, read_vectors, staged_rows
from tessera.types import file_sha256

log = logging.getLogger(__name__)
QUEUED_BATCHES = 8
"""Staged batches waiting for the thread: past this the step stops taking workers' results,
so an embedder slower than the workers holds them back instead of piling up texts."""


class EmbedAhead:
    """A thread embedding the texts :meth:`add` gives it, in order, into the run's vectors."""

    def __init__(self, rc: RunContext) -> None:
        self._rc = rc
        self._tmp = rc.workspace / f".ahead.{VECTORS}"
        writer = VectorWriter(self._tmp, None, rc.embedder.identity.dimension)
        self._writer = writer
        self._progress = Progress(rc.tenant, "embed (during chunk)", "texts")
        try:
            self._stream = EmbedStream(rc, writer, self._progress.add)
        except BaseException:
            writer.discard()  # nothing is left of a thread that never started
            raise
        self._queue: queue.Queue[list[str] | None] = queue.Queue(QUEUED_BATCHES)
        self._stop = threading.Event()
        self.error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="tessera-embed-ahead", daemon=True)
        self._thread.start()

    @classmethod
    def start(cls, rc: RunContext) -> EmbedAhead | None:
        """A started thread, or None (logged) when it cannot start: the cache could not be
        read, say; the embed step then embeds, and meets the same error if it lasts."""
        try:
            return cls(rc)
        except Exception as e:
            log.warning("tenant %s: not embedding during the chunk step: %s", rc.tenant, e, exc_info=e)
            return None

    def add(self, texts: list[str]) -> None:
        self._queue.put(texts)  # the thread drains the queue even after an error

    def _run(self) -> None:
        while (texts := self._queue.get()) is not None:
            if self.error is None and not self._stop.is_set():
                try:
                    self._stream.add(texts)
                except BaseException as e:  # kept for finish(), which logs it; the embed step
                    self.error = e  # embeds. Any: a thread that died would leave add() blocked
        if self.error is None and not self._stop.is_set():
            try:
                self._stream.close()
                return
            except BaseException as e:
                self.error = e
        self._writer.discard()

    def abandon(self) -> None:
        """The chunk step failed: stop after the batch in hand and leave nothing."""
        self._stop.set()
        self._queue.put(None)
        self._thread.join()

    def finish(self, chunks: Path) -> bool:
        """Wait for the last batch; keep the vectors as the run's if they are complete for
        ``chunks`` (the final staged chunks). Whether they were kept."""
        self._queue.put(None)
        self._thread.join()
        if self.error is not None:
            log.warning(
                "tenant %s: embedding during the chunk step failed (%s); the embed step embeds",
                self._rc.tenant,
                self.error,
                exc_info=self.error,
            )
            return False
        rows = staged_rows(chunks)
        if self._writer.filled != rows:  # never: the step hands over every staged row
            self._tmp.unlink(missing_ok=True)
            log.warning("embedded %d texts during the chunk step for %d chunks", self._writer.filled, rows)
            return False
        stamp = {"model": self._rc.embedder.identity.key, "rows": rows, "chunks_sha256": file_sha256(chunks)}
        stats = asdict(self._stream.stats)
        stats.pop("failures")
        self._tmp.replace(self._rc.workspace / VECTORS)
        self._rc.write(EMBEDDED_AHEAD, {**stamp, "stats": stats})
        self._progress.finish(f"{stats['cache_hits']} from the embedding cache, {stats['embedded']} embedded")
        return True


def embedded_ahead(rc: RunContext, chunks: Path) -> EmbedStats | None:
    """The chunk step's embedding statistics when the staged vectors it wrote belong to the
    staged ``chunks`` (same model, rows and file); None when the embed step must embed."""
    path = rc.workspace / EMBEDDED_AHEAD
    if not path.exists() or not (rc.workspace / VECTORS).exists():
        return None
    stamp: dict[str, Any] = json.loads(path.read_text("utf-8"))
    rows = staged_rows(chunks)
    if (
        stamp.get("model") != rc.embedder.identity.key
        or stamp.get("rows") != rows
        or read_vectors(rc.workspace / VECTORS).shape != (rows, rc.embedder.identity.dimension)
        or stamp.get("chunks_sha256") != file_sha256(chunks)
    ):
        log.info("tenant %s: the vectors embedded during the chunk step are not for these chunks", rc.tenant)
        return None
    return EmbedStats(**stamp["stats"])
