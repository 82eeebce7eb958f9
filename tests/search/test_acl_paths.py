"""The split access filter (claims in SQL, tenant/dates/flags checked on the rows found) against
the whole filter, on a table holding many ACL combinations: the candidate lists, the copies
query and the whole ranking give exactly what the whole filter gives, and nothing a Python
oracle of the ACL says the principal may not read. Issue 17 (search at scale)."""

from __future__ import annotations

import copy
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.search import candidates, collapse
from tessera.search.dataset import Pinned, dataset, pin
from tessera.search.options import SearchOptions
from tessera.search.principal import FLAGGED, Principal, access_filter
from tessera.search.retrieval import ranked_rows
from tessera.search.scope import scope_of
from tessera.store.schema import micros

from .test_fast_path import DIM, build

NOW = datetime(2026, 6, 1, tzinfo=UTC)
T = micros(NOW)
NAMES = ["alice", "bob", "r:alice", "g:staff", "staff", "a:b", "", "legal"]
"""Readers and groups: names holding a key separator, a reader named like a group, the empty name."""
TEXT = "shared passage about the policy words"


def _acl_rows() -> list[dict[str, Any]]:
    """Every combination of readers and groups from ``NAMES`` (up to two of each), with dates,
    flags and tenants varied, in groups of exact copies (the same text in several documents)."""
    rng = np.random.default_rng(9)
    choices: list[list[str]] = [[], *([n] for n in NAMES), ["alice", "legal"], ["staff", "g:staff"]]
    rows: list[dict[str, Any]] = []
    for i in range(240):
        extra: dict[str, Any] = {}
        kind = i % 11
        if kind == 1:
            extra["flags"] = [FLAGGED[i % 2]]
        elif kind == 2:
            extra["effective_to_us"] = T
        elif kind == 3:
            extra["effective_from_us"] = T + 1
        elif kind == 4:
            extra["effective_from_us"] = None
        elif kind == 5:
            extra["tenant"] = "other"
        text = f"{TEXT} copy{i % 40}" if i % 3 else f"{TEXT} own{i} topic{i % 7}"
        rows.append(
            {
                "id": f"{int(rng.integers(2**62)):016x}{i:048x}",
                "text": text,
                "readers": choices[int(rng.integers(len(choices)))],
                "groups": choices[int(rng.integers(len(choices)))],
                "doc_id": f"d{i}",
                **extra,
            }
        )
    return rows


ROWS = _acl_rows()


def readable(p: Principal, r: dict[str, Any], flagged: bool = False) -> bool:
    """The ACL as the product defines it, in Python: the oracle every path is checked against."""
    start = r.get("effective_from_us", 0)
    end = r.get("effective_to_us", 2**62)
    claims = p.user in r["readers"] or bool(set(p.groups) & set(r["groups"]))
    in_effect = start is not None and end is not None and start <= T < end
    hidden = not flagged and bool(set(r.get("flags") or ()) & set(FLAGGED))
    return r.get("tenant", "acme") == p.tenant and claims and in_effect and not hidden


@pytest.fixture(scope="module")
def acl_table(tmp_path_factory: pytest.TempPathFactory) -> Any:
    vectors = np.random.default_rng(2).standard_normal((len(ROWS), DIM))
    return build(tmp_path_factory.mktemp("acl"), ROWS, vectors)


PRINCIPALS = [
    Principal("acme", "alice"),
    Principal("acme", "alice", ("staff",)),
    Principal("acme", "bob", ("g:staff",)),
    Principal("acme", "r:alice"),  # a user named like a reader key reads only what names it
    Principal("acme", "mallory", ("",)),  # the empty group name matches only the empty group
    Principal("acme", "mallory", ("a:b", "legal")),
    Principal("acme", "nobody"),
    Principal("other", "alice", ("staff",)),
]


def _whole(where: str) -> str:
    """The same filter, not registered: every query runs under it whole (the unsplit path)."""
    unsplit = f"({where})"
    assert scope_of(unsplit) is None
    return unsplit


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: f"{p.tenant}/{p.user}/{p.groups}")
@pytest.mark.parametrize("flagged", [False, True])
def test_split_filter_ranks_exactly_as_the_whole_filter(
    acl_table: Any, principal: Principal, flagged: bool
) -> None:
    where = access_filter(principal, NOW, flagged)
    assert where is not None and scope_of(where) is not None
    allowed = {r["id"] for r in ROWS if readable(principal, r, flagged)}
    vector = np.random.default_rng(len(principal.user)).standard_normal(DIM).tolist()
    for mode in ("dense", "lexical", "hybrid"):
        for k in (1, 7, 60):
            opts = SearchOptions(k=k, mode=mode)
            got = ranked_rows(acl_table, None, "policy words copy3", where, opts, vector)
            old = ranked_rows(acl_table, None, "policy words copy3", _whole(where), opts, vector)
            assert [(r["id"], [s["id"] for s, _ in r["_sources"]]) for r in got] == [
                (r["id"], [s["id"] for s, _ in r["_sources"]]) for r in old
            ], (mode, k)
            seen = {s["id"] for r in got for s, _ in r["_sources"]}
            assert seen <= allowed, (mode, k, seen - allowed)
            if mode == "dense":  # dense ranks every readable row: none is starved
                assert len(got) == min(k, len(_distinct(allowed)))


def _distinct(ids: set[str]) -> set[str]:
    """One id per text among ``ids`` (exact copies fold into one hit)."""
    by_text = {r["text"]: r["id"] for r in sorted(ROWS, key=lambda r: r["id"]) if r["id"] in ids}
    return set(by_text.values())


@pytest.mark.parametrize("principal", PRINCIPALS, ids=lambda p: f"{p.tenant}/{p.user}/{p.groups}")
def test_copies_under_the_claims_are_exactly_the_copies_under_the_whole_filter(
    acl_table: Any, principal: Principal
) -> None:
    where = access_filter(principal, NOW)
    assert where is not None
    groups = {r["dup_group"] for r in dataset(acl_table).to_table(columns=["dup_group"]).to_pylist()}
    got = collapse.copy_ids(acl_table, where, groups)
    old = collapse.copy_ids(acl_table, _whole(where), groups)
    ids = sorted(r["id"] for r in got.rows)
    assert ids == sorted(r["id"] for r in old.rows)
    assert set(ids) == {r["id"] for r in ROWS if readable(principal, r)}
    assert all(set(r) == {"id", "dup_group", "_rowid"} for r in got.rows)


def test_copies_at_the_limit_are_queried_under_the_whole_filter(
    acl_table: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When the claims alone reach the limit, rows the checks would drop could have pushed
    readable rows past it: the whole filter is queried instead, and still nothing unreadable."""
    principal = Principal("acme", "alice", ("staff", "legal", "g:staff"))
    where = access_filter(principal, NOW)
    assert where is not None
    monkeypatch.setattr(collapse, "MAX_CANDIDATES", 5)
    groups = {r["dup_group"] for r in dataset(acl_table).to_table(columns=["dup_group"]).to_pylist()}
    got = collapse.copy_ids(acl_table, where, groups)
    allowed = {r["id"] for r in ROWS if readable(principal, r)}
    assert len(got.rows) == 5 and {r["id"] for r in got.rows} <= allowed


@pytest.mark.parametrize("principal", PRINCIPALS[:4], ids=lambda p: f"{p.user}/{p.groups}")
def test_candidate_lists_match_the_whole_filter(acl_table: Any, principal: Principal) -> None:
    where = access_filter(principal, NOW)
    assert where is not None
    vector = np.random.default_rng(5).standard_normal(DIM).tolist()
    for n in (1, 5, 40):
        assert candidates.dense(acl_table, vector, where, n) == candidates.dense(
            acl_table, vector, _whole(where), n
        )
        assert candidates.lexical(acl_table, "policy words", where, n) == candidates.lexical(
            acl_table, "policy words", _whole(where), n
        )


def test_no_principal_and_empty_names_see_nothing(acl_table: Any) -> None:
    """A missing user or tenant is no filter at all (callers return nothing); an unknown user
    without groups reads only rows naming it."""
    assert access_filter(None, NOW) is None
    assert access_filter(Principal("acme", ""), NOW) is None
    assert access_filter(Principal("", "alice"), NOW) is None
    where = access_filter(Principal("acme", "nobody"), NOW)
    assert where is not None
    assert ranked_rows(acl_table, None, "policy", where, SearchOptions(k=50), [1.0] * DIM) == []


principals = st.builds(
    Principal,
    tenant=st.sampled_from(["acme", "other"]),
    user=st.sampled_from([n for n in NAMES if n] + ["mallory"]),
    groups=st.lists(st.sampled_from(NAMES), max_size=3, unique=True).map(tuple),
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(principal=principals, k=st.integers(1, 30), mode=st.sampled_from(["dense", "lexical", "hybrid"]))
def test_any_principal_gets_what_the_whole_filter_gives(
    acl_table: Any, principal: Principal, k: int, mode: str
) -> None:
    where = access_filter(principal, NOW)
    assert where is not None
    opts = SearchOptions(k=k, mode=mode)
    got = ranked_rows(acl_table, None, "shared passage copy1", where, opts, [0.5] * DIM)
    old = ranked_rows(acl_table, None, "shared passage copy1", _whole(where), opts, [0.5] * DIM)
    assert [r["id"] for r in got] == [r["id"] for r in old]
    allowed = {r["id"] for r in ROWS if readable(principal, r)}
    assert {s["id"] for r in got for s, _ in r["_sources"]} <= allowed


def test_a_pinned_handle_reads_one_version(tmp_path: Path) -> None:
    """``pin`` resolves the dataset once; the handle's other attributes are the table's, and a
    later pin of the moved handle reads the new version."""
    rows = [{"id": f"{i:064x}", "text": f"{TEXT} {i}", "groups": ["staff"]} for i in range(5)]
    table = build(tmp_path, rows, np.random.default_rng(1).standard_normal((5, DIM)))
    pinned = pin(table)
    assert isinstance(pinned, Pinned) and pin(pinned) is pinned
    assert dataset(pinned) is pinned.ds and pinned.ds.version == table.version
    assert pinned.count_rows() == 5 and copy.copy(pinned).ds is pinned.ds
    table.delete(f"id = '{0:064x}'")
    assert dataset(pinned).count_rows() == 5  # the version it was pinned at
    assert dataset(pin(table)).count_rows() == 4


def test_only_the_rows_kept_are_checked_and_a_failure_among_them_falls_back() -> None:
    """``checked(top=n)``: a row failing the checks below the cut costs no second query (the
    rows kept are the best under the whole filter too); one failing among the kept rows makes
    the whole filter answer, so it is never returned."""
    where = access_filter(Principal("acme", "alice", ("staff",)), NOW)
    assert where is not None
    good = {"tenant": "acme", "effective_from_us": 0, "effective_to_us": 2**62, "flags": []}
    bad = {**good, "flags": [FLAGGED[0]]}
    calls: list[str] = []

    def run_with(failing_at: int) -> Any:
        def run(flt: str, more: list[str]) -> list[dict[str, Any]]:
            calls.append(flt)
            rows = [
                {"id": f"{i:04x}", "_score": 10.0 - i, **(bad if i == failing_at else good)} for i in range(8)
            ]
            if not more:  # the whole filter: the failing row is not there
                return [{"id": r["id"], "_score": r["_score"]} for r in rows if r["flags"] == []]
            return rows

        return run

    kept = candidates.checked(where, run_with(6), top=3)
    assert [r["id"] for r in kept] == ["0000", "0001", "0002"] and len(calls) == 1
    assert set(kept[0]) == {"id", "_score"}
    calls.clear()
    kept = candidates.checked(where, run_with(1), top=3)
    assert [r["id"] for r in kept] == ["0000", "0002", "0003"] and len(calls) == 2
    assert calls[1] == where
