"""``tessera run``: index tenants without Dagster, each one isolated from the others.

Every selected tenant is attempted whatever another one did, and the command exits 1 if any
failed. With ``--json`` (the default when stdout is not a terminal) each tenant prints one JSON
line (``ok`` and its summary, or ``ok: false`` and the typed error); with ``--table`` (the
default on a terminal) one table row each: documents, changes, chunks, the published version.
A full disk or an unwritable work dir is a ``PublishError`` naming the path.
"""

from __future__ import annotations

import argparse
import json
import sys
import uuid
from datetime import UTC, datetime
from typing import Any

from tessera import boundary
from tessera.boundary import EXIT_ERROR, run_id_option
from tessera.cli_journal import journal, published
from tessera.cli_model import make_embedders
from tessera.cli_output import add_format_options, print_table, wants_json
from tessera.config import TesseraConfig
from tessera.pipeline.progress import printing_progress


def _live_version(rc: Any) -> int | None:
    try:
        table = rc.index.table()
    except Exception:  # only to say whether the version moved; the run's own error is reported
        return None
    return None if table is None else int(table.version)


def _run_one(rc: Any) -> dict[str, Any]:
    """One tenant's run; a full disk or an unwritable work dir is a ``PublishError`` naming the
    path and whether the live version moved (before the publish step, it never does)."""
    from tessera.pipeline.run import run_tenant

    before = _live_version(rc)
    try:
        return run_tenant(rc)
    except OSError as e:
        raise boundary.disk_error(e, rc.config.store.work_dir, before, _live_version(rc)) from e


def cmd_run(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    """Every selected tenant is attempted, whatever another one did: one JSON line or table row
    each (``ok`` and the summary, or ``ok: false`` and the typed error), exit 1 if any failed."""
    from tessera.pipeline.run import RunContext

    tenants = list(dict.fromkeys(args.tenant or sorted(cfg.tenants)))
    for tenant in tenants:  # an unknown tenant is refused before any tenant runs
        cfg.tenant(tenant)
    embedder, *serving = make_embedders(cfg, args.fake_embedder)
    run_id = args.run_id or f"cli-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    failed: list[str] = []
    as_json, lines = wants_json(args), []
    # the steps' counts and rates on stderr while the tenants run; stdout stays the JSON or table
    show = args.progress if args.progress is not None else sys.stderr.isatty()
    with printing_progress("stderr", show):
        for tenant in tenants:
            try:
                allow, others = args.allow_mass_delete, tuple(serving)
                rc = RunContext(cfg, tenant, run_id, embedder, allow_mass_delete=allow, serving=others)
                line: dict[str, Any] = {"tenant": tenant, "ok": True, **_run_one(rc)}
                journal(cfg, published("run", tenant, run_id, line.get("publish")))
            except Exception as e:  # reported below, typed; the next tenant still runs
                err = boundary.typed(e, cfg.store.uri, cfg.store.work_dir)
                failed.append(tenant)
                print(f"tessera: {type(err).__name__}: tenant {tenant}: {err}", file=sys.stderr)
                error = {"type": type(err).__name__, "message": str(err)}
                line = {"tenant": tenant, "ok": False, "error": error}
            if as_json:
                print(json.dumps(line, default=str), flush=True)
            lines.append(line)
    if not as_json:
        print_run_table(lines)
    return EXIT_ERROR if failed else 0


RUN_COLUMNS = (
    "tenant",
    "status",
    "documents",
    "changed",
    "removed",
    "chunks",
    "embedded",
    "version",
    "+/~/-",
)


def run_row(line: dict[str, Any]) -> list[object]:
    """One tenant's table row; a failed tenant shows its error type (the message is on stderr)."""
    if not line["ok"]:
        return [line["tenant"], f"FAILED ({line['error']['type']})", *["-"] * (len(RUN_COLUMNS) - 2)]
    listing, chunk, embed = line.get("listing", {}), line.get("chunk", {}), line.get("embed", {})
    pub = line.get("publish") or {}
    changes = f"{pub.get('inserted', 0)}/{pub.get('updated', 0)}/{pub.get('deleted', 0)}" if pub else "-"
    return [
        line["tenant"], "ok", listing.get("documents", 0), listing.get("changed", 0),
        listing.get("removed", 0), chunk.get("chunks", 0), embed.get("embedded", 0),
        pub.get("version", "unchanged") if pub.get("committed", bool(pub)) else "unchanged", changes,
    ]  # fmt: skip


def print_run_table(lines: list[dict[str, Any]]) -> None:
    print_table(RUN_COLUMNS, [run_row(x) for x in lines])
    print("(+/~/-: chunks inserted, updated, deleted by the publish; --json for the full summary)")


def add_parser(sub: Any) -> None:
    r = sub.add_parser("run", help="index tenants without Dagster (the Dagster job is `make run`)")
    r.add_argument("--tenant", action="append", help="a tenant to index (repeatable; default: every tenant)")
    r.add_argument("--run-id", type=run_id_option, help="the run id (default cli-<time>-<random>)")
    r.add_argument(
        "--allow-mass-delete", action="store_true", help="override the mass-deletion guard for this run"
    )
    r.add_argument(
        "--progress",
        action=argparse.BooleanOptionalAction,
        default=None,
        help="print each step's counts and rate on stderr (default: when stderr is a terminal)",
    )
    add_format_options(r)
    r.set_defaults(func=cmd_run)
