"""Scores for main-content extraction, as each development set's README defines them.

- Bag of whitespace tokens (all three gold-text sets' primary metric): per page
  ``P = |pred ∩ gold| / |pred|``, ``R = |pred ∩ gold| / |gold|`` over multisets, F1, then the
  mean over pages. An empty prediction has P = R = F1 = 0 (unless the gold is empty too).
- WCXB's upstream metric: the same over ``re.findall(r"\\w+", text.lower())``.
- A bag of non-space characters (Mozilla's CJK pages).
- Snippets (trafilatura's set; WCXB's ``with``/``without``): a snippet is found when it occurs
  in the text, both case-folded with whitespace collapsed. Trafilatura's own evaluation
  counts found ``with`` as true positives, missed ``with`` as false negatives and found
  ``without`` as false positives, summed over the corpus.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass

_WORD = re.compile(r"\w+")
_WS = re.compile(r"\s+")


@dataclass(frozen=True)
class PRF:
    p: float
    r: float
    f1: float


def bag_prf(pred: Iterable[str], gold: Iterable[str]) -> PRF:
    cp, cg = Counter(pred), Counter(gold)
    np_, ng = sum(cp.values()), sum(cg.values())
    if ng == 0:
        return PRF(1.0, 1.0, 1.0) if np_ == 0 else PRF(0.0, 1.0, 0.0)
    if np_ == 0:
        return PRF(0.0, 0.0, 0.0)
    common = sum((cp & cg).values())
    p, r = common / np_, common / ng
    return PRF(p, r, 2 * p * r / (p + r) if p + r else 0.0)


def ws_tokens(text: str) -> list[str]:
    return text.split()


def word_tokens(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def char_tokens(text: str) -> list[str]:
    return [c for c in text if not c.isspace()]


def normalize(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def snippet_hits(text: str, snippets: Iterable[str]) -> tuple[int, int]:
    """``(found, total)`` of the non-empty snippets in ``text``."""
    found_in = normalize(text)
    norm = [normalize(s) for s in snippets]
    norm = [s for s in norm if s]
    return sum(1 for s in norm if s in found_in), len(norm)


def snippet_prf(tp: int, fn: int, fp: int) -> PRF:
    p = tp / (tp + fp) if tp + fp else 0.0
    r = tp / (tp + fn) if tp + fn else 0.0
    return PRF(p, r, 2 * p * r / (p + r) if p + r else 0.0)


def mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else 0.0
