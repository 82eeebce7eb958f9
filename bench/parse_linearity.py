"""Parsing and chunking stay linear on pathological inputs; the sandbox's per-document cost.

1. **Linearity.** For each hostile family (../shared/RELIABILITY.md E4-E6 and the chunking
   paths of the robustness issue: long headings, one-line files, deep lists, big tables, one
   huge word, ...), inputs of scale k = 1, 2, 4 are parsed with ``parse_document`` (the
   pipeline's own call: budgets, sandbox for code) and chunked with the default profile. The
   time of each size is the fastest of :data:`REPEATS` runs (this machine is shared). Per
   doubling we report ``ratio`` = t(2n)/t(n) and ``normalized`` = ratio x 2 / (bytes ratio),
   so families whose bytes do not exactly double (a deep list's indentation) compare too.
   Linear is about 2, quadratic about 4. A family passes when the geometric mean of its
   ``normalized`` ratios is at most :data:`PASS_BOUND` (one noisy doubling on this shared
   machine does not fail it; ``worst_normalized`` is reported too). ``tokenizer_ratio`` is
   the same ratio for one ``tokenizers`` encode of the whole text: the model's tokenizer
   (Rust) itself grows 2.4-2.6x per doubling at 1-2 MB, a floor no chunker goes under.
2. **Sandbox overhead.** :data:`SMALL_FILES` Markdown files of about 3 KB parsed in process,
   in the long-lived sandbox child (``run_sandboxed``, worker already started), and in process
   without the deadline rules; medians of alternated rounds, in ms per document.

Writes ``bench/results/parse_linearity.json`` (a full run only); ``--quick`` runs one repeat
and two sizes, ``--only a,b`` some families.
"""

from __future__ import annotations

import argparse
import itertools
import random
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import peak_rss_mb, write_result
from tessera.chunking.base import ChunkContext
from tessera.chunking.registry import chunker_for
from tessera.chunking.tokens import load_counter
from tessera.config import ChunkingConfig, EmbeddingConfig
from tessera.embedding.model_files import model_dir
from tessera.errors import DocumentError
from tessera.parsing.base import SandboxLimits
from tessera.parsing.dispatch import parse_document
from tessera.types import SourceDocument, sha256_hex

PASS_BOUND = 2.6
REPEATS = 3
SCALES = (1, 2, 4)
SMALL_FILES = 2000
MD, HTML, PY = "text/markdown", "text/html", "text/x-python"
Family = tuple[str, str, Callable[[int], str]]


def _words(n: int) -> str:
    return " ".join(f"word{i}" for i in range(n))


def _deep_list(k: int) -> str:  # depth x sqrt(k): the indentation makes bytes grow as depth squared
    depth = round(250 * k**0.5)
    return "".join("  " * i + f"- item {i}\n" for i in range(depth))


FAMILIES: list[Family] = [
    ("md_long_heading", MD, lambda k: f"# {_words(2500 * k)}\n\nBody.\n"),
    ("md_one_line", MD, lambda k: " ".join(f"lorem{i % 97}" for i in range(70_000 * k))),
    ("md_deep_list", MD, _deep_list),
    (
        "md_table_rows",
        MD,
        lambda k: "| a | b |\n|---|---|\n" + "".join(f"| r{i} | v{i} |\n" for i in range(5000 * k)),
    ),
    ("md_one_word", MD, lambda k: "x" * (256_000 * k)),
    ("md_many_sections", MD, lambda k: "".join(f"## S{i}\n\nText of {i}.\n\n" for i in range(1250 * k))),
    (
        "md_many_paragraphs",
        MD,
        lambda k: "# T\n\n" + "".join(f"Para {i} says hi.\n\n" for i in range(2500 * k)),
    ),
    ("md_dot_leaders", MD, lambda k: "Contents " + "." * (50_000 * k) + "5\n"),
    ("md_gt", MD, lambda k: ">" * (10_000 * k)),
    ("md_brackets", MD, lambda k: "[" * (10_000 * k)),
    ("md_qc", MD, lambda k: "?c_" * (25_000 * k) + "c_"),
    (
        "md_reference_defs",
        MD,
        lambda k: "".join(f'[r{i}]: http://e.com/{i} "t{i}"\n' for i in range(2500 * k)),
    ),
    ("html_divs", HTML, lambda k: "<div>" * (25_000 * k) + "end"),
    ("html_one_line", HTML, lambda k: "<p>" + "lorem ipsum " * (40_000 * k) + "</p>"),
    ("html_nested_tables", HTML, lambda k: "<table><tr><td>" * (10_000 * k) + "cell"),
    (
        "html_nested_headers",
        HTML,
        lambda k: "<body>" + "<header><h2>t</h2>" * 500 + "<p>word</p>" * (3000 * k),
    ),
    (
        "html_wide_table",
        HTML,
        lambda k: "<table><tr>" + "<td>h</td>" * (1000 * k) + "<tr><td>y</td>" * (1000 * k),
    ),
    ("html_many_headings", HTML, lambda k: "<body>" + "<h2>t</h2>" * (5000 * k) + "<p>end</p>"),
    ("py_parens", PY, lambda k: "(" * (25_000 * k)),
    ("py_deep_brackets", PY, lambda k: "x = " + "[" * (1000 * k) + "1" + "]" * (1000 * k) + "\n"),
]


def _context() -> ChunkContext:
    counter = load_counter(model_dir(EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2")))
    return ChunkContext(ChunkingConfig(), counter, "bench")


def _doc(name: str, content_type: str, raw: bytes) -> SourceDocument:
    return SourceDocument("bench", name, f"file:///{name}", sha256_hex(raw), content_type, (), ())


def _once(doc: SourceDocument, raw: bytes, ctx: ChunkContext) -> tuple[float, float, str, int]:
    """(parse s, chunk s, outcome, chunks) of one document."""
    t0 = time.perf_counter()
    try:
        parsed = parse_document(doc, raw)
    except DocumentError as e:
        return time.perf_counter() - t0, 0.0, e.reason, 0
    t1 = time.perf_counter()
    chunks = chunker_for(doc.content_type, ctx.config.strategy).chunk(doc, parsed, ctx)
    return t1 - t0, time.perf_counter() - t1, "parsed", len(chunks)


def family(
    name: str,
    content_type: str,
    make: Callable[[int], str],
    ctx: ChunkContext,
    scales: tuple[int, ...],
    repeats: int,
) -> dict[str, Any]:
    sizes: list[dict[str, Any]] = []
    for k in scales:
        raw = make(k).encode("utf-8")
        doc = _doc(f"{name}-{k}", content_type, raw)
        runs = [_once(doc, raw, ctx) for _ in range(repeats)]
        best = min(runs, key=lambda r: r[0] + r[1])
        text = raw.decode("utf-8")
        tok = []
        for _ in range(repeats):
            t0 = time.perf_counter()
            ctx.counter.count(text)
            tok.append(time.perf_counter() - t0)
        sizes.append(
            {
                "scale": k,
                "bytes": len(raw),
                "parse_s": round(best[0], 4),
                "chunk_s": round(best[1], 4),
                "total_s": round(best[0] + best[1], 4),
                "tokenizer_s": round(min(tok), 4),
                "outcome": best[2],
                "chunks": best[3],
            }
        )
    doublings = []
    for a, b in itertools.pairwise(sizes):
        ratio = b["total_s"] / max(a["total_s"], 1e-6)
        size_ratio = b["bytes"] / a["bytes"]
        tok_ratio = b["tokenizer_s"] / max(a["tokenizer_s"], 1e-6)
        doublings.append(
            {
                "ratio": round(ratio, 3),
                "bytes_ratio": round(size_ratio, 3),
                "normalized": round(ratio * 2 / size_ratio, 3),
                "tokenizer_ratio": round(tok_ratio, 3),
            }
        )
    worst = max(d["normalized"] for d in doublings)
    mean = statistics.geometric_mean([max(d["normalized"], 1e-6) for d in doublings])
    typed = all(s["outcome"] in ("parsed", "timeout", "too_large") for s in sizes)
    return {
        "format": content_type,
        "sizes": sizes,
        "doublings": doublings,
        "mean_normalized": round(mean, 3),
        "worst_normalized": worst,
        "passes": mean <= PASS_BOUND and typed,
    }


def _small_markdown(n: int) -> list[tuple[SourceDocument, bytes]]:
    rng = random.Random(3)
    vocab = ["the", "of", "and", "to", "index", "tenant", "chunk", "vector", "ledger", "deploy", "model"]
    out = []
    for i in range(n):
        parts = [f"# Document {i}\n"]
        while sum(map(len, parts)) < 3000:
            r = rng.random()
            if r < 0.15:
                parts.append(f"\n## Section {len(parts)}\n")
            elif r < 0.25:
                parts.append("\n- " + "\n- ".join(" ".join(rng.choices(vocab, k=6)) for _ in range(3)) + "\n")
            elif r < 0.3:
                parts.append("\n```python\nx = 1\nprint(x)\n```\n")
            else:
                parts.append(
                    "\n" + " ".join(rng.choices(vocab, k=40)) + ". [a link](http://x.y/z) and `code`.\n"
                )
        raw = "".join(parts).encode()
        out.append((_doc(f"d{i}.md", MD, raw), raw))
    return out


def sandbox_overhead(n: int, rounds: int) -> dict[str, Any]:
    from markdown_it import MarkdownIt

    from tessera.parsing.markdown import MAX_NESTING, MarkdownParser
    from tessera.parsing.sandbox import run_sandboxed, shutdown

    docs = _small_markdown(n)
    budgeted = MarkdownParser()
    plain = MarkdownParser()
    plain._md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")  # no deadline rules
    limits = SandboxLimits(wall_seconds=30, memory_mb=1024)
    run_sandboxed(*docs[0], limits)  # start the worker once, as a run does
    modes: dict[str, Callable[[SourceDocument, bytes], object]] = {
        "in_process": budgeted.parse,
        "in_process_without_deadline": plain.parse,
        "sandbox": lambda d, r: run_sandboxed(d, r, limits),
    }
    times: dict[str, list[float]] = {m: [] for m in modes}
    for r in range(rounds):
        for mode in list(modes)[:: 1 if r % 2 == 0 else -1]:
            t0 = time.perf_counter()
            for d, raw in docs:
                modes[mode](d, raw)
            times[mode].append(time.perf_counter() - t0)
    shutdown()
    ms = {m: round(statistics.median(v) / n * 1000, 3) for m, v in times.items()}
    return {
        "documents": n,
        "mean_bytes": round(sum(len(r) for _, r in docs) / n),
        "rounds_s": {m: [round(x, 3) for x in v] for m, v in times.items()},
        "ms_per_doc": ms,
        "sandbox_overhead_ms_per_doc": round(ms["sandbox"] - ms["in_process"], 3),
        "sandbox_over_in_process": round(ms["sandbox"] / ms["in_process"], 2),
        "deadline_overhead_pct": round(100 * (ms["in_process"] / ms["in_process_without_deadline"] - 1), 1),
    }


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true", help="one repeat, scales 1 and 2, 200 small files")
    ap.add_argument("--only", default="", help="comma-separated family names")
    args = ap.parse_args()
    scales, repeats = ((1, 2), 1) if args.quick else (SCALES, REPEATS)
    ctx = _context()
    wanted = set(filter(None, args.only.split(",")))
    result: dict[str, Any] = {
        "pass_bound": PASS_BOUND,
        "repeats": repeats,
        "profile": ctx.config.as_dict(),
        "families": {},
    }
    for name, content_type, make in FAMILIES:
        if wanted and name not in wanted:
            continue
        entry = family(name, content_type, make, ctx, scales, repeats)
        result["families"][name] = entry
        print(
            name,
            [s["total_s"] for s in entry["sizes"]],
            [d["normalized"] for d in entry["doublings"]],
            "pass" if entry["passes"] else "FAIL",
            flush=True,
        )
    fams = result["families"].values()
    result["all_pass"] = all(f["passes"] for f in fams)
    result["worst_mean_normalized"] = max((f["mean_normalized"] for f in fams), default=0.0)
    result["worst_normalized"] = max((f["worst_normalized"] for f in fams), default=0.0)
    if not wanted:
        result["sandbox_overhead"] = sandbox_overhead(
            200 if args.quick else SMALL_FILES, 1 if args.quick else 3
        )
        print("sandbox_overhead", result["sandbox_overhead"]["ms_per_doc"], flush=True)
    result["peak_rss_mb"] = round(peak_rss_mb(), 1)
    if wanted or args.quick:
        return 0  # a partial run does not replace the results file
    print(write_result("parse_linearity", result))
    return 0


if __name__ == "__main__":
    sys.exit(main())
