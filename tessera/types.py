"""Core data types shared by every stage.

Offsets are half-open ``[start, end)`` indexes into ``ParsedDocument.text`` (the normalized
text, Python ``str`` code points). Source coordinates are byte ranges into the raw source
bytes for text formats, page + bbox for PDF (``PageSpan``), or zip part + element +
character range for Office documents (``PartSpan``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import cached_property
from pathlib import Path
from typing import TYPE_CHECKING, Any

from tessera.offsets import OffsetMap

if TYPE_CHECKING:
    from _hashlib import HASH

    from tessera.layout import PageLayout, PartLayout

NEVER = datetime(9999, 12, 31, tzinfo=UTC)
ALWAYS = datetime(1970, 1, 1, tzinfo=UTC)


def sha256_hex(data: bytes | str) -> str:
    if isinstance(data, str):
        data = data.encode("utf-8")
    return hashlib.sha256(data).hexdigest()


def file_sha256(path: Path) -> str:
    """sha256 of a file, read in 1 MiB blocks."""
    h = hashlib.sha256()
    with path.open("rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


_json_str = json.encoder.encode_basestring
"""A JSON string literal as ``json.dumps(..., ensure_ascii=False)`` writes it (its C encoder)."""


canonical_json = json.JSONEncoder(sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode
"""Canonical JSON (sorted keys, no whitespace), what :func:`canonical_hash` hashes."""


def canonical_hash(value: Any) -> str:
    """sha256 of canonical JSON (sorted keys, no whitespace)."""
    return sha256_hex(canonical_json(value))


@dataclass(frozen=True)
class SourceDocument:
    """One document of a tenant's listing.

    ``revision`` is the sha256 of the raw bytes; parsing never changes it. ``meta_hash``
    covers everything filterable (ACL, dates), so an ACL-only change is detected without
    touching the text.
    """

    tenant: str
    doc_id: str
    uri: str
    revision: str
    content_type: str
    readers: tuple[str, ...]
    groups: tuple[str, ...]
    effective_from: datetime = ALWAYS
    effective_to: datetime = NEVER
    modified_at: datetime = ALWAYS
    size: int = 0
    acl_source: str = ""
    """Which policy decided the ACL and dates: a policy file's path in the source
    (``hr/_access.yaml``), ``default``, or the connector's own (``s3-metadata``). Provenance,
    not filterable, so not part of ``meta_hash``."""

    @cached_property  # a listing asks several times per document; the fields are frozen
    def meta_hash(self) -> str:
        """:func:`canonical_hash` of the filterable fields (readers, groups, dates, uri, content
        type). Written out key by key in sorted order with the escaping ``json.dumps`` uses, so
        the bytes, and every stored hash, are the same; a tenant's listing computes one per
        document. The ``uri`` comes last, and everything before it is shared by the documents
        of one policy: the hash of that prefix is taken once (:func:`_meta_prefix`) and each
        document hashes only its ``uri`` on (3 microseconds a document, against 7 for the
        whole text; the digest is the same)."""
        h = _meta_prefix(self.content_type, self.effective_from, self.effective_to, self.groups, self.readers)
        h.update(f"{_json_str(self.uri)}}}".encode())
        return h.hexdigest()


_PREFIXES: dict[tuple[object, ...], HASH] = {}
_KEEP_PREFIXES = 4096
"""Distinct ``meta_hash`` prefixes remembered (a policy's documents share one); past this many
the memo starts over."""


def _meta_prefix(
    content_type: str, start: datetime, end: datetime, groups: tuple[str, ...], readers: tuple[str, ...]
) -> HASH:
    """A copy of the sha256 state of the ``meta_hash`` text up to its ``uri`` value. Dates that
    are the same instant at other UTC offsets are equal but written apart, so the offsets are
    part of the key."""
    key = (content_type, start, start.utcoffset(), end, end.utcoffset(), groups, readers)
    h = _PREFIXES.get(key)
    if h is None:
        s = _json_str
        text = (
            f'{{"content_type":{s(content_type)},'
            f'"effective_from":{s(start.isoformat())},'
            f'"effective_to":{s(end.isoformat())},'
            f'"groups":[{",".join(map(s, groups))}],'
            f'"readers":[{",".join(map(s, readers))}],'
            '"uri":'
        )
        h = hashlib.sha256(text.encode("utf-8"))
        if len(_PREFIXES) >= _KEEP_PREFIXES:
            _PREFIXES.clear()
        _PREFIXES[key] = h
    return h.copy()


@dataclass(frozen=True)
class Block:
    """A structural block of the normalized text (heading, paragraph, fence, table, ...)."""

    kind: str
    start: int
    end: int
    level: int = 0
    info: str = ""
    title: str = ""


@dataclass(frozen=True)
class PageSpan:
    """Where a chunk lies on one PDF page: 1-based page and union bbox (x0, y0, x1, y1)."""

    page: int
    bbox: tuple[float, float, float, float]


@dataclass(frozen=True)
class PartSpan:
    """Where a piece of a chunk lies in an Office document (a zip container of XML parts).

    ``part`` is the zip part name (``word/document.xml``, ``ppt/slides/slide3.xml``,
    ``xl/worksheets/sheet1.xml``, ``xl/workbook.xml`` for a sheet's name); ``locator`` names
    one element of it: ``p12`` (DOCX: the 13th ``w:p`` of the part in document order),
    ``sp4/p0`` (PPTX: paragraph 0 of the shape with id 4; ``sp7/r1c2/p0`` in a table cell),
    ``B7`` (XLSX: a cell) or ``sheet2`` (XLSX: the 2nd sheet's name). ``[start, end)`` is a
    code-point range of that element's text (:mod:`tessera.parsing.office_locate` defines it).
    ``lead`` and ``tail`` are the separators the parser put before (and, for a chunk's last
    piece, after) the piece: whitespace, table syntax (``| ``, ``|---|``), a list item's
    ``- ``, the backslash before a cell's ``|``; never a letter or digit. So a chunk's text
    is exactly ``"".join(s.lead + element_text(s)[s.start:s.end] + s.tail for s in parts)``.
    """

    part: str
    locator: str
    start: int
    end: int
    lead: str = ""
    tail: str = ""


@dataclass(frozen=True)
class TrustReport:
    """What a parser kept and dropped that a reader would not see (see ``tessera.parsing.trust``).

    ``hidden_spans``: half-open ranges of the normalized text that were kept but are hidden
    from a reader (Markdown: HTML comments, hidden inline HTML); chunks overlapping one are
    flagged ``hidden_text``. ``hidden_dropped``: hidden elements or spans the parser left out
    of the text (HTML hidden elements in the main content, PDF hidden spans);
    ``instructions_dropped``: how many of those read like instructions to a model.
    """

    hidden_spans: tuple[tuple[int, int], ...] = ()
    hidden_dropped: int = 0
    instructions_dropped: int = 0


@dataclass(frozen=True)
class ParsedDocument:
    """Normalized text plus structure plus the map back to source coordinates."""

    doc_id: str
    text: str
    blocks: tuple[Block, ...]
    offsets: OffsetMap
    parser: str
    parser_version: str
    warnings: tuple[str, ...] = ()
    layout: PageLayout | None = None
    """Page map for paginated formats (PDF); None for text formats."""
    structure: PartLayout | None = None
    """Part map for Office documents (DOCX, PPTX, XLSX); None for every other format."""
    trust: TrustReport = field(default_factory=TrustReport)
    """Hidden content kept (ranges) and dropped (counts)."""


@dataclass(frozen=True)
class Chunk:
    """A retrievable unit of a document.

    Offset contract: ``parsed.text[start:end] == text`` (half-open, code points of the
    normalized text), and ``source_bytes[byte_start:byte_end]`` is the exact slice of the
    raw source the chunk came from (``offsets.span(start, end)``). For PDF ``pages`` carries
    the page numbers and union bboxes; its byte range is ``(-1, -1)``. For Office documents
    (DOCX, PPTX, XLSX) ``parts`` carries the structural locations (:class:`PartSpan`: zip
    part, element, character range, separators), which give ``text`` exactly; its byte
    range is ``(-1, -1)`` too.

    ``embedding_text`` is what the model sees (breadcrumb or context + text); ``token_count``
    is measured on it with the model's own tokenizer, special tokens included, and never
    exceeds the model's ``max_seq_length``. ``text`` is kept apart for citation.

    ``id`` is deterministic: sha256 over tenant, doc id, revision, range, chunking config
    hash and model identity hash (see ``tessera.chunking.identity``); identical text at two
    offsets keeps two ids. ``parent_id`` names the enclosing heading section; ``prev_id`` /
    ``next_id`` the neighbours in document order.
    """

    id: str
    tenant: str
    doc_id: str
    revision: str
    start: int
    end: int
    text: str
    embedding_text: str
    byte_start: int
    byte_end: int
    heading_path: tuple[str, ...]
    anchor: str
    position: int
    parent_id: str
    prev_id: str
    next_id: str
    token_count: int
    kind: str
    flags: tuple[str, ...]
    chunking_config_hash: str
    chunker_version: str
    parser_version: str
    tokenizer_version: str
    pages: tuple[PageSpan, ...] = field(default=())
    parts: tuple[PartSpan, ...] = field(default=())

    @property
    def checksum(self) -> str:
        """sha256 over the text, the embedding text and the offsets."""
        return canonical_hash([self.text, self.embedding_text, self.start, self.end])
