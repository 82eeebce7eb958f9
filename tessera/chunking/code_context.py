"""Context for code chunks: file path, used imports and enclosing signatures.

The context is rendered in front of a chunk's code in ``embedding_text`` only; the chunk
``text`` stays the exact source slice. Example for a method::

    # file: requests/sessions.py
    # imports: from .models import Request; from .utils import to_key_val_list
    class Session(SessionRedirectMixin):
        ...
        def request(self, method, url):

Levels trade context for room: ``FULL`` has everything, ``NO_IMPORTS`` drops the import
line, ``BARE`` keeps only the enclosing heads (no decorators, no file line), ``DEFS`` only
the enclosing definitions' signatures (no ``if``/``for`` heads), ``SHORT`` only their first
lines, ``LAST`` only the innermost one's first line, ``NONE`` nothing.
"""

from __future__ import annotations

import bisect
from dataclasses import dataclass

from tessera.chunking.base import ChunkContext
from tessera.types import Block, ParsedDocument

FULL, NO_IMPORTS, BARE, DEFS, SHORT, LAST, NONE = range(7)
LEVELS = (FULL, NO_IMPORTS, BARE, DEFS, SHORT, LAST, NONE)


@dataclass(frozen=True)
class Frame:
    """An enclosing definition repeated as context: class for a method, def for a split part."""

    full: str  # from the start of its first line (decorators) to the end of the signature
    bare: str  # indentation + signature
    short: str  # indentation + first line of the signature
    indent: str  # indentation of its body, for the "..." line
    definition: bool = True  # False for a compound statement's head (``if x:``)

    def render(self, level: int) -> str:
        if level >= DEFS and not self.definition:
            return ""
        head = self.full if level <= NO_IMPORTS else self.short if level >= SHORT else self.bare
        return f"{head}\n{self.indent}...\n"


class SourceLines:
    """Line numbers and indentation of the normalized text."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.starts = [0]
        pos = text.find("\n")
        while pos >= 0:
            self.starts.append(pos + 1)
            pos = text.find("\n", pos + 1)

    def line(self, i: int) -> int:
        """1-based line of code point ``i``."""
        return bisect.bisect_right(self.starts, i)

    def line_start(self, i: int) -> int:
        return self.starts[self.line(i) - 1]

    def indent(self, i: int) -> str:
        """The whitespace before ``i`` on its line, or "" when code precedes it."""
        before = self.text[self.line_start(i) : i]
        return before if not before.strip() else ""

    def lines(self, start: int, end: int) -> list[tuple[int, int]]:
        out: list[tuple[int, int]] = []
        pos = start
        while pos < end:
            nl = self.text.find("\n", pos, end)
            stop = end if nl < 0 else nl + 1
            out.append((pos, stop))
            pos = stop
        return out


class ImportIndex:
    """Module imports by bound name, and where each imported name is referenced."""

    def __init__(self, blocks: tuple[Block, ...]) -> None:
        self.clauses: dict[str, list[tuple[str, str, int]]] = {}  # name -> [(module, clause, at)]
        refs: list[tuple[int, str]] = []
        for b in blocks:
            if b.kind == "ref":
                refs.append((b.start, b.title))
            elif b.kind == "import":
                self._add(b)
        refs.sort()
        self._ref_starts = [s for s, _ in refs]
        self._ref_names = [n for _, n in refs]

    def _add(self, b: Block) -> None:
        if b.info.startswith("from "):
            module, sep, rest = b.info[5:].partition(" import ")
            if not sep:
                return
        elif b.info.startswith("import "):
            module, rest = "", b.info[7:]
        else:
            return
        clauses, names = rest.split(", "), b.title.split(" ")
        if len(clauses) != len(names):
            return
        for name, clause in zip(names, clauses, strict=True):
            if name != "*":
                entry = (module, clause, b.start)
                known = self.clauses.setdefault(name, [])
                if entry not in known:
                    known.append(entry)

    def used(self, start: int, end: int) -> list[str]:
        """Import statements, reduced to the names referenced in ``[start, end)`` (imports
        inside the range itself left out)."""
        lo = bisect.bisect_left(self._ref_starts, start)
        hi = bisect.bisect_left(self._ref_starts, end)
        groups: dict[str, list[str]] = {}
        for name in dict.fromkeys(self._ref_names[lo:hi]):
            for module, clause, at in self.clauses.get(name, []):
                if start <= at < end:
                    continue
                key = f"from {module} import" if module else "import"
                if clause not in groups.setdefault(key, []):
                    groups[key].append(clause)
        out: list[str] = []
        for key, clauses in groups.items():
            if key == "import":
                out.extend(f"import {c}" for c in clauses)
            else:
                out.append(f"{key} {', '.join(clauses)}")
        return out


class ContextRenderer:
    """Renders headers; the import line is capped at a quarter of the token budget."""

    def __init__(self, doc_id: str, parsed: ParsedDocument, ctx: ChunkContext) -> None:
        self.doc_id = doc_id
        self.ctx = ctx
        self.lines = SourceLines(parsed.text)
        self.imports = ImportIndex(parsed.blocks)
        self.file_line = self._file_line(doc_id)

    def _file_line(self, doc_id: str) -> str:
        """``# file: <doc id>``, its head cut (``…``) to an eighth of the budget, or ""."""
        line = f"# file: {doc_id}"
        limit = self.ctx.config.max_tokens // 8
        while self.ctx.tokens(line) > limit:
            if not doc_id:
                return ""
            doc_id = doc_id[max(1, len(doc_id) // 4) :]
            line = f"# file: …{doc_id}"
        return line

    def import_line(self, start: int, end: int) -> str:
        used = self.imports.used(start, end)
        limit = self.ctx.config.max_tokens // 4
        while used:
            line = "# imports: " + "; ".join(used)
            if len(line) <= limit or self.ctx.tokens(line) <= limit:
                return line
            used = used[: len(used) * 3 // 4] if len(used) > 1 else []
        return ""

    def header(self, start: int, end: int, frames: tuple[Frame, ...], level: int) -> str:
        parts: list[str] = []
        if level <= NO_IMPORTS and self.file_line:
            parts.append(self.file_line + "\n")
        if level == FULL:
            imports = self.import_line(start, end)
            if imports:
                parts.append(imports + "\n")
        if level == LAST:
            defs = [f for f in frames if f.definition]
            parts.extend(f.render(level) for f in defs[-1:])
        elif level < NONE:
            parts.extend(f.render(level) for f in frames)
        return "".join(parts)

    def frame(
        self, block: Block, body_start: int | None, signature: bool = True, definition: bool = True
    ) -> Frame:
        """A definition's signature (``block.info``), or a statement's head (``if x:``, or a
        nested ``def``) when ``signature`` is false; decorators belong to ``full`` only."""
        text = self.lines.text
        sig = block.info if signature else ""
        pos = text.find(sig, block.start, block.end) if sig else -1
        if pos < 0:
            end = body_start if body_start is not None else text.find("\n", block.start, block.end)
            head = text[block.start : end if end > block.start else block.end].rstrip()
            pos = block.start
            for line in head.split("\n")[:-1]:  # skip decorator lines
                if not line.lstrip().startswith("@"):
                    break
                pos += len(line) + 1
            pos += len(text[pos : block.start + len(head)]) - len(
                text[pos : block.start + len(head)].lstrip()
            )
            sig = text[pos : block.start + len(head)]
        indent = self.lines.indent(pos)
        body_indent = self.lines.indent(body_start) if body_start is not None else ""
        return Frame(
            full=text[self.lines.line_start(block.start) : pos + len(sig)],
            bare=indent + sig,
            short=self._cut(indent + sig.split("\n", 1)[0]),
            indent=body_indent or indent + "    ",
            definition=definition,
        )

    def _cut(self, line: str) -> str:
        """A signature line cut (``…``) to half the budget: context, never content."""
        limit = self.ctx.config.max_tokens // 2
        if len(line) + self.ctx.tokens("") <= limit or self.ctx.tokens(line) <= limit:
            return line
        while len(line) > 8 and self.ctx.tokens(line + " …") > limit:
            line = line[: len(line) * 3 // 4]
        return line + " …"
