"""The diagnosis of one missed retrieval: typed evidence per stage, and the verdict.

Stages, in pipeline order (``STAGES``): listing, parse, chunking, embedding, ranking,
authorization, effective date, model version. Each stage gets a :class:`Finding` with a status:
``ok``, ``warning`` (something is off but the document is still reachable: a stale revision, a
quarantined new revision whose old rows stay live), ``lost`` (this stage is where it was lost)
or ``skipped`` (an earlier stage leaves nothing to check). The verdict names the first ``lost``
stage, or ``retrieved`` with the rank. Report text carries ids, offsets, ranks, scores, ACL
names and dates, never chunk text: only the operator's own ``--expect`` text (or the source
slice of ``--range``, cut to :data:`EXCERPT_CHARS`) is echoed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from functools import lru_cache
from typing import Any

from pydantic import TypeAdapter

STAGES = (
    "listing", "parse", "chunking", "embedding", "ranking", "authorization", "effective_date", "model",
)  # fmt: skip
STATUSES = ("ok", "warning", "lost", "skipped")
RETRIEVED = "retrieved"
EXCERPT_CHARS = 200


@dataclass(frozen=True)
class Finding:
    stage: str
    status: str
    detail: str

    def __post_init__(self) -> None:
        if self.stage not in STAGES or self.status not in STATUSES:
            raise ValueError(f"bad finding {self.stage!r}/{self.status!r}")


@dataclass(frozen=True)
class ListingEvidence:
    listed: bool
    reason: str
    """Why it is not listed (empty when it is)."""
    source_revision: str
    indexed_revisions: tuple[str, ...]
    acl_source: str
    """The policy that decides its ACL in today's listing (``default``, ``hr/_access.yaml``)."""


@dataclass(frozen=True)
class ParseEvidence:
    parsed: bool
    parser: str
    failure_reason: str
    failure_message: str
    queued_reason: str
    """The tenant's failure queue entry (``stage:reason``), empty when none."""
    queued_attempts: int
    warnings: tuple[str, ...]
    target: str
    """What should answer the question: the ``--expect`` text or the range's source slice (cut)."""
    target_start: int
    target_end: int
    """The target's char range in the parsed text; -1 when not found or no target."""
    in_parse: bool | None
    in_source: bool | None
    """Whether the target's words appear verbatim in the raw source (None: not a text format)."""


@dataclass(frozen=True)
class ChunkCover:
    chunk_id: str
    position: int
    start: int
    end: int
    byte_start: int
    byte_end: int
    token_count: int
    flags: tuple[str, ...]
    whole: bool
    """The chunk holds the whole target (or the target is the whole document)."""
    embedded: bool
    model_version: str
    readers: tuple[str, ...]
    groups: tuple[str, ...]
    acl_source: str
    effective_from: datetime
    effective_to: datetime


@dataclass(frozen=True)
class ChunkEvidence:
    doc_chunks: int
    revision: str
    covering: tuple[ChunkCover, ...]


@dataclass(frozen=True)
class ModeRank:
    """Rank (1-based, after duplicate folding) of the best covering chunk in one mode.

    ``rank``: among every row of the tenant (no ACL, no dates: the operator's evidence);
    ``visible_rank``: among the rows the principal may read plus the covering rows (where it
    would rank if access and dates let it through); None: not within ``depth``."""

    mode: str
    rank: int | None
    score: float | None
    chunk_id: str
    visible_rank: int | None
    visible_score: float | None
    depth: int


@dataclass(frozen=True)
class AccessEvidence:
    user: str
    known: bool
    groups: tuple[str, ...]
    readable: tuple[str, ...]
    """Covering chunk ids the principal may read."""
    matched: str
    """What grants access: ``reader <user>`` or ``group <g>``; empty when nothing does."""
    rule: str
    """The policy that decided the rows' ACL (``acl_source``); ``default`` is the tenant default."""


@dataclass(frozen=True)
class DateEvidence:
    as_of: datetime
    in_effect: tuple[str, ...]
    """Covering chunk ids in effect at ``as_of``: of those the principal reads, or of all of
    them when it reads none."""


@dataclass(frozen=True)
class ModelEvidence:
    serving: str
    """The model this diagnosis embedded the question with (the one serving the tenant)."""
    active: str
    """The tenant's active pointer (empty before the first cutover)."""
    table: str
    row_versions: tuple[str, ...]


@dataclass(frozen=True)
class Diagnosis:
    tenant: str
    user: str
    question: str
    doc_id: str
    k: int
    verdict_stage: str
    """The first stage that lost the document, or ``retrieved``."""
    verdict: str
    rank: int | None
    """The principal's hybrid rank when retrieved."""
    findings: tuple[Finding, ...]
    listing: ListingEvidence
    parse: ParseEvidence
    chunks: ChunkEvidence
    ranking: tuple[ModeRank, ...]
    access: AccessEvidence
    dates: DateEvidence
    model: ModelEvidence

    def as_json(self) -> dict[str, Any]:
        """The JSON form (``GET /ops/diagnose`` declares and answers the same schema)."""
        out: dict[str, Any] = _ADAPTER().dump_python(self, mode="json")
        return out


@lru_cache(maxsize=1)
def _ADAPTER() -> TypeAdapter[Diagnosis]:
    return TypeAdapter(Diagnosis)
