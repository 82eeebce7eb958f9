"""Creating a chunk table's text and scalar indexes (:func:`tessera.store.indexes.ensure_indexes`
decides which; this builds them)."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor, wait
from typing import Any


def index_config(kind: str) -> Any:
    from lancedb.index import FTS, BTree, LabelList

    return {"fts": FTS(), "label_list": LabelList(), "btree": BTree()}[kind]


def _create(table: Any, creates: list[tuple[str, str]]) -> None:
    for column, kind in creates:
        table.create_index(column, config=index_config(kind), replace=True)


BESIDE_MAX_ROWS = 50_000
"""Tables of at most this many rows build their scalar indexes beside the full-text one."""


def create_beside_text(table: Any, creates: list[tuple[str, str]], rows: int) -> None:
    """Create the ``(column, kind)`` indexes of a table of ``rows`` rows, each a commit of its
    own (Lance rebases concurrent index commits onto each other).

    Up to ``BESIDE_MAX_ROWS`` rows the full-text index is built on this thread and the scalar
    ones meanwhile on another: Lance builds an FTS index on one core (0.21 of the 0.26 s all
    seven took at 8,000 rows, with ``num_workers`` 1, 2 or 4 alike), so on a second core the
    scalar builds cost no time (0.215-0.223 s for the seven against 0.247-0.285 s in turn).
    Larger tables build them in turn: at 400,000 rows the two threads saved 0.3 of 11 s but
    held +210 MB at their peak against +146-153 MB. An error in either is raised once both
    have ended (the text build's, with a note of the other's when both failed)."""
    text = [c for c in creates if c[1] == "fts"]
    rest = [c for c in creates if c[1] != "fts"]
    if not (text and rest) or rows > BESIDE_MAX_ROWS:
        _create(table, creates)
        return
    with ThreadPoolExecutor(1, thread_name_prefix="tessera-index") as pool:
        side = pool.submit(_create, table, rest)
        try:
            _create(table, text)
        except BaseException as e:
            wait([side])
            other = side.exception()
            if other is not None:
                e.add_note(f"the scalar index builds beside it failed too: {other!r}")
            raise
        side.result()
