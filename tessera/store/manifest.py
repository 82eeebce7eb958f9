"""What is live in a tenant's table, per document: the manifest a run diffs its listing against.

Read a batch at a time from the table itself (the source of truth), so a run holds one state per
document, not the table's six manifest columns for every row at once: at 400,000 rows the
whole-column read and its grouping took the listing of a no-op from 159 to 487 MB. A state
shares its configuration, policy and parser strings with every other document that has the
same ones.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

import pyarrow as pa

MANIFEST_COLUMNS = ("doc_id", "revision", "meta_hash", "chunking_config_hash")
OPTIONAL_COLUMNS = ("acl_source", "parser_version")
"""Columns older tables lack until their next publish (read as "")."""
BATCH_ROWS = 16_384


@dataclass(frozen=True, slots=True)
class DocState:
    revision: str
    meta_hash: str
    config_hash: str
    chunks: int
    acl_source: str = ""
    parser_version: str = ""
    """The parser version its rows were parsed with ("" for a table without the column)."""


def manifest_columns(schema: pa.Schema) -> list[str]:
    """The manifest columns ``schema`` has, in the order :func:`fold_manifest` reads them."""
    return [*MANIFEST_COLUMNS, *(c for c in OPTIONAL_COLUMNS if c in schema.names)]


def fold_manifest(batches: Iterable[pa.RecordBatch]) -> dict[str, DocState]:
    """Per document, in row order: its last non-null value of each column (Arrow's ``last``,
    "" when every row is null) and its row count.

    Each batch is grouped in Arrow and folded into the states of the batches before it, so a
    document whose rows span batches counts them all and keeps the values of its last row."""
    states: dict[str, DocState] = {}
    shared: dict[str, str] = {}
    fields = [*MANIFEST_COLUMNS[1:], *OPTIONAL_COLUMNS]
    for batch in batches:
        if batch.num_rows == 0:
            continue
        data = pa.Table.from_batches([batch])
        for c in OPTIONAL_COLUMNS:
            if c not in data.column_names:
                data = data.append_column(c, pa.nulls(data.num_rows, pa.string()))
        per_doc = data.group_by("doc_id", use_threads=False).aggregate(
            [*((c, "last") for c in fields), ("doc_id", "count")]
        )
        columns: list[list[Any]] = [per_doc.column(f"{c}_last").to_pylist() for c in fields]
        ids, counts = per_doc.column("doc_id").to_pylist(), per_doc.column("doc_id_count").to_pylist()
        for doc_id, rev, meta, cfg, src, parser, n in zip(ids, *columns, counts, strict=True):
            before = states.get(doc_id)
            if before is not None:  # "last" skips nulls: a null here keeps the earlier batch's value
                rev, meta, cfg = (
                    _or(rev, before.revision),
                    _or(meta, before.meta_hash),
                    _or(cfg, before.config_hash),
                )
                src, parser = _or(src, before.acl_source), _or(parser, before.parser_version)
                n += before.chunks
            states[doc_id] = DocState(
                rev or "",
                meta or "",
                shared.setdefault(cfg or "", cfg or ""),
                n,
                shared.setdefault(src or "", src or ""),
                shared.setdefault(parser or "", parser or ""),
            )
    return states


def _or(value: str | None, before: str) -> str:
    return before if value is None else value


def commit_key(table: Any | None) -> str:
    """The identity of the committed version ``table`` reads ("" for no table): its name,
    version number and commit time (to the microsecond, from the loaded manifest).

    Equal keys mean the same commit, so the same rows: every write, restore or index change is
    a new version, and a table dropped and built again up to the same version number has other
    commit times. The publish fences on it to skip reading the manifest again when nothing
    committed since the run planned (:mod:`tessera.pipeline.publish`). Not the commit's
    transaction id: pylance 14 cannot decode the transaction of an index rewrite (compaction),
    ``read_transaction`` raises ``TypeError`` there."""
    if table is None:
        return ""
    version = table.to_lance().get_version()  # from the loaded manifest: nothing read from storage
    return f"{table.name}@{version['version']}:{version['timestamp'].isoformat()}"


def read_manifest(table: Any) -> dict[str, DocState]:
    """The manifest of a LanceDB table, streamed in batches of ``BATCH_ROWS`` in row order."""
    reader = table.search().select(manifest_columns(table.schema)).limit(None).to_batches(BATCH_ROWS)
    return fold_manifest(reader)
