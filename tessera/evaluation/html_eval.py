"""``tessera eval html``: main-content extraction on a development set, with competitors.

Reads any of the three sets (:mod:`~tessera.evaluation.html_sets`: WCXB, Mozilla Readability's
test pages, trafilatura's snippet subset; the format is detected, or ``--set``), scores
Tessera and, when installed, trafilatura (default and ``include_comments=False``),
readability-lxml and resiliparse on the same pages in the same run, each set with its own
metric (:mod:`~tessera.evaluation.html_metrics`), per page type. It also checks, for every
block and every chunk Tessera produces, that ``source_bytes[byte_start:byte_end]`` holds the
text (:func:`~tessera.parsing.html.html_slice_matches`) and counts violations; counts pages
that came out empty with no warning ("silently empty", the target is 0); and times every
extractor. Writes ``report.json`` and ``worst_pages.md`` to ``--out``.

On a set whose gold joins every text node with a space (Mozilla's; ``NODE_GOLD_SETS``),
Tessera is scored twice: ``tessera``, its own text (inline elements run together, as a browser
shows them), and ``tessera_nodes``, the same selection rendered as the gold and the
readability-lxml peer's output are (:func:`~tessera.evaluation.html_tessera.nodes_text`).
readability-lxml, whose output is markup, is scored both ways too: ``readability`` (nodes) and
``readability_text`` (as a browser shows it). trafilatura's output has already merged inline
elements, so it has only its own text.

Usage: ``python -m tessera.evaluation.html_eval [DATA_DIR] [--set S] [--out DIR] [--no-peers]
[--json]``.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path
from typing import Any

from tessera.evaluation.html_metrics import normalize
from tessera.evaluation.html_peers import Peer, available_peers
from tessera.evaluation.html_report import format_table, summarize, worst_pages_md
from tessera.evaluation.html_scoring import score_text
from tessera.evaluation.html_sets import NODE_GOLD_SETS, EvalPage, load_pages
from tessera.evaluation.html_tessera import Checker, run_tessera

__all__ = ["evaluate_html", "evaluate_pages", "main", "normalize", "score_page", "totals"]

DEFAULT_DIR = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "html" / "trafilatura_eval_subset"
)


def score_page(text: str, item: dict[str, Any]) -> tuple[list[str], list[str], list[str], list[str]]:
    """``(with, without, missed, leaked)`` snippets of one page against extracted ``text``."""
    found = normalize(text)
    with_ = [s for s in item.get("with", []) if normalize(s)]
    without = [s for s in item.get("without", []) if normalize(s)]
    missed = [s for s in with_ if normalize(s) not in found]
    leaked = [s for s in without if normalize(s) in found]
    return with_, without, missed, leaked


def totals(kept: int, total_with: int, dropped: int, total_without: int) -> dict[str, Any]:
    return {
        "kept": kept,
        "with": total_with,
        "kept_pct": round(100.0 * kept / max(total_with, 1), 1),
        "dropped": dropped,
        "without": total_without,
        "dropped_pct": round(100.0 * dropped / max(total_without, 1), 1),
    }


def evaluate_pages(
    pages: list[EvalPage], peers: list[Peer] | None = None, checker: Checker | None = None
) -> dict[str, Any]:
    """Score Tessera and ``peers`` on ``pages``; one row per page plus the summary."""
    peers = available_peers() if peers is None else peers
    checker = checker or Checker.default()
    rows: list[dict[str, Any]] = []
    seconds: dict[str, float] = {"tessera": 0.0, **{p.name: 0.0 for p in peers if p.timed}}
    failures: dict[str, int] = {p.name: 0 for p in peers}
    for page in pages:
        out = run_tessera(page, checker)
        seconds["tessera"] += out.seconds
        row: dict[str, Any] = {
            "set": page.set_name,
            "page": page.page_id,
            "type": page.page_type,
            "cjk": page.cjk,
            "warnings": list(out.warnings),
            "error": out.error,
            "silently_empty": out.silently_empty,
            "blocks_checked": out.blocks_checked,
            "chunks_checked": out.chunks_checked,
            "offset_violations": out.violations,
            "violation_examples": list(out.examples),
            "scores": {"tessera": score_text(page, out.text)},
        }
        if page.set_name in NODE_GOLD_SETS:
            row["scores"]["tessera_nodes"] = score_text(page, out.nodes)
        for peer in peers:
            t0 = time.perf_counter()
            try:
                text = peer.extract(page.raw)
            except Exception:  # a competitor's failure is scored as empty, and counted
                text = ""
                failures[peer.name] += 1
            if peer.timed:
                seconds[peer.name] += time.perf_counter() - t0
            row["scores"][peer.name] = score_text(page, text)
        rows.append(row)
    size = sum(len(p.raw) for p in pages)
    speed = {
        name: {"seconds": round(s, 3), "mb_per_s": round(size / 1e6 / max(s, 1e-9), 2)}
        for name, s in seconds.items()
    }
    nodes = ["tessera_nodes"] if any(p.set_name in NODE_GOLD_SETS for p in pages) else []
    kinds = {"tessera_nodes": "nodes", **{p.name: p.rendering for p in peers}}
    report = summarize(rows, ["tessera", *nodes, *(p.name for p in peers)], kinds)
    report["speed"] = speed
    if "trafilatura" in seconds:
        report["speed_vs_trafilatura"] = round(seconds["trafilatura"] / max(seconds["tessera"], 1e-9), 2)
    report["peers"] = {p.name: p.version for p in peers}
    report["peer_failures"] = failures
    report["bytes"] = size
    report["per_page"] = rows
    if pages and pages[0].set_name == "trafilatura":
        report.update(_snippet_totals(pages, rows))
    return report


def _snippet_totals(pages: list[EvalPage], rows: list[dict[str, Any]]) -> dict[str, Any]:
    """The trafilatura subset's kept/dropped shares for Tessera (as before this module grew)."""
    kept = total_with = leaked = total_without = 0
    for row in rows:
        s = row["scores"]["tessera"]
        kept += s["with_found"]
        total_with += s["with_total"]
        leaked += s["without_found"]
        total_without += s["without_total"]
    return totals(kept, total_with, total_without - leaked, total_without)


def evaluate_html(
    data_dir: Path, set_name: str | None = None, peers: list[Peer] | None = None
) -> dict[str, Any]:
    pages = load_pages(data_dir, set_name)
    report = evaluate_pages(pages, [] if peers is None else peers)
    report["data_dir"] = str(data_dir)
    return report


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="html_eval", description=__doc__.split("\n", 1)[0])
    ap.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--set", choices=["wcxb", "mozilla", "trafilatura"], default=None)
    ap.add_argument("--out", type=Path, default=None, help="folder for report.json and worst_pages.md")
    ap.add_argument("--no-peers", action="store_true", help="score Tessera only")
    ap.add_argument("--worst", type=int, default=15, help="rows in the worst-pages table")
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = ap.parse_args(argv)
    pages = load_pages(args.data_dir, args.set)
    report = evaluate_pages(pages, [] if args.no_peers else None)
    report["data_dir"] = str(args.data_dir)
    out: Path = args.out or Path("out") / "eval-html" / (pages[0].set_name if pages else "empty")
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(
        json.dumps(report, indent=2, ensure_ascii=False) + "\n", encoding="utf-8"
    )
    (out / "worst_pages.md").write_text(worst_pages_md(report, args.worst), encoding="utf-8")
    print(json.dumps(report, indent=2, ensure_ascii=False) if args.json else format_table(report, args.worst))
    if not args.json:
        print(f"\nreport: {out / 'report.json'}  worst pages: {out / 'worst_pages.md'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
