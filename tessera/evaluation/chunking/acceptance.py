"""Every profile against the peers on all corpora, counted as the issue's acceptance counts.

The leave-one-corpus-out table scores only what the folds chose; this one says, for every
profile of the sweep (the sentence-vector ablation included), on how many corpora it would
meet each part of the acceptance: hybrid recall and IoU above every peer's, and dense recall
at most ``loco.DENSE_SLACK`` below every peer's. It is in sample (each profile on the corpora
it is reported on), so it says which parts of the acceptance any profile of the grid can meet
at all, not how one would do out of sample. Nothing here influences a choice.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from tessera.evaluation.chunking import loco


@dataclass(frozen=True)
class Count:
    """One profile on all corpora: whether it is ahead of every peer on the corpus average
    (per mode), on how many corpora it is ahead in each mode, and the corpora where it is not."""

    name: str
    on_average: dict[str, bool]
    corpora: int
    ahead: dict[str, int]
    behind: dict[str, tuple[str, ...]]

    def meets(self, mode: str) -> bool:
        """Ahead on the average and on every corpus but at most one (the acceptance's count)."""
        return self.on_average[mode] and self.ahead[mode] >= self.corpora - 1


def count(
    row: Mapping[str, Any], peers: Sequence[Mapping[str, Any]], corpora: Sequence[str], modes: Sequence[str]
) -> Count:
    """``row`` against ``peers`` on ``corpora``, each mode on its own (:func:`loco.ahead`)."""
    pviews = [loco.view(p, corpora, modes) for p in peers]
    behind = {m: tuple(c for c in corpora if not loco.corpora_ahead(row, peers, [c], [m])) for m in modes}
    return Count(
        name=str(row["name"]),
        on_average=loco.ahead(loco.view(row, corpora, modes), pviews, modes),
        corpora=len(corpora),
        ahead={m: len(corpora) - len(behind[m]) for m in modes},
        behind=behind,
    )


def profile_rows(report: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The sweep's rows, then the ablation rows not among them (the ablation's twin may be a
    sweep row: the same object in a fresh report, the same name once read back from JSON)."""
    names = {r["name"] for r in report["rows"]}
    return [*report["rows"], *(r for r in report.get("ablation", []) if r["name"] not in names)]


def counts(report: Mapping[str, Any]) -> list[Count]:
    """Every profile of ``report`` (:func:`profile_rows`) counted; empty without peers or
    per-corpus scores."""
    peers = report.get("peers") or []
    corpora = list(report.get("corpora") or {})
    if not peers or not corpora:
        return []
    return [count(r, peers, corpora, report["modes"]) for r in profile_rows(report)]


def acceptance_table(report: Mapping[str, Any]) -> str:
    """Markdown: per profile, ahead on the average and the corpora ahead, per mode; then which
    profiles meet the count in every mode. Empty when there is nothing to count."""
    rows = counts(report)
    if not rows:
        return ""
    modes = report["modes"]
    rec = (report.get("recommended") or {}).get("name")
    n = rows[0].corpora
    head = "| configuration | " + " | ".join(f"{m}: average | {m}: corpora | {m}: behind on" for m in modes)
    lines = [
        f"In sample, every profile against every peer (hybrid: recall and IoU above; dense: recall "
        f"at most {loco.DENSE_SLACK:g} point below), on the average and per corpus:",
        "",
        head + " |",
        "|" + "---|" * (1 + 3 * len(modes)),
    ]
    for c in rows:
        cells = " | ".join(
            f"{'yes' if c.on_average[m] else 'no'} | {c.ahead[m]}/{n} | {', '.join(c.behind[m]) or '-'}"
            for m in modes
        )
        lines.append(f"| {f'**{c.name}**' if c.name == rec else c.name} | {cells} |")
    both = [c.name for c in rows if all(c.meets(m) for m in modes)]
    lines.append(
        f"\nAhead on the average and on all corpora but at most one, in every mode: "
        f"{', '.join(both) if both else 'no profile'}."
    )
    return "\n".join(lines)
