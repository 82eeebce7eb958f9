"""The findings, stage by stage, and the verdict: the first stage that lost the document.

A stage is ``lost`` only when it alone explains the miss from there on: a document that is no
longer listed but still has live rows is a ``warning`` at listing (the next run removes it), as
is a new revision that fails to parse while the old rows stay live.
"""

from __future__ import annotations

from dataclasses import dataclass

from tessera.diagnose.report import (
    RETRIEVED,
    STAGES,
    AccessEvidence,
    ChunkCover,
    DateEvidence,
    Finding,
    ListingEvidence,
    ModelEvidence,
    ModeRank,
    ParseEvidence,
)
from tessera.search.principal import FLAGGED


@dataclass(frozen=True)
class Evidence:
    listing: ListingEvidence
    parse: ParseEvidence
    rows: int
    covers: tuple[ChunkCover, ...]
    whole_document: bool
    hybrid: ModeRank | None
    access: AccessEvidence
    dates: DateEvidence
    model: ModelEvidence
    k: int


def _listing(e: Evidence) -> Finding:
    ls = e.listing
    if not ls.listed:
        status = "warning" if e.covers else "lost"
        still = f"; {e.rows} rows of it stay live until the next run" if e.rows else ""
        return Finding("listing", status, f"not listed: {ls.reason}{still}")
    if not ls.indexed_revisions:  # the parse says why when it fails
        status = "lost" if e.parse.parsed else "warning"
        return Finding("listing", status, f"listed at revision {ls.source_revision[:12]} but not indexed")
    if ls.indexed_revisions != (ls.source_revision,):
        old = ", ".join(r[:12] for r in ls.indexed_revisions)
        detail = f"the index holds revision {old}, the source {ls.source_revision[:12]}"
        if not e.covers and e.parse.parsed and e.parse.in_parse is not False:
            return Finding("listing", "lost", f"{detail}: the target is only in the unpublished revision")
        return Finding("listing", "warning", detail)
    return Finding("listing", "ok", f"listed; revision {ls.source_revision[:12]} is the indexed one")


def _parse(e: Evidence) -> Finding:
    p = e.parse
    if not e.listing.listed or not e.listing.source_revision:
        return Finding("parse", "skipped", "no current source bytes to parse")
    if not p.parsed:
        queued = f"; queued as {p.queued_reason} ({p.queued_attempts} attempts)" if p.queued_reason else ""
        status = "warning" if e.covers else "lost"
        return Finding("parse", status, f"quarantined: {p.failure_reason}: {p.failure_message}{queued}")
    if p.in_parse is False:
        where = (
            "the format has no text source to compare"
            if p.in_source is None
            else ("it is in the source bytes" if p.in_source else "it is not in the source either")
        )
        stale = e.listing.indexed_revisions not in ((), (e.listing.source_revision,))
        status = "warning" if stale and e.covers else "lost"
        return Finding("parse", status, f"the target is not in the parsed text ({where})")
    if p.in_parse is None:
        return Finding("parse", "ok", f"parsed by {p.parser}")
    return Finding("parse", "ok", f"parsed by {p.parser}; target at chars [{p.target_start}, {p.target_end})")


def _chunking(e: Evidence) -> Finding:
    if not e.rows:
        return Finding("chunking", "skipped", "no live rows")
    if not e.covers:
        return Finding("chunking", "lost", f"none of the document's {e.rows} live chunks covers the target")
    n = len(e.covers)
    if not e.whole_document and not any(c.whole for c in e.covers):
        return Finding("chunking", "lost", f"the target is cut across {n} chunks; none holds it whole")
    usable = [c for c in e.covers if not set(c.flags) & set(FLAGGED)]
    if not usable:
        flags = sorted({f for c in e.covers for f in c.flags if f in FLAGGED})
        return Finding("chunking", "lost", f"every covering chunk is flagged {flags}: search leaves them out")
    return Finding(
        "chunking", "ok", f"{n} covering chunk(s)" + ("" if e.whole_document else ", one holds it whole")
    )


def _embedding(e: Evidence) -> Finding:
    bad = [c.chunk_id[:12] for c in e.covers if not c.embedded]
    if len(bad) == len(e.covers):
        return Finding("embedding", "lost", "no covering chunk has a valid vector")
    detail = f"embedded in table {e.model.table}"
    return Finding("embedding", "warning" if bad else "ok", detail + (f"; no vector: {bad}" if bad else ""))


def _ranking(e: Evidence) -> Finding:
    h = e.hybrid
    if e.model.table != e.model.serving:
        return Finding("ranking", "skipped", f"no loaded model embeds questions for {e.model.table}")
    if h is None or h.visible_rank is None:
        depth = h.depth if h is not None else 0
        return Finding("ranking", "lost", f"not within the top {depth} for this question (hybrid)")
    everyone = f"; rank {h.rank} among all the tenant's rows" if h.rank is not None else ""
    if h.visible_rank > e.k:
        return Finding(
            "ranking",
            "lost",
            f"hybrid rank {h.visible_rank} > k={e.k}: needs k >= {h.visible_rank}{everyone}",
        )
    return Finding("ranking", "ok", f"hybrid rank {h.visible_rank} within k={e.k}{everyone}")


def _authorization(e: Evidence) -> Finding:
    a = e.access
    if not a.known:
        return Finding("authorization", "lost", f"user {a.user!r} is not in the tenant's directory")
    if not a.readable:
        readers = sorted({r for c in e.covers for r in c.readers})
        groups = sorted({g for c in e.covers for g in c.groups})
        return Finding(
            "authorization", "lost",
            f"{a.user} (groups {list(a.groups)}) is not a reader {readers} nor in groups {groups}; "
            f"decided by {a.rule}",
        )  # fmt: skip
    return Finding("authorization", "ok", f"readable through {a.matched}; decided by {a.rule}")


def _dates(e: Evidence) -> Finding:
    if not e.dates.in_effect:
        spans = sorted({f"[{c.effective_from.date()}, {c.effective_to.date()})" for c in e.covers})
        return Finding(
            "effective_date",
            "lost",
            f"not in effect at {e.dates.as_of.isoformat(timespec='seconds')}: {spans}",
        )
    return Finding("effective_date", "ok", f"in effect at {e.dates.as_of.isoformat(timespec='seconds')}")


def _model(e: Evidence) -> Finding:
    m = e.model
    if m.active and m.active != m.serving:
        return Finding("model", "lost", f"the tenant is served by {m.active}; loaded: {m.serving}")
    stray = [v for v in m.row_versions if v != m.table]
    if stray:
        return Finding("model", "lost", f"rows of model {stray} in the table of {m.table}")
    return Finding("model", "ok", f"rows, table and serving model agree: {m.serving}")


_CHECKS = (_listing, _parse, _chunking, _embedding, _ranking, _authorization, _dates, _model)


def judge(e: Evidence) -> tuple[tuple[Finding, ...], str, str]:
    """Findings for every stage, the first lost stage (or ``retrieved``) and its sentence;
    after a lost stage the later ones that depend on rows are still reported when they can be."""
    findings: list[Finding] = []
    for check in _CHECKS:
        stage = STAGES[len(findings)]
        if stage not in ("listing", "parse", "model") and not e.covers and stage != "chunking":
            findings.append(Finding(stage, "skipped", "no covering chunk"))
            continue
        findings.append(check(e))
    lost = next((f for f in findings if f.status == "lost"), None)
    if lost is None:
        rank = e.hybrid.visible_rank if e.hybrid else None
        return tuple(findings), RETRIEVED, f"retrieved at rank {rank} within k={e.k}"
    return tuple(findings), lost.stage, f"lost at {lost.stage}: {lost.detail}"
