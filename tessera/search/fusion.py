"""Dense scores with sentence vectors, shared by search, the quality gate and the evaluation.

A chunk with sentence vectors scores ``(1 - w) * c + w * max(c, s)`` for a query, where ``c``
is the cosine similarity of the chunk's vector and ``s`` that of its best sentence vector
(``tessera.chunking.probes``); without sentence vectors the score is ``c``. ``w`` is
``SENTENCE_WEIGHT``. For a top ``n``, the ``candidate_depth(n)`` chunks nearest by ``c`` are
rescored: sentence vectors reorder the nearest chunks, they do not search the whole table.
A chunk whose own vector ranks below that depth is not found through its sentences; a second
candidate list from the sentence vectors (LanceDB multivector search) would find it, but on
the 100k-chunk benchmark it took hybrid p50 latency to 167 ms, against 92 ms for rescoring
alone (78 ms without sentence vectors), and it changed no result on the Chroma evaluation,
where depths 20 to 160 gave identical scores.

On the Chroma corpora (structural 144 tokens, all-MiniLM-L6-v2, k = 5) weights 0.4, 0.5 and
0.6 gave dense recall 90.4, 90.9 and 91.1 against 84.0 for the chunk vector alone, at equal
or better IoU; ``docs/eval/chunking/report.json`` has the ablation.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

TIE = 1e-5
"""Scores closer than this are a tie, decided by chunk id (float32 rounding of equal cosines:
Lance and numpy compute them in other orders)."""
SENTENCE_WEIGHT = 0.5
Matrix = npt.NDArray[np.float32]


def candidate_depth(n: int) -> int:
    """How many chunks, nearest by their own vector, are rescored for a top ``n``."""
    return max(4 * n, 40)


def fuse(chunk: npt.NDArray[np.floating], best: npt.NDArray[np.floating]) -> npt.NDArray[np.float64]:
    """Scores from chunk similarities and best-sentence similarities (``-inf``: none)."""
    c = np.asarray(chunk, np.float64)
    return (1.0 - SENTENCE_WEIGHT) * c + SENTENCE_WEIGHT * np.maximum(c, np.asarray(best, np.float64))


def split(flat: Matrix, counts: Sequence[int]) -> list[Matrix | None]:
    """Per-chunk matrices from a stacked one and each chunk's count (0: None)."""
    if sum(counts) != len(flat):
        raise ValueError(f"{len(flat)} sentence vectors but counts add up to {sum(counts)}")
    out: list[Matrix | None] = []
    at = 0
    for n in counts:
        out.append(flat[at : at + n] if n else None)
        at += n
    return out


@dataclass(frozen=True)
class SentenceVectors:
    """Every chunk's sentence vectors, stacked: ``owner[i]`` is the chunk of row ``i``."""

    vectors: Matrix
    owner: npt.NDArray[np.int64]
    chunks: int

    @classmethod
    def of(cls, per_chunk: Sequence[Matrix | npt.ArrayLike | None], dimension: int) -> SentenceVectors:
        mats = [None if m is None else np.asarray(m, np.float32).reshape(-1, dimension) for m in per_chunk]
        owner = [i for i, m in enumerate(mats) if m is not None for _ in range(len(m))]
        stacked = [m for m in mats if m is not None and len(m)]
        flat = np.concatenate(stacked) if stacked else np.zeros((0, dimension), np.float32)
        return cls(flat, np.asarray(owner, np.int64), len(mats))

    def best(self, query: Matrix) -> npt.NDArray[np.float64]:
        """Per chunk, the best sentence similarity to ``query``; ``-inf`` for chunks without."""
        out = np.full(self.chunks, -np.inf)
        if len(self.vectors):
            np.maximum.at(out, self.owner, (self.vectors @ query).astype(np.float64))
        return out


def row_score(query: Matrix, vector: npt.ArrayLike, sentences: npt.ArrayLike | None) -> float:
    """The fused score of one stored row (its ``vector`` and ``sentence_vectors`` columns)."""
    c = float(np.asarray(vector, np.float32) @ query)
    mat = np.asarray(sentences if sentences is not None else [], np.float32)
    if mat.size == 0:
        return c
    best = np.max(mat.reshape(-1, len(query)) @ query)
    return float(fuse(np.asarray([c]), np.asarray([best]))[0])  # the one formula, for one row
