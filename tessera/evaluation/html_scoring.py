"""One page's scores for one extractor's text, by the page's set metric (see html_metrics)."""

from __future__ import annotations

from typing import Any

from tessera.evaluation.html_metrics import (
    bag_prf,
    char_tokens,
    snippet_hits,
    snippet_prf,
    word_tokens,
    ws_tokens,
)
from tessera.evaluation.html_sets import EvalPage


def score_text(page: EvalPage, text: str) -> dict[str, Any]:
    """``p``/``r``/``f1``: the set's primary metric (bag of whitespace tokens; for the snippet
    set the per-page snippet P/R/F1); plus ``f1_word`` (WCXB upstream), ``f1_char`` (CJK)
    and snippet counts where the page has snippets."""
    out: dict[str, Any] = {"empty": not text.strip()}
    wf, wt = snippet_hits(text, page.with_)
    bf, bt = snippet_hits(text, page.without)
    if wt or bt:
        out.update(with_found=wf, with_total=wt, without_found=bf, without_total=bt)
    if page.gold is None:
        prf = snippet_prf(wf, wt - wf, bf)
        if not wt:  # only boilerplate snippets: precision is all there is
            prf = snippet_prf(1, 0, bf)
    else:
        prf = bag_prf(ws_tokens(text), ws_tokens(page.gold))
        out["f1_word"] = round(bag_prf(word_tokens(text), word_tokens(page.gold)).f1, 4)
        if page.cjk:
            out["f1_char"] = round(bag_prf(char_tokens(text), char_tokens(page.gold)).f1, 4)
    out.update(p=round(prf.p, 4), r=round(prf.r, 4), f1=round(prf.f1, 4))
    return out
