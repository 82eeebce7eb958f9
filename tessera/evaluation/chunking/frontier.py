"""The peers' recall/IoU frontier and the recommended configuration.

The frontier of a mode is the piecewise-linear curve through the peers' (IoU, recall)
points that no other peer dominates, extended flat on both sides: left of the peers it
asks for the best peer recall, right of them for the recall of the peer with the highest
IoU. A configuration *beats* the frontier when its recall lies strictly above the curve at
its IoU, so trading IoU for recall along the peers' own curve does not count.
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from typing import Any

Point = tuple[float, float]  # (iou, recall)


def pareto(points: Sequence[Point]) -> list[Point]:
    """Points no other point dominates, sorted by IoU."""
    keep = [p for p in points if not any(q != p and q[0] >= p[0] and q[1] >= p[1] for q in points)]
    return sorted(set(keep))


def frontier_recall(points: Sequence[Point], iou: float) -> float:
    front = pareto(points)
    if not front:
        return 0.0
    if iou <= front[0][0]:
        return front[0][1]
    if iou >= front[-1][0]:
        return front[-1][1]
    for (x0, y0), (x1, y1) in itertools.pairwise(front):
        if x0 <= iou <= x1:
            return y0 + (y1 - y0) * (iou - x0) / (x1 - x0)
    return front[-1][1]


def margins(
    row: Mapping[str, Any], peers: Sequence[Mapping[str, Any]], modes: Sequence[str]
) -> dict[str, float]:
    """Recall above the peers' frontier at the row's IoU, per mode (percentage points)."""
    out: dict[str, float] = {}
    for mode in modes:
        points = [(p[mode]["iou"], p[mode]["recall"]) for p in peers]
        out[mode] = row[mode]["recall"] - frontier_recall(points, row[mode]["iou"])
    return out


def recommend(
    rows: Sequence[Mapping[str, Any]],
    peers: Sequence[Mapping[str, Any]],
    modes: Sequence[str],
    targets: Mapping[str, Mapping[str, float]] | None = None,
) -> dict[str, Any] | None:
    """The row that beats the frontier in every mode by the largest smallest margin.

    Rows that also meet every absolute target come first. Without peers, the row with the
    best mean of recall and IoU over the modes.
    """
    if not rows:
        return None
    if not peers:
        best = max(rows, key=lambda r: sum(r[m]["recall"] + r[m]["iou"] for m in modes))
        return {"name": best["name"], "beats_frontier": None, "margins": {}}

    def key(r: Mapping[str, Any]) -> tuple[bool, float]:
        met = all(targets_met(r, targets).values()) if targets else False
        return met, min(margins(r, peers, modes).values())

    best = max(rows, key=key)
    met, margin = key(best)
    return {
        "name": best["name"],
        "beats_frontier": margin > 0,
        "meets_targets": met,
        "margins": margins(best, peers, modes),
    }


def targets_met(row: Mapping[str, Any], targets: Mapping[str, Mapping[str, float]]) -> dict[str, bool]:
    """Absolute targets per mode, e.g. ``{"dense": {"recall": 88, "iou": 8}}``."""
    return {
        mode: all(row[mode][metric] >= value for metric, value in want.items())
        for mode, want in targets.items()
        if mode in row
    }
