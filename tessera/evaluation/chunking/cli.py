"""``tessera eval chunking``: run the sweep on a corpus folder, write JSON and heatmaps.

Usage: ``tessera eval chunking --corpus ../shared/data/chroma [--out DIR] [--cache DIR]
[--strategies token,recursive] [--sizes 64,128] [--overlaps 0,50] [--k 5] [--no-peers]``.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tessera.errors import TesseraError

if TYPE_CHECKING:
    from tessera.embedding.base import Embedder
    from tessera.evaluation.chunking.sweep import SweepSettings


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from e


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tessera eval chunking", description=__doc__)
    p.add_argument("--corpus", type=Path, required=True, help="folder with corpus files and questions*.csv")
    p.add_argument("--questions", type=Path, help="questions CSV (default: questions*.csv in --corpus)")
    p.add_argument("--out", type=Path, default=Path("chunking-eval"), help="report folder")
    p.add_argument("--cache", type=Path, default=Path(".tessera/eval-cache"), help="embedding cache")
    p.add_argument("--strategies", default="token,recursive,structural,semantic")
    p.add_argument("--sizes", type=_ints, default=(64, 96, 128, 192, 256))
    p.add_argument("--overlaps", type=_ints, default=(0, 25, 50), help="percent of the size")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--no-peers", action="store_true", help="skip LangChain/Chonkie reference rows")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def table(report: dict[str, Any]) -> str:
    """A Markdown table: peers, the recommended row, each strategy's best row (same rule), then
    the ablation rows (the recommended profile and the peers with sentence vectors toggled)."""
    modes = report["modes"]
    head = "| configuration | chunks | mean tokens | " + " | ".join(
        f"{m} recall | {m} IoU | {m} P-Ω" for m in modes
    )
    lines = [head + " |", "|" + "---|" * (3 + 3 * len(modes))]
    rec = (report.get("recommended") or {}).get("name")

    def rank(r: dict[str, Any]) -> float:  # the smallest margin over the peers' frontier
        margins = r.get("margins") or {}
        return float(min(margins.values()) if margins else sum(r[m]["recall"] + r[m]["iou"] for m in modes))

    best: dict[str, dict[str, Any]] = {}
    for r in report["rows"]:
        if r["strategy"] not in best or rank(r) > rank(best[r["strategy"]]):
            best[r["strategy"]] = r
    shown = report["peers"] + [r for r in report["rows"] if r["name"] == rec]
    shown += [r for r in best.values() if r["name"] != rec]
    shown += report.get("ablation", [])
    for r in shown:
        name = f"**{r['name']}** (recommended)" if r["name"] == rec else r["name"]
        cells = " | ".join(
            f"{r[m]['recall']:.1f} | {r[m]['iou']:.1f} | {r[m]['precision_omega']:.1f}" for m in modes
        )
        lines.append(f"| {name} | {r['chunks']} | {r['mean_tokens']} | {cells} |")
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    try:
        report = run(args)
    except TesseraError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(table(report))
        print(f"\nreport: {args.out / 'report.json'}  ({report['elapsed_seconds']} s)")
    return 0


def run(args: argparse.Namespace) -> dict[str, Any]:
    from tessera.config import EmbeddingConfig
    from tessera.embedding.model_files import model_dir
    from tessera.embedding.sentence import SentenceTransformerEmbedder
    from tessera.evaluation.chunking.sweep import SweepSettings

    ecfg = EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2")
    settings = SweepSettings(
        strategies=tuple(s for s in args.strategies.split(",") if s),
        sizes=args.sizes,
        overlaps=args.overlaps,
        k=args.k,
        peers=() if args.no_peers else SweepSettings().peers,
    )
    return evaluate_folder(
        args.corpus, args.out, settings, SentenceTransformerEmbedder(ecfg), model_dir(ecfg), args.cache,
        args.questions, lambda s: print(s, file=sys.stderr),
    )  # fmt: skip


def evaluate_folder(
    corpus_dir: Path,
    out: Path,
    settings: SweepSettings,
    embedder: Embedder,
    model_path: Path,
    cache_dir: Path,
    questions: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Run the sweep on a corpus folder; write ``report.json`` and the heatmaps into ``out``."""
    from tessera.chunking.tokens import load_counter
    from tessera.embedding.cache import EmbeddingCache
    from tessera.evaluation.chunking.corpus import load_corpus
    from tessera.evaluation.chunking.plots import heatmaps
    from tessera.evaluation.chunking.sweep import Embedding, run_sweep
    from tessera.store.db import connect

    corpus = load_corpus(corpus_dir, questions)
    cache_dir.mkdir(parents=True, exist_ok=True)
    embedding = Embedding(embedder, EmbeddingCache(connect(str(cache_dir)), "eval", embedder.identity))
    report = run_sweep(corpus, embedding, load_counter(model_path), model_path, settings, log)
    out.mkdir(parents=True, exist_ok=True)
    grid = [r for r in report["rows"] if r["strategy"] in settings.strategies]
    report["heatmaps"] = [p.name for p in heatmaps(grid, out, settings.modes)] if grid else []
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    return report
