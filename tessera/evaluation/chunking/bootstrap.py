"""How sure is "ahead of every peer on a corpus"? A paired bootstrap over the questions.

A corpus of 56 questions moves recall by about 1.8 points per question, so a profile ahead of
a peer by 0.2 points on it is ahead by chance as much as by design. :func:`ahead` resamples
each corpus's questions with replacement (the same draw for the profile and every peer: the
comparison is paired) and counts, per draw, on which corpora the profile's hybrid recall and
IoU are above every peer's, and its dense recall within a point of the best peer's
(:func:`tessera.evaluation.chunking.loco.leads`, the rule the selection uses).
It reports the probability per corpus, the expected number of corpora ahead and the
probability of being ahead on all but at most one corpus (the acceptance rule).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from tessera.evaluation.chunking.loco import leads

Scores = Mapping[str, Mapping[str, Sequence[float]]]
"""Per mode, per metric (``recall``, ``iou``), one value per question in the pooled order."""


def ahead(
    row: Scores, peers: Sequence[Scores], corpus_of: Sequence[str], samples: int = 2000, seed: int = 0
) -> dict[str, Any]:
    """The bootstrap of ``row`` against ``peers`` (see the module doc); ``corpus_of[i]`` is
    question ``i``'s corpus. Deterministic for a seed."""
    rng = np.random.default_rng(seed)
    labels = np.asarray(corpus_of)
    corpora = sorted(set(corpus_of))
    count = np.zeros(samples, dtype=np.int64)
    per: dict[str, dict[str, float]] = {}
    for c in corpora:
        idx = np.flatnonzero(labels == c)
        draw = idx[rng.integers(0, len(idx), size=(samples, len(idx)))]

        def means(s: Scores, draw: np.ndarray = draw) -> dict[str, dict[str, np.ndarray]]:
            return {m: {k: np.asarray(v, dtype=np.float64)[draw].mean(axis=1) for k, v in ms.items()}
                    for m, ms in s.items()}  # fmt: skip

        mine = means(row)
        hybrid = np.ones(samples, dtype=bool)
        dense = np.ones(samples, dtype=bool)
        for p in peers:
            theirs = means(p)
            hybrid &= leads(mine, theirs, "hybrid")
            if "dense" in row:
                dense &= leads(mine, theirs, "dense")
        count += hybrid
        per[c] = {"hybrid": round(float(hybrid.mean()), 3), "dense": round(float(dense.mean()), 3)}
    return {
        "samples": samples,
        "per_corpus": per,
        "expected_corpora_ahead": round(float(count.mean()), 2),
        "p_all_but_one": round(float((count >= len(corpora) - 1).mean()), 3),
    }
