"""Would a library's choice of main content, aligned back to exact bytes, beat our own?

Issue 15 asks to decide by measurement between improving the own extractor and letting a
well-kept library (trafilatura, readability-lxml) choose the content, aligned back to exact
byte ranges with the own tokenizer. Alignment here: :meth:`HtmlParser.parse_whole` gives every
visible block of the page with its exact byte range (nothing pruned); an extractor *keeps* a
block when at least half of the block's whitespace tokens are found in its output (a bag,
consumed in page order). Texts made of kept blocks are scored with each set's own metric:

- ``tessera``: our extraction as published (the reference);
- ``aligned_<x>``: the blocks extractor ``x`` keeps (``x`` = tessera too: what alignment loses);
- ``majority``: blocks kept by at least two of the three;
- ``tessera_or_both``: ours, plus blocks both libraries keep;
- ``oracle``: blocks the gold keeps, the ceiling of any choice made at this granularity;
- ``peer_<x>``: the library's own text, as ``tessera eval html`` scores it.

Writes ``bench/results/html_hybrid.json``; needs the bench extras (``pip install -e .[bench]``).
Usage: ``python -m bench.html_hybrid [--data DIR]`` (DIR holds the three development sets).
"""

from __future__ import annotations

import argparse
from collections import Counter, defaultdict
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bench.common import ROOT, write_result
from tessera.evaluation.html_metrics import mean, ws_tokens
from tessera.evaluation.html_peers import available_peers
from tessera.evaluation.html_scoring import score_text
from tessera.evaluation.html_sets import SETS, EvalPage, load_pages
from tessera.evaluation.html_tessera import eval_doc
from tessera.parsing.html import HtmlParser

DATA = ROOT.parent / "shared" / "data" / "html"
DIRS = {
    "wcxb": "wcxb_dev_subset",
    "mozilla": "mozilla_readability_test_pages",
    "trafilatura": "trafilatura_eval_subset",
}
KEEP = 0.5
"""Share of a block's tokens an extractor's output must hold for it to keep the block."""

Rule = Callable[[bool, bool, bool], bool]
RULES: dict[str, Rule] = {
    "aligned_tessera": lambda t, f, r: t,
    "aligned_trafilatura": lambda t, f, r: f,
    "aligned_readability": lambda t, f, r: r,
    "majority": lambda t, f, r: t + f + r >= 2,
    "tessera_or_both": lambda t, f, r: t or (f and r),
}


def kept(blocks: list[str], text: str) -> list[bool]:
    """Which blocks ``text`` holds at least :data:`KEEP` of (tokens consumed in page order)."""
    bag = Counter(ws_tokens(text))
    out: list[bool] = []
    for block in blocks:
        tokens = ws_tokens(block)
        hit = 0
        for tok in tokens:
            if bag[tok] > 0:
                bag[tok] -= 1
                hit += 1
        out.append(bool(tokens) and hit >= KEEP * len(tokens))
    return out


def page_scores(
    page: EvalPage, parser: HtmlParser, peers: dict[str, Callable[[bytes], str]]
) -> dict[str, float]:
    doc = eval_doc(page.page_id, page.raw)
    ours = parser.parse(doc, page.raw).text
    whole = parser.parse_whole(doc, page.raw)
    blocks = [whole.text[b.start : b.end] for b in whole.blocks]
    texts = {name: extract(page.raw) for name, extract in peers.items()}
    votes = list(
        zip(
            kept(blocks, ours),
            kept(blocks, texts["trafilatura"]),
            kept(blocks, texts["readability"]),
            strict=True,
        )
    )
    scores = {"tessera": score_text(page, ours)["f1"]}
    for name, rule in RULES.items():
        scores[name] = score_text(page, "\n".join(b for b, v in zip(blocks, votes, strict=True) if rule(*v)))[
            "f1"
        ]
    if page.gold is not None:
        gold = "\n".join(b for b, k in zip(blocks, kept(blocks, page.gold), strict=True) if k)
        scores["oracle"] = score_text(page, gold)["f1"]
    for name, text in texts.items():
        scores[f"peer_{name}"] = score_text(page, text)["f1"]
    return scores


def measure(data: Path) -> dict[str, Any]:
    parser = HtmlParser()
    peers = {p.name: p.extract for p in available_peers() if p.name in ("trafilatura", "readability")}
    groups: dict[str, list[dict[str, float]]] = defaultdict(list)
    for set_name in SETS:
        if not (data / DIRS[set_name]).is_dir():
            continue
        for page in load_pages(data / DIRS[set_name], set_name):
            key = set_name if set_name != "wcxb" else f"wcxb/{page.page_type}"
            groups[key].append(page_scores(page, parser, peers))
    table = {
        group: {"pages": len(rows), **{k: round(mean([r[k] for r in rows if k in r]), 4) for k in rows[0]}}
        for group, rows in sorted(groups.items())
    }
    return {"keep_share": KEEP, "groups": table}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    names = {p.name for p in available_peers()}
    if not {"trafilatura", "readability"} <= names:
        print("trafilatura and readability-lxml are needed (pip install -e .[bench]): nothing measured")
        return 0
    if not any((args.data / d).is_dir() for d in DIRS.values()):
        print(f"no development sets under {args.data}: nothing measured")
        return 0
    result = measure(args.data)
    for group, row in result["groups"].items():
        print(group, row)
    print(f"wrote {write_result('html_hybrid', result)}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
