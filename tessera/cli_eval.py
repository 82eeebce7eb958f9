"""``tessera eval html|code|chunking``: evaluations on external data, read by path.

They need no configuration. ``eval chunking`` has its own options (``tessera eval chunking
-h``); global options may come before it. Errors are typed like every other command's.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tessera.boundary import Parser, folder_option
from tessera.errors import InvalidArgument


def cmd_eval(args: argparse.Namespace) -> int:
    rest = ([str(args.data)] if args.data else []) + (["--json"] if args.json else [])
    if args.kind == "html":
        from tessera.evaluation.html_eval import main as html_main

        return html_main(rest)
    from tessera.evaluation.code_eval import main as code_main

    return code_main(rest)


def eval_chunking_args(argv: list[str]) -> list[str] | None:
    """The arguments after ``eval chunking`` (global options may come first), else None."""
    i = 0
    while i < len(argv) and (argv[i] in ("--config", "--fake-embedder") or argv[i].startswith("--config=")):
        i += 2 if argv[i] == "--config" else 1
    return argv[i + 2 :] if argv[i : i + 2] == ["eval", "chunking"] else None


def eval_chunking(argv: list[str]) -> int:
    """``tessera eval chunking``: its own options (``-h``), reads external data by path."""
    from tessera.evaluation.chunking import cli as chunking

    args = Parser(prog="tessera eval chunking", parents=[chunking.parser()], add_help=False).parse_args(argv)
    if not args.corpus.is_dir():
        raise InvalidArgument("--corpus", f"{str(args.corpus)!r} is not a folder")
    if args.k < 1:
        raise InvalidArgument("--k", f"must be at least 1, got {args.k}")
    report = chunking.run(args)
    if args.json:
        print(json.dumps(report, indent=2))
    else:
        print(chunking.table(report))
        print(f"\nreport: {args.out / 'report.json'}  ({report['elapsed_seconds']} s)")
    return 0


def add_parser(sub: Any) -> None:
    ev = sub.add_parser("eval", help="evaluations on external data: html, code, chunking")
    ev.add_argument("kind", choices=["html", "code", "chunking"], help="chunking: see 'eval chunking -h'")
    ev.add_argument("--data", type=folder_option, help="the data folder (html) or package folder (code)")
    ev.add_argument("--json", action="store_true")
