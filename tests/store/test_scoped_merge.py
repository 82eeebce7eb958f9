"""The scoped replace of a large table's publish (``tessera.store.scoped_merge``) against the
``merge_insert`` it stands in for: the same rows, counts and versions after any sequence of
publishes (a property test on real tables, the threshold lowered so small tables take it), and
the same failure contract: a failed commit changes nothing, a retry after a commit that landed
adds nothing, repeated ids are refused, and it runs on S3 (the loopback server)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import replace
from pathlib import Path
from typing import Any
from unittest import mock

import lance
import pyarrow as pa
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import tessera.store.index as index_module
from tessera.errors import PublishError
from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tessera.store.publishing import StreamedRows
from tessera.store.schema import chunk_schema
from tests.s3server import MotoS3
from tests.test_s3_source import admin, moto, new_bucket  # noqa: F401

DOCS = ("a.md", "b.md", "c.md", "d.md")
Row = tuple[str, int, str, str, str | None]
"""(doc, chunk number, checksum, meta_hash, parser_version)."""


@contextmanager
def scoped(on: bool) -> Iterator[None]:
    with mock.patch.object(index_module, "SCOPED_MIN_ROWS", 0 if on else 2**62):
        yield


def _table(rows: Sequence[Row]) -> pa.Table:
    out = []
    for doc, n, checksum, meta, parser in rows:
        row: dict[str, Any] = {f.name: None for f in chunk_schema(4)}
        row.update(
            id=f"{doc}-{n}", tenant="acme", doc_id=doc, revision=checksum, checksum=checksum,
            meta_hash=meta, parser_version=parser, vector=[float(n), 1.0, 0.0, 0.5],
            text=f"{doc} chunk {n} {checksum}", embedding_text=f"{doc} {n} {checksum} {meta}",
        )  # fmt: skip
        out.append(row)
    return pa.Table.from_pylist(out, schema=chunk_schema(4))


def _live(index: TenantIndex) -> list[tuple[Any, ...]]:
    table = index.table()
    assert table is not None
    cols = ["id", "doc_id", "checksum", "meta_hash", "parser_version", "text", "embedding_text", "vector"]
    rows = table.search().select(cols).limit(None).to_arrow().to_pylist()
    return sorted(tuple(str(r[c]) for c in cols) for r in rows)


def _index(path: Path | str) -> TenantIndex:
    return TenantIndex(connect(str(path)), "acme", "m-1", 4)


def _publish(
    index: TenantIndex, rows: Sequence[Row], scope: set[str], run: str, whole: bool = False
) -> tuple[Any, ...]:
    r = index.publish(replace(StreamedRows.of(_table(rows)), whole=whole), scope, run, "h")
    return (r.committed, r.inserted, r.updated, r.deleted)


def _compact(*indexes: TenantIndex) -> None:
    """Rows spread over rewritten data files, deletions folded in."""
    for index in indexes:
        table = index.table()
        assert table is not None
        table.to_lance().optimize.compact_files()


_row = st.tuples(
    st.sampled_from(DOCS), st.integers(0, 5), st.sampled_from(["c1", "c2"]),
    st.sampled_from(["m1", "m2"]), st.sampled_from([None, "p1", "p2"]),
)  # fmt: skip
_step = st.tuples(st.lists(_row, max_size=14), st.sets(st.sampled_from(DOCS), min_size=1), st.booleans())


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(_step, min_size=1, max_size=5))
@example(  # a null parser version on either side: SQL's != is null, so the row is kept as it is
    steps=[([(d, 0, "c1", "m1", p)], {d}, False) for d, p in (("a.md", None), ("a.md", "p1"), ("a.md", None))]
)
def test_same_rows_counts_and_versions_as_merge_insert(tmp_path: Path, steps: list[Any]) -> None:
    base = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    merged, scoped_index = _index(base / "merge"), _index(base / "scoped")
    for n, (rows, scope, compact) in enumerate(steps):
        unique = {(d, i): (d, i, c, m, p) for d, i, c, m, p in rows if d in scope}  # ids are unique
        chosen = list(unique.values())
        with scoped(False):
            want = _publish(merged, chosen, scope, f"r{n}")
        with scoped(True):
            got = _publish(scoped_index, chosen, scope, f"r{n}")
        assert got == want
        assert _live(scoped_index) == _live(merged)
        assert scoped_index.version() == merged.version()
        for doc in DOCS:  # the doc_id index answers alike (deletion vectors honoured)
            a, b = merged.table(), scoped_index.table()
            assert a is not None and b is not None
            assert a.count_rows(f"doc_id = '{doc}'") == b.count_rows(f"doc_id = '{doc}'")
        if compact:
            _compact(merged, scoped_index)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(steps=st.lists(st.tuples(_step, st.booleans()), min_size=1, max_size=5))
def test_whole_rows_match_merge_insert_without_its_delete(tmp_path: Path, steps: list[Any]) -> None:
    """Rows marked ``whole`` (a relabel's) through the scoped commit: the same rows, counts
    and versions as ``merge_insert`` without the by-source delete, live rows they do not
    name kept, mixed with ordinary publishes (their delete kept) and compactions."""
    base = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    merged, scoped_index = _index(base / "merge"), _index(base / "scoped")
    for n, ((rows, scope, compact), whole) in enumerate(steps):
        chosen = list({(d, i): (d, i, c, m, p) for d, i, c, m, p in rows if d in scope}.values())
        results = []
        for index, on in ((merged, False), (scoped_index, True)):
            with scoped(on):
                results.append(_publish(index, chosen, scope, f"r{n}", whole))
        assert results[1] == results[0]
        assert not whole or results[0][3] == 0
        assert _live(scoped_index) == _live(merged) and scoped_index.version() == merged.version()
        if compact:
            _compact(merged, scoped_index)


def _two_docs(path: Path | str) -> TenantIndex:
    index = _index(path)
    index.publish(_table([("a.md", i, "c1", "m1", "p1") for i in range(4)] + [("b.md", 0, "c1", "m1", "p1")]),
                  {"a.md", "b.md"}, "r1", "h")  # fmt: skip
    return index


def test_a_failed_commit_is_a_publish_error_and_changes_nothing(tmp_path: Path) -> None:
    index = _two_docs(tmp_path / "db")
    before, version = _live(index), index.version()
    change = [("a.md", 0, "c2", "m1", "p1"), ("a.md", 9, "c1", "m1", "p1")]

    def broken(*_a: Any, **_k: Any) -> Any:
        raise OSError("disk full")

    with (
        scoped(True),
        mock.patch.object(lance.LanceDataset, "commit", broken),
        pytest.raises(PublishError, match="disk full"),
    ):
        index.publish(_table(change), {"a.md"}, "r2", "h")
    assert _live(index) == before and index.version() == version
    with scoped(True):  # the files the failed attempt wrote are never read: a later run publishes
        assert _publish(index, change, {"a.md"}, "r3") == (True, 1, 1, 3)
    assert [r[0] for r in _live(index)] == ["a.md-0", "a.md-9", "b.md-0"]


def test_a_retry_after_a_commit_that_landed_adds_nothing(tmp_path: Path) -> None:
    """The store throttles the reply of a commit that went through: the retry reads the scope
    again, finds every row in place and writes none a second time."""
    index = _two_docs(tmp_path / "db")
    real = lance.LanceDataset.commit
    calls: list[int] = []

    def landed_then_throttled(*a: Any, **k: Any) -> Any:
        calls.append(1)
        out = real(*a, **k)
        if len(calls) == 1:
            raise OSError("503 Service Unavailable")
        return out

    change = [("a.md", 0, "c2", "m1", "p1"), ("a.md", 9, "c1", "m1", "p1")]
    with scoped(True), mock.patch.object(lance.LanceDataset, "commit", landed_then_throttled):
        result = index.publish(_table(change), {"a.md"}, "r2", "h")
    assert len(calls) == 2 and result.committed
    assert [r[0] for r in _live(index)] == ["a.md-0", "a.md-9", "b.md-0"]
    assert (result.inserted, result.updated, result.deleted) == (0, 0, 0)  # the second pass's


def test_repeated_staged_ids_are_refused_before_any_commit(tmp_path: Path) -> None:
    index = _two_docs(tmp_path / "db")
    before, version = _live(index), index.version()
    twice = [("a.md", 0, "c2", "m1", "p1"), ("a.md", 0, "c1", "m2", "p1")]
    with scoped(True), pytest.raises(PublishError, match=r"repeat the id 'a\.md-0'"):
        index.publish(_table(twice), {"a.md"}, "r2", "h")
    assert _live(index) == before and index.version() == version


def test_other_documents_and_unchanged_rows_are_not_rewritten(tmp_path: Path) -> None:
    """Only the scope's changed rows get new data files: a row whose checksum, meta hash and
    parser version match keeps its row address, and so does every row outside the scope."""
    index = _two_docs(tmp_path / "db")

    def addresses() -> dict[str, int]:
        table = index.table()
        assert table is not None
        data = table.to_lance().to_table(columns=["id"], with_row_address=True)
        return dict(zip(data.column("id").to_pylist(), data.column("_rowaddr").to_pylist(), strict=True))

    before = addresses()
    keep = [("a.md", i, "c1", "m1", "p1") for i in (0, 1)]
    with scoped(True):
        assert _publish(index, [*keep, ("a.md", 2, "c1", "m2", "p1")], {"a.md"}, "r2") == (True, 0, 1, 1)
    after = addresses()
    assert {k: after[k] for k in ("a.md-0", "a.md-1", "b.md-0")} == {
        k: before[k] for k in ("a.md-0", "a.md-1", "b.md-0")
    }
    assert after["a.md-2"] != before["a.md-2"] and "a.md-3" not in after


def test_the_scoped_replace_on_s3(
    moto: MotoS3,  # noqa: F811
    admin: Any,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setenv("AWS_ENDPOINT_URL", moto.endpoint)
    bucket = new_bucket(admin)
    remote, local = _two_docs(f"s3://{bucket}/tessera"), _two_docs(tmp_path / "db")
    change = [("a.md", 0, "c2", "m1", "p1"), ("a.md", 9, "c1", "m1", "p1")]
    with scoped(True):
        assert _publish(remote, change, {"a.md"}, "r2") == (True, 1, 1, 3)
    with scoped(False):
        _publish(local, change, {"a.md"}, "r2")
    assert _live(remote) == _live(local)


@contextmanager
def _commits(table: Any) -> Iterator[list[str]]:
    """Which commit each publish takes: a spy on the scoped commit and on ``merge_insert``."""
    calls: list[str] = []
    real_scoped, real_merge = index_module.scoped_merge, type(table).merge_insert

    def spy_scoped(*a: Any, **k: Any) -> Any:
        calls.append("scoped")
        return real_scoped(*a, **k)

    def spy_merge(self: Any, on: Any) -> Any:
        calls.append("merge_insert")
        return real_merge(self, on)

    with (
        mock.patch.object(index_module, "scoped_merge", spy_scoped),
        mock.patch.object(type(table), "merge_insert", spy_merge),
    ):
        yield calls


def _table_of(path: Path, rows: int, per_doc: int = 10) -> TenantIndex:
    index = _index(path)
    docs = [(f"d{n:05d}.md", i, "c1", "m1", "p1") for n in range(rows // per_doc) for i in range(per_doc)]
    extra = [("z.md", i, "c1", "m1", "p1") for i in range(rows % per_doc)]
    index.publish(_table(docs + extra), {d for d, *_ in docs + extra}, "r1", "h")
    return index


@pytest.mark.parametrize("rows", [index_module.SCOPED_MIN_ROWS - 1, index_module.SCOPED_MIN_ROWS])
def test_the_threshold_picks_the_commit_by_the_table_rows(tmp_path: Path, rows: int) -> None:
    """At the real threshold, not a patched one: a table one row short of it merges with
    ``merge_insert``; a table at it takes the scoped commit and never calls ``merge_insert``."""
    per_doc = 10
    index = _table_of(tmp_path / "db", rows, per_doc)
    table = index.table()
    assert table is not None and table.count_rows() == rows
    change = [("d00000.md", 0, "c2", "m1", "p1"), ("d00000.md", 99, "c1", "m1", "p1")]
    with _commits(table) as calls:
        assert _publish(index, change, {"d00000.md"}, "r2") == (True, 1, 1, per_doc - 1)
    assert calls == (["scoped"] if rows >= index_module.SCOPED_MIN_ROWS else ["merge_insert"])
    table = index.table()
    assert table is not None and table.count_rows() == rows - per_doc + 2


@pytest.mark.parametrize("rows", [index_module.SCOPED_MIN_ROWS - 1, index_module.SCOPED_MIN_ROWS])
def test_a_relabel_at_the_threshold_takes_the_scoped_commit(tmp_path: Path, rows: int) -> None:
    """Whole rows (a relabel's) take the same commit as other rows at the real threshold: a
    document's rows with a new ``meta_hash`` are updated, a live row they do not name stays."""
    index = _table_of(tmp_path / "db", rows)
    table = index.table()
    assert table is not None
    relabel = [("d00000.md", i, "c1", "m2", "p1") for i in range(9)]  # row 9 not named
    with _commits(table) as calls:
        assert _publish(index, relabel, {"d00000.md"}, "r2", whole=True) == (True, 0, 9, 0)
    assert calls == (["scoped"] if rows >= index_module.SCOPED_MIN_ROWS else ["merge_insert"])
    table = index.table()
    assert table is not None and table.count_rows() == rows
    metas = table.search().where("doc_id = 'd00000.md'").select(["id", "meta_hash"]).limit(None).to_arrow()
    got = zip(metas.column("id").to_pylist(), metas.column("meta_hash").to_pylist(), strict=True)
    assert sorted(got) == sorted([(f"d00000.md-{i}", "m2") for i in range(9)] + [("d00000.md-9", "m1")])


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(size=st.integers(1, 4), data=st.data())
def test_a_source_in_many_batches_is_one_source(tmp_path: Path, size: int, data: st.DataObject) -> None:
    """Rows are matched a batch at a time: the same source cut into batches of any size gives
    the same rows and counts as in one batch, and an id repeated across two batches is refused
    as one repeated within a batch is."""
    from tessera.store.scoped_merge import scoped_merge

    rows = data.draw(st.lists(_row, max_size=12).map(lambda rs: list({(r[0], r[1]): r for r in rs}.values())))
    base = tmp_path / f"case-{len(list(tmp_path.iterdir()))}"
    results, lives = [], []
    for name, cut in (("whole", len(rows) or 1), ("cut", size)):
        index = _two_docs(base / name)
        table = index.table()
        assert table is not None
        source = _table(rows).cast(table.schema)
        reader = pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=cut))
        results.append(scoped_merge(table, reader, "doc_id IN ('a.md', 'b.md', 'c.md', 'd.md')"))
        lives.append(_live(index))
    assert results[0] == results[1] and lives[0] == lives[1]
    if len(rows) > size:  # a row of the first batch again in a later one
        index = _two_docs(base / "repeat")
        table = index.table()
        assert table is not None
        before, version = _live(index), index.version()
        source = _table([*rows, rows[0]]).cast(table.schema)
        reader = pa.RecordBatchReader.from_batches(source.schema, source.to_batches(max_chunksize=size))
        first = f"{rows[0][0]}-{rows[0][1]}"
        with pytest.raises(PublishError, match=f"repeat the id '{first}'"):
            scoped_merge(table, reader, "doc_id IN ('a.md')")
        assert _live(index) == before and index.version() == version


def test_rows_deep_in_a_large_data_file_are_the_ones_marked(tmp_path: Path) -> None:
    """A row address holds the row's offset in its data file in its low 32 bits, and a data
    file holds up to 100,000 rows: a replace and a removal past the first 65,536 rows of a
    70,000-row file mark exactly those rows, and a removal at its start exactly those."""
    rows = [(f"d{n:05d}.md", i, "c1", "m1", "p1") for n in range(7000) for i in range(10)]
    index = _index(tmp_path / "db")
    index.publish(_table(rows), {d for d, *_ in rows}, "r1", "h")
    table = index.table()
    assert table is not None and len(table.to_lance().get_fragments()) == 1
    change = [("d06999.md", 0, "c2", "m1", "p1")]  # the file's last ten rows: one replaced, nine gone
    with scoped(True):
        assert _publish(index, change, {"d06999.md", "d00000.md"}, "r2") == (True, 0, 1, 19)
    table = index.table()
    assert table is not None
    ids = set(table.to_lance().to_table(columns=["id"]).column("id").to_pylist())
    gone = {f"d06999.md-{i}" for i in range(1, 10)} | {f"d00000.md-{i}" for i in range(10)}
    assert len(ids) == 70_000 - 19 and not ids & gone
    assert {f"{d}-{i}" for d in ("d06998.md", "d00001.md", "d06999.md") for i in range(10)} - gone <= ids


_id_text = st.text(alphabet=st.sampled_from(["a", "b", "\x00", "é", "-"]), max_size=4)
_one_byte = st.sampled_from(["a", "b", "\x00", "-"])
_uniform_ids = st.integers(1, 3).flatmap(
    lambda w: st.lists(st.text(alphabet=_one_byte, min_size=w, max_size=w), unique=True)
)


def _first_byte_keys(data: Any) -> Any:
    """A key that collides on purpose: ids of one first byte share it."""
    return data.view("uint8").reshape(len(data), -1)[:, 0].astype("uint64")


@settings(max_examples=200, deadline=None)
@given(
    live=st.one_of(_uniform_ids, st.lists(_id_text, unique=True)),
    colliding=st.booleans(),
    data=st.data(),
)
def test_live_positions_are_each_ids_place_among_the_live_ids(
    live: list[str], colliding: bool, data: st.DataObject
) -> None:
    """Each batch id's position among the live ids, or none, as a dict would say, on either
    path: ids all of one byte length (keys sorted once, binary-searched; NUL bytes and
    multi-byte characters included) or of several (looked up per batch); arrays sliced out of
    larger ones; batch ids of other lengths than the live ones. With a key that collides on
    purpose, two live ids of one key take the per-batch lookup, and a batch id sharing a live
    id's key but not its bytes is not taken for it."""
    import tessera.store.scoped_merge as module

    batch = data.draw(st.lists(st.sampled_from(live) | _id_text if live else _id_text, unique=True))
    pad = data.draw(st.integers(0, 2))
    live_ids = pa.array(["pad"] * pad + live + ["pad"], pa.string()).slice(pad, len(live))
    batch_ids = pa.array(["x"] * pad + batch, pa.string()).slice(pad)
    keys = _first_byte_keys if colliding else module._keys
    with mock.patch.object(module, "_keys", keys):
        lookup = module._LiveIds(live_ids)
        got = lookup.positions(batch_ids).to_pylist()
    widths = {len(i.encode()) for i in live}
    distinct = len({i.encode()[:1] for i in live}) == len(live) if colliding else True
    assert bool(lookup.width) == (len(widths) == 1 and 0 not in widths and distinct)  # which path
    where = {row_id: n for n, row_id in enumerate(live)}
    assert got == [where.get(i) for i in batch]


def test_chunk_ids_are_sorted_once_not_looked_up_per_batch() -> None:
    """Chunk ids are sha256 hex, all 64 bytes: the scope's ids take the sorted path, whose
    cost per batch grows with the log of the scope, not the scope."""
    from tessera.chunking.identity import chunk_id
    from tessera.store.scoped_merge import _LiveIds

    ids = [chunk_id("acme", f"d{n}.md", "r", 0, n, "h", "m") for n in range(50)]
    lookup = _LiveIds(pa.array(ids))
    assert lookup.width == 64
    assert lookup.positions(pa.array([ids[7], "x" * 64, ids[0]])).to_pylist() == [7, None, 0]
