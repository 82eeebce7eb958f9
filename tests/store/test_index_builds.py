"""A small table's scalar indexes are built on a second thread while the full-text index builds
on the caller's; the indexes are the same as built in turn, every row in each, and an error on
either thread is raised only once both builds have ended."""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import lancedb
import pytest

from tessera.store import index_builds
from tessera.store.index import NEVER_VECTOR
from tessera.store.indexes import ensure_indexes
from tests.store.test_index_segments import _fts, _rows

SCALAR_QUERY = "doc_id = 'd7' OR dup_group = 'g40' OR array_has_any(readers, ['u1'])"


class Spy:
    """A table that records which thread asked for each index (and can fail one)."""

    def __init__(self, table: Any, fail: str = "") -> None:
        self._table, self.fail = table, fail
        self.threads: dict[str, str] = {}
        self.lock = threading.Lock()

    def create_index(self, column: str, **kw: Any) -> None:
        with self.lock:
            self.threads[column] = threading.current_thread().name
        if column == self.fail:
            raise RuntimeError(f"no index on {column}")
        self._table.create_index(column, **kw)

    def __getattr__(self, name: str) -> Any:
        return getattr(self._table, name)


def _indexed(table: Any) -> dict[str, int]:
    """Unindexed rows per indexed column."""
    return {i.columns[0]: int(table.index_stats(i.name).num_unindexed_rows) for i in table.list_indices()}


def _scalar_hits(table: Any) -> list[str]:
    return sorted(table.search().where(SCALAR_QUERY).select(["id"]).limit(None).to_arrow()["id"].to_pylist())


def test_scalar_indexes_build_beside_the_text_index_and_equal_those_built_in_turn(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    db = lancedb.connect(str(tmp_path))
    beside = Spy(db.create_table("beside", _rows(0, 600)))
    assert set(ensure_indexes(beside, NEVER_VECTOR).values()) == {"created"}
    main = threading.current_thread().name
    assert beside.threads.pop("embedding_text") == main
    assert len(beside.threads) == 6 and all(t.startswith("tessera-index") for t in beside.threads.values())

    monkeypatch.setattr(index_builds, "BESIDE_MAX_ROWS", 599)  # one row too many: in turn
    in_turn = Spy(db.create_table("in_turn", _rows(0, 600)))
    assert set(ensure_indexes(in_turn, NEVER_VECTOR).values()) == {"created"}
    assert set(in_turn.threads.values()) == {main} and len(in_turn.threads) == 7

    assert _indexed(beside) == _indexed(in_turn) == dict.fromkeys(_indexed(in_turn), 0)
    assert len(_indexed(beside)) == 7
    for query in ("zyzzyva", "lance quorum", "row599"):
        assert _fts(beside, query) == _fts(in_turn, query) and _fts(beside, query)
    assert _scalar_hits(beside) == _scalar_hits(in_turn) and _scalar_hits(beside)
    # the next publish folds into what was built beside, as into what was built in turn
    for table in (beside, in_turn):
        table.add(_rows(600, 640))
        assert set(ensure_indexes(table, NEVER_VECTOR).values()) == {"updated"}
    assert _fts(beside, "row620") == _fts(in_turn, "row620") and _fts(beside, "row620")


@pytest.mark.parametrize("fail", ["doc_id", "embedding_text"])
def test_a_failed_build_on_either_thread_is_raised_once_both_ended(tmp_path: Path, fail: str) -> None:
    table = Spy(lancedb.connect(str(tmp_path)).create_table("t", _rows(0, 300)), fail=fail)
    with pytest.raises(Exception, match=f"building indexes failed: no index on {fail}"):
        ensure_indexes(table, NEVER_VECTOR)
    built = set(_indexed(table))
    scalar = {"readers", "groups", "effective_from_us", "effective_to_us", "doc_id", "dup_group"}
    if fail == "doc_id":  # the text index finished on its thread before the side's error was raised
        assert "embedding_text" in built and "doc_id" not in built
    else:  # every scalar build on the other thread finished before the text build's error was raised
        assert built == scalar
    again = ensure_indexes(Spy(table._table), NEVER_VECTOR)  # the next publish builds what is missing
    assert again == dict.fromkeys((scalar | {"embedding_text"}) - built, "created") and fail in again
    assert _indexed(table) == dict.fromkeys(scalar | {"embedding_text"}, 0)


def test_when_both_threads_fail_the_text_error_is_raised_with_a_note_of_the_other(tmp_path: Path) -> None:
    table = Spy(lancedb.connect(str(tmp_path)).create_table("t", _rows(0, 100)), fail="embedding_text")
    table.create_index = _failing(table.create_index)  # type: ignore[method-assign]
    with pytest.raises(RuntimeError, match="no index on embedding_text") as caught:
        index_builds.create_beside_text(table, [("embedding_text", "fts"), ("groups", "label_list")], 100)
    assert any("failed too" in note and "groups" in note for note in caught.value.__notes__)


def _failing(create: Any) -> Any:
    def both(column: str, **kw: Any) -> None:
        if column == "groups":
            raise RuntimeError("no index on groups")
        create(column, **kw)

    return both
