"""The run workspace's staged artifacts: one place for their names and formats.

``listing.json``, ``parse_report.json``, ``chunk_report.json``, ``quality_gate.json`` and
``publish.json`` are small reports (JSON). The payloads are columnar and streamed in batches
of :data:`BATCH_ROWS`, so a step's memory follows the batch size, not the corpus:

* ``parsed/<sha256(doc_id)[:32]>.json``: one parsed document (offset map, blocks, layout),
  written by the worker that parsed it and read back one document at a time;
* ``chunks.parquet``: the staged chunks, one row per chunk in staging order, with their checksum,
  exact-duplicate group and near-duplicate band keys (:data:`CHUNK_SCHEMA`);
* ``vectors.npy``: one float32 row per staged chunk, in the same order, appended and read a
  slice at a time with ordinary reads and writes (:class:`StagedVectors`; a memory map kept
  every page it touched in the process);
* ``embedded_ahead.json``: written by a chunk step that embedded while its workers chunked:
  the model, row count and sha256 of the ``chunks.parquet`` its ``vectors.npy`` belongs to
  (:mod:`tessera.pipeline.embed_ahead`).

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
EMBEDDED_AHEAD = "embedded_ahead.json"
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
        ("dup_group", _S), ("dup_bands", _STRS), ("checksum", _S),
    ]
)  # fmt: skip
"""``checksum`` is :attr:`Chunk.checksum`, computed by the worker that chunked it (a hash of
the texts and offsets: the publish step's checks and its commit would each hash every row
again, in the one process the run waits on)."""
_TUPLES = ("heading_path", "flags")
_FIELDS = [f.name for f in CHUNK_SCHEMA if f.name not in ("dup_group", "dup_bands", "checksum")]

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
    cols["checksum"] = [c.checksum for c in chunks]
    return pa.RecordBatch.from_pydict(cols, schema=CHUNK_SCHEMA)


def chunks_of(batch: pa.RecordBatch) -> tuple[list[Chunk], list[Dedup]]:
    """The chunks of a staged batch and their ``(dup_group, dup_bands)``."""
    chunks: list[Chunk] = []
    dedup: list[Dedup] = []
    for row in batch.to_pylist():
        dedup.append((row.pop("dup_group"), tuple(row.pop("dup_bands") or ())))
        row.pop("checksum", None)  # a property of the chunk
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
    group, 250 MB at 400,000 chunks). Nor with dictionary pages: a staged column is mostly
    distinct strings (ids, texts), and 8,000 staged chunks wrote in 37 ms and read back in 36 ms
    with them, in 33 and 15 ms without (the file 2 % smaller); a run reads its chunks back several
    times, in the process every worker waits on."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._tmp = path.with_name(f".{path.name}.tmp")
        path.parent.mkdir(parents=True, exist_ok=True)
        self._writer = pq.ParquetWriter(self._tmp, CHUNK_SCHEMA, write_statistics=False, use_dictionary=False)
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
    """``rows`` x ``dimension`` float32 vectors in a ``.npy`` file, appended slice by slice with
    ordinary writes. ``rows=None``: as many as are written (the header, a fixed
    :data:`NPY_HEADER_BYTES`, is written again with the count when the writer closes), for a
    stream whose length is known only at its end (embedding during the chunk step).

    A memory map of the whole file (what this was) kept every page written into the run's
    resident memory until the step ended: the embed step grew by the size of the file (614 MB
    at 400,000 vectors)."""

    def __init__(self, path: Path, rows: int | None, dimension: int) -> None:
        self.path = path
        self.rows, self.dimension = rows, dimension
        self._tmp = path.with_name(f".{path.name}.tmp.npy")
        self._file = self._tmp.open("wb")
        self._file.write(_npy_header(rows or 0, dimension))
        self.filled = 0

    def write(self, vectors: Any) -> None:
        block = np.ascontiguousarray(vectors, dtype=_F32)
        over = self.rows is not None and self.filled + len(block) > self.rows
        if block.ndim != 2 or block.shape[1] != self.dimension or over:
            self.discard()  # a writer that refused a block is done: no temporary is left
            raise PublishError(
                f"vectors of shape {block.shape} do not fit {self.rows} x {self.dimension} "
                f"after {self.filled} rows"
            )
        self._file.write(block.tobytes())
        self.filled += len(block)

    def close(self) -> None:
        if self.rows is None:
            self._file.seek(0)
            self._file.write(_npy_header(self.filled, self.dimension))
        self._file.close()
        if self.rows is not None and self.filled != self.rows:
            self._tmp.unlink(missing_ok=True)
            raise PublishError(f"{self.filled} vectors written for {self.rows} staged chunks")
        self._tmp.replace(self.path)

    def discard(self) -> None:
        """Drop what was written: no file is left, not even the temporary."""
        self._file.close()
        self._tmp.unlink(missing_ok=True)


NPY_HEADER_BYTES = 128


def _npy_header(rows: int, dimension: int) -> bytes:
    """A ``.npy`` (format 1.0) header of exactly :data:`NPY_HEADER_BYTES` for a C-ordered
    float32 matrix, whatever ``rows`` is, so it can be written again in place."""
    text = repr({"descr": "<f4", "fortran_order": False, "shape": (rows, dimension)})
    body = text.ljust(NPY_HEADER_BYTES - 11) + "\n"
    if len(body) != NPY_HEADER_BYTES - 10:
        raise ValueError(f"a {rows} x {dimension} header does not fit {NPY_HEADER_BYTES} bytes")
    return b"\x93NUMPY\x01\x00" + len(body).to_bytes(2, "little") + body.encode("latin1")


_F32 = np.dtype("<f4")


class StagedVectors:
    """The staged vectors, read from the ``.npy`` file a slice at a time (``v[a:b]``, ``v[i]``)
    with positioned reads; nothing of the file stays mapped into the process. A memory map
    (what this was) kept every page it had read: publishing 400,000 vectors grew the run by
    568 MB, the size of what it had read."""

    def __init__(self, path: Path) -> None:
        self.path = _require(path)
        with self.path.open("rb") as f:
            major, _ = np.lib.format.read_magic(f)
            read = np.lib.format.read_array_header_1_0 if major == 1 else np.lib.format.read_array_header_2_0
            shape, fortran, dtype = read(f)
            self._offset = f.tell()
        if len(shape) != 2 or fortran or dtype != _F32:
            raise PublishError(f"{path} is not a C-ordered float32 matrix: {shape} {dtype}")
        self.shape: tuple[int, int] = (int(shape[0]), int(shape[1]))
        self.dtype = _F32
        self._row = self.shape[1] * _F32.itemsize

    def __len__(self) -> int:
        return self.shape[0]

    def __getitem__(self, key: int | slice | tuple[Any, ...]) -> Any:
        if isinstance(key, tuple):  # v[i, j], v[a:b, j]: the rows, then the rest of the index
            return self[key[0]][key[1:]]
        if isinstance(key, slice):
            start, stop, step = key.indices(self.shape[0])
            if step != 1:
                raise IndexError("staged vectors are read in contiguous slices")
            return self._read(start, max(stop, start))
        i = key + self.shape[0] if key < 0 else key
        if not 0 <= i < self.shape[0]:
            raise IndexError(f"row {key} of {self.shape[0]}")
        row: np.ndarray = self._read(i, i + 1)[0]
        return row

    def _read(self, start: int, stop: int) -> np.ndarray:
        n = stop - start
        with self.path.open("rb") as f:
            f.seek(self._offset + start * self._row)
            data = f.read(n * self._row)
        if len(data) != n * self._row:
            raise PublishError(f"{self.path} is truncated: rows {start}..{stop} of {self.shape[0]}")
        return np.frombuffer(data, dtype=_F32).reshape(n, self.shape[1])


def read_vectors(path: Path) -> StagedVectors:
    """The staged vectors, read from disk a slice at a time as they are used."""
    return StagedVectors(path)
