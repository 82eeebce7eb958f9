"""Markdown (CommonMark + GFM tables) with markdown-it-py.

The normalized text is the decoded source (BOM dropped, CRLF -> LF), so offsets map back to
bytes exactly. Blocks come from markdown-it's top-level tokens; a heading inside a fence is
code, not a section. An unclosed fence runs to the end of the document (CommonMark) and is
reported as a warning on the document, never silently accepted.

Binary bytes (a file signature, mostly invalid UTF-8) are refused before parsing
(``invalid_content``, see :mod:`~tessera.parsing.validity`; the pipeline also refuses NUL and
control bytes). Hidden HTML (comments, hidden elements) stays in the text,
its ranges reported in ``ParsedDocument.trust`` (see :mod:`~tessera.parsing.markdown_hidden`).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.token import Token

from tessera.errors import DocumentError
from tessera.offsets import normalize_text_bytes
from tessera.parsing.markdown_hidden import hidden_spans
from tessera.parsing.validity import check_utf8
from tessera.types import Block, ParsedDocument, SourceDocument, TrustReport

MAX_NESTING = 20
_KINDS = {
    "paragraph_open": "paragraph",
    "bullet_list_open": "list",
    "ordered_list_open": "list",
    "blockquote_open": "quote",
    "table_open": "table",
    "html_block": "html",
    "code_block": "code",
    "fence": "fence",
    "hr": "hr",
    "heading_open": "heading",
}


class MarkdownParser:
    name = "markdown"
    version = "markdown-it-py/4.3.0+tessera.2"  # 2: trust report (hidden spans)
    content_types: tuple[str, ...] = ("text/markdown",)

    def __init__(self) -> None:
        self._md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        check_utf8(doc.doc_id, raw)
        text, omap, invalid = normalize_text_bytes(raw)
        warnings: list[str] = []
        if invalid:
            warnings.append(f"invalid_utf8: {invalid} bytes replaced")
        try:
            tokens = self._md.parse(text)
        except Exception as e:  # markdown-it is fuzzed, but a parser bug must not kill the run
            raise DocumentError(doc.doc_id, "parse_error", f"markdown-it failed: {e!r}") from e
        line_starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            line_starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        blocks = _blocks(tokens, text, line_starts, warnings)
        spans = hidden_spans(text, tokens, line_starts, blocks) if "<" in text or "]:" in text else []
        return ParsedDocument(
            doc_id=doc.doc_id,
            text=text,
            blocks=tuple(blocks),
            offsets=omap,
            parser=self.name,
            parser_version=self.version,
            warnings=tuple(warnings),
            trust=TrustReport(hidden_spans=tuple(spans)),
        )


def _char(line_starts: list[int], line: int, text_len: int) -> int:
    return line_starts[line] if line < len(line_starts) else text_len


def _blocks(tokens: list[Token], text: str, line_starts: list[int], warnings: list[str]) -> list[Block]:
    blocks: list[Block] = []
    for i, tok in enumerate(tokens):
        if tok.level != 0 or tok.map is None or tok.type not in _KINDS:
            continue
        a, b = tok.map
        start, end = _char(line_starts, a, len(text)), _char(line_starts, b, len(text))
        kind = _KINDS[tok.type]
        if kind == "heading":
            title = tokens[i + 1].content.strip() if i + 1 < len(tokens) else ""
            blocks.append(Block("heading", start, end, level=int(tok.tag[1:]), title=title))
        elif kind == "fence":
            closed = _fence_closed(text, line_starts, a, b, tok.markup)
            if not closed:
                warnings.append(
                    f"unclosed_fence: line {a + 1} ({tok.markup}{tok.info}) runs to end of document"
                )
            blocks.append(
                Block("fence", start, end, info=f"{tok.markup}{tok.info}", title="" if closed else "unclosed")
            )
        else:
            blocks.append(Block(kind, start, end))
    return blocks


def _fence_closed(text: str, line_starts: list[int], a: int, b: int, markup: str) -> bool:
    """Whether the last line of a top-level fence is its closing fence (CommonMark 4.5)."""
    if b - 1 <= a:
        return False
    last_start = _char(line_starts, b - 1, len(text))
    nl = text.find("\n", last_start)
    line = text[last_start : nl if nl >= 0 else len(text)]
    closer = re.compile(r" {0,3}" + re.escape(markup[0]) + "{" + str(len(markup)) + r",}[ \t]*")
    return closer.fullmatch(line) is not None
