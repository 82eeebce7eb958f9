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

        if args.manifest is not None:
            raise InvalidArgument("--manifest", "only 'eval code' takes a manifest")
        extra = (["--set", args.set] if args.set else []) + (["--out", str(args.out)] if args.out else [])
        return html_main(rest + extra + (["--no-peers"] if args.no_peers else []))
    from tessera.evaluation.code_eval import DEFAULT_PACKAGE, check_manifest, default_manifest
    from tessera.evaluation.code_eval import main as code_main

    if args.set or args.out or args.no_peers:
        raise InvalidArgument("--set", "--set, --out and --no-peers are options of 'eval html'")
    package = args.data or DEFAULT_PACKAGE
    manifest = args.manifest or default_manifest(package)
    check_manifest(package, manifest)  # a typed InvalidArgument("--manifest") before any work
    return code_main([str(package), str(manifest)] + (["--json"] if args.json else []))


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
    for folder in args.corpus:  # repeatable: the folders are pooled into one collection
        if not folder.is_dir():
            raise InvalidArgument("--corpus", f"{str(folder)!r} is not a folder")
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
    from pathlib import Path

    ev = sub.add_parser("eval", help="evaluations on external data: html, code, chunking")
    ev.add_argument("kind", choices=["html", "code", "chunking"], help="chunking: see 'eval chunking -h'")
    ev.add_argument("--data", type=folder_option, help="the data folder (html) or package folder (code)")
    ev.add_argument(
        "--manifest",
        type=Path,
        help="code: the package's AST manifest (default: <package>.ast_manifest.json beside --data)",
    )
    ev.add_argument("--set", choices=["wcxb", "mozilla", "trafilatura"], help="html: the data set's format")
    ev.add_argument("--out", type=Path, help="html: folder for report.json and worst_pages.md")
    ev.add_argument("--no-peers", action="store_true", help="html: score Tessera only")
    ev.add_argument("--json", action="store_true", help="print the report as JSON")
