"""The doctor's probes of one chunk table: indexes, queries, tags, and what a version holds.

Each returns a :class:`Finding` (verdict, text, repair, items); :mod:`tessera.store.doctor`
turns it into a check whose message names the table and the last good publication.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal

from tessera.errors import StoreDamaged
from tessera.store.active import ActivePointer
from tessera.store.db import (
    cache_table_name,
    chunks_table_name,
    error_text,
    is_storage_error,
    open_table,
    sql_str,
)
from tessera.store.health import Publication, sample_offsets
from tessera.store.indexes import SCALAR, index_state

WANTED = {"embedding_text": "fts", **SCALAR}
"""The indexes every non-empty chunk table has (the vector index only from a size on)."""


Verdict = Literal["ok", "repairable", "damaged"]


@dataclass(frozen=True)
class Finding:
    verdict: Verdict
    text: str
    repair: str = ""
    items: tuple[str, ...] = ()


def _storage(e: BaseException) -> str:
    if not is_storage_error(e):
        raise e
    return error_text(e)


def _literal(value: Any) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    return sql_str(str(value))


def _word(text: str) -> str:
    words = re.findall(r"[A-Za-z0-9]{3,}", text or "")
    return max(words, key=len) if words else "doctor"


def _sample(table: Any) -> dict[str, Any]:
    rows: list[dict[str, Any]] = table.search().limit(1).to_arrow().to_pylist()
    return rows[0]


def _probe(table: Any, column: str, kind: str, row: dict[str, Any]) -> None:
    """One query that reads index ``kind`` on ``column``."""
    if kind.upper() in ("FTS", "INVERTED"):
        table.search(_word(row.get(column) or ""), query_type="fts", fts_columns=column).limit(1).to_arrow()
    elif column == "vector" or "IVF" in kind.upper() or "HNSW" in kind.upper():
        table.search(row[column], vector_column_name=column).limit(1).select(["id", "_distance"]).to_arrow()
    elif kind.upper() in ("LABELLIST", "LABEL_LIST"):
        values = row.get(column) or ["doctor"]
        table.search().where(f"array_has_any({column}, [{_literal(values[0])}])").select(["id"]).limit(
            1
        ).to_arrow()
    else:
        value = row.get(column)
        where = f"{column} IS NULL" if value is None else f"{column} = {_literal(value)}"
        table.search().where(where).select(["id"]).limit(1).to_arrow()


def index_check(table: Any, rows: int) -> Finding:
    """Wanted indexes present, none stale (unindexed rows), each one answering a query."""
    if rows == 0:
        return Finding("ok", "empty: no indexes needed")
    try:
        state = index_state(table)
        names = {idx.columns[0]: idx.name for idx in table.list_indices()}
        row = _sample(table)
    except Exception as e:
        return Finding("repairable", f"index metadata unreadable: {_storage(e)}", "rebuild-indexes")
    missing = sorted(set(WANTED) - set(state))
    stale = sorted(c for c, (_, unindexed) in state.items() if unindexed > 0)
    unusable: list[str] = []
    first = ""
    for column, (kind, _) in sorted(state.items()):
        try:
            _probe(table, column, kind, row)
        except Exception as e:
            first = first or _storage(e)
            unusable.append(names[column])
    if not (missing or stale or unusable):
        return Finding(
            "ok", f"{len(state)} indexes present, current and answering ({', '.join(sorted(state))})"
        )
    parts = [f"missing {missing}"] * bool(missing) + [f"stale {stale}"] * bool(stale)
    parts += [f"unusable {unusable} (first error: {first})"] * bool(unusable)
    return Finding("repairable", ", ".join(parts), "rebuild-indexes", tuple(unusable))


def search_check(table: Any, rows: int) -> Finding:
    """One filtered vector query and one filtered FTS query find the row they were built from."""
    if rows == 0:
        return Finding("ok", "empty: nothing to search")
    try:
        row = _sample(table)
        where = f"doc_id = {sql_str(row['doc_id'])}"
        near = (
            table.search(row["vector"], vector_column_name="vector")
            .distance_type("cosine")
            .where(where, prefilter=True)
            .limit(50)
            .select(["id", "_distance"])  # the score named: no auto-projection warning
            .to_arrow()
        )
        word = _word(row.get("embedding_text") or "")
        fts = (
            table.search(word, query_type="fts", fts_columns="embedding_text")
            .where(where, prefilter=True)
            .limit(50)
            .select(["id", "_score"])
            .to_arrow()
        )
    except Exception as e:
        if isinstance(e, ValueError) and "INVERTED index" in str(e):
            return Finding("repairable", "no full-text index: lexical search falls back to a scan")
        return Finding("damaged", f"a query failed: {_storage(e)}")
    if row["id"] not in near.column("id").to_pylist():
        return Finding("damaged", "a filtered vector query did not find the row it was built from")
    if not fts.num_rows:
        return Finding("damaged", f"a filtered FTS query for {word!r} found nothing in the row that holds it")
    return Finding("ok", f"a filtered vector query and an FTS query ({word!r}) found row {row['id'][:12]}")


def tag_check(table: Any, versions: list[int], pubs: list[Publication], lost: set[Publication]) -> Finding:
    """Every publication's tag resolves to its version. A publication whose version and tag are
    both gone was pruned by maintenance (which deletes a run tag before its version, and may
    prune between an operator's old tag and the last versions), which is fine; so are
    publications a re-point left behind. A tag that outlives its version is damage."""
    try:
        tags = {name: int(t["version"]) for name, t in table.tags.list().items()}
    except Exception as e:
        return Finding("damaged", f"tags unreadable: {_storage(e)}")
    latest, have = int(table.version), set(versions)
    retag: list[str] = []
    broken: list[str] = []
    pruned = 0
    for p in pubs:
        if p in lost or p.version > latest:  # left behind, or a lost version (chunks.latest)
            continue
        at = tags.get(p.tag) if p.tag else p.version
        if p.version not in have:
            if at is None:
                pruned += 1
            else:
                broken.append(f"{p.label()}: its version is gone")
        elif at is None:
            retag.append(f"{p.tag}@{p.version}")
        elif at != p.version:
            broken.append(f"{p.label()}: tag {p.tag} points at version {at}")
    kept = len(pubs) - pruned - len(lost)
    if broken:
        return Finding("damaged", "; ".join(broken))
    if retag:
        return Finding("repairable", f"tags missing for versions that exist: {retag}", "retag", tuple(retag))
    extra = f", {pruned} pruned by maintenance" if pruned else ""
    extra += f", {len(lost)} left behind by a re-point" if lost else ""
    return Finding("ok", f"{kept} publication tags resolve{extra}")


def content(reopen: Callable[[], Any], version: int) -> list[tuple[str, str, str]]:
    """What ``version`` holds: its (id, checksum, meta_hash) rows, sorted (read on a new handle)."""
    table = reopen()
    table.checkout(version)
    data = table.search().select(["id", "checksum", "meta_hash"]).limit(None).to_arrow()
    return sorted(zip(*(data.column(c).to_pylist() for c in ("id", "checksum", "meta_hash")), strict=True))


def cache_check(db: Any, tenant: str, model_key: str, sample_rows: int) -> Finding:
    """The embedding cache opens, its key column reads in full and a spread sample whole."""
    try:
        cache = open_table(db, cache_table_name(tenant, model_key))
        if cache is None:
            return Finding("ok", "no cached embeddings yet")
        rows, versions = int(cache.count_rows()), len(cache.list_versions())
        keys = cache.search().select(["key"]).limit(None).to_arrow().num_rows
        if offsets := sample_offsets(keys, sample_rows):
            cache.take_offsets(offsets).to_arrow()
    except Exception as e:
        why = e.problem if isinstance(e, StoreDamaged) else _storage(e)
        return Finding("damaged", f"unreadable (a cache: dropping it only costs re-embedding): {why}")
    if keys != rows:
        return Finding("damaged", f"count_rows says {rows}, the key column has {keys}")
    return Finding("ok", f"{rows} vectors, {versions} versions readable")


def active_check(db: Any, tenant: str) -> Finding:
    """The active pointer reads, and the model it names still has its table."""
    try:
        active = ActivePointer(db, tenant).get()
        if active is None:
            return Finding("ok", "no active model yet (the configured one serves)")
        served = open_table(db, chunks_table_name(tenant, active.model_key))
    except Exception as e:
        why = e.problem if isinstance(e, StoreDamaged) else _storage(e)
        return Finding("damaged", f"the active pointer or its table is unreadable: {why}")
    if served is None:
        return Finding("damaged", f"points at model {active.model_key}, whose table is gone")
    return Finding("ok", f"serves model {active.model_key} (since run {active.run_id})")
