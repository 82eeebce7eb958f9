"""The run workspace's staged artifacts: one place for their names and formats.

``listing.json``, ``parse_report.json``, ``chunk_report.json``, ``quality_gate.json`` and
``publish.json`` are small reports (JSON). The payloads are columnar and streamed in batches
of :data:`BATCH_ROWS`, so a step's memory follows the batch size, not the corpus:

* ``parsed/<sha256(doc_id)[:32]>.json``: one parsed document (offset map, blocks, layout),
  written by the worker that parsed it and read back one document at a time;
* ``chunks.parquet``: the staged chunks, one row per chunk in staging order, with their
  exact-duplicate group and near-duplicate band keys (:data:`CHUNK_SCHEMA`);
* ``vectors.npy``: one float32 row per staged chunk, in the same order, written and read
  through a memory map (``numpy.lib.format.open_memmap``).

Every artifact is written to a temporary name and renamed into place when complete, so a
step that dies half-way never leaves a truncated artifact for the next step to trust.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import asdict
from pathlib import Path
from types import TracebackType
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.parquet as pq

from tessera.errors import PublishError
from tessera.types import Chunk, PageSpan, PartSpan

LISTING = "listing.json"
PARSE_REPORT = "parse_report.json"
CHUNK_REPORT = "chunk_report.json"
QUALITY_GATE = "quality_gate.json"
PUBLISH_REPORT = "publish.json"
PARSED = "parsed"
CHUNKS = "chunks.parquet"
VECTORS = "vectors.npy"
BATCH_ROWS = 4096

_S, _I = pa.string(), pa.int64()
_STRS = pa.list_(pa.string())
CHUNK_SCHEMA = pa.schema(
    [
        *[(name, _S) for name in ("id", "tenant", "doc_id", "revision")],
        ("start", _I), ("end", _I), ("text", _S), ("embedding_text", _S),
        ("byte_start", _I), ("byte_end", _I), ("heading_path", _STRS), ("anchor", _S),
        ("position", _I), ("parent_id", _S), ("prev_id", _S), ("next_id", _S),
        ("token_count", _I), ("kind", _S), ("flags", _STRS),
        ("chunking_config_hash", _S), ("chunker_version", _S), ("parser_version", _S),
        ("tokenizer_version", _S),
        ("pages", pa.list_(pa.struct([("page", _I), ("bbox", pa.list_(pa.float64()))]))),
        ("parts", pa.list_(pa.struct([("part", _S), ("locator", _S), ("start", _I), ("end", _I),
                                      ("lead", _S), ("tail", _S)]))),
        ("dup_group", _S), ("dup_bands", _STRS),
    ]
)  # fmt: skip
_TUPLES = ("heading_path", "flags")
_FIELDS = [f.name for f in CHUNK_SCHEMA if f.name not in ("dup_group", "dup_bands")]

Dedup = tuple[str, Sequence[str]]


def part_dict(p: PartSpan) -> dict[str, Any]:
    return asdict(p)


def chunk_batch(chunks: Sequence[Chunk], dedup: Sequence[Dedup]) -> pa.RecordBatch:
    """Staged chunks with their ``(dup_group, dup_bands)`` as one record batch."""
    cols: dict[str, list[Any]] = {name: [getattr(c, name) for c in chunks] for name in _FIELDS}
    for name in _TUPLES:
        cols[name] = [list(v) for v in cols[name]]
    cols["pages"] = [[{"page": p.page, "bbox": list(p.bbox)} for p in c.pages] for c in chunks]
    cols["parts"] = [[part_dict(p) for p in c.parts] for c in chunks]
    cols["dup_group"] = [g for g, _ in dedup]
    cols["dup_bands"] = [list(b) for _, b in dedup]
    return pa.RecordBatch.from_pydict(cols, schema=CHUNK_SCHEMA)


def chunks_of(batch: pa.RecordBatch) -> tuple[list[Chunk], list[Dedup]]:
    """The chunks of a staged batch and their ``(dup_group, dup_bands)``."""
    chunks: list[Chunk] = []
    dedup: list[Dedup] = []
    for row in batch.to_pylist():
        dedup.append((row.pop("dup_group"), tuple(row.pop("dup_bands") or ())))
        for name in _TUPLES:
            row[name] = tuple(row[name] or ())
        row["pages"] = tuple(PageSpan(p["page"], tuple(p["bbox"])) for p in row["pages"] or ())
        row["parts"] = tuple(PartSpan(**p) for p in row["parts"] or ())
        chunks.append(Chunk(**row))
    return chunks, dedup


class ChunkWriter:
    """Append record batches to ``path`` (Parquet); the file appears only on a clean close.

    Batches are gathered into row groups of about :data:`BATCH_ROWS` rows, without column
    statistics: the writer holds each row group's metadata until it closes, and a row group per
    16-document task (one per 64 chunks) made that grow with the corpus (about 30 KB a row
    group, 250 MB at 400,000 chunks)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._tmp, CHUNK_SCHEMA, write_statistics=False)
        self._pending: list[pa.RecordBatch] = []
        self._pending_rows = 0
        self.rows = 0

    def write(self, batch: pa.RecordBatch) -> None:
        if batch.num_rows:
            self._pending.append(batch)
            self._pending_rows += batch.num_rows
            self.rows += batch.num_rows
            if self._pending_rows >= BATCH_ROWS:
                self._flush()

    def _flush(self) -> None:
        if self._pending:
            self._writer.write_table(pa.Table.from_batches(self._pending, CHUNK_SCHEMA))
            self._pending, self._pending_rows = [], 0

    def __enter__(self) -> ChunkWriter:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        done = False
        try:
            if kind is None:
                self._flush()
                done = True
        finally:
            self._writer.close()
            if done:
                self._tmp.replace(self.path)
            else:
                self._tmp.unlink(missing_ok=True)


def _require(path: Path) -> Path:
    if not path.exists():
        raise PublishError(f"{path} is missing: run the upstream step first")
    return path


def staged_rows(path: Path) -> int:
    return int(pq.ParquetFile(_require(path)).metadata.num_rows)


def read_batches(
    path: Path, columns: Sequence[str] | None = None, batch_rows: int | None = None
) -> Iterator[pa.RecordBatch]:
    """The staged chunks in staging order, ``batch_rows`` (default :data:`BATCH_ROWS`) at a time."""
    f = pq.ParquetFile(_require(path), pre_buffer=False)  # pre-buffering kept every row group it read
    size = batch_rows or BATCH_ROWS
    yield from f.iter_batches(batch_size=size, columns=list(columns) if columns else None)


def read_chunks(path: Path) -> list[Chunk]:
    """Every staged chunk (for the quality gate, which scores the whole candidate)."""
    out: list[Chunk] = []
    for batch in read_batches(path):
        out.extend(chunks_of(batch)[0])
    return out


class VectorWriter:
    """``rows`` x ``dimension`` float32 vectors, filled slice by slice through a memory map."""

    def __init__(self, path: Path, rows: int, dimension: int) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp.npy")
        self._map = np.lib.format.open_memmap(self._tmp, mode="w+", dtype=np.float32, shape=(rows, dimension))
        self.filled = 0

    def write(self, vectors: Any) -> None:
        block = np.asarray(vectors, dtype=np.float32)
        self._map[self.filled : self.filled + len(block)] = block
        self.filled += len(block)

    def close(self) -> None:
        if self.filled != len(self._map):
            raise PublishError(f"{self.filled} vectors written for {len(self._map)} staged chunks")
        self._map.flush()
        del self._map
        self._tmp.replace(self.path)


def read_vectors(path: Path) -> np.ndarray:
    """The staged vectors, memory-mapped (rows are read from disk as they are used)."""
    vectors: np.ndarray = np.load(_require(path), mmap_mode="r")
    return vectors
