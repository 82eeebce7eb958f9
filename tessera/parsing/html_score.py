"""Readability-style candidate scoring on the parsed tree: a content score per container.

Every paragraph-like element (``p``, ``pre``, ``td``, a ``div`` without block children)
with at least :data:`MIN_PARA` chars scores ``1 + commas + min(chars / 100, 3)``; the score
goes to its parent in full, to its grandparent by half and to the three ancestors above by
``1 / (3 * level)``. A container starts from a tag weight (``div`` +5, lists and headings
below zero) and a class/id weight (boilerplate words -25, article words +25), and its final
score is scaled by ``1 - link density``. The best-scoring container wins; siblings scoring
``sibling_share`` of it (or prose paragraphs: a ``p``, or a ``div`` of inline content only,
which Readability turns into a ``p``) join it, as in Mozilla's Readability.

Nothing is rewritten: the scorer selects nodes (the container, and the siblings to drop when
it widens to their parent), so the emitted text keeps its byte-exact offsets. One pass
bottom-up, linear in the tree.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.parsing.budget import Deadline
from tessera.parsing.html_boiler import boiler_name, names
from tessera.parsing.html_text import words
from tessera.parsing.html_tree import Node

MIN_PARA = 25
"""Chars (non-space) for a paragraph to score."""
PARA_TAGS = words("p pre td")
_BLOCKS = words(
    "address article aside blockquote center dd details div dl dt fieldset figure footer form "
    "h1 h2 h3 h4 h5 h6 header hr li main nav ol p pre section table ul"
)
TAG_WEIGHT = {
    "div": 5.0,
    "article": 5.0,
    "section": 2.0,
    "pre": 3.0,
    "td": 3.0,
    "blockquote": 3.0,
    "address": -3.0,
    "ol": -3.0,
    "ul": -3.0,
    "dl": -3.0,
    "dd": -3.0,
    "dt": -3.0,
    "li": -3.0,
    "form": -3.0,
    "h1": -5.0,
    "h2": -5.0,
    "h3": -5.0,
    "h4": -5.0,
    "h5": -5.0,
    "h6": -5.0,
    "th": -5.0,
}
_POSITIVE = re.compile(r"article|body|content|entry|hentry|h-entry|main|page|post|text|blog|story")
_STRUCTURAL = frozenset(("#root", "html", "body"))


@dataclass
class Scored:
    top: Node
    score: float
    container: Node
    """``top``, or its parent when siblings join it."""
    dropped: tuple[Node, ...]
    """Children of ``container`` that are not part of the content (only when it widened)."""
    runner_up: float = 0.0
    """The best score outside ``container`` (neither inside it nor one of its ancestors)."""


def _class_weight(node: Node) -> float:
    value = names(node)
    if not value.strip():
        return 0.0
    w = 0.0
    if boiler_name(value):
        w -= 25.0
    if _POSITIVE.search(value):
        w += 25.0
    return w


def score_tree(
    root: Node, order: list[Node], src: str, sibling_share: float = 0.2, deadline: Deadline | None = None
) -> Scored | None:
    """The best-scoring container of the kept tree (``order``: pre-order, as compute_stats returns)."""
    commas: dict[int, int] = {}
    has_block: set[int] = set()
    for node in reversed(order):  # children before parents
        if deadline is not None:
            deadline.tick()
        n = 0
        for c in node.children:
            if isinstance(c, Node):
                if not c.drop:
                    n += commas.get(id(c), 0)
                    if c.tag in _BLOCKS:
                        has_block.add(id(node))
            else:
                piece = src[c[0] : c[1]]
                n += piece.count(",") + piece.count("\uff0c") + piece.count("\u3001")
        commas[id(node)] = n
    scores: dict[int, float] = {}
    nodes: dict[int, Node] = {}
    for node in order:
        if deadline is not None:
            deadline.tick()
        tag = node.tag
        if not (tag in PARA_TAGS or (tag == "div" and id(node) not in has_block)):
            continue
        if node.text < MIN_PARA:
            continue
        s = 1.0 + commas[id(node)] + min(node.text / 100.0, 3.0)
        p = node.parent
        level = 0
        while p is not None and level < 5:
            if p.tag in _STRUCTURAL:
                break
            key = id(p)
            if key not in scores:
                scores[key] = TAG_WEIGHT.get(p.tag, 0.0) + _class_weight(p)
                nodes[key] = p
            scores[key] += s if level == 0 else s / 2 if level == 1 else s / (level * 3)
            p = p.parent
            level += 1
    if not scores:
        return None
    final = {
        k: v * (1.0 - (nodes[k].link / nodes[k].text if nodes[k].text else 0.0)) for k, v in scores.items()
    }
    key = max(final, key=lambda k: final[k])
    top, best = nodes[key], final[key]
    # climb while the parent scores higher (the article split into scored parts)
    last = best
    p = top.parent
    while p is not None and p.tag not in _STRUCTURAL:
        ps = final.get(id(p))
        if ps is not None:
            if ps < last / 3:
                break
            if ps > last:
                top, best = p, ps
                break
            last = ps
        p = p.parent
    # an only child stands for its parent
    while (
        top.parent is not None
        and top.parent.tag not in _STRUCTURAL
        and sum(1 for c in top.parent.children if isinstance(c, Node) and not c.drop) == 1
    ):
        top = top.parent
    parent = top.parent
    if parent is None or parent.tag in _STRUCTURAL:
        return _ranked(Scored(top, best, top, ()), final, deadline)
    threshold = max(10.0, best * sibling_share)
    top_class = top.get("class")
    joined: list[Node] = []
    dropped: list[Node] = []
    for c in parent.children:
        if not isinstance(c, Node) or c.drop or c is top:
            continue
        s = final.get(id(c), 0.0)
        if top_class and c.get("class") == top_class:
            s += best * 0.2
        ok = s >= threshold
        if not ok and (c.tag == "p" or (c.tag == "div" and id(c) not in has_block)) and c.text:
            # a paragraph: a <p>, or a <div> of inline content only (Readability reads it as one)
            ld = c.link / c.text
            ok = (c.text > 80 and ld < 0.25) or (c.text <= 80 and ld == 0 and _ends_sentence(c, src))
        (joined if ok else dropped).append(c)
    if not joined:
        return _ranked(Scored(top, best, top, ()), final, deadline)
    return _ranked(Scored(top, best, parent, tuple(dropped)), final, deadline)


def _ranked(sc: Scored, final: dict[int, float], deadline: Deadline | None) -> Scored:
    """``sc`` with its runner-up: the best score of a candidate elsewhere on the page (one walk
    of the container's subtree and its ancestors, linear)."""
    skip: set[int] = set()
    p: Node | None = sc.container.parent
    while p is not None:
        skip.add(id(p))
        p = p.parent
    stack = [sc.container]
    while stack:
        if deadline is not None:
            deadline.tick()
        n = stack.pop()
        skip.add(id(n))
        stack.extend(c for c in n.children if isinstance(c, Node))
    best = max((v for k, v in final.items() if k not in skip), default=0.0)
    return Scored(sc.top, sc.score, sc.container, sc.dropped, best)


_SENTENCE_END = re.compile(r"\.( |$)")


def _ends_sentence(node: Node, src: str) -> bool:
    return _SENTENCE_END.search(src[node.open_end : node.end]) is not None
