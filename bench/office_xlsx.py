"""XLSX reading: our streaming parser against openpyxl's read-only mode on the same workbook.

A workbook of one sheet, ``--rows`` rows of 4 cells (a text and three numbers) plus a header,
written by openpyxl. Alternated, ``--repeat`` rounds, median: openpyxl ``read_only`` iterating
the values alone (no positions, no hidden rows or columns), and ``XlsxParser.parse`` (text,
blocks and every cell's location). Why the parser reads the XML itself: README, Formats.

    python -m bench.office_xlsx            # writes bench/results/office_xlsx.json
"""

from __future__ import annotations

import argparse
import io
import os
import statistics
import sys
import time

from bench.common import peak_rss_mb, write_result

XLSX = "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet"


def workbook(rows: int) -> bytes:
    import openpyxl

    wb = openpyxl.Workbook(write_only=True)
    ws = wb.create_sheet("Rates")
    ws.append(["item", "a", "b", "c"])
    for r in range(2, rows + 2):
        ws.append([f"item {r}", r, r * 2, r * 3])
    buf = io.BytesIO()
    wb.save(buf)
    return buf.getvalue()


def main() -> int:
    p = argparse.ArgumentParser()
    p.add_argument("--rows", type=int, default=100_000)
    p.add_argument("--repeat", type=int, default=3)
    args = p.parse_args()
    import openpyxl

    from tessera.parsing.office_xlsx import XlsxParser
    from tessera.types import SourceDocument

    raw = workbook(args.rows)
    doc = SourceDocument("bench", "big.xlsx", "file:///big.xlsx", "0" * 64, XLSX, (), ("staff",))
    parser = XlsxParser()
    theirs, ours = [], []
    for _ in range(args.repeat):
        t0 = time.perf_counter()
        wb = openpyxl.load_workbook(io.BytesIO(raw), read_only=True, data_only=True)
        read = sum(1 for _ in wb.worksheets[0].iter_rows(values_only=True))
        theirs.append(time.perf_counter() - t0)
        t0 = time.perf_counter()
        parsed = parser.parse(doc, raw)
        ours.append(time.perf_counter() - t0)
    assert read == args.rows + 1 and parsed.structure is not None
    result = {
        "rows": args.rows,
        "bytes": len(raw),
        "repeat": args.repeat,
        "openpyxl_read_only_values_s": round(statistics.median(theirs), 3),
        "tessera_parse_s": round(statistics.median(ours), 3),
        "tessera_vs_openpyxl": round(statistics.median(theirs) / statistics.median(ours), 2),
        "tessera_rows_per_s": round(args.rows / statistics.median(ours)),
        "peak_rss_mb": round(peak_rss_mb(), 1),
        "load_average_1m": round(os.getloadavg()[0], 2),
    }
    print(write_result("office_xlsx", result))
    print(result)
    return 0


if __name__ == "__main__":
    sys.exit(main())
