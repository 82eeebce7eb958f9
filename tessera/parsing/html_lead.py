"""The top of the article: what sits above its first paragraph and is not its text.

After boilerplate pruning (:mod:`html_content`), the kept container is walked in document
order up to its first prose block (a block whose own inline text reads as prose,
:func:`~tessera.parsing.html_stats.compute_stats`), a ``<pre>``, ``<table>`` or ``<blockquote>``, or past
:data:`LEAD_CHARS` of text. Ahead of that point:

- with ``ContentParams.title_repeat`` (off by default: the heading is the root of the chunks'
  heading breadcrumbs), a heading (``h1``-``h3``) that repeats the page's title (``<title>``,
  ``og:title``; the site's name there does not matter) is dropped: Readability-style golds
  keep the title apart from the text (:func:`repeats_title`);
- a dateline or byline is dropped: a short block (at most :data:`DATELINE_CHARS`, no heading
  in it) holding a ``<time>``, an ``itemprop`` of a date or an author, or a class or id word
  of one (:data:`DATE_WORDS`, a whole ``-``-part: ``article-dateline``, ``date_published``;
  not ``update-notes``). A short block that reads as prose (it would end the walk as the first
  paragraph) is a dateline too when such marks inside it hold half its text (``30 April 2015
  at 07:19 (updated 07:38)``: two ``<time>`` in a line), not a sentence that mentions a date.

A heading that is not the title (a subtitle, a section's name), a short line without such
markup ("Posted by ... on ...") and everything from the first paragraph on stay. No
site-specific rules.
"""

from __future__ import annotations

import html
import re
from collections import Counter

from tessera.parsing.budget import Deadline
from tessera.parsing.html_stats import BLOCK, compute_stats
from tessera.parsing.html_text import words
from tessera.parsing.html_tree import Node

LEAD_CHARS = 600
"""Chars of text after which the walk stops looking for the article's first paragraph."""
DATELINE_CHARS = 120
"""The longest block (non-space chars) that counts as a dateline or byline."""
TITLE_SHARE = 0.75
"""The share of a heading's token chars that must occur in the title for it to repeat it
(Readability.js's ``_headerDuplicatesTitle`` uses the same similarity)."""
TITLE_MIN_CHARS = 10
"""A heading shorter than this (``News``) does not count as the title, whatever it matches."""
DATE_WORDS = words(
    "date dates dateline datetime timestamp published pubdate posted byline bylines author authors"
)
"""Class or id parts of a dateline or byline."""
DATE_PROPS = words("datepublished datemodified datecreated dateline author creator")
"""``itemprop`` tokens of a dateline or byline."""
MARK_SHARE = 0.5
"""A short block that reads as prose is a dateline when its marks (``<time>``, a date or author
``itemprop`` or class) hold this share of its text (set by hand)."""
SERIES = 2
"""A dateline whose class is on this many elements heads each item of a series (the author
line of every post of a thread): it stays (set by hand, checked on both development sets)."""
TITLE_HEADINGS = frozenset(("h1", "h2", "h3"))
_STOP = frozenset(("pre", "table", "blockquote"))
_TOKEN = re.compile(r"[^\W_]+")
_PART = re.compile(r"[-_\s]+")
_TITLE = re.compile(r"<title\b[^>]*>(.*?)</title\s*>", re.I | re.S)
_META = re.compile(r"<meta\b[^>]*>", re.I)
_META_TITLE = re.compile(r"""(?:property|name)\s*=\s*["']?(?:og|twitter):title["'\s/>]""", re.I)
_CONTENT = re.compile(r"""content\s*=\s*(?:"([^"]*)"|'([^']*)')""", re.I)


def page_titles(src: str, end: int) -> tuple[str, ...]:
    """The page's ``<title>`` and ``og:``/``twitter:title`` found in ``src[:end]`` (the head)."""
    head = src[:end]
    out: list[str] = []
    m = _TITLE.search(head)
    if m:
        out.append(html.unescape(m.group(1)))
    for meta in _META.finditer(head):
        tag = meta.group(0)
        if _META_TITLE.search(tag):
            c = _CONTENT.search(tag)
            if c:
                out.append(html.unescape(c.group(1) if c.group(1) is not None else c.group(2)))
    return tuple(t for t in out if t.strip())


def repeats_title(heading: str, titles: tuple[str, ...]) -> bool:
    """``heading`` is the page's title: most of its token chars occur among a title's tokens."""
    tokens = _TOKEN.findall(heading.casefold())
    size = sum(len(t) for t in tokens)
    if size < TITLE_MIN_CHARS:
        return False
    for title in titles:
        have = set(_TOKEN.findall(title.casefold()))
        if sum(len(t) for t in tokens if t in have) >= TITLE_SHARE * size:
            return True
    return False


def prune_lead(
    container: Node,
    src: str,
    lead_prose: int,
    title_repeat: bool = False,
    counts: Counter[str] | None = None,
    deadline: Deadline | None = None,
) -> int:
    """Drop the datelines (and, with ``title_repeat``, the title heading) above the article's
    first paragraph (see the module doc); how many elements were dropped."""
    compute_stats(container, src, deadline)  # what pruning kept
    if container.good < lead_prose:
        return 0  # not an article: the name and the dates above a product or a listing are its content
    titles = page_titles(src, container.start or len(src)) if title_repeat else ()
    dropped = 0
    seen = 0
    stack = [c for c in reversed(container.children) if isinstance(c, Node) and not c.drop]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()
        kids = [c for c in node.children if isinstance(c, Node) and not c.drop]
        tag = node.tag
        if tag in TITLE_HEADINGS:
            if titles and repeats_title(_text(node, src), titles):
                node.drop = True
                dropped += 1
            seen += node.text
        elif _dateline(node) and not _series(line := _line(node, container), node, counts):
            line.drop = True
            dropped += 1
            seen += line.text
            stack = [n for n in stack if not _within(n, line)]
        elif (
            tag in BLOCK
            and node.good > sum(c.good for c in kids)
            and (mark := _marked(node)) is not None
            and not _series(node, mark, counts)
        ):
            node.drop = True  # a dateline that reads as prose: "30 April 2015, 07:19 (updated 07:38)"
            dropped += 1
            seen += node.text
        elif tag in _STOP or (tag in BLOCK and node.good > sum(c.good for c in kids)):
            return dropped  # the article's first paragraph (or code, or a table)
        else:
            own = node.text - sum(c.text for c in kids)
            seen += own
            stack.extend(reversed(kids))
        if seen > LEAD_CHARS:
            break
    return dropped


def _dateline(node: Node) -> bool:
    if not node.text or node.text > DATELINE_CHARS or node.heads:
        return False
    if node.tag == "time":
        return True
    if DATE_PROPS & set(node.get("itemprop").lower().split()):
        return True
    value = (node.get("class") + " " + node.get("id")).lower()
    return any(p in DATE_WORDS for p in _PART.split(value) if p)


def _marked(node: Node) -> Node | None:
    """The first of a dateline's marks (:func:`_dateline`) inside a short block with no heading,
    when the marks hold at least :data:`MARK_SHARE` of its text (a date with a few words around
    it, not a sentence that mentions one), else None."""
    if not node.text or node.text > DATELINE_CHARS or node.heads:
        return None
    marks: list[Node] = []
    stack = [c for c in reversed(node.children) if isinstance(c, Node) and not c.drop]
    while stack:
        n = stack.pop()
        if _dateline(n):
            marks.append(n)
        else:
            stack.extend(c for c in reversed(n.children) if isinstance(c, Node) and not c.drop)
    if not marks or sum(m.text for m in marks) < MARK_SHARE * node.text:
        return None
    return marks[0]


def _series(line: Node, mark: Node, counts: Counter[str] | None) -> bool:
    """The line heads one of a series (every post of a thread has its author line)."""
    if counts is None:
        return False
    for n in (line, mark):
        value = n.get("class").lower().replace("_", "-").split()
        if value and counts["=" + " ".join(value)] >= SERIES:
            return True
    return False


def _line(node: Node, container: Node) -> Node:
    """The outermost short block around ``node`` (no heading in it, below the container)."""
    best = node
    p = node.parent
    while p is not None and p is not container and p.text <= DATELINE_CHARS and not p.heads:
        if p.tag in BLOCK:
            best = p
        p = p.parent
    return best


def _within(node: Node, ancestor: Node) -> bool:
    p: Node | None = node
    while p is not None:
        if p is ancestor:
            return True
        p = p.parent
    return False


def _text(node: Node, src: str) -> str:
    parts: list[str] = []
    stack: list[Node | tuple[int, int]] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            if not item.drop:
                stack.extend(reversed(item.children))
        else:
            parts.append(src[item[0] : item[1]])
    return html.unescape(" ".join(parts))
