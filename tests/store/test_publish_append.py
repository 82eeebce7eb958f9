"""A publish whose documents have no live rows is a streamed append (one commit): rows are not
duplicated by a retry after it committed, and documents with live rows still merge."""

from __future__ import annotations

from typing import Any

import pyarrow as pa
import pytest

from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tessera.store.schema import chunk_schema


def _rows(doc_id: str, n: int, checksum: str = "c") -> pa.Table:
    rows = []
    for i in range(n):
        row: dict[str, Any] = {f.name: None for f in chunk_schema(4)}
        row.update(
            id=f"{doc_id}-{i}", tenant="acme", doc_id=doc_id, revision="r", checksum=f"{checksum}{i}",
            meta_hash="m", vector=[float(i), 0.0, 0.0, 1.0], text=f"{doc_id} {checksum} {i}",
        )  # fmt: skip
        rows.append(row)
    return pa.Table.from_pylist(rows, schema=chunk_schema(4))


def _ids(index: TenantIndex) -> list[str]:
    table = index.table()
    assert table is not None
    return sorted(table.search().select(["id"]).limit(None).to_arrow().column("id").to_pylist())


def test_new_documents_are_appended_in_one_commit_and_live_ones_merged(tmp_path: Any) -> None:
    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    first = index.publish(_rows("a.md", 3), {"a.md"}, "r1", "h")
    assert (first.inserted, first.updated, first.deleted) == (3, 0, 0)
    # a new document beside a live one: appended, the live one untouched, one commit
    second = index.publish(_rows("b.md", 2), {"b.md"}, "r2", "h")
    assert (second.inserted, second.updated, second.deleted) == (2, 0, 0)
    assert _ids(index) == ["a.md-0", "a.md-1", "a.md-2", "b.md-0", "b.md-1"]
    # a live document changes: merged (one row updated, one deleted), never appended twice
    third = index.publish(_rows("a.md", 2, checksum="new"), {"a.md"}, "r3", "h")
    assert (third.inserted, third.updated, third.deleted) == (0, 2, 1)
    assert _ids(index) == ["a.md-0", "a.md-1", "b.md-0", "b.md-1"]
    # a live document and a new one in the same run: the merge takes both
    fourth = index.publish(
        pa.concat_tables([_rows("b.md", 1), _rows("c.md", 1)]), {"b.md", "c.md"}, "r4", "h"
    )
    assert (fourth.inserted, fourth.deleted) == (1, 1)
    assert _ids(index) == ["a.md-0", "a.md-1", "b.md-0", "c.md-0"]


def test_a_retry_after_an_append_that_committed_adds_nothing(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The store throttles the reply of an append that went through: the retry sees the rows
    (so it merges, and every checksum matches) instead of appending a second copy."""
    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    index.publish(_rows("a.md", 1), {"a.md"}, "r1", "h")
    import tessera.store.index as index_module
    from tessera.store.append import append_rows

    calls: list[int] = []

    def append_then_throttle(table: Any, data: Any) -> None:
        append_rows(table, data)
        calls.append(1)
        if len(calls) == 1:
            raise OSError("503 Service Unavailable <Code>SlowDown</Code>")

    monkeypatch.setattr(index_module, "append_rows", append_then_throttle)
    result = index.publish(_rows("b.md", 3), {"b.md"}, "r2", "h")
    assert result.committed and len(calls) == 1  # the second attempt merged instead
    assert _ids(index) == ["a.md-0", "b.md-0", "b.md-1", "b.md-2"]


def test_indexes_throttled_after_the_commit_are_retried_then_typed(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Found by the throttled-store contention test: a 503 while building indexes after the
    commit ended the run with an untyped PublishError. It is retried, and a store that keeps
    throttling is a retryable TransientStoreError naming the live version."""
    import tessera.store.index as index_module
    from tessera.errors import PublishError, TransientStoreError
    from tessera.store.indexes import ensure_indexes
    from tessera.store.retry import retrying

    monkeypatch.setattr(index_module, "retrying", lambda fn: retrying(fn, sleep=lambda _s: None))
    failures = [2]

    def throttled(table: Any, vector_min_rows: int = 50_000, check_recall: bool = True) -> dict[str, str]:
        if failures[0] > 0:
            failures[0] -= 1
            raise PublishError("building indexes failed") from OSError("503 Service Unavailable SlowDown")
        return ensure_indexes(table, vector_min_rows, check_recall)

    monkeypatch.setattr(index_module, "ensure_indexes", throttled)
    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    assert index.publish(_rows("a.md", 2), {"a.md"}, "r1", "h").committed  # third attempt built them
    assert failures == [0] and index.last_indexes

    failures[0] = 99
    with pytest.raises(TransientStoreError, match="is live, but building its indexes failed"):
        index.publish(_rows("b.md", 1), {"b.md"}, "r2", "h")
    assert _ids(index) == ["a.md-0", "a.md-1", "b.md-0"]  # the commit stands

    def broken(table: Any, vector_min_rows: int = 50_000, check_recall: bool = True) -> dict[str, str]:
        raise PublishError("building indexes failed") from ValueError("Schema error: no such column")

    monkeypatch.setattr(index_module, "ensure_indexes", broken)  # not transient: raised at once
    with pytest.raises(PublishError, match="is live, but building indexes failed") as err:
        index.publish(_rows("c.md", 1), {"c.md"}, "r3", "h")
    assert not isinstance(err.value, TransientStoreError)


def test_indexes_built_on_their_own_connection_are_in_the_published_version(tmp_path: Any) -> None:
    """The index builds run on a connection of their own (its caches dropped afterwards): the
    version the publish returns and tags is the one holding the new indexes, the caller's
    handle is at it, and a second publish folds into the same indexes instead of rebuilding."""
    from tessera.store.indexes import index_state

    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    first = index.publish(_rows("a.md", 40), {"a.md"}, "r1", "h")
    table = index.table()
    assert table is not None and first.version == int(table.version)
    assert {"embedding_text", "doc_id"} <= set(index_state(table))
    assert table.tags.list()[first.tag]["version"] == first.version
    assert index.last_indexes.get("embedding_text") == "created"
    second = index.publish(_rows("b.md", 2), {"b.md"}, "r2", "h")
    assert second.version > first.version
    assert index.last_indexes.get("embedding_text") == "updated"  # folded, not rebuilt
    assert len(_ids(index)) == 42 and _ids(index)[-2:] == ["b.md-0", "b.md-1"]


def test_a_first_build_never_spells_its_scope_as_an_in_list(
    tmp_path: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An empty table has nothing to match: the scope's ``IN`` list (DataFusion planning one of
    100,000 ids took 140 MB, and its text was held under the index builds) is made only once
    the table has rows, and then a document's rows are still replaced, not appended twice."""
    import tessera.store.index as index_module

    spelled: list[int] = []
    in_list = index_module._in_list

    def counted(values: list[str]) -> str:
        spelled.append(len(values))
        return in_list(values)

    monkeypatch.setattr(index_module, "_in_list", counted)
    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    first = index.publish(pa.concat_tables([_rows("a.md", 2), _rows("b.md", 2)]), {"a.md", "b.md"}, "r1", "h")
    assert first.committed and first.inserted == 4 and spelled == []
    second = index.publish(_rows("a.md", 1, checksum="new"), {"a.md"}, "r2", "h")
    assert (second.updated, second.deleted) == (1, 1) and spelled == [1]
    assert _ids(index) == ["a.md-0", "b.md-0", "b.md-1"]
