"""``tessera doctor --tenant T [--repair] [--yes] [--json]``: diagnose a tenant's store.

It checks the chunk table of the model serving the tenant (the active one, else the
configured one), its embedding cache, the publications log and the active pointer, and
prints one verdict per check (:mod:`tessera.store.doctor`). ``--repair`` repairs what is safe
under the tenant's writer lock (rebuild indexes, re-create deleted tags, record an untagged
live version); re-pointing the table to its last good publication also needs ``--yes``.

Exit code 0 when every check is ok (after ``--repair``: once repaired), 1 otherwise.
"""

from __future__ import annotations

import argparse
import json
import uuid
from collections.abc import Callable
from typing import Any

from tessera.config import TesseraConfig
from tessera.errors import StoreDamaged

KeyOf = Callable[[argparse.Namespace, TesseraConfig], str]


def _print(report: Any) -> None:
    good = report.last_good.label() if report.last_good else "none"
    print(f"tenant {report.tenant}  table {report.table}  live version {report.live_version}")
    print(f"last good publication: {good}")
    width = max(len(c.name) for c in report.checks)
    for c in report.checks:
        fix = f"  [repair: {c.repair}]" if c.verdict != "ok" and c.repair else ""
        where = "" if c.table == report.table else f"{c.table}: "
        print(f"  {c.name:<{width}}  {c.verdict:<10}  {where}{c.detail}{fix}")
    print(f"verdict: {report.verdict}")


def _cmd_doctor(args: argparse.Namespace, cfg: TesseraConfig, key_of: KeyOf) -> int:
    from tessera.store.active import ActivePointer
    from tessera.store.db import connect, is_storage_error
    from tessera.store.doctor import diagnose

    cfg.tenant(args.tenant)
    db = connect(cfg.store.uri, fresh=True)  # what is stored, not what this process cached
    try:
        active = ActivePointer(db, args.tenant).get()
    except Exception as e:  # an unreadable pointer is reported by the 'active' check
        if not isinstance(e, StoreDamaged) and not is_storage_error(e):
            raise
        active = None
    model_key = active.model_key if active else key_of(args, cfg)
    report = diagnose(db, args.tenant, model_key)
    out: dict[str, Any] = {"before": report.as_dict()}
    if args.repair and report.verdict != "ok":
        from tessera.store.doctor_repair import repair
        from tessera.store.lock import tenant_lock

        with tenant_lock(cfg.store.work_dir / "_locks", args.tenant):  # no run commits in between
            report = diagnose(db, args.tenant, model_key)  # again, under the lock
            outcome = repair(db, report, args.run_id or f"doctor-{uuid.uuid4().hex[:8]}", confirm=args.yes)
        out.update(repaired=list(outcome.done), skipped=list(outcome.skipped), after=outcome.report.as_dict())
        final = outcome.report
    else:
        final = report
    if args.json:
        print(json.dumps({**out, "verdict": final.verdict}, indent=2, default=str))
    else:
        _print(report)  # the diagnosis the repairs acted on
        for line in out.get("repaired", []):
            print(f"repaired: {line}")
        for line in out.get("skipped", []):
            print(f"not repaired: {line}")
        if out.get("repaired"):
            print("after repair:")
            _print(final)
    return 0 if final.verdict == "ok" else 1


def add_parser(sub: Any, key_of: KeyOf) -> None:
    dr = sub.add_parser("doctor", help="check a tenant's tables; --repair fixes what is safe")
    dr.add_argument("--tenant", required=True, help="the tenant whose store to check")
    dr.add_argument("--repair", action="store_true", help="repair what is safe (indexes, tags, records)")
    dr.add_argument(
        "--yes", action="store_true", help="with --repair: also re-point the table to its last good one"
    )
    dr.add_argument("--json", action="store_true", help="print the findings as JSON")
    dr.add_argument("--run-id", help="the run id the repairs are logged under (default doctor-<random>)")
    dr.set_defaults(func=lambda args, cfg: _cmd_doctor(args, cfg, key_of))
