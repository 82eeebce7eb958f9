"""Boilerplate rules for elements inside the main container, and their tunable thresholds.

An element is boilerplate by its tag (``nav``, ``aside``, ``footer``, ...), its ARIA role, a
class or id word (cookie banners, share/related/newsletter/comment/review widgets, sidebars),
its shape (teaser cards, a form in a small box, a link-dense menu or link farm), never by a
site. Guards keep the main text whatever the rules say:

- an element holding ``protect_share`` of the container's prose is never pruned (a
  ``<form>`` or a ``class="with-sidebar"`` wrapper around the whole article), with three
  exceptions up to ``aside_share``: an ``aside``/``nav`` (a sidebar longer than the
  article), and, with :data:`ARTICLE_CHARS` of prose beside them, a feed of teasers (nearly
  every heading links to another page, over a short summary) and a single named widget (the
  reviews under a product description);
- a class or id word counts only as a whole class token or as its first or last
  ``-``-separated part (``sidebar``, ``sidebar-left``, ``site-footer``), not inside a longer
  name (``elementor-widget-wrap``), not in a token that states a layout
  (``content-has-sidebar``, ``with-sidebar``), and not when the element reads as prose
  (``name_prose``: its prose share of its own text), unless the word names other content
  than the page's (:data:`WIDGET_WORDS`: comments, reviews, related links, ads) on an element
  that is not one of a series (``name_repeat``: forum posts all of class ``comment`` stay)
  and has no article word beside it (``entry-content social-ready`` stays);
- teaser headings (linked headings) are pruned only over little prose (``name_prose``);
- an id names a widget too (``id="comment-box"``: an id is never one of a series), unless it
  has more than :data:`ID_PARTS` parts (a heading's anchor, ``respond-to-review-comments``);
  an article word counts beside it only as a token's first or last part (``entry-content``,
  not ``user-post-box``); a ``gallery`` is pruned like a widget (its captions);
- the short label of an element with a control role (``role="button"``: "Play", "Mute");
- a block whose own heading names a widget (its first element, or its first element's first,
  is an ``h2``-``h4`` of at most :data:`HEAD_WORDS` words that starts with one of
  :data:`HEAD_WIDGETS`: "Related", "Recommended for you", "Comments (3)"), whatever its class;
- a dialog hidden until a script opens it (a whole ``modal`` class token), even one of a series
  and even when it reads as prose; a widget word run together with a container noun in one
  ``-`` part (:data:`COMPOUND_NOUNS`: ``jp-relatedposts``, ``commentlist``; not
  ``commentary``); a call-to-action block (``cta``) is a widget;
- teaser cards whose paragraphs sit inside links (:func:`is_card_block`), asked after the first
  pruning, only after an article's worth of prose and where it outweighs the cards.

:class:`ContentParams` holds the thresholds; their defaults were chosen by cross-validation
across the development sets (``bench/html_quality.py``, README *HTML*).
"""

from __future__ import annotations

import html
import re
from collections import Counter
from collections.abc import Iterable
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
    "skip author authors bio byline cta outbrain taboola paywall buybox aside noprint screen review "
    "reviews customerreviews"
)
"""Words of a class or id token that mark boilerplate (first or last part of the token)."""
BOILER_TOKENS = words(
    "side-bar tag-list skip-link about-author sign-up buy-box d-print-none hide-print hidden-print "
    "no-print print-hide print-hidden screen-only"
)
"""Whole tokens that mark boilerplate."""
PRUNE_WORDS = BOILER_WORDS | {"gallery"}
"""What pruning reads as boilerplate: also a photo gallery (its captions are not the article);
container scoring (:mod:`html_score`) weighs only :data:`BOILER_WORDS`."""
WIDGET_WORDS = words(
    "comment comments disqus review reviews customerreviews related recommended recommendations "
    "sidebar social socials share sharing newsletter subscribe subscription signup sponsor sponsored "
    "advert advertisement ads outbrain taboola paywall gallery cta author authors bio"
)
"""Boilerplate words that name other content than the page's own (comments, reviews, related
links, ads, the author's biography box), not a presentation (``modal``, ``banner``, ``nav``): a
class with one is pruned even when it reads as prose, unless the element is one of a series
(each post's ``post-author``) or holds the page's prose (a profile page)."""
COMPOUND_NOUNS = words(
    "posts articles stories links items list box widget area section container wrapper block"
)
"""Nouns that a widget word is run together with in one class part (``jp-relatedposts``,
``commentlist``, ``sharebox``): such a part counts as the widget word itself."""
_COMPOUND = re.compile(
    "^("
    + "|".join(sorted(WIDGET_WORDS, key=len, reverse=True))
    + ")(?:"
    + "|".join(sorted(COMPOUND_NOUNS))
    + ")$"
)
HEAD_WIDGETS = words("related recommended comments comment")
"""First words of a heading that names the widget below it (:func:`headed_widget`)."""
HEAD_WORDS = 4
"""The longest such heading, in words ("Related stories", not "Related work on the mills")."""
HEAD_DEPTH = 3
"""How deep the heading may sit in the block's first elements (wrappers around it)."""
_HEADS = frozenset(("h2", "h3", "h4"))
_WORD = re.compile(r"\w+")
MODAL_TOKENS = words("modal")
"""A whole class token of a dialog that stays hidden until a script opens it (Bootstrap's
``modal``): pruned even when it reads as prose and however many there are."""
_POSITIVE = re.compile(r"article|body|content|entry|hentry|main|post|story|text")
MODIFIERS = words("has with without no is show hide toggle js u")
"""A token with one of these parts states a layout or a state (``content-has-sidebar``)."""
_SPLIT = re.compile(r"[-]+")
ARTICLE_CHARS = 1000
"""Prose outside a teaser feed or a widget for it to be pruned past ``protect_share``."""
CONTROL_ROLES = words("button slider progressbar switch timer")
CONTROL_CHARS = 20
"""Chars up to which an element with a control role is a control's label (a longer one can be
an FAQ question that opens its answer)."""
ID_PARTS = 3
"""An id names a widget (``comment-box``) when it has at most this many ``-`` parts."""
CRUMB_WORDS = words("breadcrumb breadcrumbs crumbs")
CRUMB_CHARS = 300
"""A breadcrumb trail up to this many chars is pruned even when it reads as prose."""
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
    dominance: float = 4.0
    """A scored container that scores this multiple of the best candidate elsewhere on the page
    is taken when it keeps ``dominant_keep`` (not ``scored_keep``) of the density container's prose."""
    dominant_keep: float = 0.5
    """The share of the density container's prose a dominant scored container must keep."""
    aside_share: float = 0.9
    """An ``aside`` or ``nav`` is pruned unless it holds this share of the container's prose
    (``protect_share`` does not keep a sidebar that outweighs the article beside it); a teaser
    feed or a named widget past ``protect_share`` likewise."""
    name_repeat: int = 3
    """The ``name_prose`` guard protects only a repeated item: an element whose class (or one of
    its boilerplate class tokens) is on at least this many elements (posts, service cards). A
    single named widget that reads as prose (a reviews panel, a comments pane) is pruned
    (0: the guard protects every element)."""
    lead: bool = True
    """Drop the datelines and bylines above an article's first paragraph
    (:mod:`~tessera.parsing.html_lead`)."""
    lead_prose: int = 1000
    """The lead rules apply only to a container with this many chars of prose (an article); on
    a product or a listing, the name and the dates above it are its content (set by hand)."""
    title_repeat: bool = False
    """With ``lead``: also drop a heading above the first paragraph that repeats the page's
    title. Off: the title heading is the root of every chunk's heading breadcrumbs (the
    document's only title in the index), though Readability-style golds leave it out."""


DEFAULT_PARAMS = ContentParams()


def names(node: Node) -> str:
    return (node.get("class") + " " + node.get("id")).lower()


def boiler_name(value: str, vocabulary: frozenset[str] = BOILER_WORDS, whole: bool = True) -> bool:
    """A class/id value with a boilerplate token (see the module doc)."""
    for token in value.replace("_", "-").split():
        if whole and token in BOILER_TOKENS:
            return True
        parts = [p for p in _SPLIT.split(token) if p]
        if not parts or any(p in MODIFIERS for p in parts):
            continue
        if parts[0] in vocabulary or parts[-1] in vocabulary:
            return True
        if vocabulary is not BOILER_WORDS and any(_compound(p, vocabulary) for p in (parts[0], parts[-1])):
            return True
    return False


def _compound(part: str, vocabulary: frozenset[str]) -> bool:
    """``part`` runs a widget word of ``vocabulary`` together with a container noun
    (``relatedposts``: ``related``)."""
    m = _COMPOUND.match(part)
    return m is not None and m.group(1) in vocabulary


def _widget(node: Node, counts: Counter[str], least: int) -> bool:
    """A single element whose class or id names a widget (comments, reviews, related links), not
    an item of a series (its class, or the widget token, on ``least`` elements) nor the article
    itself (an article word as a token's first or last part: ``entry-content``, not
    ``user-post-box``)."""
    tokens = node.get("class").lower().replace("_", "-").split()
    ident = node.get("id").lower().replace("_", "-").split()  # unique: never one of a series
    named = [t for t in tokens if boiler_name(t, WIDGET_WORDS, whole=False)]
    # an id of many parts is a heading's anchor ("respond-to-review-comments"), not a widget's name
    by_id = [
        t for t in ident if len(_SPLIT.split(t)) <= ID_PARTS and boiler_name(t, WIDGET_WORDS, whole=False)
    ]
    if not (named or by_id) or any(_article_token(t) for t in tokens + ident if t not in named + by_id):
        return False
    if counts["=" + " ".join(tokens)] >= least:
        return False
    return not any(counts[t] >= least for t in named)


def _article_token(token: str) -> bool:
    parts = [p for p in _SPLIT.split(token) if p]
    return bool(parts) and (_POSITIVE.search(parts[0]) is not None or _POSITIVE.search(parts[-1]) is not None)


def _feed(node: Node) -> bool:
    """Teasers: nearly every heading links to another page, over a short summary each."""
    lh = node.link_heads
    return lh >= 4 and lh * 5 >= node.heads * 4 and node.good < 300 * lh


def class_counts(nodes: Iterable[Node]) -> Counter[str]:
    """How many elements carry each class token and (prefixed ``=``) each whole class value."""
    counts: Counter[str] = Counter()
    for n in nodes:
        value = n.attrs.get("class") if n.attrs else None
        if value:
            value = value.lower().replace("_", "-")
            tokens = value.split()
            counts.update(set(tokens))
            counts["=" + " ".join(tokens)] += 1
    return counts


def is_boilerplate(
    node: Node, container: Node, params: ContentParams, counts: Counter[str] | None = None
) -> bool:
    tag = node.tag
    share = node.good / container.good if container.good else 0.0
    if tag in ("aside", "nav") and share < params.aside_share:
        return True  # a sidebar or menu, even one with more prose than the article beside it
    if share >= params.protect_share:
        # never prune away most of the prose (e.g. a <form> around a whole page), unless it is a
        # feed of teasers (linked headings over short summaries) or one named widget (the
        # reviews under a product) beside an article
        if share >= params.aside_share or container.good - node.good < ARTICLE_CHARS:
            return False
        return _feed(node) or (
            params.name_repeat > 0 and counts is not None and _widget(node, counts, params.name_repeat)
        )
    if tag in BOILER_TAGS or node.get("role").lower() in BOILER_ROLES:
        return True
    if MODAL_TOKENS & set(node.get("class").lower().split()):
        return True  # a dialog hidden until opened ("Become an approved author!"), even a series of them
    if node.get("role").lower() in CONTROL_ROLES and node.text <= CONTROL_CHARS:
        return True  # a player's or widget's control label ("Play", "Mute", "Fullscreen")
    if tag == "header":  # top_heads: the subtree is as compute_stats left it (pruning is top-down)
        return node.top_heads == 0 or node.link > 0.5 * max(node.text, 1)
    value = names(node)
    if node.text <= CRUMB_CHARS and value.strip() and boiler_name(value, CRUMB_WORDS):
        return True  # a breadcrumb trail: a line of links that reads as prose only by its length
    if value.strip() and boiler_name(value, PRUNE_WORDS):
        if node.good < params.name_prose * max(node.text, 1):
            return True
        if params.name_repeat and counts is not None and _widget(node, counts, params.name_repeat):
            return True  # one named widget that reads as prose: a reviews panel, a comments pane
    if tag == "figure" and node.text < 300 and node.media:
        return True  # an image with its caption and credit
    if (
        node.link_heads >= 2
        and node.link_heads * 3 >= node.heads * 2
        and node.good < params.name_prose * node.text
    ):
        return True  # teaser cards: headings that link to other pages
    if node.forms and node.text - node.good < 500 and node.good < 300:
        return True  # a sign-up or search box around a form
    if tag == "table" and node.links >= 10 and node.link > 0.7 * node.text:
        return True  # a navigation box laid out as a table
    # menus and link farms
    return (
        tag in LINK_PRUNED and node.links >= 2 and node.link > 0.5 * node.text and node.good < 0.3 * node.text
    )


def is_card_block(node: Node, container: Node, before: int) -> bool:
    """Teaser cards beside an article: a link-dense block whose prose is mostly inside its links
    (``<a href><p>…</p></a>``), in a container whose prose outside links reaches
    :data:`ARTICLE_CHARS` and outweighs all the prose inside links (on a page of cards, a
    collection, the cards are the content). Asked after pruning, on recomputed stats."""
    article = container.good - container.linked_good
    if before < ARTICLE_CHARS or article < container.linked_good or not node.linked_good:
        return False
    if any(_article_token(t) for t in names(node).replace("_", "-").split()):
        return False  # class="content-main"
    return (
        node.tag in LINK_PRUNED
        and node.links >= 2
        and node.link > 0.5 * node.text
        and node.good - node.linked_good < 0.3 * node.text
    )


def headed_widget(node: Node, src: str) -> bool:
    """``node`` opens with a heading that names a widget ("Related", "Comments (12)"): its first
    kept element, or that element's first, down :data:`HEAD_DEPTH` levels, is an ``h2``-``h4``
    of at most :data:`HEAD_WORDS` words whose first is one of :data:`HEAD_WIDGETS`."""
    if node.tag in _HEADS:
        return False
    n = node
    for _ in range(HEAD_DEPTH):
        first = next((c for c in n.children if isinstance(c, Node) and not c.drop), None)
        if first is None:
            return False
        if first.tag in _HEADS:
            tokens = _WORD.findall(_node_text(first, src).casefold())
            return 0 < len(tokens) <= HEAD_WORDS and tokens[0] in HEAD_WIDGETS
        n = first
    return False


def _node_text(node: Node, src: str) -> str:
    parts: list[str] = []
    stack: list[Node | tuple[int, int]] = [node]
    while stack:
        item = stack.pop()
        if isinstance(item, Node):
            stack.extend(reversed(item.children))
        else:
            parts.append(src[item[0] : item[1]])
    return html.unescape(" ".join(parts))
