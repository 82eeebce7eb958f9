"""``tessera restore``: make an earlier publication current again, safely.

Publications (run tags, operator tags, logged versions) by default; an internal version needs
``--allow-untagged``; a restore beyond the tenant's deletion guard needs ``--allow-mass-delete``;
``--dry-run`` prints the counts and changes nothing. It holds the tenant's writer lock, so no run
publishes in between, and a run that planned before it re-plans (fencing).
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from typing import Any

from tessera.boundary import int_option, run_id_option
from tessera.cli_journal import journal
from tessera.config import TesseraConfig
from tessera.errors import InvalidArgument, PublishError
from tessera.store.activity import IndexActivity

IndexOf = Callable[[argparse.Namespace, TesseraConfig], Any]


def _cmd_restore(args: argparse.Namespace, cfg: TesseraConfig, index_of: IndexOf) -> int:
    from tessera.store.lock import tenant_lock
    from tessera.store.restore import RestoreGuard, resolve_tag

    index = index_of(args, cfg)
    t = cfg.tenant(args.tenant)
    guard = RestoreGuard(t.max_delete_fraction, t.guard_min_documents)
    with tenant_lock(cfg.store.work_dir / "_locks", args.tenant):  # no run publishes in between
        table = index.table()
        if table is None:
            raise PublishError(f"tenant {args.tenant!r} has no published table: there is nothing to restore")
        if args.tag is not None:
            version = resolve_tag(table, args.tag)
        elif args.version is not None:
            version = args.version
        else:
            raise InvalidArgument("--version", "give --version N or --tag NAME (see 'tessera versions')")
        flags = (args.allow_untagged, args.allow_mass_delete)
        plan = index.plan_restore(version, guard, *flags)
        if args.dry_run:
            info = plan.as_dict()
            if args.json:
                print(json.dumps(info, indent=2))
            else:
                print(
                    f"restore of version {version} ({', '.join(plan.labels) or 'untagged'}) would: "
                    f"add {len(plan.added)}, remove {len(plan.removed)}, change {len(plan.changed)} "
                    f"documents ({plan.documents_live} -> {plan.documents_target}; "
                    f"rows {plan.rows_live} -> {plan.rows_target})"
                )
                for why in plan.blocked:
                    print(f"REFUSED without an override: {why}")
            return 0
        run_id = args.run_id or f"restore-{uuid.uuid4().hex[:8]}"
        result = index.restore(version, run_id, guard, *flags)
    journal(
        cfg,
        IndexActivity(
            "restore", args.tenant, run_id, version=result.version, table=index.name,
            rows=plan.rows_target, docs_changed=result.docs_changed,
            docs_removed=result.docs_removed, detail=f"restored version {version} as {result.tag}",
        ),
    )  # fmt: skip
    print(
        f"restored version {version} of {index.name} as version {result.version} ({result.tag}): "
        f"{result.docs_changed} documents changed, {result.docs_removed} removed"
    )
    return 0


def add_parser(sub: Any, index_of: IndexOf) -> None:
    rs = sub.add_parser("restore", help="republish an earlier publication as a new version")
    rs.add_argument("--tenant", required=True, help="the tenant to restore")
    target = rs.add_mutually_exclusive_group(required=True)
    target.add_argument(
        "--version", type=int_option(1), help="a publication's table version (tessera versions)"
    )
    target.add_argument("--tag", help="a run tag (run-<id>) or an operator tag")
    rs.add_argument(
        "--allow-untagged", action="store_true", help="also allow an internal version no publication names"
    )
    rs.add_argument(
        "--allow-mass-delete",
        action="store_true",
        help="allow a restore that removes more documents than the tenant's guard allows",
    )
    rs.add_argument(
        "--dry-run", action="store_true", help="print what the restore would change, change nothing"
    )
    rs.add_argument("--json", action="store_true", help="with --dry-run: the plan as JSON")
    rs.add_argument("--run-id", type=run_id_option, help="the run id the restore is recorded under")
    rs.set_defaults(func=lambda args, cfg: _cmd_restore(args, cfg, index_of))
