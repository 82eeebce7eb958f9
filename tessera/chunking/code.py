"""AST-aware code chunking over the blocks of a code parser (``tessera.parsing.code``).

1. The blocks form a tree by containment: module-level units (imports, statements,
   comments, functions, classes), a class's members, a function's body statements.
2. Units are packed in order up to ``target_tokens``: a definition bigger than half the
   target stands alone; smaller ones, statements and comments are packed together. A comment
   directly above a definition stays with it. A chunk's ``text`` is the exact source slice.
3. A unit that does not fit ``max_tokens`` even with reduced context is split: a function at
   its body statements (its head is decorators + signature), a class into header + docstring
   + small members and its methods, each part repeating the enclosing signatures as context
   (flag ``split_definition``, parts numbered ``part:k/n`` within the innermost split
   definition; a split ``if``/``for``/``try`` adds ``split_statement``). A
   statement too big alone falls back to line windows (``line_split``), a line too big to
   token windows (``windowed``). Nothing is truncated.
4. Text outside clean blocks (syntax errors) is chunked by line windows flagged ``degraded``.

``embedding_text`` = context (``tessera.chunking.code_context``) + the code, whose first line
gets its source indentation back. Every chunk carries ``anchor`` ``"L12-L40"`` and
``heading_path`` = qualified name parts.
"""

from __future__ import annotations

import bisect
import re
from dataclasses import replace

from tessera.chunking import versions
from tessera.chunking.base import ChunkContext
from tessera.chunking.code_context import FULL, LEVELS, NONE, SHORT, ContextRenderer, Frame
from tessera.chunking.code_units import (
    DEF_KINDS,
    Node,
    Piece,
    Scope,
    Unit,
    block_tree,
    build_chunks,
    common_path,
)
from tessera.chunking.windows import token_windows, trim
from tessera.types import Chunk, ParsedDocument, SourceDocument

CHARS_PER_TOKEN_CAP = 64
"""A range longer than ``max_tokens`` times this is taken not to fit without counting it."""
_FILLER = " \t\n\r\f\v;\\"
_SPACES = re.compile(r"\s{2,}")


class CodeChunker:
    name = "code"
    version = versions.CODE

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        run = _Run(doc, parsed, ctx)
        top = Scope((), (), (0, len(parsed.text)))
        root = block_tree(parsed)
        pieces = run.pack(run.units(root.children, 0, len(parsed.text), top, head=False), top)
        return build_chunks(doc, parsed, ctx, pieces, self.version, run.measure)


class _Run:
    def __init__(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> None:
        self.doc, self.parsed, self.ctx = doc, parsed, ctx
        self.text = parsed.text
        self.max = ctx.config.max_tokens
        self.target = min(ctx.config.target_tokens, self.max)
        self.render = ContextRenderer(doc.doc_id, parsed, ctx)
        self.lines = self.render.lines
        self.specials = ctx.counter.count("")
        self._counts: dict[tuple[int, int, str, bool], int] = {}
        errors = sorted((b.start, b.end) for b in parsed.blocks if b.kind == "error")
        self.error_starts = [s for s, _ in errors]
        self.error_ends = [e for _, e in errors]

    # --- measuring ---------------------------------------------------------------------------

    def bare(self, start: int, end: int) -> int:
        """An estimate of the code's tokens (no specials) for packing decisions: whitespace
        runs collapsed, since indentation makes no tokens yet costs tokenizer time; huge
        ranges count as over any budget. Every accepted piece is then counted exactly."""
        if end - start > self.max * CHARS_PER_TOKEN_CAP:
            return 1 << 30
        return self.ctx.counter.count(_SPACES.sub(" ", self.text[start:end])) - self.specials

    def emb(self, p: Piece) -> str:
        return p.header + (self.lines.indent(p.start) if p.indent else "") + self.text[p.start : p.end]

    def measure(self, p: Piece) -> tuple[str, int]:
        return self.emb(p), self.tokens(p)

    def tokens(self, p: Piece) -> int:
        """Exact tokens of the piece's embedding text (memoized: build() reuses them)."""
        key = (p.start, p.end, p.header, p.indent)
        n = self._counts.get(key)
        if n is None:
            n = self._counts[key] = self.ctx.tokens(self.emb(p))
        return n

    def piece(
        self,
        start: int,
        end: int,
        frames: tuple[Frame, ...],
        level: int,
        path: tuple[str, ...],
        scope: Scope,
        flags: tuple[str, ...] = (),
    ) -> Piece:
        s, e = trim(self.text, start, end)
        return Piece(s, e, self.render.header(s, e, frames, level), True, path, scope.parent, flags)

    # --- units -------------------------------------------------------------------------------

    def _filler(self, start: int, end: int) -> bool:
        """Whether a gap between units may simply go with the unit before it."""
        if not self.text[start:end].strip(_FILLER):
            return True
        k = bisect.bisect_left(self.error_ends, start + 1)  # first error ending after start
        return k >= len(self.error_starts) or self.error_starts[k] >= end

    def units(self, children: list[Node], a: int, b: int, scope: Scope, head: bool) -> list[Unit]:
        """The units of ``[a, b)``: a head (when splitting a definition or statement), the
        children, and degraded gaps. Own-line comments directly above a definition join it;
        each unit extends to the next one, so nothing between them is lost."""
        raw: list[Unit] = []
        pos = a
        if head:
            pos = children[0].start if children else b
            raw.append(Unit(a, pos, "head", None, scope.path))
        for c in children:
            assert c.block is not None
            if c.start > pos and not self._filler(pos, c.start):
                raw.append(Unit(pos, c.start, "degraded", None, scope.path))
            kind = c.block.kind
            if kind in DEF_KINDS:
                path = tuple(c.block.title.split("."))
                unit = Unit(c.start, c.end, "class" if kind == "class" else "def", c, path)
                while raw and self._leading_comment(raw[-1], unit):
                    unit = replace(unit, start=raw.pop().start)
            else:
                unit = Unit(c.start, c.end, "stmt", c, scope.path)
            raw.append(unit)
            pos = max(pos, c.end)
        if b > pos and not self._filler(pos, b):
            raw.append(Unit(pos, b, "degraded", None, scope.path))
        return [
            replace(
                u,
                start=a if k == 0 and u.kind != "degraded" else u.start,
                end=raw[k + 1].start if k + 1 < len(raw) else b,
            )
            for k, u in enumerate(raw)
        ]

    def _leading_comment(self, prev: Unit, unit: Unit) -> bool:
        node = prev.node
        if prev.kind != "stmt" or node is None or node.block is None or node.block.kind != "comment":
            return False
        own_line = not self.text[self.lines.line_start(node.start) : node.start].strip()
        between = self.text[node.end : unit.start]
        return own_line and between.count("\n") == 1 and not between.strip()

    # --- packing and splitting ---------------------------------------------------------------

    def pack(self, units: list[Unit], scope: Scope) -> list[Piece]:
        out: list[Piece] = []
        cur: list[Unit] = []
        cur_piece: Piece | None = None
        cur_tokens = 0
        cur_solo = False

        def frames_for(first: Unit) -> tuple[Frame, ...]:
            return scope.frames[:-1] if first.kind == "head" else scope.frames

        for u in units:
            if u.kind == "degraded":
                if cur_piece is not None:
                    out.append(cur_piece)
                cur, cur_piece = [], None
                out.extend(self.windows(u.start, u.end, scope.frames, scope.path, scope, ("degraded",)))
                continue
            n = self.bare(u.start, u.end)
            solo = u.kind in ("def", "class") and n > self.target // 2
            if cur_piece is not None and not solo and not cur_solo and cur_tokens + n <= self.target:
                path = common_path([c.path for c in cur] + [u.path])
                cand = self.piece(cur[0].start, u.end, frames_for(cur[0]), FULL, path, scope)
                t = self.tokens(cand)
                if t <= self.target:
                    cur.append(u)
                    cur_piece, cur_tokens = cand, t
                    continue
            if cur_piece is not None:
                out.append(cur_piece)
            cur, cur_piece = [], None
            whole = self.whole(u, frames_for(u), scope, n)
            if whole is not None:
                cur, cur_piece, cur_tokens, cur_solo = [u], whole, self.tokens(whole), solo
                continue
            out.extend(self.split(u, scope))
        if cur_piece is not None:
            out.append(cur_piece)
        return out

    def whole(self, u: Unit, frames: tuple[Frame, ...], scope: Scope, n: int) -> Piece | None:
        """The unit as one piece, with the richest context that fits ``max_tokens``."""
        if self.ctx.tokens("") + n > self.max:
            return None
        seen: set[str] = set()
        for level in LEVELS if not frames else LEVELS[: LEVELS.index(SHORT) + 1]:
            p = self.piece(u.start, u.end, frames, level, u.path, scope)
            if p.header in seen:
                continue
            seen.add(p.header)
            if self.tokens(p) <= self.max:
                return p
        return None

    def split(self, u: Unit, scope: Scope) -> list[Piece]:
        """A definition at its members or body statements, a compound statement at its
        clauses; without structure, line windows."""
        node = u.node
        block = node.block if node is not None else None
        if node is None or block is None or u.kind == "head":
            return self.windows(u.start, u.end, scope.frames, u.path, scope, ("line_split",))
        definition = block.kind in DEF_KINDS or block.info == "definition"
        body_start = node.children[0].start if node.children else None
        frame = self.render.frame(block, body_start, block.kind in DEF_KINDS, definition)
        inner = Scope(u.path, (*scope.frames, frame), (block.start, block.end))
        if node.children:
            parts = self.pack(self.units(node.children, u.start, u.end, inner, head=True), inner)
        else:
            parts = self.windows(u.start, u.end, inner.frames, u.path, inner, ("line_split",))
        flag = "split_definition" if definition else "split_statement"
        group = u.start if definition else -1
        return [replace(p, flags=(flag, *p.flags), group=p.group if p.group >= 0 else group) for p in parts]

    def windows(
        self,
        a: int,
        b: int,
        frames: tuple[Frame, ...],
        path: tuple[str, ...],
        scope: Scope,
        flags: tuple[str, ...],
    ) -> list[Piece]:
        """Greedy line windows up to ``target_tokens``; a line too big alone gets token windows."""
        level = NONE
        for lvl in LEVELS:
            if self.ctx.tokens(self.render.header(a, b, frames, lvl)) <= self.max // 2:
                level = lvl
                break
        head_tokens = self.ctx.tokens(self.render.header(a, b, frames, level))
        out: list[Piece] = []
        group: list[tuple[int, int]] = []
        est = 0

        def flush() -> None:
            nonlocal group
            if group:
                out.extend(self._fit_lines(group, frames, level, path, scope, flags))
            group = []

        for ls, le in self.lines.lines(a, b):
            if not self.text[ls:le].strip():
                if group:
                    group.append((ls, le))
                continue
            n = self.bare(ls, le)
            if group and est + n <= self.target:
                group.append((ls, le))
                est += n
                continue
            flush()
            group, est = [(ls, le)], head_tokens + n
        flush()
        return out

    def _fit_lines(
        self,
        group: list[tuple[int, int]],
        frames: tuple[Frame, ...],
        level: int,
        path: tuple[str, ...],
        scope: Scope,
        flags: tuple[str, ...],
    ) -> list[Piece]:
        p = self.piece(group[0][0], group[-1][1], frames, level, path, scope, flags)
        if p.start >= p.end:
            return []
        if self.bare(p.start, p.end) + self.specials <= self.max and self.tokens(p) <= self.max:
            return [p]
        if len(group) > 1:
            half = len(group) // 2
            return self._fit_lines(group[:half], frames, level, path, scope, flags) + self._fit_lines(
                group[half:], frames, level, path, scope, flags
            )
        header = p.header

        def render(t: str) -> str:
            return header + t

        size = self.max - self.ctx.tokens(render(""))
        spans = token_windows(self.text, p.start, p.end, self.ctx, size, 0, render)
        return [Piece(s, e, header, False, path, scope.parent, (*flags, "windowed")) for s, e in spans]
