"""HTML main-content quality and speed: cross-validated thresholds, Tessera vs trafilatura.

Pages: the development sets under ``../shared/data/html`` (read by path): WCXB (7 page types)
and Mozilla's real test pages score F1 on a bag of whitespace tokens; trafilatura's subset
is used for speed only. Two parts, written to ``bench/results/html_quality.json``:

1. **Cross-validation of** :class:`~tessera.parsing.html_boiler.ContentParams`. The groups
   are the 7 WCXB page types and the Mozilla set (8 groups). Leave one group out: pick the
   grid point with the best macro F1 (mean of the groups' mean F1) on the other 7, score it
   on the held-out group. Reported: the held-out F1 per group, its spread, how often each
   grid point was picked, and the point picked on all 8 groups (the default). The
   ``thin_ratio`` fallback is applied offline from each page's pruned and whole-visible
   texts (the parser compares with its own count of visible chars, which also counts the
   chars of entities: a close approximation).
2. **Speed** on the same pages: Tessera's whole parse against ``trafilatura.extract``, in one
   process, alternating per page, best of ``--repeat`` passes per extractor.

Usage: ``python -m bench.html_quality [--repeat N] [--quick]``.
"""

from __future__ import annotations

import argparse
import itertools
import time
from dataclasses import asdict, replace
from pathlib import Path
from typing import Any

from bench.common import ROOT, write_result
from tessera.evaluation.html_metrics import bag_prf, mean, ws_tokens
from tessera.evaluation.html_sets import EvalPage, load_pages
from tessera.evaluation.html_tessera import eval_doc
from tessera.parsing.html import HtmlParser
from tessera.parsing.html_boiler import DEFAULT_PARAMS, ContentParams

DATA = ROOT.parent / "shared" / "data" / "html"
GRID = {
    "protect_share": (0.3, 0.45, 0.6),
    "name_prose": (0.6, 1.01),
    "edge_run": (0, 10),
    "scored": ("off", "always"),
}
THIN = (0.0, 0.05, 0.1, 0.2, 0.3)


def _chars(text: str) -> int:
    return sum(1 for c in text if not c.isspace())


def _group(p: EvalPage) -> str:
    return f"{p.set_name}:{p.page_type}"


def _texts(pages: list[EvalPage], params: ContentParams) -> list[str]:
    parser = HtmlParser(params=params)
    return [parser.parse(eval_doc(p.page_id, p.raw), p.raw).text for p in pages]


def cross_validate(pages: list[EvalPage], quick: bool = False) -> dict[str, Any]:
    gold = [p for p in pages if p.gold is not None]
    groups = sorted({_group(p) for p in gold})
    visible = _texts(gold, replace(DEFAULT_PARAMS, thin_ratio=2.0, thin_min_chars=0))
    keys = list(GRID)
    points = list(itertools.product(*(GRID[k] for k in keys)))
    if quick:
        points = points[:2]
    # per grid point and thin ratio: each group's mean F1
    table: dict[str, dict[str, float]] = {}
    per_page: dict[str, list[float]] = {}
    for values in points:
        chosen: dict[str, Any] = dict(zip(keys, values, strict=True))
        params = replace(DEFAULT_PARAMS, thin_ratio=0.0, **chosen)
        texts = _texts(gold, params)
        for thin in THIN:
            name = ",".join(f"{k}={v}" for k, v in zip(keys, values, strict=True)) + f",thin_ratio={thin}"
            f1s = []
            for p, t, v in zip(gold, texts, visible, strict=True):
                nv = _chars(v)
                use = v if nv >= DEFAULT_PARAMS.thin_min_chars and _chars(t) < thin * nv else t
                f1s.append(bag_prf(ws_tokens(use), ws_tokens(p.gold or "")).f1)
            per_page[name] = f1s
            table[name] = {
                g: mean([f for f, p in zip(f1s, gold, strict=True) if _group(p) == g]) for g in groups
            }
    held: dict[str, Any] = {}
    for g in groups:
        train = [x for x in groups if x != g]
        best = max(table, key=lambda n: (mean([table[n][x] for x in train]), n))
        held[g] = {"picked": best, "held_out_f1": round(table[best][g], 4)}
    overall = max(table, key=lambda n: (mean([table[n][x] for x in groups]), n))
    scores = [v["held_out_f1"] for v in held.values()]
    return {
        "groups": groups,
        "grid": {**{k: list(v) for k, v in GRID.items()}, "thin_ratio": list(THIN)},
        "held_out": held,
        "held_out_macro_f1": round(mean(scores), 4),
        "held_out_min_f1": round(min(scores), 4),
        "held_out_max_f1": round(max(scores), 4),
        "picked_on_all": overall,
        "picked_on_all_by_group": {g: round(table[overall][g], 4) for g in groups},
        "default": asdict(DEFAULT_PARAMS),
        "default_by_group": {g: round(v, 4) for g, v in table.get(_name(DEFAULT_PARAMS), {}).items()},
    }


def _name(p: ContentParams) -> str:
    return (
        f"protect_share={p.protect_share},name_prose={p.name_prose},edge_run={p.edge_run},"
        f"scored={p.scored},thin_ratio={p.thin_ratio}"
    )


def speed(pages: list[EvalPage], repeat: int) -> dict[str, Any]:
    try:
        import trafilatura
    except ImportError:
        return {"skipped": "trafilatura is not installed (pip install -e .[bench])"}
    parser = HtmlParser()
    best = {"tessera": float("inf"), "trafilatura": float("inf")}
    for _ in range(repeat):
        spent = {"tessera": 0.0, "trafilatura": 0.0}
        for p in pages:  # alternating per page: both see the same machine load
            t0 = time.perf_counter()
            parser.parse(eval_doc(p.page_id, p.raw), p.raw)
            t1 = time.perf_counter()
            trafilatura.extract(p.raw)
            spent["tessera"] += t1 - t0
            spent["trafilatura"] += time.perf_counter() - t1
        best = {k: min(best[k], spent[k]) for k in best}
    size = sum(len(p.raw) for p in pages)
    return {
        "pages": len(pages),
        "mb": round(size / 1e6, 2),
        "repeat": repeat,
        "seconds": {k: round(v, 2) for k, v in best.items()},
        "mb_per_s": {k: round(size / 1e6 / v, 2) for k, v in best.items()},
        "tessera_vs_trafilatura": round(best["trafilatura"] / best["tessera"], 2),
        "target": 1.5,
    }


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n", 1)[0])
    ap.add_argument("--repeat", type=int, default=1)
    ap.add_argument("--quick", action="store_true", help="two grid points (a smoke run)")
    ap.add_argument("--data", type=Path, default=DATA)
    args = ap.parse_args(argv)
    sets = [("wcxb_dev_subset", "wcxb"), ("mozilla_readability_test_pages", "mozilla")]
    sets.append(("trafilatura_eval_subset", "trafilatura"))
    pages: list[EvalPage] = []
    for folder, name in sets:
        if (args.data / folder).is_dir():
            pages.extend(load_pages(args.data / folder, name))
    if not pages:
        print(f"no development sets under {args.data}: nothing measured")
        return 0
    result = {"cross_validation": cross_validate(pages, args.quick), "speed": speed(pages, args.repeat)}
    path = write_result("html_quality", result)
    cv, sp = result["cross_validation"], result["speed"]
    for g, v in cv["held_out"].items():
        print(f"{g:28} held-out F1 {v['held_out_f1']:.3f}  picked {v['picked']}")
    print(
        f"held-out macro F1 {cv['held_out_macro_f1']} (min {cv['held_out_min_f1']}); "
        f"picked on all: {cv['picked_on_all']}"
    )
    print(f"speed: {sp}")
    print(f"wrote {path}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
