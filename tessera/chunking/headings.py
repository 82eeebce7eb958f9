"""Headings of a document: the parser's, else headings inferred from plain-text conventions.

Parsers report headings as ``Block(kind="heading")``. A document whose parser found none
(plain text, chat exports, wiki dumps saved as text or Markdown) may still mark them with
the MediaWiki convention, a line ``= Title =``, ``== Section ==`` (also the spaced form
``= = Section = =`` of WikiText dumps): as many ``=`` on both sides as the level. Such
lines become headings, so that chunks get a breadcrumb of the article and section they
belong to. The text is not changed; only its structure is read.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.types import Block, ParsedDocument

_WIKI = re.compile(
    r"^[ \t]*(=(?:[ \t]?=){0,5})[ \t]*([^=\n][^\n]{0,150}?)[ \t]*(=(?:[ \t]?=){0,5})[ \t]*$", re.M
)


def wiki_headings(text: str) -> list[Block]:
    """``= Title =`` lines with the same number of ``=`` on both sides, as heading blocks."""
    out: list[Block] = []
    for m in _WIKI.finditer(text):
        opening, title, closing = m.group(1), m.group(2).strip(), m.group(3)
        level = opening.count("=")
        if title and level == closing.count("="):
            out.append(Block("heading", m.start(), m.end(), level=level, title=title))
    return out


def document_headings(parsed: ParsedDocument) -> list[Block]:
    """The parser's headings; if there are none, MediaWiki-style heading lines."""
    found = [b for b in parsed.blocks if b.kind == "heading"]
    return found if found else wiki_headings(parsed.text)


@dataclass(frozen=True)
class Section:
    start: int
    end: int
    path: tuple[str, ...]
    anchor: str


def slugify(title: str) -> str:
    slug = re.sub(r"[^\w\- ]", "", title.lower()).strip().replace(" ", "-")
    return slug or "section"


def sections(parsed: ParsedDocument) -> list[Section]:
    """Sections from each heading to the next, with the heading path (breadcrumb).

    A heading with no text of its own before a subheading (``# Guide`` directly followed by
    ``## Install``) is not a section alone: its line joins the subsection, whose path
    already names it. A chunk of a bare heading would match queries on the title alone and
    crowd out the chunks that answer them.
    """
    text = parsed.text
    heads = document_headings(parsed)
    out: list[Section] = []
    if not heads or heads[0].start > 0:
        out.append(Section(0, heads[0].start if heads else len(text), (), ""))
    stack: list[tuple[int, str]] = []
    seen: dict[str, int] = {}
    for k, h in enumerate(heads):
        while stack and stack[-1][0] >= h.level:
            stack.pop()
        stack.append((h.level, h.title))
        slug = slugify(h.title)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        end = heads[k + 1].start if k + 1 < len(heads) else len(text)
        out.append(Section(h.start, end, tuple(t for _, t in stack), slug if n == 0 else f"{slug}-{n}"))
    ends = {h.start: h.end for h in heads}
    merged: list[Section] = []
    for sec in reversed([s for s in out if s.start < s.end]):
        nxt = merged[-1] if merged else None
        bare = sec.start in ends and not text[ends[sec.start] : sec.end].strip()
        if (
            bare
            and nxt is not None
            and nxt.path[: len(sec.path)] == sec.path
            and len(nxt.path) > len(sec.path)
        ):
            merged[-1] = Section(sec.start, nxt.end, nxt.path, nxt.anchor)
        else:
            merged.append(sec)
    return merged[::-1]
