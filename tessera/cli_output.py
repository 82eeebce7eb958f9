"""Output format of the commands that report to operators and to scripts (``run``, ``maintain``).

``--json`` prints the machine form, ``--table`` the human one; without either, a terminal gets
the table and a pipe or a file gets the JSON (as ``ls`` and ``gh`` do), so scripts that parse
the output keep working.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence


def add_format_options(p: argparse.ArgumentParser) -> None:
    fmt = p.add_mutually_exclusive_group()
    fmt.add_argument(
        "--json", action="store_true", help="print JSON (the default when stdout is not a terminal)"
    )
    fmt.add_argument("--table", action="store_true", help="print a table (the default on a terminal)")


def wants_json(args: argparse.Namespace) -> bool:
    if getattr(args, "json", False):
        return True
    if getattr(args, "table", False):
        return False
    return not sys.stdout.isatty()


def print_table(header: Sequence[str], rows: Sequence[Sequence[object]]) -> None:
    """Columns as wide as their widest cell, numbers right-aligned."""
    cells = [[str(c) for c in header], *[[str(c) for c in r] for r in rows]]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    numeric = [all(isinstance(r[i], int | float) for r in rows) and bool(rows) for i in range(len(header))]
    for r in cells:
        line = "  ".join(
            c.rjust(w) if num else c.ljust(w) for c, w, num in zip(r, widths, numeric, strict=True)
        )
        print(line.rstrip())
