"""Verify's whole-table pass is remembered for the commit it passed on (tessera.pipeline.verified):
a run that changes nothing does not read the table again, and nothing else gets a pass it did
not earn: another commit, another listing, a failed pass, a damaged file, a table built again
to the same version number; the sampled offsets are checked against the source every time."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path
from typing import Any

import lancedb
import pyarrow as pa
import pytest

from tessera.pipeline import verified
from tessera.pipeline.checks import VerifyInputs
from tessera.pipeline.run import verify_step
from tests.conftest import Workspace

from ..test_lifecycle import md_sections

FILES = {f"d{i:02d}.md": md_sections(f"Doc{i}", 3) for i in range(6)}


@pytest.fixture
def passes(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    """Each whole-table pass, counted."""
    calls: list[int] = []
    real = verified.key_checks

    def counted(*args: Any, **kw: Any) -> Any:
        calls.append(1)
        return real(*args, **kw)

    monkeypatch.setattr(verified, "key_checks", counted)
    return calls


def _file(ws: Workspace) -> Path:
    return ws.root / "work" / "acme" / verified.VERIFIED_FILE


def test_a_run_that_changes_nothing_does_not_read_the_table_again(ws: Workspace, passes: list[int]) -> None:
    ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    assert len(passes) == 1 and _file(ws).exists()
    rows = ws.table("acme").count_rows()
    out = ws.run("acme", "r2")  # a no-op: the same commit against the same listing
    assert out["listing"]["changed"] == 0 and len(passes) == 1
    problems, stats = verify_step(ws.context("acme", "r2"))
    assert problems == [] and len(passes) == 1
    assert (stats["rows"], stats["stale_rows"], stats["recalled"]) == (rows, 0, 1)
    assert stats["offsets_checked"] > 0  # the sampled rows are still read back against the source


def test_a_commit_made_outside_a_run_is_verified_whole_and_a_failure_is_not_kept(
    ws: Workspace, passes: list[int]
) -> None:
    ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    table = ws.table("acme")
    row = table.search().limit(1).to_arrow().to_pylist()[0]
    table.add(pa.Table.from_pylist([{**row, "id": "f" * 64, "tenant": "globex"}], schema=table.schema))
    for n in (2, 3):  # the injected row is found, and found again: a failed pass is never kept
        problems, stats = verify_step(ws.context("acme", "r1"))
        assert any("rows of other tenants: ['globex']" in p for p in problems)
        assert len(passes) == n and stats["recalled"] == 0
    table.delete(f"id = '{'f' * 64}'")  # mended by a commit of its own: verified whole, passes
    problems, stats = verify_step(ws.context("acme", "r1"))
    assert problems == [] and len(passes) == 4 and stats["recalled"] == 0
    assert verify_step(ws.context("acme", "r1"))[1]["recalled"] == 1 and len(passes) == 4


def test_the_sources_are_checked_even_when_the_pass_is_remembered(ws: Workspace, passes: list[int]) -> None:
    ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    assert verify_step(ws.context("acme", "r1"))[1]["recalled"] == 1
    blobs = [p for p in (ws.root / "index" / "_sources" / "acme").rglob("*") if p.is_file()]
    assert blobs
    for blob in blobs:  # the stored source damaged under the same commit
        blob.write_bytes(b"\x00damaged" * 64)
    problems, stats = verify_step(ws.context("acme", "r1"))
    assert problems and stats["recalled"] == 1 and len(passes) == 1


@pytest.mark.parametrize(
    "damage",
    [
        "not json at all {",
        json.dumps(["a", "list"]),
        json.dumps({"key": "0" * 64, "rows": 1, "sampled_ids": []}),  # another key
        None,  # the right key, with sampled ids of the wrong type (filled in below)
        None,  # the right key, without its rows
    ],
    ids=["garbage", "not-an-object", "another-key", "wrong-types", "missing-field"],
)
def test_a_damaged_or_foreign_file_means_the_whole_pass(
    ws: Workspace, passes: list[int], damage: str | None, request: pytest.FixtureRequest
) -> None:
    ws.tenant("acme", FILES)
    ws.run("acme", "r1")
    kept = json.loads(_file(ws).read_text())
    if damage is None:
        wrong = request.node.callspec.id == "wrong-types"
        damage = json.dumps(
            {**kept, "sampled_ids": [1, 2]} if wrong else {k: v for k, v in kept.items() if k != "rows"}
        )
    _file(ws).write_text(damage)
    problems, stats = verify_step(ws.context("acme", "r1"))
    assert problems == [] and stats["recalled"] == 0 and len(passes) == 2
    assert json.loads(_file(ws).read_text()) == kept  # the pass written again, whole


def test_the_key_names_everything_the_pass_depends_on() -> None:
    commit = "t@3:2026-12-07T07:00:00.000001"
    base = VerifyInputs("acme", 64, {"a.md": "r1", "b.md": "r2"}, {"c.md"}, 25)
    key = verified.verify_key(commit, base)
    reordered = VerifyInputs("acme", 64, {"b.md": "r2", "a.md": "r1"}, {"c.md"}, 25)
    assert verified.verify_key(commit, reordered) == key
    changes = [
        ("t@3:2026-12-07T07:00:00.000002", base),  # the same version number, another commit
        (commit, replace(base, tenant="globex")),
        (commit, replace(base, dimension=32)),
        (commit, replace(base, revisions={"a.md": "r1", "b.md": "r3"})),  # a revision
        (commit, replace(base, revisions={"a.md": "r1"})),  # a document gone
        (commit, replace(base, revisions={"a.md": "r1", "b.md": "r2", "c.md": "r9"})),
        (commit, replace(base, quarantined=set())),
        (commit, replace(base, sample_size=26)),
        (commit, replace(base, revisions={"a.md": "r1b", ".md": "r2"})),  # no concatenation aliasing
    ]
    keys = {verified.verify_key(c, inputs) for c, inputs in changes}
    assert key not in keys and len(keys) == len(changes)


def test_a_table_built_again_to_the_same_version_number_is_another_commit(tmp_path: Path) -> None:
    db = lancedb.connect(str(tmp_path / "db"))
    data = pa.table({"id": ["a", "b"]})
    first = db.create_table("t", data)
    was = verified.commit_key(first)
    db.drop_table("t")
    again = db.create_table("t", data)
    now = verified.commit_key(again)
    assert was and now and int(first.version) == int(again.version) and was != now
