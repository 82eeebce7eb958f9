"""The ``tessera`` command: run, search, versions, restore, config check.

Exit codes: 0 success, 1 a Tessera error, 2 bad usage, 130 interrupted; every failure is one
line ``tessera: <ErrorType>: <message>`` on stderr, never a traceback (``tessera.boundary``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Sequence
from datetime import UTC, datetime
from pathlib import Path

from tessera import boundary
from tessera.boundary import EXIT_INTERRUPTED, Parser, int_option
from tessera.cli_config import add_parser as add_config_parser
from tessera.cli_diagnose import add_parser as add_diagnose_parser
from tessera.cli_directory import add_parser as add_directory_parser
from tessera.cli_doctor import add_parser as add_doctor_parser
from tessera.cli_eval import add_parser as add_eval_parser
from tessera.cli_eval import cmd_eval, eval_chunking, eval_chunking_args
from tessera.cli_failures import add_parsers as add_failures_parsers
from tessera.cli_model import add_parser as add_model_parser
from tessera.cli_model import make_embedders
from tessera.cli_restore import add_parser as add_restore_parser
from tessera.cli_run import add_parser as add_run_parser
from tessera.cli_search import add_parsers as add_search_parsers
from tessera.cli_search import print_hits
from tessera.cli_status import add_parser as add_status_parser
from tessera.cli_version import tessera_version
from tessera.config import TesseraConfig, load_config
from tessera.embedding.base import Embedder
from tessera.errors import AccessDenied, ConfigError, InvalidArgument, SourceBlobMissing

__all__ = ["build_parser", "main", "make_embedder", "print_hits"]


def make_embedder(cfg: TesseraConfig, fake: bool) -> Embedder:
    """The configured model (``embedding``), or the hash embedder with ``--fake-embedder``."""
    return make_embedders(cfg, fake)[0]


def _cmd_serve(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    import uvicorn

    from tessera.api import create_app
    from tessera.search.identities import ReloadingIdentities

    if cfg.api_keys_file is None:
        raise ConfigError("api_keys_file", "tessera serve needs api_keys_file in the configuration")
    boundary.check_listen(args.host, args.port)  # a busy port is an error line, not uvicorn's exit
    first, *others = make_embedders(cfg, args.fake_embedder)
    # keys, users and groups follow their files (revocation without a restart; fail closed)
    app = create_app(cfg, first, ReloadingIdentities.from_config(cfg), others)
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning")
    return 0


def _index(args: argparse.Namespace, cfg: TesseraConfig):  # type: ignore[no-untyped-def]
    from tessera.store.db import connect
    from tessera.store.index import TenantIndex

    cfg.tenant(args.tenant)
    ident = make_embedder(cfg, args.fake_embedder).identity
    return TenantIndex(connect(cfg.store.uri), args.tenant, ident.key, ident.dimension)


def _cmd_versions(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    index = _index(args, cfg)
    pubs = index.publications()
    if args.json:
        print(json.dumps(pubs, indent=2))
        return 0
    print(f"{'version':>7}  {'kind':8} {'rows':>6} {'ins':>5} {'upd':>5} {'del':>5}  {'published':20} run")
    for p in pubs:
        when = datetime.fromtimestamp(p["published_at_us"] / 1e6, UTC).strftime("%Y-%m-%d %H:%M:%S")
        print(
            f"{p['table_version']:>7}  {p['kind']:8} {p['rows']:>6} {p['inserted']:>5} {p['updated']:>5} "
            f"{p['deleted']:>5}  {when:20} {p['run_id']}"
        )
    return 0


def _cmd_sources_check(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.pipeline.listing import check_sources
    from tessera.pipeline.run import RunContext

    embedder = make_embedder(cfg, args.fake_embedder)
    status = check_sources(RunContext(cfg, args.tenant, "sources-check", embedder))
    if args.json:
        print(json.dumps(status, indent=2))
        return 0
    d = status["deletion"]
    print(f"tenant {status['tenant']}: {status['verdict']}  ({status['proof']})")
    print(
        f"documents {status['documents']}, changed {status['changed']}, metadata-only {status['meta_only']}, "
        f"removed {status['removed']}, unreadable {len(status['failed'])}"
    )
    if d["blocked"]:
        print(f"a run would be BLOCKED by the mass-deletion guard: {d['to_delete']} of {d['live_documents']}")
    return 0


def _cmd_purge(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.cli_journal import journal
    from tessera.config import validate_tenant_id
    from tessera.store.activity import IndexActivity
    from tessera.store.db import connect
    from tessera.store.purge import purge_tenant

    validate_tenant_id(args.tenant)  # a tenant removed from the config can still be purged
    if not args.yes:
        raise InvalidArgument("--yes", f"refusing to purge {args.tenant!r} without --yes")
    report = purge_tenant(connect(cfg.store.uri), cfg.store.uri, cfg.store.work_dir, args.tenant)
    run_id = f"cli-purge-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    detail = f"purged {len(report['tables'])} tables"
    journal(cfg, IndexActivity("purge", args.tenant, run_id, rows=0, detail=detail))
    if args.json:
        print(json.dumps({"tenant": args.tenant, **report}, indent=2, default=str))
        return 0
    print(f"purged tenant {args.tenant}: tables {report['tables']}, paths {report['paths']}")
    return 0


def _blob_error(e: OSError, cfg: TesseraConfig) -> SourceBlobMissing | None:
    """A missing or unreadable stored source (``<store>/_sources/<tenant>/<revision>``), typed."""
    path = Path(str(e.filename or ""))
    if cfg.store.uri.startswith("s3://") or path.parent.parent.name != "_sources":
        return None
    return SourceBlobMissing(
        f"the source bytes of revision {path.name} are missing or unreadable in the store ({e.strerror})"
    )


def _cmd_lineage(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.lineage import lineage

    if args.html:
        from tessera.lineage_html import write_report

        docs = set(args.doc) if args.doc else None
        index = _index(args, cfg)
        try:
            print(write_report(index, cfg.store.uri, Path(args.html), docs, args.diff and tuple(args.diff)))
        except OSError as e:
            if (missing := _blob_error(e, cfg)) is not None:
                raise missing from e
            raise ConfigError("--html", f"cannot write the report to {args.html}: {e.strerror or e}") from e
        return 0
    if not args.chunk_id:
        raise InvalidArgument(
            "chunk_id", "give a chunk id or citation, or --html OUT for the tenant's report"
        )
    if args.chunk_id.startswith("tessera:") and args.chunk_id == args.chunk_id.strip():
        from tessera.search.citations import parse_citation

        try:  # the citation as `tessera search` prints it: tessera:<tenant>/<chunk id>
            cited, args.chunk_id = parse_citation(args.chunk_id)
        except InvalidArgument as e:
            raise InvalidArgument("chunk_id", str(e)) from e
        if cited != args.tenant:
            raise InvalidArgument("chunk_id", f"the citation names tenant {cited!r}, not {args.tenant!r}")
    boundary.chunk_id(args.chunk_id)  # 64 hex digits, nothing around them
    from tessera.search.audit import AuditLog, fetch_record

    audit = AuditLog(cfg.store.work_dir)
    try:
        info = lineage(_index(args, cfg), cfg.store.uri, args.chunk_id).as_dict()
    except AccessDenied:
        audit.append(fetch_record("cli", "lineage", args.tenant, None, args.chunk_id, None))
        print("tessera: not found", file=sys.stderr)
        return 1
    except OSError as e:
        if (missing := _blob_error(e, cfg)) is not None:
            raise missing from e
        raise
    audit.append(fetch_record("cli", "lineage", args.tenant, None, args.chunk_id, info["chunk_id"]))
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
        return 0
    for key, value in info.items():
        if key != "source_slice":
            print(f"{key:>24}: {value}")
    print(f"{'source_slice':>24}:\n{info['source_slice']}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = Parser(prog="tessera", description="Tessera: a provenance-exact RAG index.")
    p.add_argument("--version", action="version", version=f"tessera {tessera_version()}")
    p.add_argument(
        "--config",
        default=os.environ.get("TESSERA_CONFIG", "examples/tessera.yaml"),
        help="the configuration file (default: $TESSERA_CONFIG, else examples/tessera.yaml)",
    )
    p.add_argument(
        "--fake-embedder",
        action="store_true",
        default=os.environ.get("TESSERA_FAKE_EMBEDDER") == "1",
        help="use the deterministic hash embedder instead of the model",
    )
    sub = p.add_subparsers(dest="command", required=True)
    add_model_parser(sub)
    add_run_parser(sub)
    add_failures_parsers(sub)
    add_search_parsers(sub)
    sv = sub.add_parser("serve", help="serve the HTTP API (API-key auth)")
    sv.add_argument("--host", default="127.0.0.1", help="the address to listen on (default 127.0.0.1)")
    sv.add_argument("--port", type=int_option(1, 65535), default=8000, help="the TCP port (default 8000)")
    sv.set_defaults(func=_cmd_serve)
    v = sub.add_parser("versions", help="list a tenant's publications")
    v.add_argument("--tenant", required=True, help="the tenant whose publications to list")
    v.add_argument("--json", action="store_true", help="print the publications as JSON")
    v.set_defaults(func=_cmd_versions)
    add_restore_parser(sub, _index)
    add_status_parser(sub)
    add_directory_parser(sub)
    add_doctor_parser(sub, lambda args, cfg: _index(args, cfg).model_key)
    src = sub.add_parser("sources", help="source connectors").add_subparsers(
        dest="sources_cmd", required=True
    )
    chk = src.add_parser("check", help="list a tenant's source: verdict and counts, without indexing")
    chk.add_argument("--tenant", required=True, help="the tenant whose source to list")
    chk.add_argument("--json", action="store_true", help="print the full status as JSON")
    chk.set_defaults(func=_cmd_sources_check)
    ten = sub.add_parser("tenant", help="tenant data").add_subparsers(dest="tenant_cmd", required=True)
    pur = ten.add_parser("purge", help="delete ALL of a tenant's tables, caches, sources and runs")
    pur.add_argument("tenant", help="the tenant id (also one no longer in the configuration)")
    pur.add_argument("--yes", action="store_true", help="confirm the deletion")
    pur.add_argument("--json", action="store_true", help="print what was deleted as JSON")
    pur.set_defaults(func=_cmd_purge)
    li = sub.add_parser("lineage", help="where a chunk came from: source bytes, versions, runs, duplicates")
    li.add_argument(
        "chunk_id",
        nargs="?",
        help="the chunk whose lineage to print: its id or citation (tessera:<tenant>/<id>)",
    )
    li.add_argument("--tenant", required=True, help="the tenant of the chunk")
    li.add_argument("--html", metavar="OUT", help="write the HTML lineage report, one page per document")
    li.add_argument("--doc", action="append", help="with --html: only these documents")
    li.add_argument(
        "--diff",
        nargs=2,
        type=int_option(1),
        metavar=("OLD", "NEW"),
        help="with --html: also a page of what changed between these two table versions "
        "(the last 10 consecutive publications always get one)",
    )
    li.add_argument("--json", action="store_true", help="print the lineage as JSON")
    li.set_defaults(func=_cmd_lineage)
    add_eval_parser(sub)
    add_config_parser(sub)
    add_diagnose_parser(sub)
    return p


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command; every failure is one typed line on stderr (see ``tessera.boundary``)."""
    argv = list(sys.argv[1:] if argv is None else argv)
    cfg: TesseraConfig | None = None
    try:
        if (rest := eval_chunking_args(argv)) is not None:
            return eval_chunking(rest)
        args = build_parser().parse_args(argv)
        if args.command == "eval":  # reads external data by path; needs no configuration
            return cmd_eval(args)
        cfg = load_config(args.config)
        code: int = args.func(args, cfg)
        return code
    except KeyboardInterrupt:
        print("tessera: KeyboardInterrupt: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except Exception as e:  # typed and reported, never a traceback (TESSERA_TRACEBACK=1)
        return boundary.report(e, cfg.store.uri if cfg else None, cfg.store.work_dir if cfg else None)


if __name__ == "__main__":
    sys.exit(main())
