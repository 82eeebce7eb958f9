"""Scores pooled per corpus folder, beside the pooled scores of all folders.

The Chroma study states its targets on its own corpora pooled (``../shared/data/chroma`` holds
three of its five); the development folders of other genres would hide how a profile does
there. Each folder's value is the mean over its questions, as the pooled value is over all
questions: the per-corpus means weighted by their question counts, so within 0.01 of the
pooled value (both sides are rounded to 0.01). Nothing here influences a choice: the selection
stays leave-one-corpus-out over all corpora (``loco``).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from tessera.errors import EvaluationError

KEYS = ("recall", "iou", "token_recall", "token_iou")


def pooled_in(row: Mapping[str, Any], corpora: Sequence[str], mode: str) -> dict[str, float]:
    """``row``'s ``mode`` scores pooled over ``corpora`` (each question weighing the same)."""
    per = row["per_corpus"]
    missing = [c for c in corpora if c not in per]
    if missing or not corpora:
        raise EvaluationError(f"{row['name']}: no scores for corpora {missing or list(corpora)}")
    n = sum(int(per[c][mode]["n"]) for c in corpora)
    if n == 0:
        raise EvaluationError(f"{row['name']}: corpora {list(corpora)} have no questions")
    out = {k: round(sum(float(per[c][mode][k]) * int(per[c][mode]["n"]) for c in corpora) / n, 2)
           for k in KEYS if all(k in per[c][mode] for c in corpora)}  # fmt: skip
    out["n"] = float(n)
    return out


def by_folder(
    rows: Sequence[Mapping[str, Any]], folders: Mapping[str, Sequence[str]], modes: Sequence[str]
) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``{folder: {row name: {mode: pooled scores}}}`` for every row (profiles and peers)."""
    return {f: {str(r["name"]): {m: pooled_in(r, ids, m) for m in modes} for r in rows}
            for f, ids in folders.items()}  # fmt: skip


def folder_table(report: Mapping[str, Any]) -> str:
    """Markdown: the recommendation and every peer, pooled within each folder (R / IoU per
    mode); empty for a report of one folder or one written before folders were recorded."""
    pooled = report.get("pooled_by_folder") or {}
    if len(pooled) < 2:
        return ""
    modes = report["modes"]
    rec = (report.get("recommended") or {}).get("name")
    names = [*([rec] if rec else []), *(p["name"] for p in report.get("peers", []))]
    head = "| folder (corpora, questions) | configuration | " + " | ".join(f"{m} R / IoU" for m in modes)
    head += " |"
    lines = ["Pooled within each folder:", "", head, "|" + "---|" * (2 + len(modes))]
    for folder, rows in pooled.items():
        ids = report["folders"][folder]
        for name in names:
            s = rows[name]
            label = f"{folder} ({len(ids)}, {int(s[modes[0]]['n'])})"
            cells = " | ".join(f"{s[m]['recall']:.1f} / {s[m]['iou']:.2f}" for m in modes)
            shown = f"**{name}**" if name == rec else name
            lines.append(f"| {label} | {shown} | {cells} |")
    return "\n".join(lines)
