"""The per-document work of the parse and chunk steps, as picklable tasks for any executor.

A task names its documents and where to read and write; the worker reads the raw bytes from
the run's blob store, writes each parsed document into the workspace's ``parsed/`` folder
itself, and returns only small typed outcomes (and, for chunking, the chunks as one staged Arrow
batch), in input order. The same functions run inline, in a process pool or as Ray tasks.
"""

from __future__ import annotations

import hashlib
import json
from collections import Counter
from dataclasses import dataclass, field, replace
from functools import lru_cache
from pathlib import Path

import pyarrow as pa

from tessera.chunking.base import ChunkContext, ChunkStats, flag_name
from tessera.chunking.dedup_columns import own_marks
from tessera.chunking.minhash import MinHasher, SketchBatch, sketch
from tessera.chunking.profile import DedupConfig
from tessera.chunking.registry import chunker_for
from tessera.errors import ChunkingError, DocumentError
from tessera.parsing.base import get_parser
from tessera.parsing.dispatch import parse_document
from tessera.parsing.validity import check_text_bytes
from tessera.pipeline import parse_cache
from tessera.pipeline.footprint import peak_rss_mb  # the worker's own peak, not its parent's
from tessera.pipeline.staging import chunk_batch
from tessera.serde import parsed_from_json, parsed_to_json
from tessera.store.blobs import BlobStore
from tessera.types import Chunk, SourceDocument


def parsed_file(doc_id: str) -> str:
    """The staged parse of one document, under ``parsed/``: ``<h[:2]>/<h>.json``, with ``h`` the
    first 32 hex digits of sha256(doc_id).

    Spread over up to 256 folders, as git spreads its objects: every parse is created and
    renamed into its folder, and two workers doing that in one folder queue on its lock in
    the kernel. Measured with two processes parsing the halves of 2,000 documents at once:
    in one folder 1.30-1.41 s each, 0.42-0.52 s of it in the kernel; in folders of their own
    1.13-1.20 s, 0.21-0.31 s in the kernel; spread like this, 0.89-1.03 s, 0.06-0.19 s (three
    pairs each). In ``bench.parallel_scaling``'s whole 2-worker runs of the same documents the
    parse step took as long either way (1.057 against 1.047 s, medians of 5, side by side); in
    2-worker runs alone, alternated with the code before, 1.127 against 1.252 s and 1.155
    against 1.256 s (two sets of 8 pairs, where the code before took 0.89-1.38 s)."""
    h = hashlib.sha256(doc_id.encode()).hexdigest()[:32]
    return f"{h[:2]}/{h}.json"


@dataclass(frozen=True)
class Quarantine:
    doc_id: str
    reason: str
    message: str


@dataclass(frozen=True)
class ParseTask:
    store_uri: str
    tenant: str
    parsed_dir: Path
    docs: tuple[SourceDocument, ...]
    cache_dir: Path | None = None
    """The tenant's parse cache (:mod:`tessera.pipeline.parse_cache`); None: parse everything."""


@dataclass(frozen=True)
class ParseOutcome:
    """One document's parse: quarantined, or parsed with its warnings and trust counts
    (hidden content dropped, instruction-like hidden content dropped, hidden ranges kept)."""

    doc_id: str
    quarantine: Quarantine | None = None
    warnings: tuple[str, ...] = ()
    trust: tuple[int, int, int] = (0, 0, 0)
    cached: bool = False
    """Taken from the parse cache, not parsed."""


@lru_cache(maxsize=4)
def _blobs(uri: str) -> BlobStore:
    return BlobStore(uri)


def _parse_one(task: ParseTask, doc: SourceDocument) -> ParseOutcome:
    cached = None
    try:
        if task.cache_dir is not None:
            parser = get_parser(doc.content_type)
            cached = parse_cache.load(task.cache_dir, doc, parser.name, parser.version)
        if cached is None:
            raw = _blobs(task.store_uri).get(task.tenant, doc.revision)
            if doc.content_type.startswith("text/"):
                check_text_bytes(doc.doc_id, raw)
            result = parse_document(doc, raw)
        else:
            result = cached
    except DocumentError as e:
        return ParseOutcome(doc.doc_id, Quarantine(doc.doc_id, e.reason, str(e)))
    except Exception as e:  # a parser bug quarantines the document, it never deletes it
        return ParseOutcome(doc.doc_id, Quarantine(doc.doc_id, "parser_crash", repr(e)))
    out = task.parsed_dir / parsed_file(doc.doc_id)
    tmp = out.with_name(f".{out.name}.tmp")
    staged = json.dumps(parsed_to_json(result))
    try:
        tmp.write_text(staged, encoding="utf-8")
    except FileNotFoundError:  # its folder's first parse (a mkdir for every parse locks the parent)
        out.parent.mkdir(parents=True, exist_ok=True)
        tmp.write_text(staged, encoding="utf-8")
    tmp.replace(out)
    if task.cache_dir is not None and cached is None:  # adopted into the cache by the publish
        parse_cache.store(_pending(task), doc, result, out)
    warnings = result.warnings
    if not result.text.strip() and not any(w.startswith("no_text") for w in warnings):
        warnings = (*warnings, "no_text: the document yielded no text")
    t = result.trust
    trust = (t.hidden_dropped, t.instructions_dropped, len(t.hidden_spans))
    return ParseOutcome(doc.doc_id, None, warnings, trust, cached is not None)


@dataclass(frozen=True)
class ParseBatch:
    outcomes: tuple[ParseOutcome, ...]
    peak_rss_mb: float


def _pending(task: ParseTask) -> Path:
    """The run's new parse-cache entries (:data:`parse_cache.PENDING`, beside ``parsed/``)."""
    return task.parsed_dir.parent / parse_cache.PENDING


def parse_documents(task: ParseTask) -> ParseBatch:
    task.parsed_dir.mkdir(parents=True, exist_ok=True)
    if task.cache_dir is not None:
        _pending(task).mkdir(exist_ok=True)
    outcomes = tuple(_parse_one(task, doc) for doc in task.docs)
    return ParseBatch(outcomes, peak_rss_mb())


@dataclass(frozen=True)
class ChunkTask:
    parsed_dir: Path
    docs: tuple[SourceDocument, ...]
    context: ChunkContext
    """Without its ``embed`` hook (the semantic strategy embeds while chunking and runs inline)."""


@dataclass(frozen=True)
class BatchCounts:
    """Chunks per flag name (:func:`~tessera.chunking.base.flag_name`), and the count, sum
    and largest of the chunks' token counts."""

    flags: tuple[tuple[str, int], ...] = ()
    chunks: int = 0
    token_sum: int = 0
    token_max: int = 0

    @staticmethod
    def of(chunks: list[Chunk]) -> BatchCounts:
        flags = Counter(flag_name(f) for c in chunks for f in c.flags)
        tokens = [c.token_count for c in chunks]
        return BatchCounts(tuple(sorted(flags.items())), len(tokens), sum(tokens), max(tokens, default=0))


@dataclass(frozen=True)
class ChunkOutcome:
    batch: pa.RecordBatch
    """The task's chunks as staged rows (``staging.CHUNK_SCHEMA``, each chunk's own duplicate
    marks: :func:`~tessera.chunking.dedup_columns.own_marks`), built here, in the worker: the
    step's own process writes them as they are, without turning each chunk into Python objects
    again (it did, twice, in the process every worker waits on)."""
    quarantined: tuple[Quarantine, ...]
    sketches: SketchBatch
    """Each chunk's dedup sketch, in chunk order, as columns (MinHash work done here, in parallel)."""
    stats: ChunkStats = field(default_factory=ChunkStats)
    peak_rss_mb: float = 0.0
    counts: BatchCounts = field(default_factory=BatchCounts)
    """The batch's flags and token counts, counted here from the chunks (the step's own process
    counted them again from the Arrow columns: 0.3 s of its CPU at 40,000 chunks, taken from
    the workers it shares the cores with)."""


@lru_cache(maxsize=4)
def _hasher(cfg: DedupConfig) -> MinHasher:
    return MinHasher.of(cfg)


def chunk_documents(task: ChunkTask) -> ChunkOutcome:
    """Chunk the task's parsed documents; a chunking error quarantines its document."""
    ctx = replace(task.context, stats=ChunkStats())
    chunks: list[Chunk] = []
    quarantined: list[Quarantine] = []
    for doc in task.docs:
        parsed = parsed_from_json(json.loads((task.parsed_dir / parsed_file(doc.doc_id)).read_text("utf-8")))
        try:
            chunks.extend(chunker_for(doc.content_type, ctx.config.strategy).chunk(doc, parsed, ctx))
        except ChunkingError as e:  # the document is quarantined; its published chunks stay
            quarantined.append(Quarantine(doc.doc_id, "chunking_error", str(e)))
    hasher = _hasher(ctx.config.dedup)
    sketches = [sketch(c.text, hasher) for c in chunks]
    batch = chunk_batch(chunks, [own_marks(s) for s in sketches])
    columns = SketchBatch.of(sketches, hasher)
    counts = BatchCounts.of(chunks)
    return ChunkOutcome(batch, tuple(quarantined), columns, ctx.stats, peak_rss_mb(), counts)
