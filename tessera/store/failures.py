"""The failed-document queue of a tenant: one row per document that failed to list, parse or chunk.

``failures__{tenant}`` is a small LanceDB table next to the publications log, in the same store
(a local folder or ``s3://``). The publish step of a run updates it under the tenant's publish
lock once the run's publish committed (a run that fails changes nothing): the documents
quarantined in the run are upserted (``attempts`` + 1, ``first_failed_at`` kept), and every
other queued document the run covered is cleared: it was parsed and published, is up to date,
or is gone from the source. A run restricted to some documents (``tessera retry``) covers only
those. Each update is one commit that rewrites the table (it holds one row per failing
document); an update that changes nothing commits nothing.

Attempts are counted once per run id: re-executing the publish of the same run (a Dagster
retry after the worker died past the commit) does not count the failure twice.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

import pyarrow as pa

from tessera.config import validate_tenant_id
from tessera.store.db import create_or_open, open_table

STAGES = ("listing", "parse", "chunk")
MESSAGE_CHARS = 2000
"""A stored message is cut to this length (the full one is in the run's reports)."""

_SCHEMA = pa.schema(
    [
        pa.field("doc_id", pa.string(), nullable=False),
        pa.field("uri", pa.string()),
        pa.field("stage", pa.string(), nullable=False),
        pa.field("reason", pa.string(), nullable=False),
        pa.field("message", pa.string()),
        pa.field("first_failed_at_us", pa.int64(), nullable=False),
        pa.field("last_failed_at_us", pa.int64(), nullable=False),
        pa.field("attempts", pa.int64(), nullable=False),
        pa.field("last_run_id", pa.string()),
    ]
)


def failures_table_name(tenant: str) -> str:
    return f"failures__{validate_tenant_id(tenant)}"


@dataclass(frozen=True)
class Failure:
    """One document's failure in one run: the stage it failed at and the typed reason."""

    doc_id: str
    uri: str
    stage: str
    reason: str
    message: str

    def __post_init__(self) -> None:
        if self.stage not in STAGES:
            raise ValueError(f"stage must be one of {STAGES}, got {self.stage!r}")


@dataclass(frozen=True)
class FailureRecord:
    """A queued document: its latest failure, when it first and last failed, how many runs."""

    doc_id: str
    uri: str
    stage: str
    reason: str
    message: str
    first_failed_at: datetime
    last_failed_at: datetime
    attempts: int
    last_run_id: str

    def as_json(self) -> dict[str, Any]:
        out = asdict(self)
        out["first_failed_at"] = self.first_failed_at.isoformat()
        out["last_failed_at"] = self.last_failed_at.isoformat()
        return out


@dataclass(frozen=True)
class QueueUpdate:
    """What one run did to the queue: documents upserted and cleared, the table version."""

    failed: tuple[str, ...] = ()
    cleared: tuple[str, ...] = ()
    version: int | None = None
    committed: bool = False


@dataclass(frozen=True)
class FailureSummary:
    """The queue at a glance (the Dagster asset's metadata): how many, the commonest reasons."""

    count: int
    top_reasons: tuple[tuple[str, int], ...]


def _us(t: datetime) -> int:
    return int(t.timestamp() * 1_000_000)


def _time(us: int) -> datetime:
    return datetime.fromtimestamp(us / 1_000_000, UTC)


def _record(row: dict[str, Any]) -> FailureRecord:
    return FailureRecord(
        doc_id=row["doc_id"],
        uri=row["uri"] or "",
        stage=row["stage"],
        reason=row["reason"],
        message=row["message"] or "",
        first_failed_at=_time(row["first_failed_at_us"]),
        last_failed_at=_time(row["last_failed_at_us"]),
        attempts=int(row["attempts"]),
        last_run_id=row["last_run_id"] or "",
    )


def _row(r: FailureRecord) -> dict[str, Any]:
    return {
        "doc_id": r.doc_id,
        "uri": r.uri,
        "stage": r.stage,
        "reason": r.reason,
        "message": r.message,
        "first_failed_at_us": _us(r.first_failed_at),
        "last_failed_at_us": _us(r.last_failed_at),
        "attempts": r.attempts,
        "last_run_id": r.last_run_id,
    }


def upserted(old: FailureRecord | None, f: Failure, run_id: str, now: datetime) -> FailureRecord:
    """``old`` failed again (or ``f`` is a new failure): attempts + 1 unless this run counted it."""
    if old is not None and old.last_run_id == run_id:
        return old
    if old is not None:
        attempts, first = old.attempts + 1, old.first_failed_at
    else:
        attempts, first = 1, now
    message = f.message[:MESSAGE_CHARS]
    return FailureRecord(f.doc_id, f.uri, f.stage, f.reason, message, first, now, attempts, run_id)


class FailureQueue:
    """The tenant's failed documents, read and updated as a whole (it is small)."""

    def __init__(self, db: Any, tenant: str) -> None:
        self.db, self.tenant = db, tenant
        self.name = failures_table_name(tenant)

    def records(self) -> list[FailureRecord]:
        """Every queued document, by doc id."""
        table = open_table(self.db, self.name)
        rows = [] if table is None else table.to_arrow().to_pylist()
        return sorted((_record(r) for r in rows), key=lambda r: r.doc_id)

    def get(self, doc_id: str) -> FailureRecord | None:
        return next((r for r in self.records() if r.doc_id == doc_id), None)

    def summary(self, top: int = 3) -> FailureSummary:
        records = self.records()
        reasons = Counter(f"{r.stage}:{r.reason}" for r in records)
        return FailureSummary(len(records), tuple(sorted(reasons.items(), key=lambda x: (-x[1], x[0]))[:top]))

    def apply(
        self, failed: Sequence[Failure], covered: Iterable[str] | None, run_id: str, now: datetime
    ) -> QueueUpdate:
        """Upsert ``failed``, clear the other queued documents in ``covered`` (None: every
        document), in one commit; the caller holds the tenant's publish lock."""
        scope = None if covered is None else set(covered)
        failed = [f for f in failed if scope is None or f.doc_id in scope]
        old = {r.doc_id: r for r in self.records()}
        new = {d: r for d, r in old.items() if scope is not None and d not in scope}
        for f in failed:
            new[f.doc_id] = upserted(old.get(f.doc_id), f, run_id, now)
        cleared = tuple(sorted(set(old) - set(new)))
        update = QueueUpdate(tuple(sorted(f.doc_id for f in failed)), cleared)
        if new == old:
            return update
        data = pa.Table.from_pylist([_row(new[d]) for d in sorted(new)], schema=_SCHEMA)
        table = create_or_open(self.db, self.name, data, _SCHEMA)
        if table is not None:
            table.add(data, mode="overwrite")
        else:
            table = open_table(self.db, self.name)
        version = None if table is None else int(table.version)
        return QueueUpdate(update.failed, cleared, version, True)
