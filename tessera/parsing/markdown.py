"""Markdown (CommonMark + GFM tables) with markdown-it-py.

The normalized text is the decoded source (BOM dropped, CRLF -> LF), so offsets map back to
bytes exactly. Blocks come from markdown-it's top-level tokens; a heading inside a fence is
code, not a section. An unclosed fence runs to the end of the document (CommonMark) and is
reported as a warning on the document, never silently accepted.

Budget (:mod:`~tessera.parsing.budget`, :data:`DEFAULT_BUDGET`): a file over ``max_bytes`` is
``too_large`` before parsing; a parse past ``wall_seconds`` is a ``timeout``. markdown-it-py
has no callback, so rules that only read the clock sit first in its block and
post-processing chains (every block line, every inline run) and, for files over
:data:`INLINE_CHECK_BYTES`, in its inline chain (every inline position), and raise the
``timeout``; the deadline travels in markdown-it's ``env``, so one parser serves any thread.
A smaller file cannot keep the inline parser busy long (markdown-it-py 4.x is linear, about
10 µs per byte at worst here), and a rule at every inline position cost about 8 % of the parse.

Binary bytes (a file signature, mostly invalid UTF-8) are refused before parsing
(``invalid_content``, see :mod:`~tessera.parsing.validity`; the pipeline also refuses NUL and
control bytes). Hidden HTML (comments, hidden elements) stays in the text,
its ranges reported in ``ParsedDocument.trust`` (see :mod:`~tessera.parsing.markdown_hidden`).
"""

from __future__ import annotations

import re

from markdown_it import MarkdownIt
from markdown_it.ruler import RuleOptionsType
from markdown_it.rules_block import StateBlock
from markdown_it.rules_core import StateCore
from markdown_it.rules_inline import StateInline
from markdown_it.token import Token

from tessera.errors import DocumentError
from tessera.offsets import normalize_text_bytes
from tessera.parsing import versions
from tessera.parsing.budget import Deadline, ParseBudget, check_size
from tessera.parsing.markdown_hidden import hidden_spans
from tessera.parsing.validity import check_utf8
from tessera.types import Block, ParsedDocument, SourceDocument, TrustReport

MAX_NESTING = 20
INLINE_CHECK_BYTES = 64 * 1024
DEFAULT_BUDGET = ParseBudget(wall_seconds=30.0, max_bytes=16 * 1024 * 1024)
_ENV = "tessera_deadline"
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
    version = versions.MARKDOWN
    content_types: tuple[str, ...] = ("text/markdown",)

    def __init__(self, budget: ParseBudget | None = None) -> None:
        self.budget = budget or DEFAULT_BUDGET
        self._md = _markdown_it(inline_checks=False)
        self._md_checked: MarkdownIt | None = None  # with the inline deadline rule, built on demand

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        check_size(doc.doc_id, raw, self.budget)
        deadline = Deadline(doc.doc_id, self.budget.wall_seconds)
        check_utf8(doc.doc_id, raw)
        text, omap, invalid = normalize_text_bytes(raw)
        warnings: list[str] = []
        if invalid:
            warnings.append(f"invalid_utf8: {invalid} bytes replaced")
        md = self._md
        if len(text) > INLINE_CHECK_BYTES:
            if self._md_checked is None:
                self._md_checked = _markdown_it(inline_checks=True)
            md = self._md_checked
        try:
            tokens = md.parse(text, {_ENV: deadline})
        except DocumentError:
            raise  # the budget's timeout
        except Exception as e:  # markdown-it is fuzzed, but a parser bug must not kill the run
            raise DocumentError(doc.doc_id, "parse_error", f"markdown-it failed: {e!r}") from e
        deadline.check()
        line_starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            line_starts.append(pos + 1)
            pos = text.find("\n", pos + 1)
        blocks = _blocks(tokens, text, line_starts, warnings)
        deadline.check()
        spans = hidden_spans(text, tokens, line_starts, blocks) if "<" in text or "]:" in text else []
        deadline.check()
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


def _markdown_it(inline_checks: bool) -> MarkdownIt:
    """CommonMark + GFM tables, ``maxNesting`` explicit, with the deadline rules first."""
    md = MarkdownIt("commonmark", {"maxNesting": MAX_NESTING}).enable("table")
    chains: RuleOptionsType = {"alt": ["paragraph", "reference", "blockquote", "list"]}
    md.block.ruler.before("table", "deadline", _block_tick, chains)
    if inline_checks:
        md.inline.ruler.before("text", "deadline", _inline_tick)
    md.inline.ruler2.before("balance_pairs", "deadline", _post_tick)
    md.core.ruler.after("block", "deadline", _core_tick)
    return md


def _tick(env: object) -> None:
    deadline = env.get(_ENV) if isinstance(env, dict) else None
    if isinstance(deadline, Deadline):
        deadline.tick()


def _block_tick(state: StateBlock, start_line: int, end_line: int, silent: bool) -> bool:
    _tick(state.env)
    return False


def _inline_tick(state: StateInline, silent: bool) -> bool:
    _tick(state.env)
    return False


def _post_tick(state: StateInline) -> None:
    _tick(state.env)


def _core_tick(state: StateCore) -> None:
    deadline = state.env.get(_ENV)
    if isinstance(deadline, Deadline):
        deadline.check()


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
