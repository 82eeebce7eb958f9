"""Boilerplate rules for elements inside the main container, and their tunable thresholds.

An element is boilerplate by its tag (``nav``, ``aside``, ``footer``, ...), its ARIA role, a
class or id word (cookie banners, share/related/newsletter/comment widgets, sidebars), its
shape (teaser cards, a form in a small box, a link-dense menu or link farm), never by a site.
Two guards keep the main text whatever the rules say:

- an element holding ``protect_share`` of the container's prose is never pruned (a
  ``<form>`` or a ``class="with-sidebar"`` wrapper around the whole article);
- a class or id word counts only as a whole class token or as its first or last
  ``-``-separated part (``sidebar``, ``sidebar-left``, ``site-footer``), not inside a longer
  name (``elementor-widget-wrap``), not in a token that states a layout
  (``content-has-sidebar``, ``with-sidebar``), and not when the element reads as prose
  (``name_prose``: its prose share of its own text).

:class:`ContentParams` holds the thresholds; their defaults were chosen by cross-validation
across the development sets (``bench/html_quality.py``, README *HTML*).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.parsing.html_text import words
from tessera.parsing.html_tree import Node

BOILER_TAGS = frozenset(("nav", "aside", "footer", "menu", "form", "dialog", "search"))
BOILER_ROLES = words(
    "navigation banner contentinfo complementary search menu menubar toolbar dialog alertdialog "
    "tablist status"
)
BOILER_WORDS = words(
    "cookie cookies consent gdpr banner nav navbar navigation menu breadcrumb breadcrumbs sidebar "
    "footer masthead share sharing social socials related recommended recommendations newsletter "
    "subscribe subscription signup promo promotion advert advertisement ad ads sponsor sponsored "
    "comment comments disqus popup modal overlay pagination pager toolbar widget widgets tags "
    "skip author authors bio byline cta outbrain taboola paywall buybox aside noprint screen"
)
"""Words of a class or id token that mark boilerplate (first or last part of the token)."""
BOILER_TOKENS = words(
    "side-bar tag-list skip-link about-author sign-up buy-box d-print-none hide-print hidden-print "
    "no-print print-hide print-hidden screen-only"
)
"""Whole tokens that mark boilerplate."""
MODIFIERS = words("has with without no is show hide toggle js u")
"""A token with one of these parts states a layout or a state (``content-has-sidebar``)."""
_SPLIT = re.compile(r"[-]+")
LINK_PRUNED = words("div section ul ol dl menu p header footer aside center address details span font")


@dataclass(frozen=True)
class ContentParams:
    protect_share: float = 0.6
    """Never prune an element holding this share of the container's prose."""
    name_prose: float = 0.6
    """A class/id word is ignored on an element whose prose is this share of its text (>1: never)."""
    lead_title: bool = False
    """Emit the page's ``h1`` before the container when the container has none."""
    edge_run: int = 10
    """Drop a run of at least this many short blocks (widget labels, player menus) before the
    first or after the last prose block of the container (0: off)."""
    edge_chars: int = 30
    """The mean chars per block below which such an edge run is dropped."""
    thin_ratio: float = 0.1
    """Kept text below this share of the visible text: ``thin_extraction``, whole visible text."""
    thin_min_chars: int = 200
    """Visible text below which a page is too small to call its extraction thin."""
    scored: str = "always"
    """Readability-style container scoring (:mod:`~tessera.parsing.html_score`): ``off``;
    ``inside``: the scored container when it lies inside the density container; ``always``."""
    sibling_share: float = 0.2
    """A sibling of the scored container joins it at this share of its score."""
    scored_keep: float = 0.85
    """The scored container is taken only when it keeps this share of the density container's prose."""


DEFAULT_PARAMS = ContentParams()


def names(node: Node) -> str:
    return (node.get("class") + " " + node.get("id")).lower()


def boiler_name(value: str) -> bool:
    """A class/id value with a boilerplate token (see the module doc)."""
    for token in value.replace("_", "-").split():
        if token in BOILER_TOKENS:
            return True
        parts = [p for p in _SPLIT.split(token) if p]
        if not parts or any(p in MODIFIERS for p in parts):
            continue
        if parts[0] in BOILER_WORDS or parts[-1] in BOILER_WORDS:
            return True
    return False


def is_boilerplate(node: Node, container: Node, params: ContentParams) -> bool:
    tag = node.tag
    if container.good and node.good >= params.protect_share * container.good:
        return False  # never prune away most of the prose (e.g. a <form> around a whole page)
    if tag in BOILER_TAGS or node.get("role").lower() in BOILER_ROLES:
        return True
    if tag == "header":  # top_heads: the subtree is as compute_stats left it (pruning is top-down)
        return node.top_heads == 0 or node.link > 0.5 * max(node.text, 1)
    value = names(node)
    if value.strip() and boiler_name(value) and node.good < params.name_prose * max(node.text, 1):
        return True
    if tag == "figure" and node.text < 300 and node.media:
        return True  # an image with its caption and credit
    if node.link_heads >= 2 and node.link_heads * 2 >= node.heads:
        return True  # teaser cards: headings that link to other pages
    if node.forms and node.text - node.good < 500 and node.good < 300:
        return True  # a sign-up or search box around a form
    if tag == "table" and node.links >= 10 and node.link > 0.7 * node.text:
        return True  # a navigation box laid out as a table
    # menus and link farms
    return (
        tag in LINK_PRUNED and node.links >= 2 and node.link > 0.5 * node.text and node.good < 0.3 * node.text
    )
