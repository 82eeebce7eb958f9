"""The bounded memo behind search's per-commit caches: least recently used entries go first,
by count and by total size; the newest entry always stays."""

from __future__ import annotations

from tessera.search.memo import Memo


def test_the_least_recently_used_goes_first_past_the_count() -> None:
    memo: Memo[str, int] = Memo(keep=2)
    memo.put("a", 1)
    memo.put("b", 2)
    assert memo.get("a") == 1  # "b" is now the least recently used
    memo.put("c", 3)
    assert (memo.get("a"), memo.get("b"), memo.get("c")) == (1, None, 3)


def test_sizes_past_the_budget_evict_but_never_the_newest() -> None:
    memo: Memo[str, bytes] = Memo(keep=10, budget=10, size=len)
    memo.put("a", b"1234")
    memo.put("b", b"5678")
    memo.put("c", b"90")  # 10 in all: within the budget
    assert memo.get("a") is not None
    memo.put("d", b"x")  # 11: "b" (least recently used) goes
    assert memo.get("b") is None and memo.get("a") is not None
    memo.put("huge", b"y" * 50)  # alone over the budget: everything else goes, it stays
    assert memo.get("huge") == b"y" * 50 and all(memo.get(k) is None for k in "acd")
    memo.put("huge", b"z")  # replaced: its old size no longer counts
    memo.put("e", b"123456789")
    assert memo.get("huge") == b"z" and memo.get("e") is not None
