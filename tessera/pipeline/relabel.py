"""Metadata-only changes: a document's live rows relabelled, not rebuilt.

A document whose bytes, content type, URI and chunking profile are unchanged, but whose
filterable metadata changed (readers, groups, effective dates: its ``meta_hash``), has the
same chunks, texts and vectors as before. The listing names it ``relabel``; it is neither
downloaded, parsed, chunked nor embedded. The publish step reads its live rows (scoped by
``doc_id``) under the tenant's lock, after the plan's fencing check, rewrites only the
metadata columns from the listing, checks them like staged rows (an ACL on every row) and
commits them with the run's staged rows in the same single commit.

A change of URI or content type (which picks the parser) is not a relabel: the document is
parsed again, as any changed document is.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

import pyarrow as pa

from tessera.store.db import sql_str
from tessera.store.schema import micros
from tessera.types import SourceDocument

_IDS_PER_QUERY = 500
_KEY_COLUMNS = ["doc_id", "uri", "content_type"]


def live_rows(table: Any, doc_ids: Iterable[str], columns: Sequence[str] | None = None) -> pa.Table:
    """The live rows of ``doc_ids`` (all columns, or ``columns``), read by ``doc_id`` filter
    (a BTree index when the table has one), never the whole table."""
    ids = sorted(set(doc_ids))
    parts: list[pa.Table] = []
    for i in range(0, len(ids), _IDS_PER_QUERY):
        where = f"doc_id IN ({', '.join(sql_str(d) for d in ids[i : i + _IDS_PER_QUERY])})"
        query = table.search().where(where)
        if columns is not None:
            query = query.select(list(columns))
        parts.append(query.limit(None).to_arrow())
    if not parts:
        schema = table.schema if columns is None else pa.schema([table.schema.field(c) for c in columns])
        return schema.empty_table()
    return pa.concat_tables(parts)


def split_meta_only(
    table: Any | None, meta_only: Sequence[str], docs: Mapping[str, SourceDocument]
) -> tuple[list[str], list[str]]:
    """``(relabel, reparse)``: of the documents whose metadata alone changed, those whose live
    rows all have the listing's URI and content type, and the rest (parsed again)."""
    if table is None or not meta_only:
        return [], list(meta_only)
    rows = live_rows(table, meta_only, _KEY_COLUMNS)
    seen: dict[str, set[tuple[str, str]]] = {}
    for doc_id, uri, content_type in zip(*(rows.column(c).to_pylist() for c in _KEY_COLUMNS), strict=True):
        seen.setdefault(doc_id, set()).add((uri, content_type))
    relabel: list[str] = []
    reparse: list[str] = []
    for doc_id in meta_only:
        doc = docs[doc_id]
        same = seen.get(doc_id) == {(doc.uri, doc.content_type)}
        (relabel if same else reparse).append(doc_id)
    return relabel, reparse


def relabelled(
    table: Any, doc_ids: Iterable[str], docs: Mapping[str, SourceDocument], run_id: str, schema: pa.Schema
) -> pa.Table:
    """The live rows of ``doc_ids`` with the listing's metadata, in ``schema`` (a column the
    table lacks, from an older release, is null)."""
    rows = live_rows(table, doc_ids)
    if rows.num_rows == 0:
        return schema.empty_table()
    owners = [docs[d] for d in rows.column("doc_id").to_pylist()]
    values: dict[str, list[Any]] = {
        "readers": [list(d.readers) for d in owners],
        "groups": [list(d.groups) for d in owners],
        "effective_from_us": [micros(d.effective_from) for d in owners],
        "effective_to_us": [micros(d.effective_to) for d in owners],
        "modified_at_us": [micros(d.modified_at) for d in owners],
        "meta_hash": [d.meta_hash for d in owners],
        "acl_source": [d.acl_source or None for d in owners],
        "run_id": [run_id] * rows.num_rows,
    }
    columns = []
    for f in schema:
        if f.name in values:
            columns.append(pa.array(values[f.name], f.type))
        elif f.name in rows.schema.names:
            columns.append(rows.column(f.name).cast(f.type))
        else:
            columns.append(pa.nulls(rows.num_rows, f.type))
    return pa.Table.from_arrays(columns, schema=schema)
