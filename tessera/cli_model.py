"""Operations commands: ``tessera model status|rollback`` and ``tessera maintain``.

Status shows, per tenant, the active model (and since when, by which run), the configured
model when it is not active yet (a backfill in progress) with its progress in documents,
and the models whose tables are retained for rollback.
"""

from __future__ import annotations

import argparse
import json
from datetime import UTC, datetime
from typing import Any

from tessera.boundary import int_option, run_id_option
from tessera.cli_journal import journal
from tessera.cli_output import add_format_options, print_table, wants_json
from tessera.config import TesseraConfig
from tessera.embedding.base import Embedder
from tessera.store.activity import IndexActivity


def make_embedders(cfg: TesseraConfig, fake: bool) -> list[Embedder]:
    """The configured model first, then ``embedding.previous``; ``--fake-embedder``: the hash one."""
    from tessera.embedding.factory import configured_embedders

    return configured_embedders(cfg, fake)


def model_status(cfg: TesseraConfig, tenant: str, embedders: list[Embedder]) -> dict[str, Any]:
    from tessera.store.active import ActivePointer
    from tessera.store.db import chunks_table_name, connect, open_table
    from tessera.store.index import document_revisions

    db = connect(cfg.store.uri)
    active = ActivePointer(db, tenant).get()
    configured = embedders[0].identity.key

    def docs(key: str) -> int | None:
        table = open_table(db, chunks_table_name(tenant, key))
        return None if table is None else len(document_revisions(table))

    keys = {e.identity.key for e in embedders} | ({active.model_key} if active else set())
    retained = sorted(k for k in keys if docs(k) is not None)
    out: dict[str, Any] = {"tenant": tenant, "configured": configured, "retained": retained}
    if active is not None:
        since = datetime.fromtimestamp(active.at_us / 1e6, UTC).isoformat(timespec="seconds")
        out["active"] = {
            "model": active.model_key,
            "since": since,
            "run_id": active.run_id,
            "reason": active.reason,
        }
        out["previous"] = active.previous_key
    else:
        out["active"] = None
    if active is None or active.model_key != configured:
        built, served = docs(configured), docs(active.model_key) if active else None
        out["pending"] = {"model": configured, "documents_built": built or 0, "documents_served": served}
    return out


def cmd_model(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    embedders = make_embedders(cfg, args.fake_embedder)
    if args.model_cmd == "rollback":
        from tessera.store.active import ActivePointer
        from tessera.store.db import connect

        cfg.tenant(args.tenant)
        run_id = args.run_id or "cli-rollback"
        moved = ActivePointer(connect(cfg.store.uri), args.tenant).rollback(run_id)
        detail = f"active model {moved.model_key} (previous {moved.previous_key})"
        journal(cfg, IndexActivity("rollback", args.tenant, run_id, detail=detail))
        if wants_json(args):
            print(
                json.dumps({"tenant": args.tenant, "active": moved.model_key, "previous": moved.previous_key})
            )
        else:
            print(f"{args.tenant}: active {moved.model_key} (previous {moved.previous_key})")
        return 0
    tenants = [args.tenant] if args.tenant else sorted(cfg.tenants)
    for tenant in tenants:  # an unknown tenant is a ConfigError, never an empty status
        cfg.tenant(tenant)
    report = [model_status(cfg, t, embedders) for t in tenants]
    if args.json:
        print(json.dumps(report, indent=2))
        return 0
    for r in report:
        active = r["active"]["model"] if r["active"] else "none"
        line = f"{r['tenant']}: active {active}"
        if "pending" in r:
            p = r["pending"]
            served = p["documents_served"] or "?"
            line += f"; pending {p['model']} ({p['documents_built']}/{served} documents built)"
        print(line + f"; retained {', '.join(r['retained']) or 'none'}")
    return 0


def maintained(tenant: str, run_id: str, reports: list[Any]) -> IndexActivity:
    """The journal event of one tenant's maintenance (its tables' versions before and after)."""
    before, after = (sum(getattr(r, k) for r in reports) for k in ("versions_before", "versions_after"))
    compacted = sum(1 for r in reports if r.compacted)
    detail = f"{len(reports)} tables, versions {before} -> {after}, {compacted} compacted"
    return IndexActivity("maintain", tenant, run_id, detail=detail)


def cmd_maintain(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from dataclasses import asdict

    from tessera.store.db import connect
    from tessera.store.maintenance import maintain_tenant

    db = connect(cfg.store.uri)
    run_id = f"cli-maintain-{datetime.now(UTC):%Y%m%dT%H%M%S}"
    out = []
    for tenant in [args.tenant] if args.tenant else sorted(cfg.tenants):
        cfg.tenant(tenant)
        keep = (args.keep_versions, args.keep_run_tags)
        reports = maintain_tenant(db, cfg.store.work_dir, tenant, None, *keep)
        out += [{"tenant": tenant, **asdict(r)} for r in reports]
        journal(cfg, maintained(tenant, run_id, reports))
    if wants_json(args):
        print(json.dumps(out, indent=2))
        return 0
    rows = [
        [r["tenant"], r["table"], r["versions_before"], r["versions_after"], len(r["kept"]),
         len(r["run_tags_deleted"]), "yes" if r["compacted"] else "no"]
        for r in out
    ]  # fmt: skip
    print_table(
        ("tenant", "table", "versions before", "after", "kept", "run tags deleted", "compacted"), rows
    )
    return 0


def add_parser(sub: Any) -> None:
    mt = sub.add_parser("maintain", help="compact tables and prune old versions (tags and the last N kept)")
    mt.add_argument("--tenant", help="the tenant to maintain (default: every tenant)")
    mt.add_argument(
        "--keep-versions",
        type=int_option(1),
        default=10,
        help="untagged versions kept per table (default 10)",
    )
    mt.add_argument(
        "--keep-run-tags", type=int_option(0), default=20, help="run tags kept per table (default 20)"
    )
    add_format_options(mt)
    mt.set_defaults(func=cmd_maintain)
    m = sub.add_parser("model", help="active model per tenant: status, rollback")
    msub = m.add_subparsers(dest="model_cmd", required=True)
    st = msub.add_parser("status", help="active and pending model per tenant, with progress")
    st.add_argument("--tenant", help="one tenant (default: every tenant)")
    st.add_argument("--json", action="store_true", help="print the status as JSON")
    rb = msub.add_parser("rollback", help="make the previous model active again (its table must be retained)")
    rb.add_argument("--tenant", required=True, help="the tenant whose model to roll back")
    rb.add_argument("--run-id", type=run_id_option, help="the run id the rollback is recorded under")
    add_format_options(rb)
    m.set_defaults(func=cmd_model)
