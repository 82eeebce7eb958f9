"""Boilerplate-removal evaluation of the HTML parser on the trafilatura evaluation subset.

``evaldata_subset.json`` maps each page URL to ``{"file": ..., "with": [...], "without": [...]}``:
snippets of main content that extraction must keep, and of boilerplate that it must drop.
A snippet counts as kept when it occurs in the parser's normalized text, both compared
case-folded with whitespace (including no-break spaces) collapsed.

Usage: ``python -m tessera.evaluation.html_eval [DATA_DIR] [--json]``.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time
from pathlib import Path
from typing import Any

from tessera.errors import DocumentError
from tessera.parsing.html import HtmlParser
from tessera.types import SourceDocument, sha256_hex

DEFAULT_DIR = (
    Path(__file__).resolve().parents[2].parent / "shared" / "data" / "html" / "trafilatura_eval_subset"
)
_WS = re.compile(r"\s+")


def normalize(text: str) -> str:
    return _WS.sub(" ", text).strip().casefold()


def _doc(name: str, raw: bytes) -> SourceDocument:
    return SourceDocument(
        tenant="eval",
        doc_id=name,
        uri=f"file:///{name}",
        revision=sha256_hex(raw),
        content_type="text/html",
        readers=(),
        groups=(),
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


def evaluate_html(data_dir: Path) -> dict[str, Any]:
    """Kept ``with`` and dropped ``without`` snippets, overall and per page."""
    data = json.loads((data_dir / "evaldata_subset.json").read_text(encoding="utf-8"))
    parser = HtmlParser()
    pages: list[dict[str, Any]] = []
    kept = total_with = dropped = total_without = 0
    seconds = 0.0
    size = 0
    for url, item in sorted(data.items(), key=lambda kv: kv[1]["file"]):
        raw = (data_dir / "html" / item["file"]).read_bytes()
        size += len(raw)
        t0 = time.perf_counter()
        try:
            text = parser.parse(_doc(item["file"], raw), raw).text
            error = ""
        except DocumentError as e:
            text, error = "", e.reason
        seconds += time.perf_counter() - t0
        with_, without, missed, leaked = score_page(text, item)
        kept += len(with_) - len(missed)
        dropped += len(without) - len(leaked)
        total_with += len(with_)
        total_without += len(without)
        pages.append(
            {
                "file": item["file"],
                "url": url,
                "kept": len(with_) - len(missed),
                "with": len(with_),
                "dropped": len(without) - len(leaked),
                "without": len(without),
                "missed": missed,
                "leaked": leaked,
                "error": error,
            }
        )
    return {
        "pages": len(pages),
        **totals(kept, total_with, dropped, total_without),
        "parse_seconds": round(seconds, 3),
        "mb_per_s": round(size / 1e6 / max(seconds, 1e-9), 2),
        "per_page": pages,
    }


def format_table(result: dict[str, Any]) -> str:
    rows = [f"{'page':<42} {'kept':>7} {'dropped':>8}"]
    for p in result["per_page"]:
        flag = f"  {p['error']}" if p["error"] else ""
        rows.append(
            f"{p['file']:<42} {p['kept']:>3}/{p['with']:<3} {p['dropped']:>4}/{p['without']:<3}{flag}"
        )
    rows.append(
        f"{'total':<42} {result['kept']:>3}/{result['with']:<3} {result['dropped']:>4}/{result['without']:<3}"
        f"  kept {result['kept_pct']}%  dropped {result['dropped_pct']}%"
    )
    for p in result["per_page"]:
        for s in p["missed"]:
            rows.append(f"  missed  {p['file']}: {s!r}")
        for s in p["leaked"]:
            rows.append(f"  leaked  {p['file']}: {s!r}")
    return "\n".join(rows)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="html_eval", description=__doc__.split("\n", 1)[0])
    ap.add_argument("data_dir", nargs="?", type=Path, default=DEFAULT_DIR)
    ap.add_argument("--json", action="store_true", help="print the full result as JSON")
    args = ap.parse_args(argv)
    if not (args.data_dir / "evaldata_subset.json").is_file():
        print(f"no evaldata_subset.json in {args.data_dir}", file=sys.stderr)
        return 2
    result = evaluate_html(args.data_dir)
    print(json.dumps(result, indent=2, ensure_ascii=False) if args.json else format_table(result))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
