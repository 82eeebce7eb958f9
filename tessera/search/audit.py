"""The append-only retrieval audit log: ``{store.work_dir}/audit/retrievals.jsonl``.

One JSON line per retrieval (HTTP ``/search`` and ``/chunks/{id}``, CLI ``search``, ``show``
and ``lineage <chunk>``): UTC time, surface, action, tenant, user, mode and k, the sha256 and
length of the query (never its text), the returned chunk ids and their count. A show that
finds nothing records ``not_found`` and the sha256 of the requested id, never an id of another
tenant. No chunk text, snippet or source byte is ever written.

Each line is one ``os.write`` on a descriptor opened with ``O_APPEND`` (mode 0o600, symlinks
refused; :mod:`tessera.store.appendlog`), so concurrent writers, threads or processes, never
interleave. The line is written
before any result is handed out; if it cannot be written the retrieval fails with
:class:`~tessera.errors.AuditError` and returns nothing (no unaudited retrieval).
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Literal

from tessera.errors import AuditError
from tessera.store.appendlog import append_line

log = logging.getLogger(__name__)

Surface = Literal["api", "cli", "python"]
Action = Literal["search", "show", "lineage", "diagnose", "failures"]
Outcome = Literal["ok", "not_found", "unknown_principal"]


def sha256_text(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def audit_path(work_dir: Path) -> Path:
    return Path(work_dir) / "audit" / "retrievals.jsonl"


@dataclass(frozen=True)
class AuditRecord:
    """One retrieval. Identifiers and digests only: nothing here may carry document content."""

    surface: Surface
    action: Action
    tenant: str | None
    user: str | None
    outcome: Outcome = "ok"
    chunk_ids: tuple[str, ...] = ()
    mode: str | None = None
    k: int | None = None
    query_sha256: str | None = None
    query_len: int | None = None
    requested_sha256: str | None = None
    subject: str | None = None
    """Whom an operator's request was about (``/ops/diagnose``: the user diagnosed for)."""
    ts: str = field(default_factory=lambda: datetime.now(UTC).isoformat(timespec="microseconds"))

    def line(self) -> bytes:
        data = asdict(self)
        data["chunk_ids"] = list(self.chunk_ids)
        data["count"] = len(self.chunk_ids)
        if data["subject"] is None:  # only operator requests name a subject
            del data["subject"]
        return (json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=True) + "\n").encode()


def search_record(
    surface: Surface,
    tenant: str | None,
    user: str | None,
    query: str,
    mode: str,
    k: int,
    chunk_ids: Sequence[str],
    known: bool = True,
) -> AuditRecord:
    return AuditRecord(
        surface=surface, action="search", tenant=tenant, user=user,
        outcome="ok" if known else "unknown_principal", chunk_ids=tuple(chunk_ids), mode=mode, k=k,
        query_sha256=sha256_text(query), query_len=len(query),
    )  # fmt: skip


def fetch_record(
    surface: Surface,
    action: Action,
    tenant: str | None,
    user: str | None,
    requested: str,
    chunk_id: str | None,
) -> AuditRecord:
    """A show or lineage lookup; ``chunk_id`` None: not found (only the request's digest is kept)."""
    if chunk_id is None:
        return AuditRecord(
            surface=surface, action=action, tenant=tenant, user=user, outcome="not_found",
            requested_sha256=sha256_text(requested),
        )  # fmt: skip
    return AuditRecord(surface=surface, action=action, tenant=tenant, user=user, chunk_ids=(chunk_id,))


class AuditLog:
    """Appends :class:`AuditRecord` lines to ``{work_dir}/audit/retrievals.jsonl``."""

    def __init__(self, work_dir: Path) -> None:
        self.path = audit_path(work_dir)

    def append(self, record: AuditRecord) -> None:
        """Write the record as one line, or raise AuditError: then the retrieval must fail."""
        try:
            append_line(self.path, record.line())
        except OSError as e:
            raise self._error(e) from e

    def _error(self, e: OSError) -> AuditError:
        reason = e.strerror or str(e) or type(e).__name__
        log.error("cannot append to the retrieval audit log %s: %s", self.path, reason)
        return AuditError(f"cannot append to the retrieval audit log {self.path}: {reason}")


def operator_record(
    action: Action, tenant: str, operator: str, subject: str | None = None, question: str | None = None,
    requested: str | None = None, count: int | None = None,
) -> AuditRecord:  # fmt: skip
    """An operator endpoint's request (``/ops/diagnose``, ``/ops/failures``): who asked, about
    whom, the digests of the question and of the document asked about, and how many records
    were answered; never their content."""
    return AuditRecord(
        surface="api", action=action, tenant=tenant, user=operator, subject=subject, k=count,
        query_sha256=None if question is None else sha256_text(question),
        query_len=None if question is None else len(question),
        requested_sha256=None if requested is None else sha256_text(requested),
    )  # fmt: skip
