"""``tessera status``: per tenant, what is live and how stale it is.

A report, so it exits 0 whatever the verdict (``stale``, ``source-unavailable``); an unknown
tenant is a ConfigError. Read-only: see :mod:`tessera.pipeline.freshness`.
"""

from __future__ import annotations

import argparse
import json
from typing import Any

from tessera.cli_model import make_embedders
from tessera.cli_output import print_table
from tessera.config import TesseraConfig
from tessera.pipeline.freshness import KINDS, Freshness, check_freshness


def duration(seconds: float) -> str:
    """``0s``, ``42s``, ``5m03s``, ``2h07m``, ``3d04h``: a lag or bound at a glance."""
    s = int(seconds)
    if s < 60:
        return f"{s}s"
    if s < 3600:
        return f"{s // 60}m{s % 60:02d}s"
    if s < 86_400:
        return f"{s // 3600}h{s % 3600 // 60:02d}m"
    return f"{s // 86_400}d{s % 86_400 // 3600:02d}h"


def pending_cell(f: Freshness) -> str:
    """``0``, or the total with its kinds: ``3 (1 new, 2 changed)``; ``?`` when not listed."""
    if f.error:
        return "?"  # not listed: unknown, not none
    counts = f.counts
    total = sum(counts.values())
    if not total:
        return "0"
    return f"{total} (" + ", ".join(f"{counts[k]} {k}" for k in KINDS if counts[k]) + ")"


def tenant_status(cfg: TesseraConfig, tenant: str, fake: bool) -> tuple[Freshness, str | None]:
    """The tenant's freshness for the configured model, and its active model (None: none yet)."""
    from tessera.store.active import ActivePointer
    from tessera.store.db import connect

    db = connect(cfg.store.uri)
    fresh = check_freshness(cfg, tenant, make_embedders(cfg, fake)[0].identity, db=db)
    active = ActivePointer(db, tenant).get()
    return fresh, active.model_key if active else None


def cmd_status(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    tenants = [args.tenant] if args.tenant else sorted(cfg.tenants)
    for tenant in tenants:  # an unknown tenant is a ConfigError before anything is listed
        cfg.tenant(tenant)
    report = [tenant_status(cfg, t, args.fake_embedder) for t in tenants]
    if args.json:
        print(json.dumps([{**f.as_dict(), "active_model": a} for f, a in report], indent=2))
        return 0
    rows: list[list[Any]] = []
    for f, active in report:
        when = f.published_at.strftime("%Y-%m-%d %H:%M:%S") if f.published_at else "never"
        version = "-" if f.published_version is None else str(f.published_version)
        lag = "?" if f.error else duration(f.lag_seconds)
        rows.append(
            [f.tenant, f.verdict.value, lag, duration(f.max_lag_seconds), pending_cell(f), version,
             when, f.live_documents, f.live_chunks, active or "none"]
        )  # fmt: skip
    header = ("tenant", "freshness", "lag", "bound", "pending", "version", "published (UTC)", "docs",
              "chunks", "active model")  # fmt: skip
    print_table(header, rows)
    for f, _ in report:
        if f.error:
            print(f"{f.tenant}: source unavailable: {f.error}")
    return 0


def add_parser(sub: Any) -> None:
    st = sub.add_parser(
        "status", help="per tenant: live version, documents, active model and index freshness (read-only)"
    )
    st.add_argument("--tenant", help="one tenant (default: every configured tenant)")
    st.add_argument("--json", action="store_true", help="print the status as JSON (one object per tenant)")
    st.set_defaults(func=cmd_status)
