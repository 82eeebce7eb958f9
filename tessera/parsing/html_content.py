"""Main-content selection: hidden content, boilerplate elements and a text-density heuristic.

Three passes over the tree, all iterative:

1. :func:`mark_hidden` drops what a reader never sees (``hidden``, ``aria-hidden="true"``,
   inline ``display:none`` or ``visibility:hidden``) and form controls, and lists the hidden
   elements that carried text: hidden text is a classic carrier of prompt injection, so
   those inside the main content are reported. (Stylesheet rules are not evaluated.)
2. :func:`compute_stats` sums, bottom-up, each element's text, link text and "good" text:
   text of blocks that read like prose (long enough, few links).
3. :func:`select_content` picks the main container (``<main>``/``<article>`` when they hold
   the prose, otherwise the element that a descent by good-text share ends at) and prunes
   boilerplate inside it: navigation, asides, page headers and footers, cookie/consent
   banners, share/related/newsletter/comment widgets (by tag, ARIA role, class or id) and
   link-dense blocks (menus, link farms). No site-specific rules.

Each pass ticks the parse's :class:`~tessera.parsing.budget.Deadline` once per element, and
none searches a subtree per element: what pruning asks of a subtree (kept ``h1``/``h2``, a
link to another page, an image) is summed bottom-up by :func:`compute_stats` or set while
the tree is built (searches per nested ``<header>`` took 29 s for 270 KB).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from urllib.parse import urlsplit

from tessera.parsing.budget import Deadline
from tessera.parsing.html_boiler import (
    BOILER_ROLES,
    BOILER_TAGS,
    DEFAULT_PARAMS,
    ContentParams,
    is_boilerplate,
    names,
)
from tessera.parsing.html_score import score_tree
from tessera.parsing.html_text import words
from tessera.parsing.html_tree import HEADINGS, Node

# Elements whose text is never content.
DROP_TAGS = words(
    "button input select option optgroup datalist textarea label output progress meter canvas "
    "object embed applet video audio picture map dialog frameset frame head script style noscript "
    "template iframe"
)
BLOCK = words(
    "#root address article aside blockquote center dd details dialog dir div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li listing main menu nav ol "
    "p pre section summary table tbody thead tfoot tr td th caption ul search"
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
_MAIN_NAME = re.compile(r"articlebody|article-body|post-body|entry-content|post-content|story-body")
MIN_GOOD = 40
"""Chars of inline text for a block to count as prose."""
MAX_GOOD_LINK_DENSITY = 0.4


@dataclass
class Selection:
    container: Node
    hidden: int
    """Hidden elements with text inside the selected content (dropped)."""
    hidden_chars: int
    lead: Node | None = None
    """A page title (``h1``) before the container, emitted first when the container has none."""
    hidden_nodes: tuple[Node, ...] = ()
    """The hidden elements counted in ``hidden`` (their text: :func:`hidden_text`)."""


def is_hidden(node: Node) -> bool:
    a = node.attrs
    if not a:
        return False
    if "hidden" in a or a.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = a.get("style", "")
    return bool(style) and _HIDDEN_STYLE.search(style) is not None


def _children(node: Node) -> list[Node]:
    return [c for c in node.children if isinstance(c, Node)]


def _raw_text_len(node: Node, src: str) -> int:
    total = 0
    stack = [node]
    while stack:
        n = stack.pop()
        for c in n.children:
            if isinstance(c, Node):
                stack.append(c)
            else:
                total += len(src[c[0] : c[1]].strip())
    return total


def mark_hidden(
    root: Node, src: str, keep_noscript: bool = False, deadline: Deadline | None = None
) -> list[tuple[Node, int]]:
    """Drop hidden elements and non-content tags; the hidden elements with text (and its chars)."""
    hidden: list[tuple[Node, int]] = []
    stack = [root]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()
        node.drop = False
        for c in node.children:
            if not isinstance(c, Node):
                continue
            if c.tag in DROP_TAGS and not (keep_noscript and c.tag == "noscript"):
                c.drop = True
            elif is_hidden(c):
                c.drop = True
                n = _raw_text_len(c, src)
                if n:
                    hidden.append((c, n))
            else:
                stack.append(c)
    return hidden


def _text_len(src: str, a: int, b: int) -> int:
    s = src[a:b]
    return len(s) - s.count(" ") - s.count("\n") - s.count("\t") - s.count("\r")


def compute_stats(root: Node, src: str, deadline: Deadline | None = None) -> list[Node]:
    """Fill the text statistics of every kept node, bottom-up; returns them in pre-order.

    ``text``/``link``: chars of text and of link text; ``good``: chars of prose blocks
    (inline text of a block >= :data:`MIN_GOOD`, link density <= :data:`MAX_GOOD_LINK_DENSITY`);
    ``links``: ``<a href>`` count; ``heads``/``link_heads``: headings, and headings that are
    links to other pages (teasers); ``forms``: ``<form>`` count.
    """
    order: list[Node] = []
    stack = [root]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()
        order.append(node)
        stack.extend(c for c in reversed(node.children) if isinstance(c, Node) and not c.drop)
    for node in reversed(order):
        if deadline is not None:
            deadline.tick()
        own = 0
        text = link = itext = ilink = good = links = heads = link_heads = forms = top_heads = 0
        ext_link = False
        for c in node.children:
            if isinstance(c, Node):
                if c.drop:
                    continue
                text += c.text
                link += c.link
                good += c.good
                links += c.links
                heads += c.heads
                link_heads += c.link_heads
                forms += c.forms
                top_heads += c.top_heads
                ext_link = ext_link or c.ext_link
                if c.tag not in BLOCK:
                    itext += c.inline_text
                    ilink += c.inline_link
            else:
                own += _text_len(src, c[0], c[1])
        text += own
        itext += own
        tag = node.tag
        if tag == "a":
            link, ilink = text, itext
            href = node.get("href").strip()
            links += 1 if href else 0
            ext_link = ext_link or (bool(href) and not href.startswith("#"))
        elif tag == "form":
            forms += 1
        elif tag in HEADINGS:
            heads += 1
            top_heads += 1 if tag in ("h1", "h2") else 0
            if text and link >= 0.8 * text and ext_link:
                link_heads += 1
        node.text, node.link, node.links = text, link, links
        node.heads, node.link_heads, node.forms = heads, link_heads, forms
        node.top_heads, node.ext_link = top_heads, ext_link
        if tag in BLOCK:
            if itext >= MIN_GOOD and ilink <= MAX_GOOD_LINK_DENSITY * itext and tag not in HEADINGS:
                good += itext
            node.inline_text = node.inline_link = 0
        else:
            node.inline_text, node.inline_link = itext, ilink
        node.good = good
    return order


def _is_mainlike(node: Node) -> bool:
    if node.tag in ("main", "article"):
        return True
    if node.get("role").lower() == "main" or node.get("itemprop").lower() == "articlebody":
        return True
    return _MAIN_NAME.search(names(node).replace("_", "-")) is not None


def select_content(
    root: Node,
    order: list[Node],
    hidden: list[tuple[Node, int]],
    deadline: Deadline | None = None,
    params: ContentParams = DEFAULT_PARAMS,
    src: str | None = None,
) -> Selection:
    total = root.good
    container = root
    if total > 0:
        cands = [n for n in order if n is not root and _is_mainlike(n) and n.good >= 0.5 * total]
        if cands:
            best = max(n.good for n in cands)
            # the outermost of the candidates that hold (nearly) the best share
            container = next(n for n in cands if n.good >= 0.9 * best)
        container = _descend(container)
        if params.scored != "off" and src is not None:
            container = _scored(root, container, order, src, params, deadline)
    _prune(container, params, deadline)
    lead = None
    if params.lead_title and not _has_kept(container, "h1"):
        lead = _lead_heading(root, container)
    inside = [
        (node, n)
        for node, n in hidden
        if _within(node, container) or (lead is not None and _within(node, lead))
    ]
    return Selection(
        container, len(inside), sum(n for _, n in inside), lead, tuple(node for node, _ in inside)
    )


def _scored(
    root: Node, container: Node, order: list[Node], src: str, params: ContentParams, deadline: Deadline | None
) -> Node:
    """The readability-style container, where ``params.scored`` says to take it."""
    sc = score_tree(root, order, src, params.sibling_share, deadline)
    if sc is None:
        return container
    if params.scored == "inside" and not (sc.container is container or _within(sc.container, container)):
        return container
    kept = sc.container.good - sum(n.good for n in sc.dropped)
    if kept < params.scored_keep * container.good:
        return container
    for n in sc.dropped:
        n.drop = True
    return sc.container


def hidden_text(node: Node, src: str, limit: int = 20_000) -> str:
    """The raw text of a (dropped) element, markup left out, at most about ``limit`` chars."""
    parts: list[str] = []
    size = 0
    stack: list[Node | tuple[int, int]] = [node]
    while stack and size < limit:  # in document order
        item = stack.pop()
        if isinstance(item, Node):
            if item.tag in BLOCK or item.tag == "br":
                parts.append(" ")
            stack.extend(reversed(item.children))
        else:
            parts.append(src[item[0] : item[1]])
            size += item[1] - item[0]
    return "".join(parts)


def _within(node: Node, ancestor: Node) -> bool:
    p = node.parent
    while p is not None:
        if p is ancestor:
            return True
        p = p.parent
    return False


def _descend(node: Node) -> Node:
    """Walk down while one child holds nearly all the prose of its parent."""
    while node.good > 0:
        if node.tag in ("article", "main") and node.parent is not None:
            return node
        kids = [c for c in _children(node) if not c.drop]
        if not kids:
            return node
        best = max(kids, key=lambda c: c.good)
        if best.good < 0.85 * node.good:
            return node
        node = best
    return node


def _prune(container: Node, params: ContentParams, deadline: Deadline | None = None) -> None:
    stack = [container]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()
        for c in node.children:
            if isinstance(c, Node) and not c.drop:
                if is_boilerplate(c, container, params):
                    c.drop = True
                else:
                    stack.append(c)


def _has_kept(node: Node, tag: str) -> bool:
    return _has_kept_any(node, (tag,))


def _has_kept_any(node: Node, tags: tuple[str, ...]) -> bool:
    stack = [node]
    while stack:
        n = stack.pop()
        if n.tag in tags:
            return True
        stack.extend(c for c in n.children if isinstance(c, Node) and not c.drop)
    return False


def _lead_heading(root: Node, container: Node) -> Node | None:
    """The first visible ``h1`` before the container that is not the site's name."""
    stack = [root]
    while stack:
        n = stack.pop()
        if n is container or n.start >= container.start:
            continue
        if n.tag == "h1" and n.end > container.start:
            continue  # an unclosed <h1> around the content is not a title
        if (
            n.tag in BOILER_TAGS
            or n.get("role").lower() in BOILER_ROLES
            or _SITE_HEADER & set(names(n).split())
        ):
            continue
        if n.tag == "header" and not _inside(n, ("article", "main")):
            continue
        if n.tag == "h1":
            if n.text > 0 and not _home_link(n):
                return n
            continue
        stack.extend(c for c in reversed(n.children) if isinstance(c, Node) and not c.drop)
    return None


_SITE_HEADER = words(
    "header site-header page-header masthead branding site-branding logo site-logo site-title "
    "site-name banner topbar top-bar"
)


def _inside(node: Node, tags: tuple[str, ...]) -> bool:
    p = node.parent
    while p is not None:
        if p.tag in tags:
            return True
        p = p.parent
    return False


def _home_link(node: Node) -> bool:
    """A heading that is a link to a site's home page (a site title, not a page title)."""
    if node.link < 0.8 * node.text:
        return False
    stack = [node]
    while stack:
        n = stack.pop()
        if n.tag == "a":
            return urlsplit(n.get("href").strip()).path.strip("/") == ""
        stack.extend(c for c in n.children if isinstance(c, Node))
    return False
