"""From the selected tree to normalized text, blocks and an exact offset map.

The emitter turns kept elements into block records made of ops (see
:mod:`~tessera.parsing.html_inline`); :func:`assemble` replays the ops into an
:class:`~tessera.offsets.OffsetMapBuilder`, so every char maps to its source bytes.

Output shape (what the structural chunker expects): blocks separated by a blank line; a
heading is one line; a list has one line per item; a ``<pre>`` is one ``fence`` block; a data
table is ``| h | h |`` / ``| --- | --- |`` / ``| c | c |`` lines, colspan and rowspan expanded.
"""

from __future__ import annotations

import re

from tessera.offsets import OffsetMapBuilder
from tessera.parsing.budget import Deadline
from tessera.parsing.html_content import BLOCK
from tessera.parsing.html_inline import (
    BlockRec,
    Exit,
    Inline,
    Op,
    lstrip_newlines,
    op_end,
    op_text,
    rstrip_ops,
)
from tessera.parsing.html_table import is_data_table, table_records
from tessera.parsing.html_text import HTML_SPACE, DecodedSource
from tessera.parsing.html_tree import HEADINGS, Node, Text
from tessera.types import Block

_LANG = re.compile(r"(?:^|\s)(?:language|lang|highlight-source|highlight)-([\w+#.-]+)|brush:\s*([\w+#.-]+)")
LISTS = frozenset(("ul", "ol", "dl"))


class Emitter:
    """Walks kept nodes in document order and collects :class:`BlockRec` records."""

    def __init__(self, src: DecodedSource, deadline: Deadline | None = None) -> None:
        self.src = src
        self.deadline = deadline
        self.records: list[BlockRec] = []
        self.cur: BlockRec | None = None
        self.line = Inline(src)
        self.lists = 0
        self.quotes = 0
        self.heading = 0
        self.invalid = 0

    # -- block structure ----------------------------------------------------------------

    def _break(self, new_block: bool, at: int) -> None:
        """End the current line (``new_block``: and the current block) at char ``at``."""
        if self.heading:
            self.line.space(at, at)  # a line or block break inside a heading is a space
            return
        if self.line.has_text() and not _blank(self.line.ops):
            kind = "list" if self.lists else "quote" if self.quotes else "paragraph"
            if self.cur is None or self.cur.kind != kind:
                self._close()
                self.cur = BlockRec(kind)
            self.cur.lines.append(self.line.take())
        else:
            self.line.take()
        if new_block:
            self._close()

    def _close(self) -> None:
        if self.cur is not None and self.cur.lines:
            self.records.append(self.cur)
        self.cur = None

    def _grouped(self) -> bool:
        return bool(self.lists or self.quotes)

    def walk(self, top: Node) -> None:
        stack: list[Node | Text | Exit] = [top]
        deadline = self.deadline
        while stack:
            if deadline is not None:
                deadline.tick()
            item = stack.pop()
            if isinstance(item, tuple):
                self.line.text(item[0], item[1])
            elif isinstance(item, Exit):
                self._exit(item.node)
            elif not item.drop and self._enter(item):
                stack.append(Exit(item))
                stack.extend(reversed(item.children))
        self._break(True, top.end)
        self.invalid += self.line.invalid
        self.line.invalid = 0

    def _enter(self, node: Node) -> bool:
        """Open ``node``; False when its content was consumed here."""
        tag = node.tag
        if tag not in BLOCK and tag != "br" and tag != "code":
            return True
        at = node.start
        if tag in HEADINGS:
            if not self.heading:
                self._break(True, at)
                self.heading = int(tag[1])
            return True
        if tag == "br":
            self._break(False, at)
            return True
        if tag == "code" and not (_code_block(node, self.src.text) and not self.heading):
            return True
        if (tag == "pre" or tag == "code") and not self.heading:
            self._break(True, at)
            self._fence(node)
            return False
        if tag == "table" and not self.heading and is_data_table(node):
            self._break(True, at)
            self._table(node)
            return False
        if tag in LISTS:
            self._break(not self._grouped(), at)
            self.lists += 1
        elif tag == "blockquote":
            self._break(True, at)
            self.quotes += 1
        elif tag in ("li", "dt", "dd"):
            self._break(False, at)
        else:
            self._break(not self._grouped(), at)
        return True

    def _exit(self, node: Node) -> None:
        tag = node.tag
        if tag in HEADINGS:
            if self.heading == int(tag[1]):
                self.heading = 0
                ops = self.line.take()
                if ops and not _blank(ops):
                    title = " ".join(op_text(ops).split())
                    self._close()
                    self.records.append(BlockRec("heading", [ops], level=int(tag[1]), title=title))
            return
        if tag not in BLOCK:
            return
        at = max(node.end - 1, node.start)
        if tag in LISTS:
            self.lists -= 1
            self._break(not self._grouped(), at)
        elif tag == "blockquote":
            self._break(True, at)
            self.quotes -= 1
        elif tag in ("li", "dt", "dd"):
            self._break(False, at)
        else:
            self._break(not self._grouped(), at)

    # -- atomic blocks --------------------------------------------------------------------

    def _fence(self, node: Node) -> None:
        buf = Inline(self.src)
        lang = _language(node)
        text = self.src.text
        stack: list[Node | Text] = list(reversed(node.children))
        deadline = self.deadline
        while stack:
            if deadline is not None:
                deadline.tick()
            item = stack.pop()
            if isinstance(item, tuple):
                a, b = item
                if a == node.open_end and node.tag == "pre":  # HTML drops one newline after <pre>
                    a += 2 if text.startswith("\r\n", a) else 1 if text.startswith(("\n", "\r"), a) else 0
                if a < b:
                    buf.pre_text(a, b)
                continue
            if item.drop:
                continue
            if item.tag == "br":
                b0, b1 = self.src.byte(item.start), self.src.byte(item.open_end)
                buf.ops.append(("\n", b0, b1 - b0))
                continue
            if item.tag in BLOCK and buf.ops and not buf.ops[-1][0].endswith("\n"):
                buf.synthetic("\n", self.src.byte(item.start))
            if not lang:
                lang = _language(item)
            stack.extend(reversed(item.children))
        self.invalid += buf.invalid
        ops = rstrip_ops(lstrip_newlines(buf.ops))
        if ops and not _blank(ops):
            self.records.append(BlockRec("fence", [ops], info="```" + lang))

    def _table(self, table: Node) -> None:
        records, invalid = table_records(self.src, table, self.deadline)
        self.records.extend(records)
        self.invalid += invalid


def _blank(ops: list[Op]) -> bool:
    """Only whitespace (``&nbsp;`` included): such a line is not emitted, since no source char
    of it would survive the offset check (``<p>&nbsp;</p>`` spacers)."""
    return not op_text(ops).strip()


def _code_block(node: Node, src: str) -> bool:
    """A ``<code>`` that stands alone as a block (its parent holds nothing else) over lines."""
    parent = node.parent
    if parent is None or parent.tag not in BLOCK or parent.tag == "pre":
        return False
    for c in parent.children:
        if c is node:
            continue
        if isinstance(c, tuple):
            if src[c[0] : c[1]].strip(HTML_SPACE):
                return False
        elif not c.drop:
            return False
    stack: list[Node | Text] = list(node.children)
    while stack:
        item = stack.pop()
        if isinstance(item, tuple):
            if "\n" in src[item[0] : item[1]].strip(HTML_SPACE):
                return True
        elif not item.drop:
            stack.extend(item.children)
    return False


def _language(node: Node) -> str:
    for value in (node.get("data-lang"), node.get("data-language")):
        if value.strip():
            return value.strip().lower()
    m = _LANG.search(node.get("class").lower())
    if m:
        return (m.group(1) or m.group(2) or "").lower()
    return ""


def drop_empty_headings(records: list[BlockRec]) -> list[BlockRec]:
    """Headings with no content under them (their section was all boilerplate) go too."""
    keep = [True] * len(records)
    for k, rec in enumerate(records):
        if rec.kind != "heading":
            continue
        has = False
        for j in range(k + 1, len(records)):  # not records[k + 1 :]: a copy per heading
            nxt = records[j]
            if nxt.kind == "heading" and nxt.level <= rec.level:
                break
            if nxt.kind != "heading":
                has = True
                break
        keep[k] = has
    return [r for r, ok in zip(records, keep, strict=True) if ok]


PROSE_CHARS = 80
"""Chars for a paragraph or quote to count as prose for :func:`trim_edges`."""


def trim_edges(records: list[BlockRec], run: int, mean_chars: int) -> list[BlockRec]:
    """Drop a run of ``run`` or more short blocks (mean chars below ``mean_chars``) before the
    first or after the last prose block; headings just before the first prose block stay."""
    if run <= 0:
        return records
    size = [sum(len(op_text(line).strip()) for line in r.lines) for r in records]
    prose = [k for k, r in enumerate(records) if r.kind in ("paragraph", "quote") and size[k] >= PROSE_CHARS]
    if not prose:
        return records
    first, last = prose[0], prose[-1]
    lead_end = first
    while lead_end > 0 and records[lead_end - 1].kind == "heading" and first - lead_end < 2:
        lead_end -= 1
    keep_from = 0
    if lead_end >= run and sum(size[:lead_end]) < mean_chars * lead_end:
        keep_from = lead_end
    keep_to = len(records)
    tail = len(records) - last - 1
    if tail >= run and sum(size[last + 1 :]) < mean_chars * tail:
        keep_to = last + 1
    return records[keep_from:keep_to]


def assemble(records: list[BlockRec]) -> tuple[OffsetMapBuilder, list[Block]]:
    """Replay the ops into an :class:`OffsetMapBuilder`: blocks separated by a blank line.

    Line ends and the blank lines between blocks are width-0 chars at the end of the source
    bytes of the text before them.
    """
    builder = OffsetMapBuilder()
    blocks: list[Block] = []
    n = 0
    last = 0
    for rec in records:
        if n:
            builder.replace("\n", last, 0)
            n += 1
        start = n
        for line in rec.lines:
            for op in line:
                t, b, w = op
                if w < 0:
                    builder.verbatim(t, b)
                    n += len(t)
                else:
                    builder.replace(t, b, w)
                    n += 1
                last = max(last, op_end(op))
            builder.replace("\n", last, 0)
            n += 1
        blocks.append(Block(rec.kind, start, n, level=rec.level, info=rec.info, title=rec.title))
    return builder, blocks
