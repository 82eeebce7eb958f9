"""Choosing the profile by leave-one-corpus-out cross-validation.

For each development corpus ``c``: the profile is chosen by :func:`choose` on the *other*
corpora (per-corpus scores averaged, each corpus weighing the same), then scored on ``c``.
The held-out scores, their spread across corpora and the worst corpus estimate how the
selection rule does on a corpus it has not seen. The recommended profile is the one the
folds choose most often (ties: the choice on all corpora), so it is a profile that won out
of sample, not the in-sample maximum.

The rule (:func:`choose`) ranks the profiles by, in order: being ahead of every peer on the
training corpora's average (hybrid recall and IoU above each peer's, dense recall at most
one point below the best peer's); the number of training corpora on which its hybrid recall
and IoU are above every peer's (the acceptance asks for that on all corpora but one, so a
profile ahead on the average but behind on half the corpora ranks below one ahead on nearly
all); the largest smallest margin above the peers' recall/IoU frontier
(:mod:`tessera.evaluation.chunking.frontier`) over the modes; hybrid recall.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from statistics import mean, pstdev
from typing import Any

from tessera.evaluation.chunking import frontier

METRICS = ("recall", "iou", "token_recall", "token_iou", "recall_at_budget")
DENSE_SLACK = 1.0
"""Dense recall may be this many points below the best peer's (the acceptance rule)."""
COUNTED = "hybrid"
"""The mode whose per-corpus lead :func:`choose` counts (dense is held to the average)."""


def macro(row: Mapping[str, Any], corpora: Sequence[str], mode: str) -> dict[str, float]:
    """Per-corpus means of ``row`` averaged over ``corpora`` (each corpus weighs the same)."""
    per = row["per_corpus"]
    return {m: mean(float(per[c][mode][m]) for c in corpora) for m in METRICS if m in per[corpora[0]][mode]}


def view(row: Mapping[str, Any], corpora: Sequence[str], modes: Sequence[str]) -> dict[str, Any]:
    return {"name": row["name"], **{m: macro(row, corpora, m) for m in modes}}


def ahead(
    row: Mapping[str, Any], peers: Sequence[Mapping[str, Any]], modes: Sequence[str]
) -> dict[str, bool]:
    """Per mode, whether ``row`` (a view: mode -> metrics) is ahead of every peer: hybrid on
    recall and IoU, dense on recall within ``DENSE_SLACK``."""
    return {m: all(bool(leads(row, p, m)) for p in peers) for m in modes}


def leads(row: Mapping[str, Any], peer: Mapping[str, Any], mode: str) -> Any:
    """Whether ``row`` leads ``peer`` in ``mode`` (dense: recall within ``DENSE_SLACK``; else
    recall and IoU above). Scores may be floats or NumPy arrays of bootstrap draws (then one
    boolean per draw): the one comparison :func:`ahead` and the bootstrap share."""
    r, q = row[mode], peer[mode]
    if mode == "dense":
        return r["recall"] >= q["recall"] - DENSE_SLACK
    return (r["recall"] > q["recall"]) & (r["iou"] > q["iou"])


def choose(
    rows: Sequence[Mapping[str, Any]],
    peers: Sequence[Mapping[str, Any]],
    corpora: Sequence[str],
    modes: Sequence[str],
) -> str:
    """The name of the profile the rule picks using only ``corpora`` (see the module doc)."""
    pviews = [view(p, corpora, modes) for p in peers]

    def key(r: Mapping[str, Any]) -> tuple[bool, int, float, float]:
        v = view(r, corpora, modes)
        if not pviews:
            return True, 0, 0.0, sum(v[m]["recall"] + v[m]["iou"] for m in modes)
        margin = min(frontier.margins(v, pviews, modes).values())
        wins = corpora_ahead(r, peers, corpora, [COUNTED] if COUNTED in modes else modes)
        return all(ahead(v, pviews, modes).values()), wins, margin, v[modes[-1]]["recall"]

    return str(max(rows, key=key)["name"])


def corpora_ahead(
    row: Mapping[str, Any], peers: Sequence[Mapping[str, Any]], corpora: Sequence[str], modes: Sequence[str]
) -> int:
    """On how many of ``corpora`` ``row`` is ahead of every peer in every mode (:func:`ahead`)."""
    return sum(
        all(ahead(view(row, [c], modes), [view(p, [c], modes) for p in peers], modes).values())
        for c in corpora
    )


def spread(values: Mapping[str, float]) -> dict[str, Any]:
    """Mean, population standard deviation, and the worst corpus of per-corpus values."""
    worst = min(values, key=lambda c: values[c])
    vals = list(values.values())
    return {"mean": round(mean(vals), 2), "std": round(pstdev(vals), 2), "min": round(values[worst], 2),
            "worst": worst}  # fmt: skip


def leave_one_out(
    rows: Sequence[Mapping[str, Any]],
    peers: Sequence[Mapping[str, Any]],
    corpora: Sequence[str],
    modes: Sequence[str],
) -> dict[str, Any]:
    """The folds, the held-out summary of the rule and of every peer, and the recommendation."""
    if not rows:
        return {"folds": [], "recommended": None}
    by_name = {r["name"]: r for r in rows}
    folds: list[dict[str, Any]] = []
    for held in corpora:
        train = [c for c in corpora if c != held] or list(corpora)
        chosen = choose(rows, peers, train, modes)
        scores = {m: by_name[chosen]["per_corpus"][held][m] for m in modes}
        pscores = [{"name": p["name"], **{m: p["per_corpus"][held][m] for m in modes}} for p in peers]
        folds.append({"held_out": held, "chosen": chosen, "scores": scores,
                      "ahead_of_peers": ahead(scores, pscores, modes) if peers else {}})  # fmt: skip
    full = choose(rows, peers, corpora, modes)
    counts = Counter(f["chosen"] for f in folds)
    top = max(counts.values())
    recommended = full if counts[full] == top else sorted(n for n, c in counts.items() if c == top)[0]
    held_out = {
        m: {k: spread({f["held_out"]: float(f["scores"][m][k]) for f in folds}) for k in METRICS
            if k in folds[0]["scores"][m]}
        for m in modes
    }  # fmt: skip
    fixed = {
        r["name"]: {
            m: {k: spread({c: float(r["per_corpus"][c][m][k]) for c in corpora}) for k in ("recall", "iou")}
            for m in modes
        }
        for r in [*rows, *peers]
    }
    wins = {m: sum(bool(f["ahead_of_peers"].get(m)) for f in folds) for m in modes}
    return {
        "rule": __doc__.split("The rule")[1].strip() if __doc__ else "",
        "folds": folds,
        "chosen_counts": dict(counts),
        "full_data_choice": full,
        "recommended": recommended,
        "held_out": held_out,
        "corpora_ahead_of_every_peer": wins,
        "per_corpus_spread": fixed,
    }


def paired_gain(
    a: Mapping[str, Any], b: Mapping[str, Any], corpora: Sequence[str], mode: str, metric: str = "recall"
) -> dict[str, float]:
    """``a`` minus ``b`` per corpus: the mean gain and its noise (standard error across corpora)."""
    diffs = [
        float(a["per_corpus"][c][mode][metric]) - float(b["per_corpus"][c][mode][metric]) for c in corpora
    ]
    se = pstdev(diffs) / max(1.0, (len(diffs) - 1) ** 0.5) if len(diffs) > 1 else float("inf")
    return {"gain": round(mean(diffs), 2), "noise": round(se, 2), "wins": mean(diffs) > 2 * se}
