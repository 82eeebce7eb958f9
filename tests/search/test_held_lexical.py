"""The BM25 list of a held mask from the unfiltered list (``tessera.search.held_lexical``): it is
the mask's exact top (every row tied with the last included), or no answer; never a row outside
the mask, never a row missing that the allowlisted query ranks above the cut. Attacked with
masks whose rows all rank below the unfiltered list, ties across the list's cut, masks too
small to read unfiltered, and random masks, depths and queries."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lance.dataset import serialize_row_addrs

from tessera.search import candidates, flat, held_lexical, masks
from tessera.search.dataset import dataset
from tessera.search.fusion import TIE
from tessera.search.masks import Allowed
from tessera.search.principal import Principal, access_filter

from .test_fast_path import DIM, build

VOCAB = [f"w{i}" for i in range(12)]
ROWS = 600


def _text(rng: np.random.Generator) -> str:
    """Varying lengths and term counts, so scores mostly differ (some still tie)."""
    return " ".join(rng.choice(VOCAB, int(rng.integers(3, 30))))


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Any, np.ndarray]:
    """600 rows; the first 60 say ``w0`` forty times (outside every mask the tests draw from
    the rest), groups ``staff`` on one row in ten."""
    rng = np.random.default_rng(5)
    rows = []
    for i in range(ROWS):
        text = " ".join(["w0"] * 40) if i < 60 else _text(rng)
        rows.append({"id": f"{i:064x}", "text": text, "groups": ["staff"] if i % 10 == 3 else ["board"]})
    table = build(tmp_path_factory.mktemp("held"), rows, rng.standard_normal((ROWS, DIM)))
    ds = dataset(table)
    rowids = ds.to_table(columns=["id"], with_row_id=True)
    order = np.argsort(np.asarray(rowids.column("id").to_pylist()))
    return table, rowids.column("_rowid").to_numpy()[order]  # row ids in row order


def _held(ds: Any, rowids: np.ndarray) -> tuple[Allowed, flat.FlatSet]:
    blob = serialize_row_addrs(sorted(rowids.tolist()))
    allowed = Allowed(f"test-{len(rowids)}-{int(rowids.sum())}", blob, len(rowids))
    return allowed, flat._read(ds, allowed)


def _allowlisted(ds: Any, query: str, allowed: Allowed) -> list[tuple[int, float]]:
    """Every row of the mask the query matches, by Lance under the allowlist, best first."""
    hits = ds.scanner(
        columns=["_score"], full_text_query={"query": query, "columns": ["embedding_text"]},
        with_row_id=True, limit=ROWS, disable_scoring_autoprojection=True, row_addr_allowlist=allowed.blob,
    ).to_table()  # fmt: skip
    pairs = zip(hits.column("_rowid").to_pylist(), hits.column("_score").to_pylist(), strict=True)
    return sorted(pairs, key=lambda p: -p[1])


def _expected(ranked: list[tuple[int, float]], depth: int) -> dict[int, float]:
    """The exact top ``depth`` with every row tied with its last."""
    if len(ranked) <= depth:
        return dict(ranked)
    nth = ranked[depth - 1][1]
    return {r: s for r, s in ranked if s >= nth - TIE}


def _answer(ds: Any, query: str, depth: int, held: flat.FlatSet) -> dict[int, float] | None:
    fts = {"query": query, "columns": ["embedding_text"]}
    got = held_lexical.held_top(ds, fts, depth, held, ROWS)
    if got is None:
        return None
    scores = got.column("_score").to_pylist()
    assert scores == sorted(scores, reverse=True)  # best first
    return dict(zip(got.column("_rowid").to_pylist(), scores, strict=True))


@settings(max_examples=60, deadline=None)
@given(
    seed=st.integers(0, 2**32 - 1),
    share=st.sampled_from([0.05, 0.1, 0.3, 0.9]),
    depth=st.integers(1, 60),
    words=st.integers(1, 4),
)
def test_the_answer_is_the_masks_exact_top_or_none(
    corpus: tuple[Any, np.ndarray], seed: int, share: float, depth: int, words: int
) -> None:
    table, rowids = corpus
    ds = dataset(table)
    rng = np.random.default_rng(seed)
    chosen = rng.choice(rowids[60:], max(1, int(share * (ROWS - 60))), replace=False)
    allowed, held = _held(ds, chosen)
    query = " ".join(rng.choice(VOCAB[1:], words))
    got = _answer(ds, query, depth, held)
    if got is not None:
        assert set(got) <= set(chosen.tolist())  # never a row outside the mask
        assert got == _expected(_allowlisted(ds, query, allowed), depth)


def test_a_mask_ranked_below_the_unfiltered_list_gets_no_answer_and_search_stays_exact(
    corpus: tuple[Any, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """``w0``: the 60 rows outside the mask fill the unfiltered list (a mask of 10 % asks it
    1.5 * 5 / 0.1 = 75 deep, 60 of them outside), so the mask's rows below it could be missing:
    no answer; then the search's list is Lance's under the allowlist, the same rows."""
    table, rowids = corpus
    ds = dataset(table)
    chosen = rowids[60:][::9][:60]
    allowed, held = _held(ds, chosen)
    assert _answer(ds, "w0", 5, held) is None
    monkeypatch.setattr(held_lexical, "OVERFETCH", 40.0)  # deep enough to reach the mask's rows
    assert _answer(ds, "w0", 5, held) == _expected(_allowlisted(ds, "w0", allowed), 5)


def test_a_tie_across_the_lists_cut_gets_no_answer(
    corpus: tuple[Any, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mask's top rows tie with the unfiltered list's last row: rows of the tie past the
    cut could rank in the top, so the list cannot decide it."""
    table, rowids = corpus
    ds = dataset(table)
    w0 = rowids[:60]  # forty ``w0`` each: all tied
    allowed, held = _held(ds, w0[::2])
    # 30 of the 60 in the mask; the list is 1.5 * 20 / (30 / 600) = 600 deep: all of them
    assert _answer(ds, "w0", 20, held) == _expected(_allowlisted(ds, "w0", allowed), 20)
    assert len(_answer(ds, "w0", 20, held) or {}) == 30  # every tied row, for the cut by id
    monkeypatch.setattr(held_lexical, "OVERFETCH", 1.0)  # 400 deep: still every w0 row; then past the ties
    assert _answer(ds, "w0", 20, held) is not None
    monkeypatch.setattr(held_lexical, "OVERFETCH", 0.04)  # 16 deep: the list ends inside the tie
    assert _answer(ds, "w0", 20, held) is None


def test_a_small_mask_is_never_read_unfiltered(
    corpus: tuple[Any, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    table, rowids = corpus
    ds = dataset(table)
    _, held = _held(ds, rowids[60:63])  # 3 of 600: 1.5 * 40 * 200 = 12,000 deep
    scans: list[Any] = []
    real = type(ds).scanner
    monkeypatch.setattr(type(ds), "scanner", lambda self, *a, **k: scans.append(k) or real(self, *a, **k))
    assert _answer(ds, "w1", 40, held) is None and scans == []
    monkeypatch.setattr(held_lexical, "MAX_DEPTH", 20_000)
    assert _answer(ds, "w1", 40, held) is not None and len(scans) == 1


def test_the_search_lists_equal_with_and_without_the_unfiltered_read(
    corpus: tuple[Any, np.ndarray], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Through ``candidates.lexical`` with the rows held: the same list as the allowlisted one,
    for every query and depth; and the unfiltered read did answer."""
    table, _ = corpus
    where = access_filter(Principal("acme", "alice", ("staff",)), datetime(2026, 6, 1, tzinfo=UTC))
    assert where is not None
    monkeypatch.setattr(candidates, "mask_for", masks.claims_mask)
    monkeypatch.setattr(flat, "AFTER", 0)
    answered: list[bool] = []
    real = held_lexical.held_top

    def counting(*a: Any) -> Any:
        out = real(*a)
        answered.append(out is not None)
        return out

    for query in ("w1", "w2 w3", "w4 w5 w6 w7", "w0 w1", "nothing"):
        for n in (1, 5, 10, 40):
            monkeypatch.setattr(candidates, "held_top", counting)
            got = candidates.lexical(table, query, where, n)
            monkeypatch.setattr(candidates, "held_top", lambda *a: None)
            want = candidates.lexical(table, query, where, n)
            assert [(r["id"], r["_score"]) for r in got] == [(r["id"], r["_score"]) for r in want], (query, n)
    assert sum(answered) >= 10
