"""Inline text of one line of HTML output, as *ops* that carry their source bytes.

An op is ``(text, byte, width)``: ``width == -1`` is a verbatim run of source chars starting
at ``byte`` (only ever UTF-8, or ASCII in a legacy encoding, so the offset map's UTF-8
arithmetic holds); otherwise one char standing for ``width`` source bytes: a decoded entity,
a collapsed whitespace run, a CRLF in ``<pre>``, U+FFFD for an invalid byte, a non-ASCII
char of a legacy encoding. Width 0 marks a char that is not in the source at all (line and
block separators, table pipes), placed at the markup that causes it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from tessera.parsing.html_text import HTML_SPACE, DecodedSource, decode_entity
from tessera.parsing.html_tree import Node

Op = tuple[str, int, int]

_SPECIAL = re.compile("[\t\n\r\f][ \t\n\r\f]*| [ \t\n\r\f]+|&|[\udc80-\udcff\x00]")
_PRE_SPECIAL = re.compile("\r\n?|&|[\udc80-\udcff\x00]")
_NON_ASCII = re.compile("[^\x00-\x7f]")


@dataclass
class BlockRec:
    kind: str
    lines: list[list[Op]] = field(default_factory=list)
    level: int = 0
    info: str = ""
    title: str = ""


class Inline:
    """Collects the ops of one line, collapsing HTML whitespace the way a browser does."""

    def __init__(self, src: DecodedSource) -> None:
        self.src = src
        self.ops: list[Op] = []
        self.pending: tuple[int, int] | None = None  # char range of a whitespace run to collapse
        self.invalid = 0

    def has_text(self) -> bool:
        return bool(self.ops)

    def space(self, a: int, b: int) -> None:
        if self.ops and self.pending is None:
            self.pending = (a, b)

    def _flush_space(self) -> None:
        if self.pending is not None:
            a, b = self.pending
            self.pending = None
            if b - a == 1 and self.src.text[a] == " ":
                self.ops.append((" ", self.src.byte(a), -1))
            else:
                self.ops.append((" ", self.src.byte(a), self.src.byte(b) - self.src.byte(a)))

    def text(self, a: int, b: int) -> None:
        """Text of ``src[a:b]`` in normal flow: entities decoded, whitespace collapsed."""
        s = self.src.text[a:b]
        lead = len(s) - len(s.lstrip(HTML_SPACE))
        if lead == len(s):
            self.space(a, b)
            return
        if lead:
            self.space(a, a + lead)
        self._flush_space()
        tail = a + len(s.rstrip(HTML_SPACE))
        self._run(a + lead, tail, _SPECIAL)
        if tail < b:
            self.space(tail, b)

    def pre_text(self, a: int, b: int) -> None:
        """Text inside ``<pre>``: whitespace kept, CRLF/CR -> LF, entities decoded."""
        self._run(a, b, _PRE_SPECIAL)

    def synthetic(self, ch: str, at: int) -> None:
        self.ops.append((ch, at, 0))

    def _run(self, a: int, b: int, special: re.Pattern[str]) -> None:
        text = self.src.text
        pos = a
        before = len(self.ops)
        for k, m in enumerate(special.finditer(text, a, b)):
            i = m.start()
            if k & 4095 == 4095:
                self.src.count_replaced(len(self.ops) - before)
                before = len(self.ops)
            if i > pos:
                self._plain(pos, i)
            ch = text[i]
            if ch == "&":
                decoded, n = decode_entity(text, i)
                if n == 0:
                    self._plain(i, i + 1)
                    pos = i + 1
                    continue
                end = min(i + n, b)
                b0, b1 = self.src.byte(i), self.src.byte(end)
                self.ops.append((decoded[0], b0, b1 - b0))
                self.ops.extend((c, b1, 0) for c in decoded[1:])
                pos = end
                continue
            j = m.end()
            b0, b1 = self.src.byte(i), self.src.byte(j)
            if ch == "\r" and special is _PRE_SPECIAL:  # CRLF or CR inside <pre>
                self.ops.append(("\n", b0, b1 - b0))
            elif ch in HTML_SPACE:
                self.ops.append((" ", b0, b1 - b0))
            else:  # invalid byte (lone surrogate of surrogateescape) or NUL
                if ch != "\x00":
                    self.invalid += 1
                self.ops.append(("\ufffd", b0, b1 - b0))
            pos = j
        if pos < b:
            self._plain(pos, b)
        self.src.count_replaced(len(self.ops) - before)

    def _plain(self, a: int, b: int) -> None:
        src = self.src
        if src.utf8:
            self.ops.append((src.text[a:b], src.byte(a), -1))
            return
        pos = a
        for m in _NON_ASCII.finditer(src.text, a, b):
            i = m.start()
            if i > pos:
                self.ops.append((src.text[pos:i], src.byte(pos), -1))
            b0, b1 = src.byte(i), src.byte(i + 1)
            self.ops.append((src.text[i], b0, b1 - b0))
            pos = i + 1
        if pos < b:
            self.ops.append((src.text[pos:b], src.byte(pos), -1))

    def take(self) -> list[Op]:
        ops, self.ops, self.pending = self.ops, [], None
        return ops


class Exit:
    """Marks, on an iterative walk's stack, where an element's children end."""

    __slots__ = ("node",)

    def __init__(self, node: Node) -> None:
        self.node = node


def op_text(ops: list[Op]) -> str:
    return "".join(t for t, _b, _w in ops)


def op_end(op: Op) -> int:
    t, b, w = op
    return b + (len(t.encode("utf-8", "surrogatepass")) if w < 0 else w)


def lstrip_newlines(ops: list[Op]) -> list[Op]:
    k = 0
    while k < len(ops) and ops[k][2] >= 0 and ops[k][0] == "\n":
        k += 1
    return ops[k:]


def rstrip_ops(ops: list[Op]) -> list[Op]:
    out = list(ops)
    while out:
        t, b, w = out[-1]
        if w >= 0:
            if t.isspace():
                out.pop()
                continue
            break
        stripped = t.rstrip()
        if stripped == t:
            break
        if stripped:
            out[-1] = (stripped, b, -1)
            break
        out.pop()
    return out
