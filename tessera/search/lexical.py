"""Exact BM25 over the filtered rows: the lexical fallback while a table has no FTS index."""

from __future__ import annotations

import math
import re
from collections import Counter
from typing import Any

_WORD = re.compile(r"\w+")


def terms(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def flat_bm25(table: Any, query: str, where: str, n: int, columns: list[str]) -> list[dict[str, Any]]:
    """Top ``n`` rows by BM25 (k1 1.2, b 0.75) of ``embedding_text``, among rows matching ``where``."""
    q = set(terms(query))
    if not q:
        return []
    rows: list[dict[str, Any]] = (
        table.search().where(where).select([*columns, "embedding_text"]).limit(None).to_arrow().to_pylist()
    )
    if not rows:
        return []
    docs = [Counter(terms(r.pop("embedding_text") or "")) for r in rows]
    avg = sum(sum(d.values()) for d in docs) / len(docs) or 1.0
    df = {t: sum(1 for d in docs if t in d) for t in q}
    scored = []
    for r, d in zip(rows, docs, strict=True):
        length = sum(d.values())
        score = 0.0
        for t in q:
            if t in d:
                idf = math.log(1 + (len(docs) - df[t] + 0.5) / (df[t] + 0.5))
                score += idf * d[t] * 2.2 / (d[t] + 1.2 * (0.25 + 0.75 * length / avg))
        if score > 0:
            scored.append({**r, "_score": score})
    scored.sort(key=lambda r: (-r["_score"], r["id"]))
    return scored[:n]
