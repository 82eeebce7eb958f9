"""Quality rules on staged rows and on the published index. Used before and after publish."""

from __future__ import annotations

import random
from collections import Counter
from collections.abc import Iterable, Mapping
from typing import Any

import pyarrow as pa

from tessera.offsets import normalize_text_bytes
from tessera.parsing.base import slice_matches, source_encoding
from tessera.store.blobs import BlobStore
from tessera.types import SourceDocument


def source_slice_text(raw: bytes, byte_start: int, byte_end: int) -> str:
    """The normalized text of a source byte range (text formats)."""
    return normalize_text_bytes(raw[byte_start:byte_end])[0]


def source_slice_matches(raw: bytes, row: Mapping[str, Any]) -> bool:
    """Whether a row's source byte range gives its text, by the rules of its format."""
    return slice_matches(row.get("content_type"), raw, row["byte_start"], row["byte_end"], row["text"])


def decode_slice(raw: bytes, byte_start: int, byte_end: int, content_type: str | None) -> str:
    """A source byte range as text for display, in the document's own encoding."""
    return raw[byte_start:byte_end].decode(source_encoding(content_type, raw), "replace")


def check_rows(rows: pa.Table, tenant: str, dimension: int) -> list[str]:
    """Problems in a set of chunk rows: ids, tenant, ACL, vectors."""
    problems: list[str] = []
    if rows.num_rows == 0:
        return problems
    ids = rows.column("id").to_pylist()
    dupes = [i for i, n in Counter(ids).items() if n > 1]
    if dupes:
        problems.append(f"{len(dupes)} duplicate chunk ids, e.g. {dupes[0]}")
    foreign = {t for t in rows.column("tenant").to_pylist() if t != tenant}
    if foreign:
        problems.append(f"rows of other tenants: {sorted(foreign)}")
    no_acl = sum(
        1
        for r, g in zip(rows.column("readers").to_pylist(), rows.column("groups").to_pylist(), strict=True)
        if not r and not g
    )
    if no_acl:
        problems.append(f"{no_acl} rows without any reader or group")
    vtype = rows.schema.field("vector").type
    if not isinstance(vtype, pa.FixedSizeListType) or vtype.list_size != dimension:
        problems.append(f"vector type {vtype} does not have dimension {dimension}")
    return problems


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
        if r.get("pages") or r["byte_start"] < 0:
            continue  # paginated (PDF) rows cite pages and bboxes, not bytes
        if not source_slice_matches(cache[key], r):
            problems.append(
                f"{r['id']}: source bytes [{r['byte_start']}, {r['byte_end']}) do not give its text"
            )
    return problems


def sample(rows: list[dict[str, Any]], n: int, seed: str) -> list[dict[str, Any]]:
    if len(rows) <= n:
        return rows
    return random.Random(seed).sample(rows, n)


def check_published(
    table: Any,
    tenant: str,
    dimension: int,
    listing: dict[str, SourceDocument],
    quarantined: set[str],
    blobs: BlobStore,
    sample_size: int = 25,
) -> tuple[list[str], dict[str, int]]:
    """Verify the live table against the run's listing: stale ids, ACL, dimension, offsets."""
    data = table.to_arrow()
    problems = check_rows(data, tenant, dimension)
    stale = 0
    for doc_id, rev in zip(
        data.column("doc_id").to_pylist(), data.column("revision").to_pylist(), strict=True
    ):
        doc = listing.get(doc_id)
        if doc_id not in quarantined and (doc is None or doc.revision != rev):
            stale += 1
    if stale:
        problems.append(f"{stale} stale rows (document gone or revision superseded)")
    cols = ["id", "tenant", "revision", "byte_start", "byte_end", "text", "pages", "content_type"]
    picked = sample(data.select(cols).to_pylist(), sample_size, seed=str(table.version))
    problems.extend(check_offsets(picked, blobs))
    return problems, {"rows": data.num_rows, "stale_rows": stale, "offsets_checked": len(picked)}
