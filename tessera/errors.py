"""Typed errors. Every failure the pipeline can report has its own class."""

from __future__ import annotations


class TesseraError(Exception):
    """Base class of every error Tessera raises on purpose."""


class ConfigError(TesseraError):
    """The configuration file or an argument is invalid; the message names the key."""

    def __init__(self, key: str, message: str) -> None:
        self.key = key
        super().__init__(f"{key}: {message}")


class SourceError(TesseraError):
    """A source listing failed or could not be proven complete. Nothing is deleted."""


class PolicyError(ConfigError, SourceError):
    """An access policy file is empty, unreadable, invalid or gone while documents still rely
    on it. The listing fails (fail closed): no document is widened to the tenant default.
    ``key`` names the file, or the bad rule inside it (``_access.yaml.documents[2].readers``)."""


class DocumentError(TesseraError):
    """One document could not be read or parsed; it is quarantined, its old chunks kept."""

    def __init__(self, doc_id: str, reason: str, message: str) -> None:
        self.doc_id = doc_id
        self.reason = reason
        super().__init__(f"{doc_id}: {reason}: {message}")


class ChunkingError(TesseraError):
    """A chunker could not honour its contract (budget, offsets)."""


class EmbeddingError(TesseraError):
    """Embedding failed after its retries, or produced invalid vectors."""


class TransientEmbeddingError(EmbeddingError):
    """A failure worth retrying (timeouts, overload)."""


class PermanentEmbeddingError(EmbeddingError):
    """A failure that retrying cannot fix (bad input, auth); never retried."""


class ModelIdentityError(TesseraError):
    """Weights do not match the configured hash, or a query uses another model version."""


class PublishError(TesseraError):
    """Staging, checks or the commit failed; the previous version stays current."""


class MassDeletionBlocked(PublishError):
    """The run would delete more of a tenant than its guard allows; needs an explicit override."""

    def __init__(self, message: str, plan: dict[str, object]) -> None:
        self.plan = plan
        super().__init__(message)


class TenantLockedError(PublishError):
    """Another run holds this tenant's writer lock."""


class StalePlanError(PublishError):
    """Another writer changed the live table after this run planned; nothing was published.

    Retryable by re-planning: ``run_tenant`` lists and diffs again, a Dagster run fails cleanly."""


class RestoreBlocked(PublishError):
    """A restore targets an unpublished version or would remove more than the guard allows."""

    def __init__(self, message: str, plan: dict[str, object]) -> None:
        self.plan = plan
        super().__init__(message)


class AccessDenied(TesseraError):
    """The principal may not see the requested item. Rendered as 'not found' to callers."""


class EvaluationError(TesseraError):
    """Evaluation input is unusable (missing corpus, a reference that does not match its text)."""


class QualityGateBlocked(PublishError):
    """Golden-question recall@k of the new version fell more than the tenant allows."""

    def __init__(self, message: str, result: dict[str, object]) -> None:
        self.result = result
        super().__init__(message)


class AuditError(TesseraError):
    """The retrieval audit log could not be appended; the retrieval fails (no unaudited reads)."""


class ActivityJournalError(TesseraError):
    """The activity journal (index changes made outside Dagster, for Dagster to show) could not
    be written or read. The change itself stands; Dagster does not see it until a later line."""


class InvalidArgument(ConfigError, ValueError):
    """A command-line option, request parameter or option value is out of range or unparsable
    (``--k 0``, ``--as-of yesterday``, ``--expand sideways``); ``key`` names the parameter.
    The CLI exits 2 (bad usage); it is a ``ValueError`` too, so library callers keep working."""


class SourceBlobMissing(TesseraError):
    """The stored source bytes of a revision are missing or unreadable, so a citation's slice
    cannot be shown; the message names the revision (and the citation)."""


class StoreUnavailable(TesseraError):
    """The store (``store.uri``) could not be read or written: a damaged, missing or foreign
    path. Raised at the CLI boundary for storage failures no narrower error explains."""


class InternalError(TesseraError):
    """An unexpected exception at a boundary (a bug): reported with its type and where it was
    raised, never with its message, which might carry document text."""


class TransientStoreError(PublishError):
    """The object store kept answering 503 / SlowDown or timing out through every retry of a
    commit: nothing was published, and the run can be retried as it is (retryable)."""


class StoreDamaged(PublishError):
    """A tenant's table is damaged, or went back behind its publications (a deleted manifest,
    missing index or data files): searches and runs refuse it rather than answer with wrong or
    silently older rows. ``table`` names it, ``last_good`` the last good publication
    (``"run-r1 (version 9)"``, empty when none is known); ``tessera doctor`` diagnoses the
    tenant and repairs what is safe."""

    def __init__(self, table: str, problem: str, last_good: str = "", tenant: str = "") -> None:
        self.table, self.problem, self.last_good, self.tenant = table, problem, last_good, tenant
        fix = f"tessera doctor --tenant {tenant}" if tenant else "tessera doctor --tenant <tenant>"
        super().__init__(
            f"table {table} is damaged: {problem}; last good publication: {last_good or 'none'}; run '{fix}'"
        )


class UnsafeStoreError(ConfigError):
    """The object store ignores conditional PUTs: concurrent writers would lose commits."""

    def __init__(self, uri: str, detail: str) -> None:
        super().__init__(
            "store.uri",
            f"{uri} does not honour conditional PUT (If-None-Match: *): {detail}. Concurrent writers "
            "would silently lose commits, so runs are refused. Use a store with conditional writes "
            f"(AWS S3, recent MinIO), or set TESSERA_SINGLE_WRITER=1 once you guarantee that one "
            "process at a time writes this store",
        )
