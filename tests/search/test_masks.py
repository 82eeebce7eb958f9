"""The claims' row allowlist (``tessera.search.masks``): one per table version and claims, so
an ACL change, a new row or a restore is never answered from an older version's mask; the
rows it admits are exactly the claims' rows. Issue 17 (search at scale)."""

from __future__ import annotations

import subprocess
import sys
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tessera.search import candidates
from tessera.search.dataset import dataset, pin
from tessera.search.masks import claims_mask, mask_for
from tessera.search.principal import Principal, access_filter
from tessera.search.scope import scope_of

from .test_fast_path import DIM, build

NOW = datetime(2026, 6, 1, tzinfo=UTC)
ALICE = Principal("acme", "alice", ("staff",))


def _rows() -> list[dict[str, Any]]:
    groups = [["staff"], ["legal"], [], ["staff", "legal"]]
    return [
        {"id": f"{i:064x}", "text": f"passage {i} about topic{i % 5}", "groups": groups[i % 4],
         "readers": ["alice"] if i % 7 == 0 else []}
        for i in range(60)
    ]  # fmt: skip


@pytest.fixture
def table(tmp_path: Path) -> Any:
    return build(tmp_path, _rows(), np.random.default_rng(6).standard_normal((60, DIM)))


def _where(principal: Principal = ALICE) -> str:
    where = access_filter(principal, NOW)
    assert where is not None
    return where


def _vector(table: Any, chunk_id: str) -> list[float]:
    rows = dataset(table).to_table(columns=["id", "vector"]).to_pylist()
    return next(r["vector"] for r in rows if r["id"] == chunk_id)


def test_the_mask_admits_exactly_the_claims_rows(table: Any) -> None:
    for principal in (ALICE, Principal("acme", "bob", ("legal",)), Principal("acme", "nobody")):
        scope = scope_of(_where(principal))
        assert scope is not None
        ds = dataset(pin(table))
        mask = claims_mask(ds, scope.claims)
        assert mask.rows == ds.count_rows(filter=scope.claims)
        assert claims_mask(ds, scope.claims) is mask  # remembered for this version
    nobody = candidates.dense(table, [1.0] * DIM, _where(Principal("acme", "nobody")), 5)
    assert nobody == []


@pytest.mark.parametrize("mode", ["dense", "lexical"])
def test_a_revoked_row_is_not_served_from_the_previous_versions_mask(table: Any, mode: str) -> None:
    """Alice reads chunk 0 (group staff and a reader entry); it is taken from her, a new
    version. Searching the new version must not find it, though her claims did not change."""
    target = f"{0:064x}"

    def found() -> list[str]:
        """The ids found, searched twice: under the SQL claims, then under the mask the
        second search of a version builds (both must agree)."""
        where, got = _where(), []
        for _ in range(2):
            if mode == "dense":
                rows = candidates.dense(table, _vector(table, target), where, 5)
            else:
                rows = candidates.lexical(table, "passage 0 about topic0", where, 5)
            got.append([r["id"] for r in rows])
        assert got[0] == got[1]
        assert mask_for(dataset(pin(table)), scope_claims()) is not None  # the mask was used
        return got[1]

    assert target in found()
    table.update(where=f"id = '{target}'", values={"groups": ["legal"], "readers": ["bob"]})
    assert target not in found()
    table.update(where=f"id = '{target}'", values={"groups": ["staff"], "readers": ["bob"]})
    assert target in found()  # given back: the next version's mask has it again


def scope_claims() -> str:
    scope = scope_of(_where())
    assert scope is not None
    return scope.claims


def test_a_principal_builds_a_mask_on_its_second_search_of_a_version(table: Any) -> None:
    ds = dataset(pin(table))
    claims = scope_claims().replace("staff", "staff-second-search")
    assert mask_for(ds, claims) is None  # first sighting: SQL, marked
    mask = mask_for(ds, claims)
    assert mask is not None and mask is claims_mask(ds, claims)


def test_a_row_added_later_is_ranked_under_the_new_versions_mask(table: Any, tmp_path: Path) -> None:
    where = _where()
    vector = np.random.default_rng(9).standard_normal(DIM)
    for _ in range(2):  # SQL, then the mask
        assert all(r["id"] != "e" * 64 for r in candidates.dense(table, vector.tolist(), where, 5))
    extra = build(
        tmp_path / "extra",
        [{"id": "e" * 64, "text": "a late passage", "groups": ["staff"]}],
        vector[None, :],
        index=False,
    )
    table.add(extra.to_arrow())
    for _ in range(2):
        assert candidates.dense(table, vector.tolist(), where, 5)[0]["id"] == "e" * 64
    assert mask_for(dataset(pin(table)), scope_claims()) is not None


def test_importing_search_and_the_run_does_not_load_pylance() -> None:
    """pylance costs a process about 48 MB; a no-op run never opens a dataset through it, so
    importing the search path (masks included) must not load it."""
    modules = "tessera.search.query, tessera.search.candidates, tessera.pipeline.steps"
    code = f"import sys, {modules}; print('lance' in sys.modules)"
    root = Path(__file__).resolve().parents[2]
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", out.stderr[-2000:]


def test_a_table_built_again_to_the_same_version_never_uses_the_old_mask(tmp_path: Path) -> None:
    """A tenant purged and indexed again reaches the same version numbers: the mask of the old
    table (alice read row 0) must not rank row 0 of the new one, which she may not read."""
    vectors = np.random.default_rng(8).standard_normal((4, DIM))
    mine = [
        {"id": f"{i:064x}", "text": f"passage {i}", "groups": ["staff"] if i == 0 else ["legal"]}
        for i in range(4)
    ]
    old = build(tmp_path, mine, vectors)
    where = _where()
    for _ in range(2):  # SQL, then the mask (row 0 admitted)
        assert [r["id"] for r in candidates.dense(old, vectors[0].tolist(), where, 1)] == [f"{0:064x}"]
    version = dataset(pin(old)).version
    old._conn.drop_table("chunks")
    theirs = [{**r, "groups": ["legal"]} for r in mine]
    new = build(tmp_path, theirs, vectors)
    assert dataset(pin(new)).version == version  # the same version number, another commit
    for _ in range(2):
        assert candidates.dense(new, vectors[0].tolist(), where, 1) == []


def test_one_hybrid_search_sights_a_mask_once_and_the_next_search_uses_it(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A hybrid search's dense and BM25 queries (the BM25 one on a worker thread) are one
    sighting: the first search of new claims runs both under SQL and builds nothing; the
    second builds the mask once and both its queries use it; the ranking is the same."""
    from tessera.search import masks
    from tessera.search.options import SearchOptions
    from tessera.search.retrieval import ranked_rows

    built: list[str] = []
    used: list[str] = []
    build_mask, args = masks._build, masks.scan_args
    monkeypatch.setattr(
        masks, "_build", lambda ds, key, claims: built.append(claims) or build_mask(ds, key, claims)
    )
    monkeypatch.setattr(candidates, "scan_args", lambda r: used.append(type(r).__name__) or args(r))
    dave = Principal("acme", "dave", ("legal", "one-search"))  # claims no other test sights
    opts = SearchOptions(k=3, mode="hybrid")
    vector = _vector(table, f"{1:064x}")
    got = []
    for expect_built, expect_used in (
        (0, ["str", "str"]),
        (1, ["Allowed", "Allowed"]),
        (1, ["Allowed", "Allowed"]),
    ):
        used.clear()
        rows = ranked_rows(table, None, "passage about topic1", _where(dave), opts, vector)
        got.append([r["id"] for r in rows])
        assert (len(built), sorted(used)) == (expect_built, expect_used)
    assert got[0] == got[1] == got[2] and got[0]
    assert all(set(r["groups"]) & {"legal"} for r in rows)  # what the claims admit, nothing else
    outside = "(array_has_any(groups, ['staff', 'outside-a-search']))"
    ds = dataset(pin(table))
    assert mask_for(ds, outside) is None and mask_for(ds, outside) is not None  # a query each


def test_threads_asking_for_one_mask_build_it_once_and_a_failed_build_is_not_shared(
    table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    import threading
    import time

    from tessera.search import masks

    ds = dataset(pin(table))
    build_mask, calls = masks._build, []

    def slow(ds: Any, key: Any, claims: str) -> Any:
        calls.append(claims)
        time.sleep(0.2)  # every other thread asks meanwhile
        if claims.endswith("'fails-once'])") and len(calls) == 1:
            raise OSError("read failed")
        return build_mask(ds, key, claims)

    monkeypatch.setattr(masks, "_build", slow)

    def ask(claims: str, out: list[Any]) -> None:
        try:
            out.append(claims_mask(ds, claims))
        except OSError as e:
            out.append(e)

    for claims, builds in (("array_has_any(groups, ['staff', 'eight-at-once'])", 1),
                           ("array_has_any(groups, ['staff', 'fails-once'])", 2)):  # fmt: skip
        calls.clear()
        got: list[Any] = []
        threads = [threading.Thread(target=ask, args=(claims, got)) for _ in range(8)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        masks_got = [g for g in got if not isinstance(g, OSError)]
        assert len(calls) == builds and len(got) == 8
        assert len(masks_got) == 8 - (builds - 1)  # the failed builder's caller sees its error
        assert all(m is masks_got[0] for m in masks_got) and masks_got[0].rows > 0
