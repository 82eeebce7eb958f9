"""Quality rules on staged rows and on the published index. Used before and after publish."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from tessera.parsing.office_locate import describe, part_spans, parts_match
from tessera.parsing.slices import source_slice_matches
from tessera.store.blobs import BlobStore
from tessera.store.db import sql_str

T = TypeVar("T")


def check_rows(rows: pa.Table, tenant: str, dimension: int) -> list[str]:
    """Problems in a set of chunk rows: ids, tenant, ACL, vectors. Counted by Arrow kernels:
    the publish checks every staged row in the process the whole run waits on."""
    problems: list[str] = []
    if rows.num_rows == 0:
        return problems
    counts = pc.value_counts(rows.column("id"))  # in order of first appearance
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    if len(repeated):
        problems.append(f"{len(repeated)} duplicate chunk ids, e.g. {repeated.field('values')[0].as_py()}")
    foreign = {t for t in pc.unique(rows.column("tenant")).to_pylist() if t != tenant}
    if foreign:
        problems.append(f"rows of other tenants: {sorted(foreign, key=lambda t: (t is None, t or ''))}")
    no_acl = pc.sum(pc.and_(_empty(rows.column("readers")), _empty(rows.column("groups")))).as_py()
    if no_acl:
        problems.append(f"{no_acl} rows without any reader or group")
    vtype = rows.schema.field("vector").type
    if not isinstance(vtype, pa.FixedSizeListType) or vtype.list_size != dimension:
        problems.append(f"vector type {vtype} does not have dimension {dimension}")
    return problems


def _empty(lists: pa.ChunkedArray) -> pa.ChunkedArray:
    """Whether each list is empty or null."""
    return pc.fill_null(pc.equal(pc.list_value_length(lists), 0), True)


def check_offsets(rows: Iterable[dict[str, Any]], blobs: BlobStore) -> list[str]:
    """Each row's source byte range, normalized, must equal its text."""
    problems: list[str] = []
    cache: dict[str, bytes] = {}
    for r in rows:
        key = r["revision"]
        if key not in cache:
            try:
                cache[key] = blobs.get(r["tenant"], key)
            except Exception as e:
                problems.append(f"{r['id']}: source revision {key} unavailable: {e}")
                continue
        if r.get("parts"):  # Office rows cite zip parts and elements: read them back
            if not parts_match(cache[key], part_spans(r["parts"]), r["text"]):
                problems.append(
                    f"{r['id']}: its cited parts {describe(part_spans(r['parts']))} do not give its text"
                )
            continue
        if r.get("pages") or r["byte_start"] < 0:
            continue  # paginated (PDF) rows cite pages and bboxes, not bytes
        if not source_slice_matches(cache[key], r):
            problems.append(
                f"{r['id']}: source bytes [{r['byte_start']}, {r['byte_end']}) do not give its text"
            )
    return problems


def sample(rows: list[T], n: int, seed: str) -> list[T]:
    if len(rows) <= n:
        return rows
    return random.Random(seed).sample(rows, n)


def sample_positions(size: int, n: int, seed: str) -> list[int]:
    """The positions :func:`sample` picks from ``size`` rows (it draws positions, so the rows
    themselves need not be built)."""
    return random.Random(seed).sample(range(size), n) if size > n else list(range(size))


_OFFSET_COLUMNS = ["id", "tenant", "revision", "byte_start", "byte_end", "text", "pages", "content_type"]
NO_ACL = "coalesce(array_length(readers), 0) = 0 AND coalesce(array_length(groups), 0) = 0"
"""Rows that no reader and no group may see (a published row must name at least one)."""


KEY_COLUMNS = ["id", "doc_id", "revision"]
KEY_BATCH = 65_536
"""Rows per batch of verify's pass over the key columns."""


@dataclass(frozen=True)
class VerifyInputs:
    """What a published table is verified against: each listed document's revision, the
    documents quarantined (neither updated nor deleted: their old rows are not stale), the
    tenant, the vector dimension and how many rows' offsets are read back."""

    tenant: str
    dimension: int
    revisions: Mapping[str, str]
    quarantined: set[str]
    sample_size: int = 25


@dataclass(frozen=True)
class KeyChecks:
    """What :func:`key_checks` found on a table whose key pass passed: its rows and the ids
    sampled for the offset checks."""

    rows: int
    sampled_ids: tuple[str, ...]


def check_published(
    table: Any,
    tenant: str,
    dimension: int,
    revisions: Mapping[str, str],
    quarantined: set[str],
    blobs: BlobStore,
    sample_size: int = 25,
) -> tuple[list[str], dict[str, int]]:
    """Verify the live table against the run's listing (``revisions``: each listed document's
    revision): stale ids, ACL, dimension (:func:`key_checks`), then the offsets of the sampled
    rows against the source (:func:`offset_checks`)."""
    inputs = VerifyInputs(tenant, dimension, revisions, quarantined, sample_size)
    problems, found, stale = key_checks(table, inputs)
    offsets, checked = offset_checks(table, found.sampled_ids, blobs)
    return problems + offsets, {"rows": found.rows, "stale_rows": stale, "offsets_checked": checked}


def key_checks(table: Any, inputs: VerifyInputs) -> tuple[list[str], KeyChecks, int]:
    """The checks that read the whole table: problems, what was found, stale rows.

    What it reads is what the checks need, never the vectors: one streamed pass over the
    ``id``, ``doc_id`` and ``revision`` columns (:class:`KeyPass`: duplicates, stale rows,
    the sampled ids), two filtered counts (other tenants, rows without ACL) and the schema
    (vector dimension). Its memory follows ``KEY_BATCH``, not the table: reading the three
    columns whole and counting them in Arrow cost about 300 MB at 400,000 rows."""
    rows = int(table.count_rows())
    sample = sample_positions(rows, inputs.sample_size, str(table.version))
    keys = KeyPass(inputs.revisions, inputs.quarantined, sample)

    def scan() -> Iterable[pa.RecordBatch]:
        batches: Iterable[pa.RecordBatch] = (
            table.search().select(KEY_COLUMNS).limit(None).to_batches(KEY_BATCH)
        )
        return batches

    for batch in scan():
        keys.add(batch)
    problems: list[str] = []
    if keys.rows:
        problems.extend(keys.duplicates(scan))
        other = f"tenant IS NULL OR tenant != {sql_str(inputs.tenant)}"
        if int(table.count_rows(other)):
            found = table.search().where(other).select(["tenant"]).limit(None).to_arrow()
            names = sorted(set(found.column("tenant").to_pylist()), key=str)
            problems.append(f"rows of other tenants: {names}")
        no_acl = int(table.count_rows(NO_ACL))
        if no_acl:
            problems.append(f"{no_acl} rows without any reader or group")
        vtype = table.schema.field("vector").type
        if not isinstance(vtype, pa.FixedSizeListType) or vtype.list_size != inputs.dimension:
            problems.append(f"vector type {vtype} does not have dimension {inputs.dimension}")
    if keys.stale:
        problems.append(f"{keys.stale} stale rows (document gone or revision superseded)")
    return problems, KeyChecks(keys.rows, tuple(keys.sampled_ids())), keys.stale


def offset_checks(table: Any, ids: Iterable[str], blobs: BlobStore) -> tuple[list[str], int]:
    """The offsets of the rows with these ids against the stored source: problems, rows checked."""
    picked = _sampled_rows(table, list(ids))
    return check_offsets(picked, blobs), len(picked)


class KeyPass:
    """The key columns of a published table, taken one record batch at a time: rows, stale
    rows (a row whose document is neither listed at that revision nor quarantined, counted
    per ``(doc_id, revision)`` pair of the batch), the ids at the ``sample`` positions, and a
    64-bit hash of every id (nulls included), from which :meth:`duplicates` finds repeats."""

    id_hash: Callable[[str | None], int] = staticmethod(hash)

    def __init__(self, revisions: Mapping[str, str], quarantined: set[str], sample: list[int]) -> None:
        self._revisions, self._quarantined = revisions, quarantined
        self._wanted = sorted(sample)
        self._picked: list[str | None] = []
        self._hashes: list[np.ndarray] = []
        self.rows = self.stale = 0

    def add(self, batch: pa.RecordBatch) -> None:
        ids = batch.column(batch.schema.get_field_index("id"))
        self._hashes.append(np.fromiter((self.id_hash(i) for i in ids.to_pylist()), np.int64, len(ids)))
        while self._wanted and self._wanted[0] < self.rows + len(ids):
            self._picked.append(ids[self._wanted.pop(0) - self.rows].as_py())
        self.rows += len(ids)
        count = ("id", "count", pc.CountOptions(mode="all"))
        pairs = pa.Table.from_batches([batch]).group_by(["doc_id", "revision"], use_threads=False)
        grouped = pairs.aggregate([count])
        for doc_id, rev, n in zip(
            grouped.column("doc_id").to_pylist(),
            grouped.column("revision").to_pylist(),
            grouped.column("id_count").to_pylist(),
            strict=True,
        ):
            listed = doc_id in self._revisions
            if doc_id not in self._quarantined and (not listed or self._revisions[doc_id] != rev):
                self.stale += n

    def sampled_ids(self) -> list[str]:
        return sorted({i for i in self._picked if i is not None})

    def duplicates(self, rescan: Callable[[], Iterable[pa.RecordBatch]]) -> list[str]:
        """The duplicate-id problem, in order of first appearance. Only when two hashes are
        equal are the ids read again, and only those ids kept (a hash collision of two
        different ids is no duplicate)."""
        hashes = np.concatenate(self._hashes) if self._hashes else np.empty(0, np.int64)
        values, counts = np.unique(hashes, return_counts=True)
        suspects = set(values[counts > 1].tolist())
        if not suspects:
            return []
        seen: Counter[str | None] = Counter()
        for batch in rescan():
            for i in batch.column(batch.schema.get_field_index("id")).to_pylist():
                if self.id_hash(i) in suspects:
                    seen[i] += 1
        repeated = [i for i, n in seen.items() if n > 1]  # a Counter keeps first-seen order
        return [f"{len(repeated)} duplicate chunk ids, e.g. {repeated[0]}"] if repeated else []


def _sampled_rows(table: Any, ids: list[str]) -> list[dict[str, Any]]:
    """The offset columns of the rows with these ids."""
    if not ids:
        return []
    where = f"id IN ({', '.join(sql_str(i) for i in ids)})"
    rows: list[dict[str, Any]] = (
        table.search()
        .where(where)
        .select([c for c in [*_OFFSET_COLUMNS, "parts"] if c in table.schema.names])
        .limit(None)
        .to_arrow()
        .to_pylist()
    )
    return rows
