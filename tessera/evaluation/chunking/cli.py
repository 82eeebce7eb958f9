"""``tessera eval chunking``: run the sweep on corpus folders, write JSON, tables and plots.

Usage: ``tessera eval chunking --corpus ../shared/data/chroma --corpus ../shared/data/retrieval_dev
[--out DIR] [--cache DIR] [--strategies token,recursive] [--sizes 64,128] [--overlaps 0,50] [--k 5]
[--no-peers]``. All corpora of all folders are pooled into one collection per configuration;
the profile is chosen by leave-one-corpus-out (``tessera.evaluation.chunking.loco``).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

from tessera.errors import TesseraError
from tessera.evaluation.chunking.acceptance import acceptance_table, profile_rows
from tessera.evaluation.chunking.folders import by_folder, folder_table

if TYPE_CHECKING:
    from tessera.embedding.base import Embedder
    from tessera.evaluation.chunking.sweep import SweepSettings

T = TypeVar("T")


def _ints(value: str) -> tuple[int, ...]:
    try:
        return tuple(int(v) for v in value.split(",") if v)
    except ValueError as e:
        raise argparse.ArgumentTypeError(f"expected comma-separated integers, got {value!r}") from e


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="tessera eval chunking", description=__doc__)
    p.add_argument(
        "--corpus",
        type=Path,
        action="append",
        required=True,
        help="folder with corpus files and questions*.csv (repeat: pooled into one collection)",
    )
    p.add_argument("--questions", type=Path, help="questions CSV (one --corpus only; default questions*.csv)")
    p.add_argument("--out", type=Path, default=Path("chunking-eval"), help="report folder")
    p.add_argument("--cache", type=Path, default=Path(".tessera/eval-cache"), help="embedding cache")
    p.add_argument("--strategies", default="", help="also sweep a grid of these strategies (default: none)")
    p.add_argument("--sizes", type=_ints, default=(64, 96, 128, 192, 256))
    p.add_argument("--overlaps", type=_ints, default=(0, 25, 50), help="percent of the size")
    p.add_argument("--no-candidates", action="store_true", help="only the grid, not the named candidates")
    p.add_argument("--profiles", default="", help="only these named candidates (comma-separated names)")
    p.add_argument("--peers", default="", help="only these peers (comma-separated names; default: all)")
    p.add_argument("--no-ablation", action="store_true", help="skip the sentence-vector twin of the choice")
    p.add_argument("--no-fusion-study", action="store_true", help="skip the hybrid fusion comparison")
    p.add_argument("--k", type=int, default=5)
    p.add_argument("--no-peers", action="store_true", help="skip LangChain/Chonkie reference rows")
    p.add_argument("--json", action="store_true", help="print the report as JSON")
    return p


def _cells(s: dict[str, Any], keys: Sequence[str]) -> str:
    return " | ".join(f"{float(s[k]):.1f}" for k in keys)


def table(report: dict[str, Any]) -> str:
    """Markdown: every profile and peer pooled (recall, IoU, token-level, equal budget, cost),
    then per folder, the leave-one-corpus-out table (held-out choice vs every peer, per corpus),
    every profile counted as the acceptance counts, and the fusion study."""
    modes = report["modes"]
    rec = (report.get("recommended") or {}).get("name")
    b = report["token_budget"]
    head = (
        "| configuration | chunks | mean tokens | "
        + " | ".join(f"{m} R | {m} IoU | {m} tok R | {m} tok IoU | {m} R@{b} tok" for m in modes)
        + " | embedded tokens | vectors | search ms |"
    )
    lines = [head, "|" + "---|" * (3 + 5 * len(modes) + 3)]
    keys = ("recall", "iou", "token_recall", "token_iou", "recall_at_budget")
    for r in [*report["peers"], *profile_rows(report)]:
        name = f"**{r['name']}** (recommended)" if r["name"] == rec else r["name"]
        cost = r["cost"]
        ms = "/".join(f"{cost['search_ms'][m]:.0f}" for m in modes)
        cells = " | ".join(_cells(r[m], keys) for m in modes)
        lines.append(f"| {name} | {r['chunks']} | {r['mean_tokens']} | {cells} | {cost['embedded_tokens']} | "
                     f"{cost['stored_vectors']} | {ms} |")  # fmt: skip
    for part in (folder_table(report), loco_table(report), acceptance_table(report), fusion_table(report)):
        lines += ["", part] if part else []
    return "\n".join(lines).rstrip()


def fusion_table(report: dict[str, Any]) -> str:
    """The fusion study: the product's hybrid fusion and each variant on the recommended
    profile's chunks (pooled), then the leave-one-corpus-out choice among them."""
    study = report.get("fusion_study") or {}
    if not study.get("variants"):
        return ""
    lines = ["| hybrid fusion | R | IoU |", "|---|---|---|"]
    rows = [("**product**", study["product"]["pooled"])]
    rows += [(n, v["pooled"]) for n, v in study["variants"].items()]
    lines += [f"| {n} | {float(p['recall']):.1f} | {float(p['iou']):.2f} |" for n, p in rows]
    sel = study.get("selection")
    if sel:
        chosen = ", ".join(f"{f['held_out']}: {f['choice']}" for f in sel["folds"])
        lines.append(f"\nFusion chosen on the other corpora ({chosen}): held out "
                     f"{sel['held_out_recall']:.1f} / {sel['held_out_iou']:.2f} against the product's "
                     f"{sel['product_recall']:.1f} / {sel['product_iou']:.2f}.")  # fmt: skip
    return "\n".join(lines)


def loco_table(report: dict[str, Any]) -> str:
    """Per held-out corpus: the profile chosen on the others, its scores there and each peer's."""
    sel = report.get("selection") or {}
    if not sel.get("folds"):
        return ""
    modes = report["modes"]
    peers = {p["name"]: p for p in report["peers"]}
    head = (
        "| held-out corpus | chosen on the others | "
        + " | ".join(f"{m} R / IoU" + "".join(f" | {n} {m}" for n in peers) for m in modes)
        + " |"
    )
    lines = [head, "|" + "---|" * (2 + len(modes) * (1 + len(peers)))]

    def ri(s: dict[str, Any]) -> str:
        return f"{float(s['recall']):.1f} / {float(s['iou']):.1f}"

    for f in sel["folds"]:
        cells = []
        for m in modes:
            cells.append(ri(f["scores"][m]))
            cells += [ri(p["per_corpus"][f["held_out"]][m]) for p in peers.values()]
        lines.append(f"| {f['held_out']} | {f['chosen']} | " + " | ".join(cells) + " |")
    cells = []
    for m in modes:
        h = sel["held_out"][m]
        cells.append(f"{h['recall']['mean']:.1f} ± {h['recall']['std']:.1f} / {h['iou']['mean']:.1f} ± "
                     f"{h['iou']['std']:.1f}")  # fmt: skip
        for n in peers:
            s = sel["per_corpus_spread"][n][m]
            cells.append(f"{s['recall']['mean']:.1f} ± {s['recall']['std']:.1f} / {s['iou']['mean']:.1f} ± "
                         f"{s['iou']['std']:.1f}")  # fmt: skip
    lines.append("| **mean ± sd** | | " + " | ".join(cells) + " |")
    cells = []
    for m in modes:
        h = sel["held_out"][m]
        cells.append(f"{h['recall']['min']:.1f} ({h['recall']['worst']})")
        for n in peers:
            s = sel["per_corpus_spread"][n][m]
            cells.append(f"{s['recall']['min']:.1f} ({s['recall']['worst']})")
    lines.append("| **worst corpus (recall)** | | " + " | ".join(cells) + " |")
    wins = ", ".join(f"{m}: {n}/{len(sel['folds'])}" for m, n in sel["corpora_ahead_of_every_peer"].items())
    lines.append(f"\nRecommended: {sel['recommended']} (chosen in {sel['chosen_counts']}; "
                 f"on all corpora: {sel['full_data_choice']}). Held-out corpora where the choice is ahead of "
                 f"every peer: {wins}.")  # fmt: skip
    boot = sel.get("bootstrap")
    if boot:
        per = ", ".join(f"{c} {v['hybrid']:.2f}" for c, v in boot["per_corpus"].items())
        lines.append(f"\nPaired bootstrap ({boot['samples']} draws of each corpus's questions): the "
                     f"recommendation is ahead of every peer in hybrid mode with probability {per}; "
                     f"expected corpora ahead {boot['expected_corpora_ahead']:.2f}; ahead on all but at "
                     f"most one: {boot['p_all_but_one']:.2f}.")  # fmt: skip
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
        peers=() if args.no_peers else _named(SweepSettings().peers, args.peers, "--peers", lambda p: p.name),
        extra=()
        if args.no_candidates
        else _named(SweepSettings().extra, args.profiles, "--profiles", lambda p: p[0]),
        sentence_ablation=not args.no_ablation,
        fusion_study=not args.no_fusion_study,
    )
    return evaluate_folders(
        list(args.corpus), args.out, settings, SentenceTransformerEmbedder(ecfg), model_dir(ecfg), args.cache,
        args.questions, lambda s: print(s, file=sys.stderr),
    )  # fmt: skip


def _named(items: tuple[T, ...], names: str, option: str, name: Callable[[T], str]) -> tuple[T, ...]:
    """The items whose names are listed (all when none is); an unknown name is an error."""
    from tessera.errors import InvalidArgument

    wanted = [n for n in names.split(",") if n]
    known = {name(i): i for i in items}
    unknown = [n for n in wanted if n not in known]
    if unknown:
        raise InvalidArgument(option, f"unknown {unknown}; known: {sorted(known)}")
    return tuple(known[n] for n in wanted) if wanted else items


def evaluate_folders(
    corpus_dirs: Sequence[Path],
    out: Path,
    settings: SweepSettings,
    embedder: Embedder,
    model_path: Path,
    cache_dir: Path,
    questions: Path | None = None,
    log: Callable[[str], None] = lambda _: None,
) -> dict[str, Any]:
    """Run the sweep on the pooled corpus folders; write ``report.json``, ``report.md`` and
    the plots (frontier per mode, pooled and per corpus; heatmaps of a grid) into ``out``."""
    from tessera.chunking.tokens import load_counter
    from tessera.errors import EvaluationError
    from tessera.evaluation.chunking.corpus import load_corpus, pool
    from tessera.evaluation.chunking.plots import frontier_plots, heatmaps
    from tessera.evaluation.chunking.sweep import Embedding, run_sweep
    from tessera.store.db import connect
    from tessera.store.embedding_cache import EmbeddingCache

    if questions is not None and len(corpus_dirs) != 1:
        raise EvaluationError("--questions needs exactly one --corpus")
    loaded = [load_corpus(d, questions) for d in corpus_dirs]
    corpus = pool(loaded)
    cache_dir.mkdir(parents=True, exist_ok=True)
    embedding = Embedding(embedder, EmbeddingCache(connect(str(cache_dir)), "eval", embedder.identity))
    report = run_sweep(corpus, embedding, load_counter(model_path), model_path, settings, log)
    report["corpus_folders"] = [str(d) for d in corpus_dirs]
    report["folders"] = {str(d): sorted(c.texts) for d, c in zip(corpus_dirs, loaded, strict=True)}
    everyone = [*report["peers"], *report["rows"]]
    report["pooled_by_folder"] = by_folder(everyone, report["folders"], settings.modes)
    out.mkdir(parents=True, exist_ok=True)
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")  # before plots
    grid = [r for r in report["rows"] if r["strategy"] in settings.strategies]
    rec = (report.get("recommended") or {}).get("name")
    maps = heatmaps(grid, out, settings.modes, rec, report.get("peers", [])) if grid else []
    report["heatmaps"] = [p.name for p in maps]
    report["plots"] = [p.name for p in frontier_plots(report, out)]
    (out / "report.json").write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
    (out / "report.md").write_text(table(report) + "\n", encoding="utf-8")
    return report


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
    """One corpus folder (the Dagster asset's entry point): :func:`evaluate_folders`."""
    return evaluate_folders([corpus_dir], out, settings, embedder, model_path, cache_dir, questions, log)
