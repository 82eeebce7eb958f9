"""The bounded append: one commit whatever the number of files, and a handle that follows it."""

from __future__ import annotations

from typing import Any

import lance
import pyarrow as pa
import pytest

import tessera.store.append as append_module
from tessera.store.append import append_rows
from tessera.store.db import connect


def _reader(start: int, n: int, batch: int = 7) -> pa.RecordBatchReader:
    ids = list(range(start, start + n))
    table = pa.table({"id": pa.array(ids, pa.int64()), "text": pa.array([f"row {i}" for i in ids])})
    return pa.RecordBatchReader.from_batches(table.schema, table.to_batches(max_chunksize=batch))


def _table(tmp_path: Any) -> Any:
    db = connect(str(tmp_path / "db"))
    return db.create_table("t", schema=pa.schema([("id", pa.int64()), ("text", pa.string())]))


def test_rows_past_the_file_bound_land_in_one_commit_in_several_files(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(append_module, "ROWS_PER_FILE", 10)
    table = _table(tmp_path)
    before = table.version
    append_rows(table, _reader(0, 45))
    assert table.version == before + 1  # one commit, and the handle is at it
    assert len(table.to_lance().get_fragments()) == 5
    assert sorted(table.to_arrow().column("id").to_pylist()) == list(range(45))
    append_rows(table, _reader(45, 3))  # a later append adds to what is there
    assert table.count_rows() == 48 and table.version == before + 2


def test_a_reply_lost_after_the_commit_leaves_the_handle_at_the_commit(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The caller's retry counts the rows on this handle: a stale one would append twice."""
    table = _table(tmp_path)
    real = lance.write_dataset

    def commit_then_fail(*a: Any, **k: Any) -> Any:
        real(*a, **k)
        raise OSError("503 Service Unavailable")

    monkeypatch.setattr(lance, "write_dataset", commit_then_fail)
    with pytest.raises(OSError, match="503"):
        append_rows(table, _reader(0, 4))
    assert table.count_rows() == 4


def test_a_failed_write_commits_nothing(tmp_path: Any) -> None:
    table = _table(tmp_path)
    before = table.version
    bad = pa.RecordBatchReader.from_batches(
        pa.schema([("other", pa.int64())]), [pa.record_batch({"other": pa.array([1])})]
    )
    with pytest.raises(Exception):  # noqa: B017 - Lance's own error for a foreign schema
        append_rows(table, bad)
    assert table.version == before and table.count_rows() == 0
