"""Candidate lists under the principal's prefilter: ids, scores and row ids, no row contents.

A dense or BM25 candidate query reads ``id``, ``dup_group``, its score and the ``_rowid`` (and
the vectors that rescoring needs); the columns of a hit are read afterwards for the few rows that
rank (``tessera.search.rows``). On 100k chunks, reading every column of 160 candidates took
more time than the vector search itself.

A dense top ``n`` is fetched ``n + 1`` deep: when the row after the cut scores as the last row
in it (a tie), or when the table holds sentence vectors (rescoring reorders the nearest chunks),
the list is fetched ``candidate_depth(n)`` deep instead and cut after sorting, so exact ties are
still decided by chunk id and never by the order the index returns them in. A BM25 top ``n`` is
fetched ``candidate_depth(n)`` deep in one query: BM25 scores tie far more often (equal term
counts in equal lengths; on the 100k-chunk benchmark every query tied at the cut), and one deep
query cost less than the shallow one plus the deep one it led to.
"""

from __future__ import annotations

import contextvars
import os
from collections.abc import Callable
from concurrent.futures import Future, ThreadPoolExecutor, wait
from typing import Any, TypeVar

import numpy as np

from tessera.search import flat
from tessera.search.dataset import column_names, dataset
from tessera.search.fusion import TIE, candidate_depth, row_score
from tessera.search.held_lexical import held_top
from tessera.search.lexical import flat_bm25
from tessera.search.masks import Allowed, claims_of, mask_for, scan_args
from tessera.search.options import row_columns
from tessera.search.scope import CHECKED, scope_of
from tessera.store.indexes import nearest

T = TypeVar("T")
U = TypeVar("U")
MAX_TIES = 1000
"""The deepest a dense list is fetched for rows tied at its cut (``MAX_CANDIDATES``)."""
_SENTENCES: dict[tuple[str, int], bool] = {}
"""(table uri, version) -> whether any row has sentence vectors (a version never changes)."""
_ROWS: dict[tuple[str, int], int] = {}
"""(table uri, version) -> rows (a version never changes)."""
_POOL: tuple[int, ThreadPoolExecutor] | None = None


def ordered(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Best score first; ties by chunk id, a sha256, so no copy of a repeated passage (the first
    one in a document, say) is favoured over another. Scores less than ``TIE`` below the best
    of their run are a tie: the same cosine computed by Lance and by numpy (``tessera.search.flat``),
    or in another order, differs in its last bits, and must not decide the order."""
    by_score = sorted(rows, key=lambda r: -float(r["_score"]))
    out: list[dict[str, Any]] = []
    start = 0
    while start < len(by_score):
        best, end = float(by_score[start]["_score"]), start + 1
        while end < len(by_score) and best - float(by_score[end]["_score"]) < TIE:
            end += 1
        out.extend(sorted(by_score[start:end], key=lambda r: str(r["id"])))
        start = end
    return out


def has_sentence_vectors(ds: Any) -> bool:
    """Whether any row of this dataset version has sentence vectors (remembered per version)."""
    if "sentence_vectors" not in column_names(ds):
        return False
    key = (str(ds.uri), int(ds.version))
    if key not in _SENTENCES:
        if len(_SENTENCES) > 256:
            _SENTENCES.clear()
        _SENTENCES[key] = int(ds.count_rows(filter="sentence_vectors IS NOT NULL")) > 0
    return _SENTENCES[key]


def table_rows(ds: Any) -> int:
    """Rows of this dataset version (remembered per version): the vector search's width
    grows with the table (:func:`tessera.store.indexes.ef_for`)."""
    key = (str(ds.uri), int(ds.version))
    if key not in _ROWS:
        if len(_ROWS) > 256:
            _ROWS.clear()
        _ROWS[key] = int(ds.count_rows())
    return _ROWS[key]


def _nearest(
    ds: Any, vector: list[float], where: str | Allowed, n: int, cols: list[str]
) -> list[dict[str, Any]]:
    held = _flat_rows(ds, where, cols)
    if held is not None:  # a small mask's rows, ranked exactly in memory
        return held.nearest(vector, n, cols)
    rows: list[dict[str, Any]] = (
        ds.scanner(
            columns=cols,
            nearest=nearest(vector, n, table_rows(ds)),
            with_row_id=True,
            disable_scoring_autoprojection=True,  # the score columns are asked for by name
            **scan_args(where),
        )
        .to_table()
        .to_pylist()
    )
    return rows


def dense(table: Any, vector: list[float], where: str, n: int) -> list[dict[str, Any]]:
    """Top ``n`` by the fused score of :mod:`tessera.search.fusion`: the ``candidate_depth(n)``
    nearest chunk vectors under the prefilter, each rescored from its stored vectors. A table
    without sentence vectors ranks by chunk vector (``1 - distance``, exact: the vector index
    re-ranks its candidates on the stored vectors, ``REFINE``), without reading the vectors."""
    ds = dataset(table)
    query = np.asarray(vector, np.float32)
    rescored = "sentence_vectors" in column_names(ds) and has_sentence_vectors(ds)
    cols = ["id", "dup_group", "vector"] if rescored else ["id", "dup_group"]

    def scored(depth: int, extra: list[str]) -> list[dict[str, Any]]:
        rows = checked(
            where, lambda f, more: _nearest(ds, vector, f, depth, [*cols, *extra, *more, "_distance"]), ds=ds
        )
        for r in rows:
            distance = float(r.pop("_distance"))
            vec = r.pop("vector", None)
            r["_score"] = (
                1.0 - distance if vec is None else row_score(query, vec, r.pop("sentence_vectors", None))
            )
        return rows

    if rescored:
        return _cut(scored(candidate_depth(n), ["sentence_vectors"]), n)
    rows = scored(n + 1, [])
    if _tied(rows, n):
        rows = scored(candidate_depth(n), [])  # a tie at the cut: decided by id, deeper
        if len(rows) == candidate_depth(n) and _tied(rows, n):
            rows = scored(MAX_TIES, [])  # ties run past the deep list: every one of them
    return _cut(rows, n)


def lexical(
    table: Any, query: str, where: str, n: int, column: str = "embedding_text"
) -> list[dict[str, Any]]:
    """Top ``n`` by BM25 under the prefilter; exact BM25 over the filtered rows (full rows,
    slower) while the table has no FTS index."""
    if not query.strip():
        return []

    ds = dataset(table)
    fts = {"query": query, "columns": [column]}

    def found(depth: int) -> list[dict[str, Any]]:
        def run(flt: str | Allowed, more: list[str]) -> list[dict[str, Any]]:
            cols = ["id", "dup_group", "_score", *more]
            known = _flat_rows(ds, flt, cols)
            hits = None if known is None else held_top(ds, fts, depth, known, table_rows(ds))
            if hits is None:
                hits = ds.scanner(
                    columns=["_score"] if known else cols,
                    full_text_query=fts,
                    with_row_id=True,
                    limit=depth,
                    disable_scoring_autoprojection=True,
                    **scan_args(flt),
                ).to_table()
            if known:  # the rows' columns from memory: reading them cost more than the ranking
                return known.lookup(hits.column("_rowid").to_numpy(), cols, {"_score": hits.column("_score")})
            rows: list[dict[str, Any]] = hits.to_pylist()
            return rows

        return checked(where, run, n, ds)

    try:
        rows = found(candidate_depth(n))  # deep at once: BM25 ties at the cut are the rule
    except ValueError as e:
        if "INVERTED index" not in str(e):
            raise
        columns = row_columns(table.schema.names)
        return flat_bm25(table, query, where, n, columns)  # no FTS index yet: exact, slower
    return _cut(rows, n)


def _flat_rows(ds: Any, restriction: str | Allowed, cols: list[str]) -> flat.FlatSet | None:
    """The mask's rows in memory when they are held (or due) and hold ``cols``."""
    held = flat.flat_set(ds, restriction) if isinstance(restriction, Allowed) else None
    return held if held is not None and held.serves(cols) else None


def checked(
    where: str,
    run: Callable[[str | Allowed, list[str]], list[dict[str, Any]]],
    top: int | None = None,
    ds: Any = None,
) -> list[dict[str, Any]]:
    """``run(restriction, extra columns)`` under the claims of an access filter, its rows
    checked against the rest of it (``tessera.search.scope``); under the whole filter (SQL)
    when a row fails or ``where`` is not an access filter. With ``ds`` the claims restrict the
    query as the row allowlist of that dataset version once it has one
    (``tessera.search.masks.mask_for``), else as SQL.

    ``top``: only the best ``top`` rows (``ordered``) are kept, and only they are checked: when
    they all pass they are the best ``top`` under the whole filter too (it admits a subset of
    the claims' rows, ranked in the same order), so a row failing further down (a deep BM25
    list holds more of them) costs no second query."""
    scope = scope_of(where)
    if scope is not None:
        claims = scope.claims if ds is None else claims_of(ds, scope)
        mask = None if ds is None else mask_for(ds, claims)
        rows = run(claims if mask is None else mask, CHECKED)
        rows = rows if top is None else _cut(rows, top)
        if all(scope.admits(r) for r in rows):
            for r in rows:
                for c in CHECKED:
                    del r[c]
            return rows
    rows = run(where, [])
    return rows if top is None else _cut(rows, top)


def _cut(rows: list[dict[str, Any]], n: int) -> list[dict[str, Any]]:
    return ordered(rows)[:n]


def _tied(rows: list[dict[str, Any]], n: int) -> bool:
    """Whether the last of ``rows`` ties with the ``n``-th best: rows beyond them may tie too."""
    return len(rows) > n and min(r["_score"] for r in rows) >= _cut(rows, n)[-1]["_score"] - TIE


def both(first: Callable[[], T], second: Callable[[], U]) -> tuple[T, U]:
    """Run two candidate queries at once (``second`` on a worker thread); LanceDB releases
    the GIL while it searches. A failure of either is raised, never dropped."""
    later: Future[U] = _pool().submit(contextvars.copy_context().run, second)  # the same search
    try:
        a = first()
    except BaseException:
        wait([later])
        raise
    return a, later.result()


def _pool() -> ThreadPoolExecutor:
    global _POOL
    if _POOL is None or _POOL[0] != os.getpid():  # a forked child gets its own worker
        _POOL = (os.getpid(), ThreadPoolExecutor(max_workers=2, thread_name_prefix="tessera-search"))
    return _POOL[1]
