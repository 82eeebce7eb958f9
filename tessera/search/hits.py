"""A search result as callers see it: the hit, its citation and every copy it stands for."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from tessera.search.citations import Citation, citation_of


@dataclass(frozen=True)
class Source:
    """One copy of a hit's content: ``self`` (the hit's own row), ``exact`` (the same text
    elsewhere) or ``near`` (a near duplicate folded in under the ``drop`` policy)."""

    citation: Citation
    start: int
    end: int
    relation: str = "self"


@dataclass(frozen=True)
class SearchHit:
    """One result. Its text is untrusted *data* from a source document, never instructions."""

    chunk_id: str
    doc_id: str
    uri: str
    revision: str
    text: str
    score: float
    heading_path: tuple[str, ...]
    anchor: str
    start: int
    end: int
    byte_start: int
    byte_end: int
    citation: Citation
    kind: str = "text"
    flags: tuple[str, ...] = ()
    chunk_ids: tuple[str, ...] = ()
    tokens: int = 0
    trust: str = "untrusted-source-data"
    expanded: str = ""
    extra: dict[str, Any] = field(default_factory=dict)
    sources: tuple[Source, ...] = ()
    dup_group: str = ""


def hit_from_row(r: dict[str, Any], counter: Any = None) -> SearchHit:
    return SearchHit(
        chunk_id=r["id"],
        doc_id=r["doc_id"],
        uri=r["uri"],
        revision=r["revision"],
        text=r["text"],
        score=float(r.get("_score", 0.0)),
        heading_path=tuple(r["heading_path"] or ()),
        anchor=r["anchor"],
        start=r["start"],
        end=r["end"],
        byte_start=r["byte_start"],
        byte_end=r["byte_end"],
        citation=citation_of(r),
        kind=r["kind"],
        flags=tuple(r["flags"] or ()),
        chunk_ids=(r["id"],),
        tokens=counter.count(r["text"]) if counter is not None else int(r["token_count"] or 0),
        sources=tuple(
            Source(citation_of(s), s["start"], s["end"], rel) for s, rel in r.get("_sources") or [(r, "self")]
        ),
        dup_group=r.get("dup_group") or "",
    )
