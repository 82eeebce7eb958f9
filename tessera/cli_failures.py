"""``tessera failures`` and ``tessera retry``: the tenant's failed-document queue, and one
document run again.

``failures`` lists the queue (:mod:`tessera.store.failures`): a table, or ``--json``; an empty
queue is one explicit line. ``retry`` runs one document through the normal run path (list,
parse, chunk, embed, gate, publish, verify: ``run_tenant``) with the run restricted to it
(``RunContext.doc_scope``): nothing else is parsed, published or deleted. A document the
source does not list is ``DocumentNotListed`` (exit 1). A retry that fails again counts an
attempt, keeps the document's old chunks and exits 1 (``DocumentError``); one that succeeds
clears the document from the queue.
"""

from __future__ import annotations

import argparse
import json
import uuid
from datetime import UTC, datetime
from typing import Any

from tessera.boundary import run_id_option
from tessera.cli_output import print_table
from tessera.config import TesseraConfig
from tessera.errors import DocumentError
from tessera.store.failures import FailureRecord

MESSAGE_WIDTH = 60


def _when(t: datetime) -> str:
    return t.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S")


def short_message(r: FailureRecord, width: int = MESSAGE_WIDTH) -> str:
    """The message without the ``<doc>: <reason>: `` prefix the table already shows, one line,
    cut to ``width`` characters."""
    text = r.message.removeprefix(f"{r.doc_id}: {r.reason}: ")
    text = " ".join(text.split())
    return text if len(text) <= width else text[: width - 3] + "..."


def failure_rows(records: list[FailureRecord]) -> list[list[object]]:
    return [
        [r.doc_id, r.stage, r.reason, r.attempts, _when(r.first_failed_at), _when(r.last_failed_at),
         short_message(r)]
        for r in records
    ]  # fmt: skip


def _cmd_failures(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.store.db import connect
    from tessera.store.failures import FailureQueue

    cfg.tenant(args.tenant)  # an unknown tenant is a ConfigError naming it
    records = FailureQueue(connect(cfg.store.uri), args.tenant).records()
    if args.json:
        out = {"tenant": args.tenant, "count": len(records), "failures": [r.as_json() for r in records]}
        print(json.dumps(out, indent=2, ensure_ascii=False))
        return 0
    if not records:
        print(f"tenant {args.tenant}: no failed documents")
        return 0
    header = ("doc", "stage", "reason", "attempts", "first failure (UTC)", "last failure (UTC)", "message")
    print_table(header, failure_rows(records))
    n = len(records)
    hint = f"'tessera retry --tenant {args.tenant} DOC' runs one again"
    print(f"({n} failed document{'' if n == 1 else 's'}; {hint})")
    return 0


def retry_outcome(data: dict[str, Any], doc_id: str, run_id: str, record: FailureRecord | None) -> str:
    """``failed`` (quarantined again), ``published`` (parsed or relabelled and published) or
    ``up-to-date`` (the live rows already match the source: nothing to do)."""
    if record is not None and record.last_run_id == run_id:
        return "failed"
    if doc_id in data["to_parse"] or doc_id in data.get("relabel", []):
        return "published"
    return "up-to-date"


def _cmd_retry(args: argparse.Namespace, cfg: TesseraConfig) -> int:
    from tessera.cli_journal import journal, published
    from tessera.cli_model import make_embedders
    from tessera.cli_run import _run_one
    from tessera.pipeline.run import RunContext
    from tessera.sources.registry import connector_for
    from tessera.store.failures import FailureQueue

    tenant = cfg.tenant(args.tenant)
    embedder, *serving = make_embedders(cfg, args.fake_embedder)
    run_id = args.run_id or f"retry-{datetime.now(UTC):%Y%m%dT%H%M%S}-{uuid.uuid4().hex[:8]}"
    doc = args.doc
    # A retry reads the revision cache but never writes it: a refused retry (a document the
    # source does not list) leaves every file as it was, and a one-document run has little to add.
    connector = connector_for(tenant, cfg.store.work_dir, read_only=True)
    rc = RunContext(
        cfg,
        args.tenant,
        run_id,
        embedder,
        serving=tuple(serving),
        doc_scope=frozenset([doc]),
        connector=connector,
    )
    out = _run_one(rc)
    journal(cfg, published("retry", args.tenant, run_id, out.get("publish")))
    record = FailureQueue(rc.db, args.tenant).get(doc)
    status = retry_outcome(rc.listing()[0], doc, run_id, record)
    pub = out.get("publish", {})
    info = {
        "tenant": args.tenant,
        "doc_id": doc,
        "run_id": run_id,
        "status": status,
        "version": pub.get("version"),
        "inserted": pub.get("inserted", 0),
        "updated": pub.get("updated", 0),
        "deleted": pub.get("deleted", 0),
        "failure": record.as_json() if record is not None else None,
    }
    if args.json:
        print(json.dumps(info, indent=2, ensure_ascii=False))
    elif status == "published":
        print(
            f"retried {args.tenant}/{doc}: published as version {info['version']} "
            f"(chunks +{info['inserted']}/~{info['updated']}/-{info['deleted']}); not in the failure queue"
        )
    elif status == "up-to-date":
        print(f"retried {args.tenant}/{doc}: already up to date, nothing to publish; not queued")
    if status == "failed":
        assert record is not None
        raise DocumentError(
            doc,
            record.reason,
            f"failed again at {record.stage} (attempt {record.attempts}); "
            "its previously published chunks, if any, stay live",
        )
    return 0


def add_parsers(sub: Any) -> None:
    f = sub.add_parser("failures", help="a tenant's failed-document queue: stage, reason, attempts")
    f.add_argument("--tenant", required=True, help="the tenant whose failed documents to list")
    f.add_argument("--json", action="store_true", help="print the queue as JSON")
    f.set_defaults(func=_cmd_failures)
    r = sub.add_parser("retry", help="run one document again (nothing else is published or deleted)")
    r.add_argument("doc", metavar="DOC", help="the document id (as 'tessera failures' lists it)")
    r.add_argument("--tenant", required=True, help="the tenant of the document")
    r.add_argument("--run-id", type=run_id_option, help="the run id (default retry-<time>-<random>)")
    r.add_argument(
        "--fake-embedder",
        action="store_true",
        default=argparse.SUPPRESS,  # keeps `tessera --fake-embedder retry ...` working
        help="use the deterministic hash embedder instead of the model",
    )
    r.add_argument("--json", action="store_true", help="print the outcome as JSON")
    r.set_defaults(func=_cmd_retry)
