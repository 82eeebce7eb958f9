"""PDF parsing throughput: our parser against raw PyMuPDF and pdfplumber, in one process.

* ``ours``: :class:`tessera.parsing.pdf.PdfParser` in-process (reading order, header/footer
  removal, hidden-text filter, table detection, layout map and offset map), not sandboxed.
* ``pymupdf_dict``: ``page.get_text("dict")`` for every page (the floor we build on).
* ``pdfplumber``: ``extract_text()`` + ``find_tables()`` for every page.

Corpora: generated two-column text PDFs (50 pages, header/footer on every page) and, when
``../shared/data/pdfs/docling`` exists, the text pages of those files (pages with a text layer
and no ruling lines, copied into one PDF); the ratio targets apply to text pages. The whole
docling set (tables, scans: OCR off) is measured too, for information. Methods alternate,
each corpus is timed :data:`RUNS` times after a warm-up, and the median is reported.

Also: the sandbox overhead (the same documents through ``parse_document``, warm worker, and
the worker's start-up), the peak RSS of a process that only runs our parser, and the table
pass compared between PyMuPDF ``find_tables(use_layout=False)`` and pdfplumber
``find_tables()`` on tabular pages (time and cell recall/precision against the fixture's
known rows and the docling ground-truth Markdown tables).
"""

from __future__ import annotations

import argparse
import contextlib
import gc
import io
import json
import re
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

from bench.common import ROOT, median, peak_rss_mb, write_result
from tessera.types import SourceDocument, sha256_hex

RUNS = 3
DOCLING = ROOT.parent / "shared" / "data" / "pdfs" / "docling"


def _pymupdf() -> Any:
    import pymupdf

    return pymupdf


def _doc(raw: bytes, name: str) -> SourceDocument:
    return SourceDocument("bench", name, f"bench://{name}", sha256_hex(raw), "application/pdf", (), ("all",))


def generated() -> list[tuple[str, bytes]]:
    from tests.pdf_fixtures import text_pages_pdf, two_column_pdf

    return [("two_column_50p", text_pages_pdf(50)), ("two_column_3p", two_column_pdf(3))]


def docling_files() -> list[tuple[str, bytes]]:
    if not DOCLING.is_dir():
        return []
    return [(p.name, p.read_bytes()) for p in sorted(DOCLING.glob("*.pdf"))]


def text_pages(files: list[tuple[str, bytes]]) -> tuple[bytes, int] | None:
    """The pages of ``files`` that have a text layer and no ruling lines, as one PDF."""
    from tessera.parsing.pdf_extract import PageStats, page_dict, rules

    pymupdf = _pymupdf()
    out = pymupdf.open()
    for _, raw in files:
        src = pymupdf.open(stream=raw)
        for i, page in enumerate(src):
            blocks, vectors = page_dict(page)
            stats = PageStats()
            rules(vectors, stats)
            chars = sum(len(s["text"]) for b in blocks for ln in b["lines"] for s in ln["spans"])
            if chars >= 200 and stats.h_rules < 3 and stats.grid_rows < 3:
                out.insert_pdf(src, from_page=i, to_page=i)
    if out.page_count == 0:
        return None
    data: bytes = out.tobytes()
    return data, int(out.page_count)


def pages_of(raw: bytes) -> int:
    return int(_pymupdf().open(stream=raw).page_count)


# -- methods -----------------------------------------------------------------------------


def run_ours(files: list[tuple[str, bytes]], ocr: bool = True) -> None:
    from tessera.errors import DocumentError
    from tessera.parsing.pdf import PdfParser

    parser = PdfParser(ocr=ocr)
    for name, raw in files:
        with contextlib.suppress(DocumentError):
            parser.parse(_doc(raw, name), raw)


def run_raw(files: list[tuple[str, bytes]]) -> None:
    pymupdf = _pymupdf()
    for _, raw in files:
        doc = pymupdf.open(stream=raw)
        for page in doc:
            page.get_text("dict")
        doc.close()


def run_plumber(files: list[tuple[str, bytes]]) -> None:
    import pdfplumber

    for _, raw in files:
        with pdfplumber.open(io.BytesIO(raw)) as pdf:
            for page in pdf.pages:
                page.extract_text()
                page.find_tables()
                page.flush_cache()


def run_sandboxed(files: list[tuple[str, bytes]]) -> None:
    from tessera.errors import DocumentError
    from tessera.parsing.dispatch import parse_document

    for name, raw in files:
        with contextlib.suppress(DocumentError):
            parse_document(_doc(raw, name), raw)


def alternate(files: list[tuple[str, bytes]], methods: dict[str, Callable[[], None]]) -> dict[str, Any]:
    n = sum(pages_of(raw) for _, raw in files)
    times: dict[str, list[float]] = {m: [] for m in methods}
    for name, fn in methods.items():
        if name != "pdfplumber":
            fn()  # warm-up: imports, first-call caches
    for _ in range(RUNS):
        for name, fn in methods.items():
            gc.collect()  # no method pays for another's garbage
            t0 = time.perf_counter()
            fn()
            times[name].append(time.perf_counter() - t0)
    out: dict[str, Any] = {"pages": n}
    for name, ts in times.items():
        out[name] = {"seconds_median": round(median(ts), 4), "pages_per_s": round(n / median(ts), 1)}
    return out


def ratios(r: dict[str, Any]) -> dict[str, float]:
    ours = r["ours"]["pages_per_s"]
    out = {"ours_vs_pymupdf_dict": round(ours / r["pymupdf_dict"]["pages_per_s"], 3)}
    if "pdfplumber" in r:
        out["ours_vs_pdfplumber"] = round(ours / r["pdfplumber"]["pages_per_s"], 2)
    return out


# -- tables ------------------------------------------------------------------------------

_WS = re.compile(r"\s+")


def _norm(s: str) -> str:
    return _WS.sub(" ", s or "").strip().lower()


def _gt_cells(md: str) -> set[str]:
    cells: set[str] = set()
    for line in md.splitlines():
        if line.startswith("|") and not re.fullmatch(r"[|\-: ]+", line):
            cells.update(_norm(c) for c in line.strip().strip("|").split("|"))
    cells.discard("")
    return cells


def table_pages() -> list[tuple[str, bytes, int, set[str]]]:
    """(name, pdf, 0-based page, expected cells) for pages with known tables."""
    from tests.pdf_fixtures import TABLE_COLUMNS, table_pdf, table_rows

    fixture = table_pdf(60)
    expected = {_norm(c) for row in [TABLE_COLUMNS, *table_rows(60)] for c in row}
    out = [("fixture_table", fixture, 0, expected), ("fixture_table", fixture, 1, expected)]
    if DOCLING.is_dir():
        for md in sorted(DOCLING.glob("*.groundtruth.md")):
            cells = _gt_cells(md.read_text("utf-8"))
            pdf = DOCLING / md.name.replace(".groundtruth.md", ".pdf")
            if cells and pdf.exists():
                raw = pdf.read_bytes()
                for i in range(pages_of(raw)):
                    out.append((pdf.name, raw, i, cells))
    return out


def compare_tables() -> dict[str, Any]:
    """Cells found on the pages where our table pass runs, per library, against known cells.

    ``pymupdf_tessera`` is what the parser does: PyMuPDF ``find_tables(use_layout=False)``
    geometry with cell text rebuilt from visible ``rawdict`` characters; ``pymupdf_extract``
    is PyMuPDF's own ``Table.extract()``; ``pdfplumber`` is ``find_tables()`` + ``extract()``.
    """
    import pdfplumber

    from tessera.parsing.pdf_extract import PageContext, PageStats, page_dict, rules
    from tessera.parsing.pdf_tables import find_tables, strategy

    pymupdf = _pymupdf()
    libs = ("pymupdf_tessera", "pymupdf_extract", "pdfplumber")
    found: dict[str, dict[str, set[str]]] = {lib: {} for lib in libs}
    secs = dict.fromkeys(libs, 0.0)
    expected: dict[str, set[str]] = {}
    pages = 0
    for name, raw, i, cells in table_pages():
        page = pymupdf.open(stream=raw)[i]
        _blocks, vectors = page_dict(page)
        stats = PageStats()
        rules(vectors, stats)
        kwargs = strategy(stats)
        if kwargs is None:
            continue  # the table pass does not run on this page at all
        pages += 1
        expected[name] = cells
        got: dict[str, set[str]] = {}
        t0 = time.perf_counter()
        tables = find_tables(page, i + 1, kwargs, PageContext(page, vectors))
        got["pymupdf_tessera"] = {
            _norm(c.text.replace("\\|", "|").replace("<br>", " "))
            for t in tables
            for row in t.rows
            for c in row
        }
        secs["pymupdf_tessera"] += time.perf_counter() - t0
        t0 = time.perf_counter()
        tabs = page.find_tables(use_layout=False, **kwargs).tables
        got["pymupdf_extract"] = {_norm(c) for t in tabs for row in t.extract() for c in row if c}
        secs["pymupdf_extract"] += time.perf_counter() - t0
        with pdfplumber.open(io.BytesIO(raw)) as pdf:
            t0 = time.perf_counter()
            pp = pdf.pages[i]
            got["pdfplumber"] = {_norm(c) for t in pp.find_tables() for row in t.extract() for c in row if c}
            secs["pdfplumber"] += time.perf_counter() - t0
        for lib in libs:
            found[lib].setdefault(name, set()).update(got[lib] - {""})
    out: dict[str, Any] = {"tabular_pages": pages}
    for lib in libs:
        per = {}
        hit = exp = got_n = 0
        for name, cells in expected.items():
            have = found[lib].get(name, set())
            h = len(cells & have)
            per[name] = {"recall": round(h / len(cells), 3), "precision": round(h / max(1, len(have)), 3)}
            hit, exp, got_n = hit + h, exp + len(cells), got_n + len(have)
        out[lib] = {
            "seconds_per_page": round(secs[lib] / max(1, pages), 4),
            "cell_recall": round(hit / max(1, exp), 3),
            "cell_precision": round(hit / max(1, got_n), 3),
            "files": per,
        }
    return out


# -- main --------------------------------------------------------------------------------


def rss_phase() -> dict[str, float]:
    files = generated() + docling_files()
    t0 = time.perf_counter()
    run_ours(files, ocr=False)
    return {"seconds": round(time.perf_counter() - t0, 3), "peak_rss_mb": round(peak_rss_mb(), 1)}


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--phase", choices=["rss"])
    args = p.parse_args()
    if args.phase == "rss":
        print(json.dumps(rss_phase()))
        return 0
    # first, while this process is small: Linux keeps a child's peak RSS across fork + exec
    out = subprocess.run(
        [sys.executable, "-m", "bench.pdf_throughput", "--phase", "rss"],
        check=True,
        capture_output=True,
        text=True,
        cwd=ROOT,
    )
    result: dict[str, Any] = {"runs": RUNS}
    result["ours_only_process"] = json.loads(out.stdout.strip().splitlines()[-1])
    gen = generated()
    r = alternate(
        gen,
        {
            "ours": lambda: run_ours(gen),
            "pymupdf_dict": lambda: run_raw(gen),
            "pdfplumber": lambda: run_plumber(gen),
        },
    )
    result["generated_text_pages"] = {**r, **ratios(r)}
    docling = docling_files()
    if docling:
        sub = text_pages(docling)
        if sub is not None:
            files = [("docling_text_pages", sub[0])]
            r = alternate(
                files,
                {
                    "ours": lambda: run_ours(files),
                    "pymupdf_dict": lambda: run_raw(files),
                    "pdfplumber": lambda: run_plumber(files),
                },
            )
            result["docling_text_pages"] = {**r, **ratios(r)}
        r = alternate(
            docling,
            {
                "ours": lambda: run_ours(docling, ocr=False),
                "pymupdf_dict": lambda: run_raw(docling),
                "pdfplumber": lambda: run_plumber(docling),
            },
        )
        result["docling_all_pages_no_ocr"] = {**r, **ratios(r)}
    t0 = time.perf_counter()
    run_sandboxed(gen[:1])
    startup = time.perf_counter() - t0
    r = alternate(gen, {"ours": lambda: run_ours(gen), "sandboxed": lambda: run_sandboxed(gen)})
    result["sandbox"] = {
        "first_call_seconds": round(startup, 3),
        "in_process_pages_per_s": r["ours"]["pages_per_s"],
        "sandboxed_pages_per_s": r["sandboxed"]["pages_per_s"],
        "overhead_ms_per_document": round(
            (r["sandboxed"]["seconds_median"] - r["ours"]["seconds_median"]) * 1000 / len(gen), 2
        ),
    }
    result["tables"] = compare_tables()
    result["bench_process_peak_rss_mb"] = round(peak_rss_mb(), 1)
    result["targets"] = {"ours_vs_pymupdf_dict_text_pages": 0.5, "ours_vs_pdfplumber": 3.0}
    print(write_result("pdf_throughput", result))
    print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
