"""The manifest read a batch at a time equals the whole-table grouping it replaced (per
document its last row's values and its row count, in row order), however the rows fall into
batches, with documents interleaved, empty batches and older tables without the optional
columns; on a real LanceDB table too. The plan fingerprint hashed a document at a time is the
canonical hash of the whole list, byte for byte."""

from __future__ import annotations

import itertools
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.pipeline.listing import plan_fingerprint
from tessera.store import manifest as manifest_module
from tessera.store.db import connect
from tessera.store.index import TenantIndex
from tessera.store.manifest import DocState, fold_manifest, read_manifest
from tessera.types import canonical_hash

COLUMNS = ["doc_id", "revision", "meta_hash", "chunking_config_hash", "acl_source", "parser_version"]
WORD = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=6)
DOC = st.sampled_from(["a.md", "b.md", "é/ü.md", 'q"uote.md'])
ROW = st.tuples(DOC, WORD, WORD, WORD, WORD | st.none(), WORD | st.none())


def _expected(rows: list[tuple[Any, ...]]) -> dict[str, DocState]:
    """The implementation it replaced: every row read at once and grouped in Arrow (per
    document the last non-null value of each column, and the row count), in row order."""
    if not rows:
        return {}
    data = pa.table({c: pa.array([r[COLUMNS.index(c)] for r in rows], pa.string()) for c in COLUMNS})
    fields = COLUMNS[1:]
    per_doc = data.group_by("doc_id", use_threads=False).aggregate(
        [*((c, "last") for c in fields), ("doc_id", "count")]
    )
    names = [f"{c}_last" for c in fields]
    return {
        doc_id: DocState(rev, meta, cfg, n, src or "", parser or "")
        for doc_id, rev, meta, cfg, src, parser, n in zip(
            per_doc.column("doc_id").to_pylist(),
            *(per_doc.column(c).to_pylist() for c in names),
            per_doc.column("doc_id_count").to_pylist(),
            strict=True,
        )
    }


def _by_hand(rows: list[tuple[Any, ...]]) -> dict[str, DocState]:
    """The same by hand, for rows whose optional columns are never null after a value."""
    out: dict[str, DocState] = {}
    for doc, rev, meta, cfg, src, parser in rows:
        n = out[doc].chunks + 1 if doc in out else 1
        out[doc] = DocState(rev, meta, cfg, n, src or "", parser or "")
    return out


def _batches(rows: list[tuple[Any, ...]], cuts: list[int], columns: list[str]) -> list[pa.RecordBatch]:
    table = pa.table({c: pa.array([r[COLUMNS.index(c)] for r in rows], pa.string()) for c in columns})
    bounds = sorted({0, len(rows), *(c % (len(rows) + 1) for c in cuts)})
    return [table.slice(a, b - a).combine_chunks().to_batches()[0] for a, b in itertools.pairwise(bounds)]


@settings(max_examples=120, deadline=None)
@given(st.lists(ROW, max_size=30), st.lists(st.integers(0, 40), max_size=6), st.booleans())
def test_batches_fold_into_the_whole_table_grouping(rows: list[Any], cuts: list[int], old: bool) -> None:
    columns = COLUMNS[:4] if old else COLUMNS
    got = fold_manifest(_batches(rows, cuts, columns))
    expected = _expected([(*r[:4], None, None) if old else r for r in rows])
    assert got == expected
    assert list(got) == list(expected)  # first appearance order, as the grouping gave


def test_a_document_spanning_batches_keeps_its_last_row_and_counts_every_row() -> None:
    rows = [("a.md", "r1", "m1", "c", "p", "v"), ("b.md", "r", "m", "c", "p", "v"),
            ("a.md", "r2", "m2", "c", "p", "v"), ("a.md", "r3", "m3", "c2", None, "v2")]  # fmt: skip
    empty = pa.RecordBatch.from_pylist([], schema=pa.schema([(c, pa.string()) for c in COLUMNS]))
    batches = [*_batches(rows[:2], [], COLUMNS), empty, *_batches(rows[2:], [1], COLUMNS)]
    got = fold_manifest(batches)
    assert got["a.md"] == DocState("r3", "m3", "c2", 3, "p", "v2")  # a null keeps the last value
    assert got["b.md"] == DocState("r", "m", "c", 1, "p", "v") and got == _expected(rows)
    assert fold_manifest([]) == {} and fold_manifest([empty]) == {}


def test_documents_share_their_repeated_strings() -> None:
    rows = [(f"d{i}.md", f"r{i}", f"m{i}", "".join(["cf"] * 3), "".join(["po"] * 2), "p/1") for i in range(3)]
    got = list(fold_manifest(_batches(rows, [1, 2], COLUMNS)).values())
    assert got[0].config_hash is got[2].config_hash and got[0].acl_source is got[1].acl_source
    assert got[0].revision != got[1].revision


@pytest.mark.parametrize("batch_rows", [1, 3, 1000])
def test_a_real_table_reads_the_same_at_any_batch_size(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, batch_rows: int
) -> None:
    rows = [(f"d{i % 4}.md", f"r{i}", f"m{i}", "c", None if i % 3 else "p", "v") for i in range(11)]
    assert _by_hand(rows) != _expected(rows)  # the nulls after a value matter here
    db = lancedb.connect(str(tmp_path))
    table = db.create_table("t", pa.table({c: [r[COLUMNS.index(c)] for r in rows] for c in COLUMNS}))
    monkeypatch.setattr(manifest_module, "BATCH_ROWS", batch_rows)
    assert read_manifest(table) == _expected(rows)
    old = db.create_table("old", pa.table({c: [r[COLUMNS.index(c)] for r in rows] for c in COLUMNS[:4]}))
    assert read_manifest(old) == _expected([(*r[:4], None, None) for r in rows])
    plain = [(*r[:4], "p", "v") for r in rows]
    assert _expected(plain) == _by_hand(plain)


def test_the_tenant_index_manifest_counts_published_chunks(tmp_path: Path) -> None:
    from tests.store.test_publish_append import _rows

    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    assert index.manifest() == {}
    index.publish(_rows("a.md", 3), {"a.md"}, "r1", "h")
    index.publish(_rows("b.md", 2), {"b.md"}, "r2", "h")
    live = index.manifest()
    assert {d: s.chunks for d, s in live.items()} == {"a.md": 3, "b.md": 2}


STATE = st.builds(DocState, WORD, WORD, WORD, st.integers(0, 10**6), WORD, WORD)


@settings(max_examples=120, deadline=None)
@given(st.dictionaries(WORD, STATE, max_size=8))
def test_the_streamed_fingerprint_is_the_canonical_hash(live: dict[str, DocState]) -> None:
    names = ["revision", "meta_hash", "config_hash", "chunks", "acl_source", "parser_version"]
    whole = canonical_hash(sorted((d, {n: getattr(s, n) for n in names}) for d, s in live.items()))
    assert plan_fingerprint(live) == whole


def test_the_fingerprint_changes_with_any_field() -> None:
    live = {"a.md": DocState("r", "m", "c", 2, "p", "v"), "b.md": DocState("r", "m", "c", 1)}
    base = plan_fingerprint(live)
    for change in ({"revision": "x"}, {"meta_hash": "x"}, {"config_hash": "x"}, {"chunks": 3},
                   {"acl_source": "x"}, {"parser_version": "x"}):  # fmt: skip
        moved = dict(live, **{"a.md": DocState(**{**_fields(live["a.md"]), **change})})
        assert plan_fingerprint(moved) != base, change
    assert plan_fingerprint({"b.md": live["b.md"]}) != base
    assert plan_fingerprint(dict(reversed(live.items()))) == base  # order of the dict does not matter


def _fields(s: DocState) -> dict[str, Any]:
    return {n: getattr(s, n) for n in DocState.__slots__}


def test_the_commit_key_names_one_commit(tmp_path: Path) -> None:
    """Equal keys only for the same commit: a reopen of the same version matches; any commit,
    even one that changes no row, moves it; a table dropped and built again up to the same
    version number does not match the one it replaced."""
    db = lancedb.connect(str(tmp_path))
    assert manifest_module.commit_key(None) == ""
    table = db.create_table("t", pa.table({"doc_id": ["a.md"], "n": [1]}))
    table.add(pa.table({"doc_id": ["b.md"], "n": [2]}))
    first = manifest_module.commit_key(table)
    assert first.startswith(f"t@{table.version}:")
    assert manifest_module.commit_key(db.open_table("t")) == first  # another handle, same commit
    table.delete("doc_id = 'nothing'")  # a commit that changes no row, or none at all
    table.update(where="doc_id = 'a.md'", values={"n": 1})
    assert manifest_module.commit_key(db.open_table("t")) != first
    moved = manifest_module.commit_key(db.open_table("t"))
    table.create_scalar_index("doc_id")
    for i in range(3):
        table.add(pa.table({"doc_id": [f"x{i}.md"], "n": [i]}))
    table.to_lance().optimize.compact_files()  # rewrites the index: a transaction pylance cannot read
    assert manifest_module.commit_key(db.open_table("t")) not in (first, moved)
    again = db.open_table("t")
    version, before = again.version, manifest_module.commit_key(again)
    db.drop_table("t")
    rebuilt = db.create_table("t", pa.table({"doc_id": ["a.md"], "n": [1]}))
    while rebuilt.version < version:
        rebuilt.add(pa.table({"doc_id": ["b.md"], "n": [2]}))
    assert rebuilt.version == version
    assert manifest_module.commit_key(rebuilt) != before


def test_the_planned_state_is_read_at_one_commit(tmp_path: Path) -> None:
    from tests.store.test_publish_append import _rows

    index = TenantIndex(connect(str(tmp_path / "db")), "acme", "m-1", 4)
    live, key = index.planned_state()
    assert live == {} and key() == "" and index.commit_key() == ""
    index.publish(_rows("a.md", 3), {"a.md"}, "r1", "h")
    live, key = index.planned_state()
    assert live == index.manifest() and key() == index.commit_key() != ""
    first = key()
    index.publish(_rows("b.md", 2), {"b.md"}, "r2", "h")
    assert index.commit_key() != first
    assert key() == first  # the key of the version the manifest was read at, asked later
