"""Main-content selection: the container, and the boilerplate pruned inside it.

After :mod:`~tessera.parsing.html_stats` has dropped hidden elements and summed each element's
text, link text and prose, :func:`select_content` picks the main container (``<main>``/
``<article>`` when they hold the prose, otherwise the element that a descent by good-text
share ends at, or the readability-style scored container of :mod:`html_score`) and prunes
boilerplate inside it (:mod:`html_boiler`): navigation, asides, page headers and footers,
cookie/consent banners, share/related/newsletter/comment/review widgets (by tag, ARIA role,
class or id), teaser feeds and link-dense blocks (menus, link farms), then the datelines and
bylines above an article's first paragraph (:mod:`html_lead`). No site-specific rules.

Each pass ticks the parse's :class:`~tessera.parsing.budget.Deadline` once per element, and
none searches a subtree per element: what pruning asks of a subtree (kept ``h1``/``h2``, a
link to another page, an image) is summed bottom-up by :func:`compute_stats` or set while
the tree is built (searches per nested ``<header>`` took 29 s for 270 KB).
"""

from __future__ import annotations

import re
from collections import Counter
from dataclasses import dataclass
from urllib.parse import urlsplit

from tessera.parsing.budget import Deadline
from tessera.parsing.html_boiler import (
    ARTICLE_CHARS,
    BOILER_ROLES,
    BOILER_TAGS,
    DEFAULT_PARAMS,
    ContentParams,
    class_counts,
    headed_widget,
    is_boilerplate,
    is_card_block,
    names,
)
from tessera.parsing.html_lead import prune_lead
from tessera.parsing.html_score import score_tree
from tessera.parsing.html_stats import (
    BLOCK,
    DROP_TAGS,
    MAX_GOOD_LINK_DENSITY,
    MIN_GOOD,
    WIDE_WEIGHT,
    compute_stats,
    hidden_text,
    is_hidden,
    mark_hidden,
)
from tessera.parsing.html_text import words
from tessera.parsing.html_tree import Node

__all__ = [
    "BLOCK",
    "DROP_TAGS",
    "MAX_GOOD_LINK_DENSITY",
    "MIN_GOOD",
    "WIDE_WEIGHT",
    "Selection",
    "compute_stats",
    "hidden_text",
    "is_hidden",
    "mark_hidden",
    "select_content",
]

_MAIN_NAME = re.compile(r"articlebody|article-body|post-body|entry-content|post-content|story-body")


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


def _children(node: Node) -> list[Node]:
    return [c for c in node.children if isinstance(c, Node)]


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
    counts = class_counts(order) if params.name_repeat else None
    _prune(container, params, deadline, counts, src)
    if container.linked_good and container.good - container.linked_good >= ARTICLE_CHARS:
        _prune_cards(container, src, deadline)  # (pruning only lowers the prose outside links)
    if params.lead and src is not None:
        prune_lead(container, src, params.lead_prose, params.title_repeat, counts, deadline)
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
    if sc is None or sc.container.tag in ("ol", "ul", "dl"):
        # a list of comma-rich items (a paper's references) can outscore the prose beside it;
        # readability weighs lists down but still takes one that wins. The density container,
        # which holds the list, keeps the rest (the abstract above the references).
        return container
    if params.scored == "inside" and not (sc.container is container or _within(sc.container, container)):
        return container
    kept = sc.container.good - sum(n.good for n in sc.dropped)
    if kept < params.scored_keep * container.good:
        # a container that outscores everything else on the page by far may leave more behind
        dominant = sc.score > 0 and sc.score >= params.dominance * max(sc.runner_up, 0.0)
        if not (dominant and kept >= params.dominant_keep * container.good):
            return container
    for n in sc.dropped:
        n.drop = True
    return sc.container


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


def _prune(
    container: Node,
    params: ContentParams,
    deadline: Deadline | None = None,
    counts: Counter[str] | None = None,
    src: str | None = None,
) -> None:
    stack = [container]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()
        for c in node.children:
            if isinstance(c, Node) and not c.drop:
                if is_boilerplate(c, container, params, counts) or (
                    src is not None
                    and c.good < params.protect_share * container.good
                    and headed_widget(c, src)
                ):
                    c.drop = True
                else:
                    stack.append(c)


def _prune_cards(container: Node, src: str | None, deadline: Deadline | None) -> None:
    """Teaser cards after the article (:func:`is_card_block`), judged on the stats of what the
    first pruning kept (a pruned footer's prose is not the article's), in document order:
    ``before`` is the prose outside links seen so far (cards ahead of any article, a product
    grid over its FAQ, are the page's content)."""
    if src is None:
        return
    compute_stats(container, src, deadline)
    before = 0
    stack = [container]
    while stack:
        if deadline is not None:
            deadline.tick()
        node = stack.pop()  # in document order: ``before`` holds the prose of every block ahead
        if node is not container and is_card_block(node, container, before):
            node.drop = True
            continue
        kids = [c for c in node.children if isinstance(c, Node) and not c.drop]
        if node.tag != "a" or not node.linked_good:
            before += node.good - sum(c.good for c in kids)  # its own inline prose
        stack.extend(reversed(kids))


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
