"""Leave-one-corpus-out selection, token-level spans, and the sentence-vector noise rule."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

from tessera.evaluation.chunking import loco
from tessera.golden.metrics import Span, TokenGrid, score

CORPORA = ["a", "b", "c", "d"]


def row(name: str, per: dict[str, tuple[float, float]], dense: float | None = None) -> dict[str, Any]:
    """A report row: per corpus (recall, IoU) in both modes (dense recall shifted by ``dense``)."""

    def s(r: float, i: float) -> dict[str, float]:
        return {"recall": r, "iou": i, "token_recall": r, "token_iou": i, "recall_at_budget": r}

    pc = {c: {"hybrid": s(*v), "dense": s(v[0] + (dense or 0.0), v[1])} for c, v in per.items()}
    return {"name": name, "per_corpus": pc}


PEERS = [
    row("peer-big", {c: (80.0, 4.0) for c in CORPORA}),
    row("peer-small", {c: (70.0, 6.0) for c in CORPORA}),
]


def test_the_held_out_corpus_never_influences_its_own_choice() -> None:
    # "overfit" is by far the best on corpus a only: chosen on a alone, it would win; every
    # fold sees it lose on the other corpora, so no fold chooses it
    overfit = row("overfit", {"a": (99.0, 20.0), "b": (60.0, 3.0), "c": (60.0, 3.0), "d": (60.0, 3.0)})
    steady = row("steady", {c: (85.0, 7.0) for c in CORPORA})
    rows = [overfit, steady]
    sel = loco.leave_one_out(rows, PEERS, CORPORA, ["dense", "hybrid"])
    chosen = {f["held_out"]: f["chosen"] for f in sel["folds"]}
    assert chosen == {"a": "steady", "b": "steady", "c": "steady", "d": "steady"}
    assert sel["recommended"] == "steady"
    assert sel["folds"][0]["scores"]["hybrid"]["recall"] == 85.0  # scored on the held-out corpus
    assert sel["corpora_ahead_of_every_peer"] == {"dense": 4, "hybrid": 4}
    # the choice on a fold's training corpora alone can differ from the in-sample one
    assert loco.choose(rows, PEERS, ["a"], ["hybrid"]) == "overfit"


def test_spread_reports_the_worst_corpus_and_peers_get_their_own_rows() -> None:
    shaky = row("shaky", {"a": (90.0, 8.0), "b": (95.0, 8.0), "c": (70.0, 8.0), "d": (92.0, 8.0)})
    sel = loco.leave_one_out([shaky], PEERS, CORPORA, ["hybrid"])
    h = sel["held_out"]["hybrid"]["recall"]
    assert h["worst"] == "c" and h["min"] == 70.0 and h["mean"] == pytest.approx(86.75)
    assert h["std"] > 9
    assert sel["corpora_ahead_of_every_peer"] == {"hybrid": 3}  # behind peer-big on c
    assert sel["per_corpus_spread"]["peer-big"]["hybrid"]["recall"]["std"] == 0.0


def test_a_profile_ahead_on_more_corpora_beats_a_larger_average_margin() -> None:
    # "spiky" is ahead on the average with the larger frontier margin, but it is behind a peer
    # on two corpora; "even" is ahead on every corpus: the rule counts corpora before margins
    spiky = row("spiky", {"a": (99.0, 12.0), "b": (99.0, 12.0), "c": (79.0, 7.0), "d": (79.0, 7.0)})
    even = row("even", {c: (84.0, 7.0) for c in CORPORA})
    modes = ["dense", "hybrid"]
    assert loco.corpora_ahead(spiky, PEERS, CORPORA, modes) == 2
    assert loco.corpora_ahead(even, PEERS, CORPORA, modes) == 4
    assert loco.choose([spiky, even], PEERS, CORPORA, modes) == "even"
    # the average still comes first: ahead on more corpora but behind on the average loses
    lopsided = row("lopsided", {"a": (81.0, 6.5), "b": (81.0, 6.5), "c": (81.0, 6.5), "d": (20.0, 1.0)})
    assert loco.corpora_ahead(lopsided, PEERS, CORPORA, modes) == 3
    assert loco.choose([lopsided, spiky], PEERS, CORPORA, modes) == "spiky"
    # with the count equal, the margin decides (the previous rule)
    lower = row("lower", {"a": (98.0, 12.0), "b": (98.0, 12.0), "c": (79.0, 7.0), "d": (79.0, 7.0)})
    assert loco.choose([lower, spiky], PEERS, CORPORA, modes) == "spiky"
    # the count is of hybrid leads: a dense dip on one corpus (the average still within a
    # point) does not cost that corpus, a hybrid dip does
    dense_dip = row("dense-dip", {c: (84.0, 7.0) for c in CORPORA})
    dense_dip["per_corpus"]["b"]["dense"]["recall"] = 78.0
    assert loco.corpora_ahead(dense_dip, PEERS, CORPORA, modes) == 3
    assert loco.corpora_ahead(dense_dip, PEERS, CORPORA, ["hybrid"]) == 4
    hybrid_dip = row("hybrid-dip", {c: (84.0, 7.0) for c in CORPORA})
    hybrid_dip["per_corpus"]["b"]["hybrid"]["iou"] = 5.0
    assert loco.choose([hybrid_dip, dense_dip], PEERS, CORPORA, modes) == "dense-dip"
    assert loco.choose([dense_dip, hybrid_dip], PEERS, CORPORA, modes) == "dense-dip"
    # but a dense average more than a point below a peer's drops a profile from the first rank
    dense_low = row("dense-low", {c: (90.0, 9.0) for c in CORPORA}, dense=-12.0)  # dense 78 < 80 - 1
    assert loco.choose([dense_low, hybrid_dip], PEERS, CORPORA, modes) == "hybrid-dip"


def test_dense_may_trail_by_one_point_only() -> None:
    close = row("close", {c: (85.0, 7.0) for c in CORPORA}, dense=-4.5)  # dense 80.5 vs peer 80: ahead
    behind = row("behind", {c: (85.0, 7.0) for c in CORPORA}, dense=-6.5)  # 78.5: more than 1 behind
    views = [
        {"name": r["name"], **{m: loco.macro(r, CORPORA, m) for m in ("dense", "hybrid")}}
        for r in (close, behind)
    ]
    pviews = [
        {"name": p["name"], **{m: loco.macro(p, CORPORA, m) for m in ("dense", "hybrid")}} for p in PEERS
    ]
    assert loco.ahead(views[0], pviews, ["dense", "hybrid"]) == {"dense": True, "hybrid": True}
    assert loco.ahead(views[1], pviews, ["dense", "hybrid"]) == {"dense": False, "hybrid": True}


def test_a_feature_wins_only_beyond_its_noise() -> None:
    base = row("base", {c: (80.0, 7.0) for c in CORPORA})
    steady_gain = row("sv", {c: (82.0 + 0.1 * k, 7.0) for k, c in enumerate(CORPORA)})
    noisy_gain = row("sv2", {"a": (90.0, 7.0), "b": (75.0, 7.0), "c": (86.0, 7.0), "d": (77.0, 7.0)})
    assert loco.paired_gain(steady_gain, base, CORPORA, "hybrid")["wins"]
    noisy = loco.paired_gain(noisy_gain, base, CORPORA, "hybrid")
    assert noisy["gain"] == pytest.approx(2.0) and not noisy["wins"]


def test_token_grid_counts_whole_tokens() -> None:
    # tokens of "alpha beta gamma": [0,5) [6,10) [11,16)
    grid = TokenGrid("x", [(0, 5), (6, 10), (11, 16)])
    assert grid.tokens(Span("x", 7, 8)) == Span("x", 1, 2)  # a character inside "beta": that token
    assert grid.tokens(Span("x", 0, 16)) == Span("x", 0, 3)
    assert grid.tokens(Span("x", 5, 6)) == Span("x", 1, 1)  # only the space: no token
    assert grid.tokens(Span("y", 3, 9)) == Span("y", 3, 9)  # another corpus is left alone
    ref, got = grid.tokens(Span("x", 6, 16)), grid.tokens(Span("x", 0, 8))
    s = score([got], [ref])
    assert s.recall == pytest.approx(0.5) and s.iou == pytest.approx(1 / 3)


def test_fusion_is_chosen_on_the_training_corpora_only_and_ties_keep_the_product() -> None:
    from tessera.evaluation.chunking.fusion import select

    def scores(**recall: float) -> dict[str, Any]:
        return {"per_corpus": {c: {"recall": r, "iou": r / 10} for c, r in recall.items()}}

    report = {
        "product": scores(a=80.0, b=70.0, c=60.0),
        "variants": {
            "fits-c": scores(a=70.0, b=60.0, c=99.0),  # best only where it is scored: never chosen for c
            "better": scores(a=85.0, b=75.0, c=50.0),
            "same": scores(a=80.0, b=70.0, c=60.0),  # ties the product everywhere: the product stays
        },
    }
    out = select(report, ["a", "b", "c"])
    by = {f["held_out"]: f for f in out["folds"]}
    assert by["c"]["choice"] == "better" and by["c"]["recall"] == 50.0 and by["c"]["product_recall"] == 60.0
    assert by["a"]["choice"] == "fits-c"  # trained on b and c: (60 + 99) / 2 beats the others
    assert by["b"]["choice"] == "fits-c"
    assert out["held_out_recall"] == round((70.0 + 60.0 + 50.0) / 3, 2)
    assert out["product_recall"] == 70.0 and out["most_chosen"] == "fits-c"
    tied = {"product": report["product"], "variants": {"same": report["variants"]["same"]}}
    same = select(tied, ["a", "b"])
    assert {f["choice"] for f in same["folds"]} == {"product"}


def test_the_bootstrap_counts_corpora_where_the_lead_survives_resampling() -> None:
    from tessera.evaluation.chunking.bootstrap import ahead

    rng = np.random.default_rng(7)
    labels = ["a"] * 40 + ["b"] * 40 + ["c"] * 40
    peer_r = rng.uniform(40, 100, 120)
    peer_i = rng.uniform(1, 10, 120)
    lead = np.array([30.0] * 40 + [0.0] * 40 + [-30.0] * 40)  # far ahead on a, level on b, behind on c
    noise = np.concatenate([np.zeros(40), rng.normal(0, 20, 40), np.zeros(40)])

    def scores(r: np.ndarray, i: np.ndarray) -> dict[str, dict[str, list[float]]]:
        return {"hybrid": {"recall": list(r), "iou": list(i)}, "dense": {"recall": list(r), "iou": list(i)}}

    peer = scores(peer_r, peer_i)
    row = scores(np.clip(peer_r + lead + noise, 0, 100), peer_i + lead / 10 + noise / 10)
    out = ahead(row, [peer], labels, samples=500)
    per = out["per_corpus"]
    assert per["a"]["hybrid"] == 1.0 and per["c"]["hybrid"] == 0.0
    assert 0.05 < per["b"]["hybrid"] < 0.95  # a level corpus is a coin toss, not a win
    assert out["expected_corpora_ahead"] == pytest.approx(1 + per["b"]["hybrid"], abs=0.01)
    assert out["p_all_but_one"] == pytest.approx(per["b"]["hybrid"], abs=0.01)  # needs b (c is lost)
    assert ahead(row, [peer], labels, samples=500) == out  # deterministic for a seed
    # paired and strict: a profile equal to the peer is never ahead, in any draw
    assert ahead(peer, [peer], labels, samples=200)["expected_corpora_ahead"] == 0.0
    # dense within a point counts as level: 0.5 below everywhere is within, 1.5 is not
    low = scores(peer_r - 0.5, peer_i)
    assert all(v["dense"] == 1.0 for v in ahead(low, [peer], labels, samples=100)["per_corpus"].values())
    lower = scores(peer_r - 1.5, peer_i)
    assert all(v["dense"] == 0.0 for v in ahead(lower, [peer], labels, samples=100)["per_corpus"].values())
