"""Text statistics of the parsed tree, for main-content selection (:mod:`html_content`).

Two passes, both iterative and linear:

1. :func:`mark_hidden` drops what a reader never sees (``hidden``, ``aria-hidden="true"``,
   inline ``display:none`` or ``visibility:hidden``) and form controls, and lists the hidden
   elements that carried text: hidden text is a classic carrier of prompt injection, so
   those inside the main content are reported. (Stylesheet rules are not evaluated.)
2. :func:`compute_stats` sums, bottom-up, each element's text, link text and "good" text:
   text of blocks that read like prose (long enough, few links; a CJK char counts as
   :data:`WIDE_WEIGHT` chars towards "long enough").
"""

from __future__ import annotations

import re

from tessera.parsing.budget import Deadline
from tessera.parsing.html_text import words
from tessera.parsing.html_tree import HEADINGS, Node

# Elements whose text is never content.
DROP_TAGS = words(
    "button input select option optgroup datalist textarea label output progress meter canvas "
    "object embed applet video audio picture map dialog frameset frame head script style noscript "
    "template iframe annotation annotation-xml"
)
BLOCK = words(
    "#root address article aside blockquote center dd details dialog dir div dl dt fieldset "
    "figcaption figure footer form h1 h2 h3 h4 h5 h6 header hgroup hr li listing main menu nav ol "
    "p pre section summary table tbody thead tfoot tr td th caption ul search"
)
_HIDDEN_STYLE = re.compile(r"display\s*:\s*none|visibility\s*:\s*hidden", re.I)
MIN_GOOD = 40
"""Chars of inline text for a block to count as prose (a CJK char counts :data:`WIDE_WEIGHT`)."""
WIDE_WEIGHT = 3
"""A CJK ideograph or kana or hangul syllable carries about a short word: three Latin chars."""
_WIDE = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")
MAX_GOOD_LINK_DENSITY = 0.4
LINKED_PROSE = 400
"""Chars up to which the prose blocks inside a link (``<a href><p>…</p></a>``: a teaser card)
count as ``linked_good``; a longer link is more likely an unclosed ``<a>`` around the page."""


def is_hidden(node: Node) -> bool:
    a = node.attrs
    if not a:
        return False
    if "hidden" in a or a.get("aria-hidden", "").strip().lower() == "true":
        return True
    style = a.get("style", "")
    return bool(style) and _HIDDEN_STYLE.search(style) is not None


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


def _text_len(s: str) -> int:
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
        text = link = itext = ilink = iwide = good = links = heads = link_heads = forms = top_heads = 0
        linked = 0
        ext_link = False
        for c in node.children:
            if isinstance(c, Node):
                if c.drop:
                    continue
                text += c.text
                link += c.link
                good += c.good
                linked += c.linked_good
                links += c.links
                heads += c.heads
                link_heads += c.link_heads
                forms += c.forms
                top_heads += c.top_heads
                ext_link = ext_link or c.ext_link
                if c.tag not in BLOCK:
                    itext += c.inline_text
                    ilink += c.inline_link
                    iwide += c.inline_wide
            else:
                piece = src[c[0] : c[1]]
                own += _text_len(piece)
                if not piece.isascii():
                    iwide += len(_WIDE.findall(piece))
        text += own
        itext += own
        tag = node.tag
        if tag == "a":
            link, ilink = text, itext
            href = node.get("href").strip()
            links += 1 if href else 0
            ext_link = ext_link or (bool(href) and not href.startswith("#"))
            if href and text <= LINKED_PROSE:
                linked = good  # (the inline text is counted as prose by the block above)
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
            long = itext + (WIDE_WEIGHT - 1) * iwide >= MIN_GOOD
            if long and ilink <= MAX_GOOD_LINK_DENSITY * itext and tag not in HEADINGS:
                good += itext
            node.inline_text = node.inline_link = node.inline_wide = 0
        else:
            node.inline_text, node.inline_link, node.inline_wide = itext, ilink, iwide
        node.good = good
        node.linked_good = linked
    return order


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
