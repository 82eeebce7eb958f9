"""The parse, chunk and embed steps of a tenant run (see :mod:`tessera.pipeline.run`).

Parse and chunk fan out to the configured executor (:mod:`tessera.pipeline.executors`);
every payload is staged in the run workspace in the formats of :mod:`tessera.pipeline.staging`,
batch by batch, and each step returns a small JSON-able summary.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Iterator
from dataclasses import asdict, replace
from typing import Any, NamedTuple

import numpy as np

from tessera.chunking.dedup_columns import SketchColumns, dedupe_columns, live_columns
from tessera.chunking.minhash import MinHasher
from tessera.chunking.probes import sentence_probes
from tessera.errors import InternalError
from tessera.pipeline import parse_cache
from tessera.pipeline.context import SENTENCE_COUNTS, SENTENCE_VECTORS, RunContext
from tessera.pipeline.embed_ahead import EmbedAhead, embedded_ahead
from tessera.pipeline.embed_stream import EmbedStream
from tessera.pipeline.executors import InlineExecutor, document_batches, executor_for
from tessera.pipeline.listed import ListedDocuments
from tessera.pipeline.marks import flag_counts, marked
from tessera.pipeline.progress import Progress
from tessera.pipeline.staging import (
    CHUNK_REPORT,
    CHUNKS,
    EMBEDDED_AHEAD,
    PARSE_REPORT,
    PARSED,
    VECTORS,
    ChunkWriter,
    VectorWriter,
    read_batches,
    read_chunks,
    staged_rows,
)
from tessera.pipeline.work import (
    ChunkOutcome,
    ChunkTask,
    ParseOutcome,
    ParseTask,
    chunk_documents,
    parse_documents,
)
from tessera.store.schema import band_candidates
from tessera.types import Chunk, SourceDocument

log = logging.getLogger(__name__)


def listed_documents(rc: RunContext) -> tuple[dict[str, Any], ListedDocuments]:
    """The run's listing and its documents, decoded once per listing file and process."""
    return rc.listing()


def parse_step(rc: RunContext) -> dict[str, Any]:
    """Parse changed documents; a failing document is quarantined (its old rows stay).

    The report keeps, per document, its warnings and its trust counts (hidden content the
    parser dropped, how much of it read like instructions, hidden ranges it kept). Text
    documents made of binary bytes are quarantined as ``invalid_content`` before parsing.
    Documents are parsed in batches by the configured executor (``execution:``)."""
    data, docs = listed_documents(rc)
    todo = [docs[doc_id] for doc_id in data["to_parse"]]
    cache = parse_cache.cache_dir(rc.config.store.work_dir, rc.tenant)
    forgotten = parse_cache.forget(cache, data["removed"]) if cache.exists() else 0
    ex = executor_for(rc.config.execution, len(todo))
    tasks = [
        ParseTask(rc.config.store.uri, rc.tenant, rc.workspace / PARSED, tuple(b), cache)
        for b in document_batches(todo, rc.config.execution, ex.workers)
    ]
    (rc.workspace / PARSED).mkdir(parents=True, exist_ok=True)
    outcomes: list[ParseOutcome] = []
    worker_rss = 0.0
    progress = Progress(rc.tenant, "parse", "documents", len(todo))
    for batch in ex.map(parse_documents, tasks):
        outcomes.extend(batch.outcomes)
        worker_rss = max(worker_rss, batch.peak_rss_mb)
        progress.add(len(batch.outcomes))
    parsed = [o.doc_id for o in outcomes if o.quarantine is None]
    cached = sum(o.cached for o in outcomes)
    progress.finish(f"{cached} from the parse cache, {len(outcomes) - len(parsed)} quarantined")
    quarantined = [asdict(o.quarantine) for o in outcomes if o.quarantine is not None]
    warnings = {o.doc_id: list(o.warnings) for o in outcomes if o.quarantine is None and o.warnings}
    counts = ("hidden_dropped", "instructions_dropped", "hidden_kept")
    trust = {o.doc_id: dict(zip(counts, o.trust, strict=True)) for o in outcomes if any(o.trust)}
    report = {"parsed": parsed, "quarantined": quarantined, "warnings": warnings, "trust": trust}
    rc.write(PARSE_REPORT, report)
    return {
        "parsed": len(parsed),
        "from_cache": cached,  # of which taken from the parse cache
        "cache_forgotten": forgotten,
        "quarantined": len(quarantined),
        "warnings": sum(map(len, warnings.values())),
        **{k: sum(c[k] for c in trust.values()) for k in counts},
        "executor": ex.name,
        "workers": ex.workers,
        "tasks": len(tasks),
        "worker_peak_rss_mb": round(worker_rss, 1),
    }


class _ChunkBatches(NamedTuple):
    outcomes: Iterator[ChunkOutcome]
    executor: str
    pooled: bool
    """Chunked outside this process."""
    tasks: int


def _chunk_batches(rc: RunContext, docs: list[SourceDocument]) -> _ChunkBatches:
    """Chunks of the parsed documents, batch by batch, by the configured executor; the
    semantic strategy embeds while it chunks and stays in this process, with the run's
    embedder."""
    ctx = rc.chunk_context
    semantic = rc.config.chunking.strategy == "semantic"
    ex = InlineExecutor() if semantic else executor_for(rc.config.execution, len(docs))
    portable = ctx if ex.name == "inline" else replace(ctx, embed=None)
    tasks = [
        ChunkTask(rc.workspace / PARSED, tuple(b), portable)
        for b in document_batches(docs, rc.config.execution, ex.workers)
    ]
    return _ChunkBatches(ex.map(chunk_documents, tasks), ex.name, ex.pooled(len(tasks)), len(tasks))


def _count(out: ChunkOutcome, flags: Counter[str], tokens: dict[str, int]) -> None:
    """Add a task's flags and token counts (counted by its worker) to the step's totals."""
    counts = out.counts
    if counts.chunks != out.batch.num_rows:
        raise InternalError(f"a chunk task counted {counts.chunks} chunks and staged {out.batch.num_rows}")
    flags.update(dict(counts.flags))
    tokens["sum"] += counts.token_sum
    tokens["max"] = max(tokens["max"], counts.token_max)
    tokens["n"] += counts.chunks


def chunk_step(rc: RunContext) -> dict[str, Any]:
    """Chunk the parsed documents, then mark duplicates against the run and the live rows.

    Chunks are staged batch by batch (``chunks.parquet``); only what dedup compares (document,
    position and the worker's sketch: checksum and band keys, about 120 bytes a chunk, with
    the MinHash signatures spilled to the workspace; not the text or the id) is held for the
    whole run. Each worker stages its chunks with their own marks (checksum and band keys);
    only when the run finds near duplicates are the staged chunks streamed once more, by chunk
    order, to mark them (that second pass was about 0.5 s of a 2,000-document run's serial
    work, in the process every worker waits on)."""
    data, docs = listed_documents(rc)
    report = rc.read(PARSE_REPORT)
    work = _chunk_batches(rc, [docs[doc_id] for doc_id in report["parsed"]])
    (rc.workspace / EMBEDDED_AHEAD).unlink(missing_ok=True)
    ahead = EmbedAhead.start(rc) if work.pooled and rc.config.execution.embed_during_chunk else None
    try:
        summary = _stage_chunks(rc, data, report, work.outcomes, work.executor, ahead)
        summary["tasks"] = work.tasks
    except BaseException:
        if ahead is not None:
            ahead.abandon()
        raise
    if ahead is not None:
        summary["embedded_during_chunk"] = ahead.finish(rc.workspace / CHUNKS)
    return summary


def _stage_chunks(
    rc: RunContext,
    data: dict[str, Any],
    report: dict[str, Any],
    outcomes: Iterator[ChunkOutcome],
    executor: str,
    ahead: EmbedAhead | None,
) -> dict[str, Any]:
    """The chunk step's work on the chunks as they come: stage, sketch, deduplicate, report."""
    unmarked = rc.workspace / f".unmarked.{CHUNKS}"
    dd = rc.config.chunking.dedup
    hasher = MinHasher.of(dd)
    spill = rc.workspace / ".signatures.u32"
    sketches = SketchColumns(hasher, spill)
    quarantined: list[dict[str, str]] = []
    stats = rc.chunk_context.stats
    worker_rss = 0.0
    progress = Progress(rc.tenant, "chunk", "chunks")
    flags: Counter[str] = Counter()
    tokens = {"n": 0, "sum": 0, "max": 0}
    with ChunkWriter(unmarked) as w:
        for out in outcomes:
            progress.add(out.batch.num_rows)
            w.write(out.batch)  # staged rows built by the worker, with each chunk's own marks
            if ahead is not None:
                ahead.add(out.batch.column("embedding_text").to_pylist())
            _count(out, flags, tokens)
            # the worker's sketch as a row of columns, not the text (dedup_columns)
            docs_of, positions = out.batch.column("doc_id").to_pylist(), out.batch.column("position")
            sketches.add(docs_of, positions.to_numpy().tolist(), out.sketches)
            quarantined.extend(asdict(q) for q in out.quarantined)
            for name in ("sentences_embedded", "embed_tokens", "text_tokens", "indexed_tokens"):
                setattr(stats, name, getattr(stats, name) + getattr(out.stats, name))
            worker_rss = max(worker_rss, out.peak_rss_mb)
    staged = sketches.close()
    replaced = (set(report["parsed"]) - {q["doc_id"] for q in quarantined}) | set(data["removed"])

    # a rebuild (new profile or model, every document changed) replaces every live document:
    # no live row can be a candidate, so the band lookup is skipped
    live_docs = data["deletion"]["live_documents"]
    every_live_replaced = len(set(data.get("old_chunks", {})) & replaced) >= live_docs
    table = None if every_live_replaced else rc.index.table()
    rows = [] if table is None else band_candidates(table, staged.band_keys(), replaced)
    live = live_columns([(r["doc_id"], r["position"], r["text"] or "") for r in rows], hasher)
    dups = dedupe_columns(staged, hasher, live if rows else None, [r["dup_group"] for r in rows])
    with_chunks = set(staged.docs)
    del staged
    if tokens["n"] != len(sketches):
        raise InternalError(f"staged {tokens['n']} chunks with {len(sketches)} sketches")
    if dups.near:  # mark the near duplicates: the staged chunks once more, a batch at a time
        mark = ("near_duplicate", "linked_duplicate") if dd.near_duplicates == "drop" else ("near_duplicate",)
        flags, n = Counter(), 0
        with ChunkWriter(rc.workspace / CHUNKS) as w:
            for batch in read_batches(unmarked):
                batch = marked(batch, [dups.outcome(n + i) for i in range(batch.num_rows)], mark)
                flags.update(flag_counts(batch))
                n += batch.num_rows
                w.write(batch)
        if n != tokens["n"]:
            raise InternalError(f"read back {n} staged chunks of {tokens['n']} written")
    else:  # every chunk keeps the marks its worker staged: nothing to rewrite
        unmarked.replace(rc.workspace / CHUNKS)
    spill.unlink(missing_ok=True)
    unmarked.unlink(missing_ok=True)
    # never silent: a document that yields no chunk is named (and counts as lost for the deletion guard)
    empty = sorted(set(report["parsed"]) - {q["doc_id"] for q in quarantined} - with_chunks)
    for doc_id in empty:
        log.warning(
            "%s/%s yielded no chunks (%s)", rc.tenant, doc_id, "; ".join(report["warnings"].get(doc_id, []))
        )
    rc.write(CHUNK_REPORT, {"quarantined": quarantined, "empty": empty})
    progress.finish(f"from {len(report['parsed'])} documents, {dups.exact_duplicates} exact duplicates")
    return {
        "chunks": tokens["n"],
        "quarantined": len(quarantined),
        "empty_documents": len(empty),
        "max_tokens": tokens["max"],
        "mean_tokens": round(tokens["sum"] / tokens["n"], 1) if tokens["n"] else 0.0,
        "flags": dict(flags),
        "exact_duplicates": dups.exact_duplicates,
        "near_duplicates": len(dups.near),
        "dedup_live_candidates": dups.live_candidates,
        "strategy": rc.config.chunking.strategy,
        "executor": executor,
        "worker_peak_rss_mb": round(worker_rss, 1),
        "config_hash": rc.chunk_context.config_hash[:16],
        **stats.as_dict(),  # inflation from overlap; the semantic chunker's embedding cost
    }


def staged_chunks(rc: RunContext) -> list[Chunk]:
    return read_chunks(rc.workspace / CHUNKS)


def embed_step(rc: RunContext) -> dict[str, Any]:
    """Vectors for every staged chunk, and with ``sentence_vectors`` for every sentence probe
    (``tessera.chunking.probes``): cache hits reused, misses embedded in retried batches.
    Texts are read and vectors written one staged batch at a time (``vectors.npy``), unless
    the chunk step already embedded these very chunks (:mod:`tessera.pipeline.embed_ahead`)."""
    path = rc.workspace / CHUNKS
    progress = Progress(rc.tenant, "embed", "texts", staged_rows(path))
    ahead = embedded_ahead(rc, path)
    if ahead is None:
        (rc.workspace / EMBEDDED_AHEAD).unlink(missing_ok=True)
        writer = VectorWriter(rc.workspace / VECTORS, staged_rows(path), rc.embedder.identity.dimension)
        try:
            stream = EmbedStream(rc, writer, progress.add)
            for batch in read_batches(path, ["embedding_text"]):
                stream.add([str(t) for t in batch.column(0).to_pylist()])
            stream.close()
        except BaseException:
            writer.discard()  # no half-written temporary is left for a step run again
            raise
        total = stream.stats
        progress.finish(f"{total.cache_hits} from the embedding cache, {total.embedded} embedded")
    else:
        total = ahead
        log.info("%s embed: %d texts embedded during the chunk step", rc.tenant, total.texts)
    summary: dict[str, Any] = asdict(total)
    summary.pop("failures")
    summary["seconds"] = round(total.seconds, 3)
    summary["model_version"] = rc.embedder.identity.key
    summary["during_chunk"] = ahead is not None
    if rc.config.chunking.sentence_vectors:
        chunks = staged_chunks(rc)
        probes = [sentence_probes(c.text, c.embedding_text, c.kind) for c in chunks]
        flat, sstats = rc.embed_cached([p for ps in probes for p in ps])
        np.save(rc.workspace / SENTENCE_VECTORS, flat)
        np.save(rc.workspace / SENTENCE_COUNTS, np.asarray([len(p) for p in probes], np.int64))
        summary["sentences"] = {
            key: getattr(sstats, key)
            for key in ("texts", "unique", "cache_hits", "embedded", "batches", "retries")
        }
        summary["sentences"]["seconds"] = round(sstats.seconds, 3)
    else:  # a re-executed step of a run whose profile had them: publish none
        for name in (SENTENCE_VECTORS, SENTENCE_COUNTS):
            (rc.workspace / name).unlink(missing_ok=True)
    return summary
