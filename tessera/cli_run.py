"""``tessera run``: index tenants without Dagster, each one isolated from the others.

Every selected tenant is attempted whatever another one did; each prints one JSON line (``ok``
and its summary, or ``ok: false`` and the typed error), and the command exits 1 if any failed.
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
from tessera.cli_model import make_embedders
from tessera.config import TesseraConfig


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
    """Every selected tenant is attempted, whatever another one did: one JSON line each
    (``ok`` and the summary, or ``ok: false`` and the typed error), exit 1 if any failed."""
    from tessera.pipeline.run import RunContext

    tenants = list(dict.fromkeys(args.tenant or sorted(cfg.tenants)))
    for tenant in tenants:  # an unknown tenant is refused before any tenant runs
        cfg.tenant(tenant)
    embedder, *serving = make_embedders(cfg, args.fake_embedder)
    run_id = args.run_id or f"cli-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    failed: list[str] = []
    for tenant in tenants:
        try:
            allow, others = args.allow_mass_delete, tuple(serving)
            rc = RunContext(cfg, tenant, run_id, embedder, allow_mass_delete=allow, serving=others)
            line: dict[str, Any] = {"tenant": tenant, "ok": True, **_run_one(rc)}
        except Exception as e:  # reported below, typed; the next tenant still runs
            err = boundary.typed(e, cfg.store.uri, cfg.store.work_dir)
            failed.append(tenant)
            print(f"tessera: {type(err).__name__}: tenant {tenant}: {err}", file=sys.stderr)
            line = {"tenant": tenant, "ok": False, "error": {"type": type(err).__name__, "message": str(err)}}
        print(json.dumps(line, default=str), flush=True)
    return EXIT_ERROR if failed else 0


def add_parser(sub: Any) -> None:
    r = sub.add_parser("run", help="index tenants without Dagster (the Dagster job is `make run`)")
    r.add_argument("--tenant", action="append")
    r.add_argument("--run-id", type=run_id_option)
    r.add_argument(
        "--allow-mass-delete", action="store_true", help="override the mass-deletion guard for this run"
    )
    r.set_defaults(func=cmd_run)
