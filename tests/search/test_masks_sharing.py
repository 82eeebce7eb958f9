"""Principals of the same groups share one claims mask and one held set
(``tessera.search.masks.claims_of``), and only while the user's own reader claim admits no row
of the version: a user's own rows are never shared with another user, never lost to its own
search, and a version that names the user ends the sharing for that version. Issue 17 (a
principal's first search)."""

from __future__ import annotations

from typing import Any

import pytest

from tessera.search import candidates, flat
from tessera.search.dataset import dataset, pin
from tessera.search.masks import claims_of
from tessera.search.principal import Principal

from .test_masks import DIM, _vector, _where, table  # noqa: F401  (the fixture)

ALICE = Principal("acme", "alice", ("staff",))  # on readers of rows 0, 7, 14, ...
BOB = Principal("acme", "bob", ("staff",))  # on no row's readers
CAROL = Principal("acme", "carol", ("staff",))
ONLY_ALICE = f"{14:064x}"  # no group (14 % 4 == 2), alice on its readers
STAFF = "(array_has_any(groups, ['staff']))"


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Rows held from a mask's first query; the claims of every set read are listed."""
    monkeypatch.setattr(flat, "AFTER", 0)
    read: list[str] = []
    real = flat._read

    def reading(ds: Any, allowed: Any) -> Any:
        read.append(allowed.claims)
        return real(ds, allowed)

    monkeypatch.setattr(flat, "_read", reading)
    return read


def _dense(table: Any, principal: Principal, chunk_id: str, k: int = 5) -> list[str]:  # noqa: F811
    return [r["id"] for r in candidates.dense(table, _vector(table, chunk_id), _where(principal), k)]


def _lexical(table: Any, principal: Principal, query: str) -> list[str]:  # noqa: F811
    return [r["id"] for r in candidates.lexical(table, query, _where(principal), 5)]


def _by_sql(table: Any, monkeypatch: pytest.MonkeyPatch, principal: Principal, chunk_id: str) -> list[str]:  # noqa: F811
    """The same dense query under the whole filter's SQL claims: no mask, no held rows."""
    with monkeypatch.context() as m:
        m.setattr(candidates, "mask_for", lambda ds, claims: None)
        m.setattr(flat, "MAX_BYTES", 0)
        return _dense(table, principal, chunk_id)


def test_users_of_the_same_groups_share_one_mask_and_one_held_set(
    table: Any,  # noqa: F811
    reads: list[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    ds = dataset(pin(table))
    assert claims_of(ds, _scope(BOB)) == claims_of(ds, _scope(CAROL)) == STAFF
    target = f"{4:064x}"  # group staff
    bob = [_dense(table, BOB, target) for _ in range(2)]  # SQL and marked; then mask and set
    assert reads == [STAFF]
    carol = _dense(table, CAROL, target)  # her first search: bob's mask and rows answer it
    assert reads == [STAFF]
    assert carol == bob[0] == bob[1] == _by_sql(table, monkeypatch, CAROL, target)
    assert target in carol


def test_a_users_own_rows_are_never_shared_and_never_lost(table: Any, reads: list[str]) -> None:  # noqa: F811
    ds = dataset(pin(table))
    alice = _scope(ALICE)
    assert claims_of(ds, alice) == alice.claims  # her reader claim admits rows: her own mask
    query = "passage 14 about topic4"
    for _ in range(3):  # alice's set read and held, then bob and carol search the same row
        assert ONLY_ALICE in _dense(table, ALICE, ONLY_ALICE)
        assert ONLY_ALICE in _lexical(table, ALICE, query)
        for other in (BOB, CAROL):
            assert ONLY_ALICE not in _dense(table, other, ONLY_ALICE, k=60)
            assert ONLY_ALICE not in _lexical(table, other, query)
    assert sorted(set(reads)) == sorted({alice.claims, STAFF})


def test_a_version_that_names_the_user_ends_the_sharing(table: Any, reads: list[str]) -> None:  # noqa: F811
    before = dataset(pin(table))
    for _ in range(2):
        assert ONLY_ALICE not in _dense(table, BOB, ONLY_ALICE, k=60)
    table.update(where=f"id = '{ONLY_ALICE}'", values={"readers": ["alice", "bob"]})
    after = dataset(pin(table))
    bob = _scope(BOB)
    assert claims_of(before, bob) == STAFF  # the old version still shares
    assert claims_of(after, bob) == bob.claims  # the new one names bob: his own claims
    for _ in range(2):  # SQL, then his own mask and set
        assert ONLY_ALICE in _dense(table, BOB, ONLY_ALICE)
    assert ONLY_ALICE not in _dense(table, CAROL, ONLY_ALICE, k=60)  # carol still shares staff's


def test_the_same_groups_in_another_order_share_one_claim(table: Any) -> None:  # noqa: F811
    ds = dataset(pin(table))
    a = _scope(Principal("acme", "erin", ("staff", "legal")))
    b = _scope(Principal("acme", "frank", ("legal", "staff", "legal")))
    assert claims_of(ds, a) == claims_of(ds, b) == "(array_has_any(groups, ['legal', 'staff']))"


def test_claims_without_groups_or_with_nothing_to_share_are_kept_whole(table: Any) -> None:  # noqa: F811
    ds = dataset(pin(table))
    loner = _scope(Principal("acme", "dave"))
    assert loner.group_claim == "" and claims_of(ds, loner) == loner.claims
    assert _dense(table, Principal("acme", "dave"), ONLY_ALICE) == []


def _scope(principal: Principal) -> Any:
    from tessera.search.scope import scope_of

    scope = scope_of(_where(principal))
    assert scope is not None
    return scope
