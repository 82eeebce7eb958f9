"""A position-tracking HTML tokenizer and a small, iterative tree builder.

No HTML library reports where a node came from in the source bytes (lxml has line numbers,
Lexbor and html5lib nothing), so tokens are scanned here with ``re`` over the decoded page
and every node keeps the char offsets of its tags and text. Tree construction follows the
HTML5 rules that matter for text extraction: void elements, implied end tags (``p``, ``li``,
``dt``/``dd``, table rows and cells, headings), end tags matched within scope, raw-text
elements (``script``, ``style``, ...) skipped whole. It does not reorder content (no foster
parenting, no adoption agency), which keeps document order equal to source order.

Nothing recurses: the open-element stack is a list, and nesting past ``max_depth`` is
flattened (as Blink does at 512) and reported. The tokenizer ticks the parse's
:class:`~tessera.parsing.budget.Deadline` once per tag, comment or text run.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from tessera.errors import DocumentError
from tessera.parsing.budget import Deadline
from tessera.parsing.html_text import unescape_attr, words

Text = tuple[int, int]
"""A text node: ``[start, end)`` char range of the decoded page, entities still encoded."""

VOID = words(
    "area base basefont bgsound br col embed hr img image input keygen link meta param source track wbr"
)
# Elements whose content is not markup; all of them are dropped from the output. ``noscript``
# is parsed as markup, as a browser without scripting does: it is dropped too, unless the page
# has no content without it (pages rendered by script that ship a no-script copy). MathML is
# markup: its tokens are the formula's text (``annotation`` source is dropped, html_stats).
RAW = words("script style template iframe textarea title xmp noembed noframes svg plaintext")
IGNORED = frozenset(("html", "head", "body"))
HEADINGS = frozenset(("h1", "h2", "h3", "h4", "h5", "h6"))
SPECIAL = words(
    "address applet area article aside base basefont bgsound blockquote body br button caption "
    "center col colgroup dd details dir div dl dt embed fieldset figcaption figure footer form "
    "frame frameset h1 h2 h3 h4 h5 h6 head header hgroup hr html iframe img input keygen li link "
    "listing main marquee menu meta nav noembed noframes noscript object ol p param plaintext pre "
    "script search section select source style summary table tbody td template textarea tfoot th "
    "thead title tr track ul wbr xmp #root"
)
CLOSES_P = words(
    "address article aside blockquote center details dialog dir div dl fieldset figcaption figure "
    "footer form h1 h2 h3 h4 h5 h6 header hgroup hr main menu nav ol p pre listing section "
    "summary table ul li dd dt search"
)
SCOPE = frozenset(
    ("applet", "caption", "html", "table", "td", "th", "marquee", "object", "template", "#root")
)
BUTTON_SCOPE = SCOPE | {"button"}
LIST_SCOPE = SCOPE | {"ol", "ul"}
TABLE_SCOPE = frozenset(("html", "table", "template", "#root"))
TABLE_PARTS = frozenset(("thead", "tbody", "tfoot", "tr", "td", "th", "caption", "colgroup"))
MEDIA = frozenset(("img", "picture", "video"))

_MARKUP = re.compile(r"<(?:(/?)([A-Za-z][^\t\n\f\r />]*)|(!--)|(!)|(\?)|(/))")
_ATTR = re.compile(
    r"""[\t\n\f\r /]*(?:([^\t\n\f\r />][^\t\n\f\r />=]*)"""
    r"""(?:[\t\n\f\r ]*=[\t\n\f\r ]*(?:"([^"]*)(?:"|\Z)|'([^']*)(?:'|\Z)|([^\t\n\f\r >]*)))?)?"""
)
_RAW_END: dict[str, re.Pattern[str]] = {t: re.compile(r"</" + t + r"[\t\n\f\r />]", re.I) for t in RAW}


class Node:
    """An element. ``children`` holds nodes and text ranges in document order."""

    __slots__ = (
        "attrs",
        "children",
        "drop",
        "end",
        "ext_link",
        "forms",
        "good",
        "heads",
        "inline_link",
        "inline_text",
        "inline_wide",
        "link",
        "link_heads",
        "linked_good",
        "links",
        "media",
        "open_end",
        "parent",
        "start",
        "tag",
        "text",
        "top_heads",
    )

    def __init__(
        self, tag: str, attrs: dict[str, str], parent: Node | None, start: int, open_end: int
    ) -> None:
        self.tag = tag
        self.attrs = attrs
        self.parent = parent
        self.children: list[Node | Text] = []
        self.start = start
        self.open_end = open_end
        self.end = open_end
        self.drop = False
        self.text = 0
        self.link = 0
        self.inline_text = 0
        self.inline_link = 0
        self.inline_wide = 0
        self.good = 0
        self.linked_good = 0
        """The part of ``good`` inside short links (teaser cards: ``<a href><p>…</p></a>``)."""
        self.links = 0
        self.heads = 0
        self.link_heads = 0
        self.forms = 0
        self.top_heads = 0
        """Kept ``h1``/``h2`` in the subtree, itself included (filled by ``compute_stats``)."""
        self.ext_link = False
        """A kept link to another page in the subtree (filled by ``compute_stats``)."""
        self.media = False
        """An ``img``/``picture``/``video`` in the subtree, dropped or not (set while building)."""

    def get(self, name: str) -> str:
        return self.attrs.get(name, "")

    def __repr__(self) -> str:  # pragma: no cover - debugging aid
        return f"<{self.tag} {self.attrs} [{self.start}:{self.end}]>"


@dataclass(frozen=True)
class TreeLimits:
    max_depth: int = 512
    max_elements: int = 500_000


@dataclass
class Tree:
    root: Node
    elements: int
    flattened: int
    """Elements past ``max_depth`` that were attached flat instead of nested."""
    noscripts: int


def build_tree(src: str, limits: TreeLimits, doc_id: str = "?", deadline: Deadline | None = None) -> Tree:
    """Tokenize ``src`` and build its element tree, in one left-to-right pass."""
    b = _Builder(limits, doc_id, len(src))
    n = len(src)
    pos = 0
    while pos < n:
        if deadline is not None:
            deadline.tick()
        m = _MARKUP.search(src, pos)
        if m is None:
            b.text(pos, n)
            break
        lt = m.start()
        if lt > pos:
            b.text(pos, lt)
        name = m.group(2)
        if name is not None:
            tag = name.lower()
            quick = m.end() < n and src[m.end()] == ">"  # no attributes: the common case
            if m.group(1):  # end tag: attributes are scanned over and ignored
                end = m.end() + 1 if quick else _tag_end(src, m.end())
                if end < 0:
                    break  # EOF inside a tag: the tag is dropped
                b.end_tag(tag, lt, end)
                pos = end
                continue
            attrs: dict[str, str] = {}
            end = m.end() + 1 if quick else _tag_end(src, m.end(), attrs)
            if end < 0:
                break
            if tag in RAW:
                close = _RAW_END[tag].search(src, end)
                if close is None:
                    break  # unclosed script/style: the rest of the page is its content
                after = _tag_end(src, close.start() + 2 + len(tag))
                pos = n if after < 0 else after
                continue
            b.start_tag(tag, attrs, lt, end)
            pos = end
        elif m.group(3):  # comment
            if src.startswith(">", m.end()):
                pos = m.end() + 1
            elif src.startswith("->", m.end()):
                pos = m.end() + 2
            else:
                close_at = src.find("-->", m.end())
                pos = n if close_at < 0 else close_at + 3
        elif m.group(4) or m.group(5):  # doctype, CDATA, processing instruction: bogus comment
            close_at = src.find(">", m.end())
            pos = n if close_at < 0 else close_at + 1
        else:  # "</" not followed by a letter
            if src.startswith(">", m.end()):
                pos = m.end() + 1
            else:
                close_at = src.find(">", m.end())
                pos = n if close_at < 0 else close_at + 1
    b.finish(n)
    return Tree(b.root, b.elements, b.flattened, b.open_count.get("noscript", 0))


def _tag_end(src: str, pos: int, attrs: dict[str, str] | None = None) -> int:
    """Index after the ``>`` closing the tag whose attributes start at ``pos``; -1 at EOF."""
    n = len(src)
    while True:
        m = _ATTR.match(src, pos)
        assert m is not None  # the pattern matches the empty string
        if m.group(1) is not None and attrs is not None:
            key = m.group(1).lower()
            if key not in attrs:
                value = m.group(2)
                if value is None:
                    value = m.group(3)
                if value is None:
                    value = m.group(4)
                attrs[key] = unescape_attr(value or "")
        end = m.end()
        if end >= n:
            return -1
        if src[end] == ">":
            return end + 1
        pos = end if end > pos else end + 1


class _Builder:
    def __init__(self, limits: TreeLimits, doc_id: str, n: int) -> None:
        self.limits = limits
        self.doc_id = doc_id
        self.root = Node("#root", {}, None, 0, 0)
        self.root.end = n
        self.stack: list[Node] = [self.root]
        self.open: dict[str, int] = {}
        self.elements = 0
        self.flattened = 0
        self.open_count: dict[str, int] = {}

    def text(self, a: int, b: int) -> None:
        self.stack[-1].children.append((a, b))

    def _pop(self, at: int) -> Node:
        node = self.stack.pop()
        node.end = at
        self.open[node.tag] -= 1
        return node

    def _pop_through(self, tag: str, at: int, end: int) -> None:
        while len(self.stack) > 1:
            node = self._pop(at)
            if node.tag == tag:
                node.end = end
                return

    def _in_scope(self, tag: str, scope: frozenset[str]) -> bool:
        if not self.open.get(tag):
            return False
        for node in reversed(self.stack):
            if node.tag == tag:
                return True
            if node.tag in scope:
                return False
        return False

    def _close_item(self, names: tuple[str, ...], at: int) -> None:
        """Implied end of an open ``li`` (or ``dt``/``dd``) before a new one (HTML5 13.2.6.4.7)."""
        if not any(self.open.get(t) for t in names):
            return
        for node in reversed(self.stack):
            if node.tag in names:
                self._pop_through(node.tag, at, at)
                return
            if node.tag in SPECIAL and node.tag not in ("address", "div", "p"):
                return

    def _close_in_table(self, names: tuple[str, ...], stop: tuple[str, ...], at: int) -> None:
        if not any(self.open.get(t) for t in names):
            return
        for node in reversed(self.stack):
            if node.tag in names:
                self._pop_through(node.tag, at, at)
                return
            if node.tag in stop or node.tag in TABLE_SCOPE:
                return

    def start_tag(self, tag: str, attrs: dict[str, str], start: int, end: int) -> None:
        if tag in IGNORED:
            return
        if tag in CLOSES_P and self._in_scope("p", BUTTON_SCOPE):
            self._pop_through("p", start, start)
        if tag == "li":
            self._close_item(("li",), start)
        elif tag in ("dd", "dt"):
            self._close_item(("dd", "dt"), start)
        elif tag in HEADINGS and self.stack[-1].tag in HEADINGS:
            self._pop(start)
        elif tag == "a" and self.open.get("a"):
            self._close_item(("a",), start)
        elif tag == "tr":
            self._close_in_table(("tr",), (), start)
        elif tag in ("td", "th"):
            self._close_in_table(("td", "th"), ("tr",), start)
        elif tag in ("thead", "tbody", "tfoot"):
            self._close_in_table(("thead", "tbody", "tfoot"), (), start)
        elif tag in ("option", "optgroup") and self.stack[-1].tag == "option":
            self._pop(start)
        self.elements += 1
        if self.elements > self.limits.max_elements:
            raise DocumentError(self.doc_id, "too_large", f"more than {self.limits.max_elements} elements")
        if tag == "noscript":
            self.open_count[tag] = self.open_count.get(tag, 0) + 1
        parent = self.stack[-1]
        node = Node(tag, attrs, parent, start, end)
        parent.children.append(node)
        if tag in MEDIA:  # mark the ancestors once: a subtree search per <figure> was quadratic
            up: Node | None = node
            while up is not None and not up.media:
                up.media = True
                up = up.parent
        if tag in VOID:
            return
        if len(self.stack) > self.limits.max_depth:
            self.flattened += 1
            return
        self.stack.append(node)
        self.open[tag] = self.open.get(tag, 0) + 1

    def end_tag(self, tag: str, start: int, end: int) -> None:
        if tag in IGNORED:
            return
        if tag == "br":  # </br> is a <br> (HTML5)
            self.start_tag("br", {}, start, end)
            return
        if not self.open.get(tag):
            return
        if tag in SPECIAL:
            scope = (
                BUTTON_SCOPE
                if tag == "p"
                else LIST_SCOPE
                if tag == "li"
                else TABLE_SCOPE
                if tag in TABLE_PARTS or tag == "table"
                else SCOPE
            )
            if self._in_scope(tag, scope):
                self._pop_through(tag, start, end)
            return
        for node in reversed(self.stack):  # any other end tag (HTML5 "any other end tag")
            if node.tag == tag:
                self._pop_through(tag, start, end)
                return
            if node.tag in SPECIAL:
                return

    def finish(self, n: int) -> None:
        while len(self.stack) > 1:
            self._pop(n)
