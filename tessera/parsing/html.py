"""HTML pages: main content only, with exact byte offsets into the original page.

Pipeline (``html_*`` modules beside this one):

1. :mod:`~tessera.parsing.html_text`: charset from BOM, ``<meta charset>``/``http-equiv``,
   else UTF-8 or windows-1252; decoding keeps a char -> byte map of the *original* bytes;
   invalid bytes become U+FFFD and are counted (``invalid_bytes: N``).
2. :mod:`~tessera.parsing.html_tree`: a position-tracking tokenizer and an iterative tree
   builder (HTML5 implied end tags, raw-text elements skipped, depth past 512 flattened).
3. :mod:`~tessera.parsing.html_stats` and :mod:`~tessera.parsing.html_content`: hidden
   elements and form controls dropped (and counted: hidden text can carry prompt injection),
   text statistics summed, the main container chosen (``<main>``/``<article>``, a
   text-density descent or a readability-style score), boilerplate pruned inside it.
4. :mod:`~tessera.parsing.html_emit`: normalized text (entities decoded, whitespace
   collapsed, ``<pre>`` kept verbatim) as blocks: headings, paragraphs, lists, quotes,
   fences, Markdown-like tables; every char maps to its exact source byte range.

Limits (:class:`HtmlLimits`): pages over ``max_bytes`` or with more than ``max_elements``
elements are rejected as ``DocumentError("too_large")``; nesting deeper than ``max_depth`` is
flattened and reported; a parse that runs past ``wall_seconds`` is a ``timeout``. Every
pass ticks one :class:`~tessera.parsing.budget.Deadline` per tag or element (in process:
see :mod:`~tessera.parsing.budget` for why not in the sandbox child).
"""

from __future__ import annotations

import html
from dataclasses import dataclass

from tessera.errors import DocumentError
from tessera.offsets import OffsetMap
from tessera.parsing import versions
from tessera.parsing.budget import Deadline
from tessera.parsing.html_boiler import DEFAULT_PARAMS, ContentParams
from tessera.parsing.html_content import (
    MIN_GOOD,
    Selection,
    compute_stats,
    hidden_text,
    mark_hidden,
    select_content,
)
from tessera.parsing.html_emit import Emitter, assemble, drop_empty_headings, trim_edges
from tessera.parsing.html_text import (
    DecodedSource,
    Encoding,
    decode_entity,
    detect_encoding,
    slice_matches,
    source_text,
    words,
)
from tessera.parsing.html_tree import Node, Tree, TreeLimits, build_tree
from tessera.parsing.trust import instruction_like, invisible_chars
from tessera.parsing.validity import check_raw
from tessera.types import Block, ParsedDocument, SourceDocument, TrustReport

__all__ = [
    "ContentParams",
    "HtmlLimits",
    "HtmlParser",
    "decode_entity",
    "detect_encoding",
    "html_slice_matches",
    "page_encoding",
    "source_text",
]

INLINE_TAGS = words(
    "a abbr b bdi bdo cite code data del dfn em font i ins kbd mark q s samp small span strong "
    "sub sup time tt u var wbr img label"
)
"""Tags that do not separate words (for :func:`source_text` with ``strip_markup``)."""


NOSCRIPT_FALLBACK = 500
"""Chars of prose below which a page's ``<noscript>`` content is considered."""


@dataclass(frozen=True)
class HtmlLimits:
    max_bytes: int = 64 * 1024 * 1024
    max_elements: int = 500_000
    max_depth: int = 512
    max_replaced: int = 1_000_000
    wall_seconds: float = 30.0


def page_encoding(raw: bytes) -> str:
    """The Python codec the parser decodes ``raw`` with (for :func:`source_text`)."""
    return DecodedSource.decode(raw, detect_encoding(raw)).encoding.codec


def html_slice_matches(raw: bytes, byte_start: int, byte_end: int, text: str) -> bool:
    """The publish-time offset check for ``text/html`` rows (see :func:`slice_matches`).

    Text formats compare ``normalize(raw[byte_start:byte_end]) == text``; an HTML chunk's
    range also holds markup, entities and dropped boilerplate, so this compares the chunk's
    characters with the slice's text content instead.
    """
    return slice_matches(raw, byte_start, byte_end, text, page_encoding(raw))


@dataclass(frozen=True)
class _Page:
    """A decoded page, its tree with hidden elements marked and text statistics summed."""

    enc: Encoding
    src: DecodedSource
    tree: Tree
    hidden: list[tuple[Node, int]]
    order: list[Node]
    deadline: Deadline


class HtmlParser:
    name = "html"
    version = versions.HTML
    content_types: tuple[str, ...] = ("text/html",)

    def __init__(self, limits: HtmlLimits | None = None, params: ContentParams | None = None) -> None:
        self.limits = limits or HtmlLimits()
        self.params = params or DEFAULT_PARAMS

    def slice_matches(self, raw: bytes, byte_start: int, byte_end: int, text: str) -> bool:
        """A chunk's byte range holds markup and dropped boilerplate: compare as HTML."""
        return html_slice_matches(raw, byte_start, byte_end, text)

    def source_encoding(self, raw: bytes) -> str:
        return page_encoding(raw)

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        try:
            return self._parse(doc, raw)
        except DocumentError as e:
            if e.doc_id != "?":
                raise
            raise DocumentError(doc.doc_id, e.reason, str(e).split(": ", 2)[-1]) from None

    def parse_whole(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        """Every visible element's text, nothing pruned: what a thin extraction falls back to,
        and the candidate blocks ``bench.html_hybrid`` lets other extractors choose from."""
        page = self._prepare(doc, raw)
        text, omap, blocks = _emit(page.src, _whole(page.tree.root, page.hidden), page.deadline, len(raw))
        return ParsedDocument(doc.doc_id, text, tuple(blocks), omap, self.name, self.version)

    def _prepare(self, doc: SourceDocument, raw: bytes) -> _Page:
        limits = self.limits
        if len(raw) > limits.max_bytes:
            raise DocumentError(doc.doc_id, "too_large", f"{len(raw)} bytes > {limits.max_bytes}")
        check_raw(doc.doc_id, raw)  # a binary signature: invalid_content
        deadline = Deadline(doc.doc_id, limits.wall_seconds)
        enc = detect_encoding(raw)
        src = DecodedSource.decode(raw, enc)
        src.max_replaced = limits.max_replaced
        deadline.check()
        tree = build_tree(src.text, TreeLimits(limits.max_depth, limits.max_elements), doc.doc_id, deadline)
        hidden = mark_hidden(tree.root, src.text, deadline=deadline)
        order = compute_stats(tree.root, src.text, deadline)
        if tree.root.good < NOSCRIPT_FALLBACK and tree.noscripts:  # rendered by script: try <noscript>
            good = tree.root.good
            hidden = mark_hidden(tree.root, src.text, keep_noscript=True, deadline=deadline)
            order = compute_stats(tree.root, src.text, deadline)
            if tree.root.good < 2 * good + MIN_GOOD:
                hidden = mark_hidden(tree.root, src.text, deadline=deadline)
                order = compute_stats(tree.root, src.text, deadline)
        return _Page(enc, src, tree, hidden, order, deadline)

    def _parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        page = self._prepare(doc, raw)
        src, tree, deadline = page.src, page.tree, page.deadline
        visible = tree.root.text  # non-space chars of every visible element, before pruning
        sel = select_content(tree.root, page.order, page.hidden, deadline, self.params, src.text)
        text, omap, blocks = _emit(src, sel, deadline, len(raw), self.params)
        notes: list[str] = []
        kept = _chars(text)
        if visible >= self.params.thin_min_chars and kept < self.params.thin_ratio * visible:
            # far less than the page shows (or nothing): the whole visible text, flagged
            hidden = mark_hidden(tree.root, src.text, deadline=deadline)  # undoes the pruning
            sel = _whole(tree.root, hidden)
            text, omap, blocks = _emit(src, sel, deadline, len(raw))
            notes.append(
                f"thin_extraction: kept {100 * kept / visible:.0f}% of the visible text; "
                "fell back to the whole visible text"
            )
        elif not kept:
            notes.append(
                "empty_extraction: the page has no visible text"
                if not visible
                else f"empty_extraction: no main content in {visible} chars of visible text"
            )
        return ParsedDocument(
            doc_id=doc.doc_id,
            text=text,
            blocks=tuple(blocks),
            offsets=omap,
            parser=self.name,
            parser_version=self.version,
            warnings=tuple(notes + _warnings(page.enc, src, sel, tree.flattened, text)),
            trust=TrustReport(
                hidden_dropped=sel.hidden,
                instructions_dropped=sum(
                    1
                    for node in sel.hidden_nodes
                    if instruction_like(html.unescape(hidden_text(node, src.text)))
                ),
            ),
        )


def _whole(root: Node, hidden: list[tuple[Node, int]]) -> Selection:
    """The whole page selected, hidden elements dropped."""
    return Selection(root, len(hidden), sum(n for _, n in hidden), None, tuple(n for n, _ in hidden))


def _chars(text: str) -> int:
    return len(text) - sum(text.count(c) for c in " \n\t\r\xa0")


def _emit(
    src: DecodedSource, sel: Selection, deadline: Deadline, size: int, params: ContentParams | None = None
) -> tuple[str, OffsetMap, list[Block]]:
    emitter = Emitter(src, deadline)
    if sel.lead is not None:
        emitter.walk(sel.lead)
    emitter.walk(sel.container)
    records = drop_empty_headings(emitter.records)
    if params is not None:
        records = trim_edges(records, params.edge_run, params.edge_chars)
    deadline.check()
    builder, blocks = assemble(records)
    text, omap = builder.build(empty_at=size)
    deadline.check()
    return text, omap, blocks


def _warnings(declared: Encoding, src: DecodedSource, sel: Selection, flat: int, text: str) -> list[str]:
    out: list[str] = []
    if src.encoding.source == "guess":
        note = f" (declared {declared.codec} does not fit the bytes)" if declared.source == "meta" else ""
        out.append(f"encoding_guessed: {src.encoding.codec}{note}")
    if src.invalid:
        out.append(f"invalid_bytes: {src.invalid}")
    if sel.hidden:
        out.append(
            f"hidden_content: {sel.hidden} hidden elements with {sel.hidden_chars} chars of text "
            "dropped from the main content"
        )
    invisible = invisible_chars(text)
    if invisible:
        out.append(f"invisible_chars: {invisible} zero-width or bidi control chars in the text")
    if flat:
        out.append(f"too_deep: {flat} elements nested past the depth limit were flattened")
    return out
