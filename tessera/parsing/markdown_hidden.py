"""Hidden text in Markdown: ranges a rendered page does not show but the normalized text keeps.

The Markdown parser's text is the decoded source (offsets are exact bytes), so hidden content
is not dropped; its ranges are reported (``TrustReport.hidden_spans``) and the chunks that
overlap them are flagged ``hidden_text``. Hidden here means:

* HTML comments (``<!-- ... -->``); an unclosed one that opens an HTML block runs to the end
  of that block (CommonMark), elsewhere ``<!--`` is literal text;
* raw HTML elements a browser does not show: the ``hidden`` attribute, ``aria-hidden="true"``,
  inline styles ``display:none``, ``visibility:hidden|collapse``, ``font-size:0``,
  ``opacity:0``, and ``<script>``, ``<style>``, ``<template>``; from the opening tag to its
  matching closing tag (an unclosed one runs to the end of its top-level block);
* link reference definitions with a title (the ``[//]: # (comment)`` idiom), which never
  render.

Only ranges whose hidden content has a letter or digit count (``<!-- -->`` carries nothing);
a comment counts when it carries prose (8 words or more) or reads like instructions, so
tooling directives such as ``<!-- TOC -->`` do not hide their chunks from search.
Code is not hidden text: fenced and indented code blocks (any nesting) and inline code spans
are skipped, as are backslash-escaped ``\\<``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Sequence
from functools import lru_cache

from markdown_it.token import Token

from tessera.parsing.trust import instruction_like
from tessera.types import Block

MAX_HIDDEN_ELEMENTS = 10_000
MIN_COMMENT_WORDS = 8
_EVENT = re.compile(r"\\.|`+|<!--|<[A-Za-z][A-Za-z0-9-]*", re.S)
_ATTR = re.compile(r"""([^\s"'=<>/`]+)(?:\s*=\s*(?:"([^"]*)"|'([^']*)'|([^\s"'=<>`]+)))?""")
_OPEN_TAG = re.compile(
    r"""<([A-Za-z][A-Za-z0-9-]*)"""
    r"""((?:\s+[^\s"'=<>/`]+(?:\s*=\s*(?:"[^"]*"|'[^']*'|[^\s"'=<>`]+))?)*)\s*(/?)>"""
)
_HIDDEN_STYLE = re.compile(
    r"display\s*:\s*none|visibility\s*:\s*(?:hidden|collapse)"
    r"|(?:font-size|opacity)\s*:\s*(?:0+(?:\.0*)?|\.0+)(?:[a-z%]*)\s*(?:;|!|$)",
    re.I,
)
_INVISIBLE_TAGS = frozenset(("script", "style", "template"))
_VOID = frozenset(
    ("area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "wbr")
)
_BLANK = re.compile(r"\n[ \t]*\n")
_REF_TITLE = re.compile(
    r"""(?m)^ {0,3}\[[^\]\n]+\]:[ \t]*(?:<[^>\n]*>|\S+)[ \t]*(?:\n[ \t]*)?"""
    r"""(?:"([^"]*)"|'([^']*)'|\(([^)]*)\))[ \t]*$"""
)
_WORD = re.compile(r"\w")


def hidden_spans(
    text: str, tokens: Sequence[Token], line_starts: list[int], blocks: Sequence[Block]
) -> list[tuple[int, int]]:
    """The hidden ranges of a Markdown document's text, sorted and merged."""

    def char(line: int) -> int:
        return line_starts[line] if line < len(line_starts) else len(text)

    code = sorted(
        (char(t.map[0]), char(t.map[1])) for t in tokens if t.type in ("fence", "code_block") and t.map
    )
    html_blocks = {char(t.map[0]): char(t.map[1]) for t in tokens if t.type == "html_block" and t.map}
    tops = sorted((b.start, b.end) for b in blocks)
    spans = _scan(text, code, html_blocks, tops) + _references(text, tokens, char)
    return _merge(spans)


def _scan(
    text: str, code: list[tuple[int, int]], html_blocks: dict[int, int], tops: list[tuple[int, int]]
) -> list[tuple[int, int]]:
    spans: list[tuple[int, int]] = []
    code_starts = [a for a, _ in code]
    elements = 0
    pos = 0
    while True:
        m = _EVENT.search(text, pos)
        if m is None:
            return spans
        at, tok = m.start(), m.group()
        k = bisect.bisect_right(code_starts, at) - 1
        if k >= 0 and code[k][0] <= at < code[k][1]:
            pos = code[k][1]
            continue
        if tok[0] == "\\":
            pos = m.end()
        elif tok[0] == "`":
            pos = _code_span_end(text, m.end(), len(tok))
        elif tok == "<!--":
            pos = _comment(text, at, html_blocks, spans)
        else:
            elements += 1
            pos = _element(text, at, tops, spans) if elements <= MAX_HIDDEN_ELEMENTS else m.end()


@lru_cache(maxsize=32)
def _closer(n: int) -> re.Pattern[str]:
    return re.compile(r"(?<!`)`{" + str(n) + r"}(?!`)")


def _code_span_end(text: str, after: int, n: int) -> int:
    """Where scanning resumes after a backtick run of length ``n`` ending at ``after``."""
    blank = _BLANK.search(text, after)
    close = _closer(n).search(text, after, blank.start() if blank else len(text))
    return close.end() if close else after


def _comment(text: str, at: int, html_blocks: dict[int, int], spans: list[tuple[int, int]]) -> int:
    for empty in ("<!-->", "<!--->"):
        if text.startswith(empty, at):
            return at + len(empty)
    end = text.find("-->", at + 4)
    if end >= 0:
        end += 3
    else:
        line = text.rfind("\n", 0, at) + 1
        if line not in html_blocks or text[line:at].strip():
            return at + 4  # literal text: an unclosed comment only runs on in an HTML block
        end = html_blocks[line]
    if _note(text[at + 4 : end - 3 if text.startswith("-->", end - 3) else end]):
        spans.append((at, end))
    return end


def _note(body: str) -> bool:
    """A comment that carries prose (``MIN_COMMENT_WORDS`` words) or reads like instructions.

    Tooling directives (``<!-- TOC -->``, ``<!-- markdownlint-disable MD013 -->``,
    ``<!-- prettier-ignore -->``) are common in real Markdown and say nothing to a reader:
    flagging their chunks would hide them from search for no gain."""
    return len(body.split()) >= MIN_COMMENT_WORDS or instruction_like(body)


def _hidden_tag(tag: str, attrs: str) -> bool:
    if tag in _INVISIBLE_TAGS:
        return True
    for m in _ATTR.finditer(attrs):
        name = m.group(1).lower()
        value = next((v for v in m.groups()[1:] if v is not None), "")
        if name == "hidden":
            return True
        if name == "aria-hidden" and value.strip().lower() == "true":
            return True
        if name == "style" and _HIDDEN_STYLE.search(value):
            return True
    return False


def _element(text: str, at: int, tops: list[tuple[int, int]], spans: list[tuple[int, int]]) -> int:
    m = _OPEN_TAG.match(text, at)
    if m is None:
        return at + 1
    tag = m.group(1).lower()
    if m.group(3) or tag in _VOID or not _hidden_tag(tag, m.group(2)):
        return m.end()
    close = _matching_close(text, tag, m.end())
    if close is None:
        k = bisect.bisect_right(tops, (at, len(text) + 1)) - 1
        close = tops[k][1] if k >= 0 and tops[k][0] <= at < tops[k][1] else len(text)
    if _WORD.search(text, m.end(), close):
        spans.append((at, close))
    return max(close, m.end())


def _matching_close(text: str, tag: str, start: int) -> int | None:
    """End of the closing tag that matches an opening ``tag`` before ``start`` (same-name nesting)."""
    depth = 1
    for m in _tag_pattern(tag).finditer(text, start):
        if m.group(1):
            depth -= 1
            if depth == 0:
                return m.end()
        elif not m.group().endswith("/>"):
            depth += 1
    return None


@lru_cache(maxsize=64)
def _tag_pattern(tag: str) -> re.Pattern[str]:
    return re.compile(r"<(/?)" + re.escape(tag) + r"(?=[\s/>])[^>]*>", re.I)


def _references(text: str, tokens: Sequence[Token], char: Callable[[int], int]) -> list[tuple[int, int]]:
    """Link reference definitions with a title, on lines no block token covers."""
    if "]:" not in text:
        return []
    covered = sorted((char(t.map[0]), char(t.map[1])) for t in tokens if t.level == 0 and t.map)
    starts = [a for a, _ in covered]
    out: list[tuple[int, int]] = []
    for m in _REF_TITLE.finditer(text):
        k = bisect.bisect_right(starts, m.start()) - 1
        if k >= 0 and covered[k][0] <= m.start() < covered[k][1]:
            continue  # inside a paragraph, a code block, ...: not a definition
        title = next((g for g in m.groups() if g is not None), "")
        if _WORD.search(title):
            out.append((m.start(), m.end()))
    return out


def _merge(spans: list[tuple[int, int]]) -> list[tuple[int, int]]:
    out: list[tuple[int, int]] = []
    for a, b in sorted(s for s in spans if s[0] < s[1]):
        if out and a <= out[-1][1]:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out
