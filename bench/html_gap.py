"""Where Tessera's gap to readability-lxml on the Mozilla pages comes from: tokenization or content.

The Mozilla set's gold text joins *every* text node with a space (``html_sets``), as the
readability-lxml peer does with its own output, so ``<a>Mozilla</a>.`` is two tokens there
and one in a text that reads as the page does (Tessera's, a browser's ``textContent``). This
script scores the same texts twice:

- ``ws``: the set's metric (bag of whitespace tokens, the gold as the eval reads it);
- ``block``: the gold and readability-lxml's output both re-read with a space only at block
  boundaries (``p``, ``div``, ``li``, ``td``, ``br``, headings...), inline nodes run together
  as a browser renders them; Tessera's text is unchanged.

The difference between the two gaps is the tokenization artefact; what is left is content
(text kept that the gold drops, text missed that it keeps). Also reported: Tessera's score
without the width-0 table pipes and rules (``| --- |``, Markdown layout, not page text).
Writes ``bench/results/html_gap.json``; needs readability-lxml (``pip install -e .[bench]``).

Usage: ``python -m bench.html_gap [--data DIR]``.
"""

from __future__ import annotations

import argparse
import re
from pathlib import Path
from typing import Any

from bench.common import ROOT, write_result
from tessera.evaluation.html_metrics import bag_prf, mean, word_tokens, ws_tokens
from tessera.evaluation.html_sets import html_block_text, load_pages
from tessera.evaluation.html_tessera import eval_doc
from tessera.parsing.html import HtmlParser

DATA = ROOT.parent / "shared" / "data" / "html" / "mozilla_readability_test_pages"
_TABLE_MARK = re.compile(r"^[|\-:]+$")


def _f1(pred: list[str], gold: str) -> float:
    return bag_prf(pred, ws_tokens(gold)).f1


def measure(data: Path) -> dict[str, Any]:
    import lxml.html
    from readability import Document

    root = data / "test" / "test-pages"
    parser = HtmlParser()
    rows: list[tuple[str, dict[str, float]]] = []
    for page in load_pages(data, "mozilla"):
        text = parser.parse(eval_doc(page.page_id, page.raw), page.raw).text
        summary = Document(page.raw).summary(html_partial=True)
        spaced = (
            " ".join(" ".join(lxml.html.fromstring(summary).itertext()).split()) if summary.strip() else ""
        )
        gold_ws = page.gold or ""
        gold_block = html_block_text((root / page.page_id / "expected.html").read_text(encoding="utf-8"))
        tokens = ws_tokens(text)
        scores = {
            "tessera_ws": _f1(tokens, gold_ws),
            "readability_ws": _f1(ws_tokens(spaced), gold_ws),
            "tessera_block": _f1(tokens, gold_block),
            "readability_block": _f1(ws_tokens(html_block_text(summary)), gold_block),
            "tessera_ws_no_table_marks": _f1([t for t in tokens if not _TABLE_MARK.match(t)], gold_ws),
            "tessera_word": bag_prf(word_tokens(text), word_tokens(gold_ws)).f1,
            "readability_word": bag_prf(word_tokens(spaced), word_tokens(gold_ws)).f1,
        }
        rows.append((page.page_id, scores))
    keys = list(rows[0][1]) if rows else []
    means = {k: round(mean([r[k] for _, r in rows]), 4) for k in keys}
    artefact = [
        (r["tessera_block"] - r["tessera_ws"]) - (r["readability_block"] - r["readability_ws"])
        for _, r in rows
    ]
    content = sorted(rows, key=lambda pr: pr[1]["tessera_block"] - pr[1]["readability_block"])
    return {
        "pages": len(rows),
        "mean": means,
        "gap_ws": round(means.get("tessera_ws", 0.0) - means.get("readability_ws", 0.0), 4),
        "gap_block": round(means.get("tessera_block", 0.0) - means.get("readability_block", 0.0), 4),
        "tokenization_artefact": round(mean(artefact), 4),
        "pages_behind_ws": sum(1 for _, r in rows if r["tessera_ws"] < r["readability_ws"]),
        "pages_behind_block": sum(1 for _, r in rows if r["tessera_block"] < r["readability_block"]),
        "worst_content_losses": [
            {
                "page": name,
                "tessera_block": round(r["tessera_block"], 3),
                "readability_block": round(r["readability_block"], 3),
            }
            for name, r in content[:10]
        ],
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    if not (args.data / "test" / "test-pages").is_dir():
        print(f"no Mozilla test pages under {args.data}: nothing measured")
        return 0
    try:
        import readability  # noqa: F401
    except ImportError:
        print("readability-lxml is not installed (pip install -e .[bench]): nothing measured")
        return 0
    result = measure(args.data)
    path = write_result("html_gap", result)
    print({k: v for k, v in result.items() if k != "worst_content_losses"})
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
