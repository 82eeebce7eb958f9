"""Stages 3, 4, 6, 7 and 8 from the live rows of the document: which chunks cover the target,
whether they are embedded, who may read them, when they are in effect, and by which model.

Coverage is by char range (``Chunk.start``/``end`` index the parsed text of the row's revision)
when the rows are of the revision the target was located in; rows of another revision (the
index is behind the source, or the new revision is quarantined) cover the target when their
text holds its words.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

from tessera.diagnose.document import Parsed, Target, find_text
from tessera.diagnose.report import AccessEvidence, ChunkCover, DateEvidence
from tessera.search.principal import Principal
from tessera.store.db import sql_str
from tessera.store.schema import micros
from tessera.types import ALWAYS, NEVER

_COLUMNS = [
    "id", "doc_id", "revision", "start", "end", "byte_start", "byte_end", "position", "token_count",
    "flags", "model_version", "readers", "groups", "acl_source", "effective_from_us", "effective_to_us",
    "vector", "text",
]  # fmt: skip


def doc_rows(table: Any | None, doc_id: str) -> list[dict[str, Any]]:
    """Every live row of the document, in document order (no ACL: operator evidence)."""
    if table is None:
        return []
    cols = [c for c in _COLUMNS if c in table.schema.names]
    query = table.search().where(f"doc_id = {sql_str(doc_id)}").select(cols).limit(None)
    rows: list[dict[str, Any]] = query.to_arrow().to_pylist()
    return sorted(rows, key=lambda r: (r["position"] or 0, r["start"] or 0, r["id"]))


def _time(us: int | None, missing: datetime) -> datetime:
    return missing if us is None else datetime.fromtimestamp(us / 1_000_000, UTC)


def _embedded(vector: Sequence[float] | None, dimension: int) -> bool:
    if vector is None or len(vector) != dimension:
        return False
    values = [float(v) for v in vector]
    return all(math.isfinite(v) for v in values) and any(v != 0.0 for v in values)


def _cover(row: dict[str, Any], whole: bool, dimension: int) -> ChunkCover:
    return ChunkCover(
        chunk_id=row["id"],
        position=int(row["position"] or 0),
        start=int(row["start"]),
        end=int(row["end"]),
        byte_start=int(row["byte_start"]),
        byte_end=int(row["byte_end"]),
        token_count=int(row["token_count"] or 0),
        flags=tuple(row["flags"] or ()),
        whole=whole,
        embedded=_embedded(row.get("vector"), dimension),
        model_version=row["model_version"] or "",
        readers=tuple(row["readers"] or ()),
        groups=tuple(row["groups"] or ()),
        acl_source=row.get("acl_source") or "",
        effective_from=_time(row["effective_from_us"], NEVER),  # a null bound admits nothing
        effective_to=_time(row["effective_to_us"], ALWAYS),
    )


def covering(
    rows: list[dict[str, Any]],
    target: Target,
    parsed: Parsed | None,
    revision: str | None,
    dimension: int,
) -> tuple[ChunkCover, ...]:
    """The rows that cover the target; ``revision``: the one ``parsed`` was parsed from."""
    if target.whole_document:
        return tuple(_cover(r, True, dimension) for r in rows)
    span = parsed.span if parsed is not None else None
    out: list[ChunkCover] = []
    for r in rows:
        lo, hi = int(r["start"]), int(r["end"])
        if span is not None and r["revision"] == revision:
            if lo < span[1] and hi > span[0]:
                out.append(_cover(r, lo <= span[0] and hi >= span[1], dimension))
        elif target.chunk is not None and r["revision"] == target.chunk[0]:
            c0, c1 = target.chunk[1], target.chunk[2]
            if lo < c1 and hi > c0:
                out.append(_cover(r, lo <= c0 and hi >= c1, dimension))
        else:
            text = parsed.text if parsed is not None else (target.expect or "")
            if not text and target.chunk is not None:
                text = target.chunk[3]
            if text.strip() and find_text(r["text"] or "", text) is not None:
                out.append(_cover(r, True, dimension))
    return tuple(out)


def access(principal: Principal | None, user: str, covers: Sequence[ChunkCover]) -> AccessEvidence:
    """Which covering chunks the principal may read, what grants it, which policy decided."""
    rule = ", ".join(sorted({c.acl_source or "unrecorded" for c in covers}))
    if principal is None:
        return AccessEvidence(user, False, (), (), "", rule)
    readable: list[str] = []
    matched = ""
    for c in covers:
        if principal.user in c.readers:
            readable.append(c.chunk_id)
            matched = matched or f"reader {principal.user}"
        elif common := sorted(set(principal.groups) & set(c.groups)):
            readable.append(c.chunk_id)
            matched = matched or f"group {common[0]}"
    return AccessEvidence(user, True, principal.groups, tuple(readable), matched, rule)


def in_effect(covers: Sequence[ChunkCover], readable: Sequence[str], as_of: datetime) -> DateEvidence:
    """The readable covering chunks (every covering chunk when none is readable: evidence for
    the operator) in effect at ``as_of`` (``valid_from <= as_of < valid_to``, compared in
    microseconds as the search filter does)."""
    t = micros(as_of)
    pool = [c for c in covers if c.chunk_id in readable] or list(covers)
    ok = tuple(c.chunk_id for c in pool if micros(c.effective_from) <= t < micros(c.effective_to))
    return DateEvidence(as_of, ok)
