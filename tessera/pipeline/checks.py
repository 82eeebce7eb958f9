"""Quality rules on staged rows and on the published index. Used before and after publish."""

from __future__ import annotations

import random
from collections.abc import Iterable
from typing import Any, TypeVar

import pyarrow as pa
import pyarrow.compute as pc

from tessera.parsing.office_locate import describe, part_spans, parts_match
from tessera.parsing.slices import source_slice_matches
from tessera.store.blobs import BlobStore
from tessera.store.db import sql_str
from tessera.types import SourceDocument

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


def check_published(
    table: Any,
    tenant: str,
    dimension: int,
    listing: dict[str, SourceDocument],
    quarantined: set[str],
    blobs: BlobStore,
    sample_size: int = 25,
) -> tuple[list[str], dict[str, int]]:
    """Verify the live table against the run's listing: stale ids, ACL, dimension, offsets.

    What it reads is what the checks need, never the vectors: the ``id``, ``doc_id`` and
    ``revision`` columns of every row (duplicates and stale rows), two filtered counts
    (other tenants, rows without ACL), the schema (vector dimension) and the full rows of
    the ``sample_size`` sampled ids only (offsets against the source)."""
    keys = table.search().select(["id", "doc_id", "revision"]).limit(None).to_arrow()
    problems: list[str] = []
    if keys.num_rows:
        problems.extend(duplicate_ids(keys.column("id")))
        other = f"tenant IS NULL OR tenant != {sql_str(tenant)}"
        if int(table.count_rows(other)):
            found = table.search().where(other).select(["tenant"]).limit(None).to_arrow()
            names = sorted(set(found.column("tenant").to_pylist()), key=str)
            problems.append(f"rows of other tenants: {names}")
        no_acl = int(table.count_rows(NO_ACL))
        if no_acl:
            problems.append(f"{no_acl} rows without any reader or group")
        vtype = table.schema.field("vector").type
        if not isinstance(vtype, pa.FixedSizeListType) or vtype.list_size != dimension:
            problems.append(f"vector type {vtype} does not have dimension {dimension}")
    stale = stale_rows(keys, listing, quarantined)
    if stale:
        problems.append(f"{stale} stale rows (document gone or revision superseded)")
    picked = _sampled_rows(table, keys, sample_size, str(table.version))
    problems.extend(check_offsets(picked, blobs))
    return problems, {"rows": keys.num_rows, "stale_rows": stale, "offsets_checked": len(picked)}


def duplicate_ids(ids: pa.ChunkedArray) -> list[str]:
    """The duplicate-id problem of a column of chunk ids (a null counts as an id)."""
    if pc.count_distinct(ids, mode="all").as_py() == len(ids):
        return []
    counts = pc.value_counts(ids)  # in order of first appearance
    repeated = counts.filter(pc.greater(counts.field("counts"), 1))
    return [f"{len(repeated)} duplicate chunk ids, e.g. {repeated.field('values')[0].as_py()}"]


def stale_rows(keys: pa.Table, listing: dict[str, SourceDocument], quarantined: set[str]) -> int:
    """Rows whose document is neither listed at that revision nor quarantined, counted per
    ``(doc_id, revision)`` pair (a document has a revision or two, not a row each)."""
    if keys.num_rows == 0:
        return 0
    count = ("id", "count", pc.CountOptions(mode="all"))
    pairs = keys.group_by(["doc_id", "revision"], use_threads=False).aggregate([count])
    stale = 0
    for doc_id, rev, n in zip(
        pairs.column("doc_id").to_pylist(),
        pairs.column("revision").to_pylist(),
        pairs.column("id_count").to_pylist(),
        strict=True,
    ):
        doc = listing.get(doc_id)
        if doc_id not in quarantined and (doc is None or doc.revision != rev):
            stale += n
    return stale


def _sampled_rows(table: Any, keys: pa.Table, n: int, seed: str) -> list[dict[str, Any]]:
    """The offset columns of ``n`` rows sampled by id (all rows when there are fewer)."""
    picked = sample_positions(keys.num_rows, n, seed)
    ids = sorted(set(keys.column("id").take(pa.array(picked, pa.int64())).to_pylist()))
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
