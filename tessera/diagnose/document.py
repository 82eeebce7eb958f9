"""Stages 1 and 2 of a diagnosis: is the document listed, and does its parse hold the target.

The listing is the tenant's connector's own (the same call a run makes, without the revision
cache, so a diagnosis writes nothing). The parse re-parses the current source bytes through
the normal dispatch, sandbox included, with the pipeline's text-bytes check first, so a
quarantine reason is the one a run would record.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable
from dataclasses import dataclass

from tessera.config import TesseraConfig
from tessera.errors import DocumentError, TesseraError
from tessera.parsing.base import parser_for_path
from tessera.parsing.dispatch import parse_document
from tessera.parsing.validity import check_text_bytes
from tessera.sources.registry import connector_for
from tessera.types import ParsedDocument, SourceDocument

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class Target:
    """What should answer the question. ``expect``: text the operator expects; ``byte_range``:
    a half-open range of the current source bytes; ``chunk``: a cited chunk's
    ``(revision, start, end, text)``. None of them: the whole document."""

    expect: str | None = None
    byte_range: tuple[int, int] | None = None
    chunk: tuple[str, int, int, str] | None = None

    @property
    def whole_document(self) -> bool:
        return self.expect is None and self.byte_range is None and self.chunk is None


@dataclass(frozen=True)
class Listed:
    doc: SourceDocument | None
    reason: str
    raw: bytes | None


@dataclass(frozen=True)
class Parsed:
    parsed: ParsedDocument | None
    reason: str
    message: str
    text: str
    """The target text (empty for a whole-document target)."""
    span: tuple[int, int] | None
    """The target's char range in the parsed text (the whole text for a whole-document target)."""
    in_source: bool | None


def pattern(text: str) -> re.Pattern[str] | None:
    """The words of ``text`` with any whitespace between them, case-insensitive."""
    words = text.split()
    return re.compile(r"\s+".join(map(re.escape, words)), re.IGNORECASE) if words else None


def find_text(haystack: str, needle: str) -> tuple[int, int] | None:
    p = pattern(needle)
    m = p.search(haystack) if p is not None else None
    return None if m is None else (m.start(), m.end())


def _not_listed_reason(doc_id: str, failed: dict[str, str], skipped: dict[str, str]) -> str:
    if doc_id in failed:
        return f"the listing could not read it ({failed[doc_id]})"
    if doc_id in skipped:
        return f"skipped by the listing ({skipped[doc_id]})"
    if parser_for_path(doc_id) is None:
        return "excluded: no parser handles this file type"
    if any(part.startswith(".") for part in doc_id.split("/")):
        return "excluded: a hidden path (a name starting with '.')"
    return "not in the source"


def list_document(cfg: TesseraConfig, tenant: str, doc_id: str) -> Listed:
    """The document as today's listing sees it, with its current bytes; a failed listing is
    reported as the reason (it is evidence, not an error of the diagnosis)."""
    # the run's revision cache, read only: unchanged files are not hashed again, nothing is written
    connector = connector_for(cfg.tenant(tenant), cfg.store.work_dir, read_only=True)
    try:
        listing = connector.list()
    except TesseraError as e:
        log.warning("diagnose: the listing of %s failed: %s", tenant, e)
        return Listed(None, f"the listing failed: {type(e).__name__}: {e}", None)
    doc = next((d for d in listing.documents if d.doc_id == doc_id), None)
    if doc is None:
        failed = {f.doc_id: f"{f.reason}: {f.message}" for f in listing.failed}
        return Listed(None, _not_listed_reason(doc_id, failed, dict(listing.skipped)), None)
    try:
        raw = connector.read(doc)
    except TesseraError as e:
        log.warning("diagnose: cannot read %s: %s", doc_id, e)
        return Listed(doc, f"listed, but its bytes cannot be read: {type(e).__name__}: {e}", None)
    return Listed(doc, "", raw)


def parse_current(doc: SourceDocument, raw: bytes) -> tuple[ParsedDocument | None, str, str]:
    """``(parsed, "", "")`` or ``(None, reason, message)`` exactly as the parse step decides."""
    try:
        if doc.content_type.startswith("text/"):
            check_text_bytes(doc.doc_id, raw)
        return parse_document(doc, raw), "", ""
    except DocumentError as e:
        prefix = f"{e.doc_id}: {e.reason}: "
        return None, e.reason, str(e).removeprefix(prefix)
    except Exception as e:  # the parse step quarantines a parser bug as parser_crash; so do we
        log.warning("diagnose: parser crash on %s: %r", doc.doc_id, e)
        return None, "parser_crash", f"{type(e).__name__} in the parser"


def _chars_of_bytes(parsed: ParsedDocument, start: int, end: int) -> tuple[int, int] | None:
    """The chars of the parsed text whose source bytes overlap ``[start, end)``; None when the
    parse kept nothing of them (markup, hidden or pruned content)."""
    text, omap = parsed.text, parsed.offsets
    n = len(text)

    def first(lo: int, test: Callable[[int], bool]) -> int:  # the least i in [lo, n] passing
        hi = n
        while lo < hi:
            mid = (lo + hi) // 2
            if test(mid):
                hi = mid
            else:
                lo = mid + 1
        return lo

    cs = first(0, lambda i: omap.byte_start(text, i + 1) > start)
    ce = first(cs, lambda i: omap.byte_start(text, i) >= end)
    return (cs, ce) if cs < ce else None


def locate(doc: SourceDocument, raw: bytes, target: Target) -> Parsed:
    """Parse the current bytes and find the target in the parsed text."""
    parsed, reason, message = parse_current(doc, raw)
    text_format = doc.content_type.startswith("text/")
    source = raw.decode("utf-8", "replace") if text_format else ""
    if target.byte_range is not None:
        b0, b1 = target.byte_range
        text = raw[b0:b1].decode("utf-8", "replace")
    elif target.chunk is not None:
        text = target.chunk[3]
    else:
        text = target.expect or ""
    in_source = (find_text(source, text) is not None) if text_format and text.strip() else None
    if target.byte_range is not None:
        in_source = True
    if parsed is None:
        return Parsed(None, reason, message, text, None, in_source)
    if target.whole_document:
        span: tuple[int, int] | None = (0, len(parsed.text)) if parsed.text else None
    elif target.byte_range is not None:
        span = _chars_of_bytes(parsed, *target.byte_range)
    elif target.chunk is not None and target.chunk[0] == doc.revision:
        span = (target.chunk[1], target.chunk[2])
    else:
        span = find_text(parsed.text, text)
    return Parsed(parsed, "", "", text, span, in_source)
