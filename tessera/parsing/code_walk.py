"""The bounded tree-sitter walk behind :mod:`tessera.parsing.code`: a parse deadline checked
from tree-sitter's progress callback, the byte -> code point map, and the walker that turns a
syntax tree into blocks with recursion bounded by :data:`MAX_LEVEL`."""

from __future__ import annotations

import bisect
import re
import time
from collections.abc import Iterable

import tree_sitter as ts

from tessera.errors import DocumentError
from tessera.parsing.code_languages import CodeLanguage, node_text
from tessera.types import Block

MAX_LEVEL = 12
"""Blocks nested deeper than this stay inside their parent (a chunker windows them if too big)."""
MAX_ERROR_LINES = 20


class Deadline:
    def __init__(self, doc_id: str, seconds: float) -> None:
        self.doc_id = doc_id
        self.seconds = seconds
        self.end = time.monotonic() + seconds
        self.hit = False

    def expired(self, *_args: object) -> bool:
        if time.monotonic() > self.end:
            self.hit = True
        return self.hit

    def check(self) -> None:
        if self.expired():
            raise DocumentError(self.doc_id, "timeout", f"parsing took more than {self.seconds:g} s")


class CharMap:
    """Byte offsets of the UTF-8 encoding -> code point offsets of the text."""

    def __init__(self, text: str) -> None:
        self._bytes: list[int] = []  # byte offset where each non-ASCII char starts
        self._chars: list[int] = []
        self._ends: list[int] = []  # byte offset just after it
        extra = 0
        for m in re.finditer(r"[^\x00-\x7f]", text):
            i = m.start()
            width = len(m.group().encode("utf-8", "surrogatepass"))
            self._bytes.append(i + extra)
            self._chars.append(i)
            extra += width - 1
            self._ends.append(i + extra + 1)

    def __call__(self, b: int) -> int:
        k = bisect.bisect_right(self._bytes, b) - 1
        if k < 0:
            return b
        if b < self._ends[k]:
            return self._chars[k]
        return self._chars[k] + 1 + (b - self._ends[k])


class Walker:
    def __init__(self, lang: CodeLanguage, text: str, deadline: Deadline) -> None:
        self.lang = lang
        self.text = text
        self.deadline = deadline
        self.char = CharMap(text)
        self.blocks: list[Block] = []
        self.errors: list[tuple[int, int]] = []
        self.bound: dict[str, str] = {}  # name bound by a module-scope import -> the import
        self._steps = 0

    def _tick(self) -> None:
        self._steps += 1
        if self._steps % 512 == 0:
            self.deadline.check()

    def emit(self, kind: str, node: ts.Node, level: int, title: str = "", info: str = "") -> None:
        self.blocks.append(
            Block(kind, self.char(node.start_byte), self.char(node.end_byte), level, info, title)
        )

    def error(self, node: ts.Node) -> None:
        self.errors.append((self.char(node.start_byte), self.char(node.end_byte)))

    def error_blocks(self) -> list[Block]:
        """The ranges of syntax errors and of the nodes skipped for them, merged."""
        merged: list[list[int]] = []
        for start, end in sorted(self.errors):
            if merged and start <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], end)
            else:
                merged.append([start, end])
        return [Block("error", s, e) for s, e in merged if s < e]

    def definition(self, node: ts.Node) -> ts.Node | None:
        """The function or class a (possibly decorated) node defines."""
        lang = self.lang
        if node.type in lang.decorated_types:
            inner = node.child_by_field_name(lang.definition_field)
            return inner if inner is not None and self.definition(inner) is inner else None
        return node if node.type in lang.function_types or node.type in lang.class_types else None

    def signature(self, node: ts.Node) -> str:
        body = node.child_by_field_name(self.lang.body_field)
        end = node.end_byte
        if body is not None:
            colons = [c for c in node.children if c.type == ":" and c.end_byte <= body.start_byte]
            end = colons[-1].end_byte if colons else body.start_byte
        start = self.char(node.start_byte)
        return self.text[start : self.char(end)].rstrip()

    def is_docstring(self, node: ts.Node) -> bool:
        return (
            node.type == self.lang.docstring_statement
            and node.named_child_count == 1
            and node.named_children[0].type in self.lang.string_types
        )

    def visit(
        self,
        children: Iterable[ts.Node],
        level: int,
        prefix: tuple[str, ...],
        container: str,
        top: bool = False,
    ) -> None:
        """Blocks for the statements of the module, a class or function body, or a clause."""
        lang = self.lang
        title = ".".join(prefix)
        deeper = level < MAX_LEVEL
        first = True
        for child in children:
            self._tick()
            if child.type == "ERROR" or child.is_missing:
                self.error(child)
                continue
            if not child.is_named:
                continue  # punctuation (";")
            if child.type in lang.comment_types:
                self.emit("comment", child, level, title, "comment")
                continue
            was_first, first = first, False
            inner = self.definition(child)
            if inner is not None:
                body = inner.child_by_field_name(lang.body_field)
                is_class = inner.type in lang.class_types
                if child.has_error:
                    self.error(child)  # its clean parts are still walked below
                if container == "function":  # a nested definition stays a statement of its parent
                    if not child.has_error:
                        self.emit("statement", child, level, title, "definition")
                    if body is not None and deeper:
                        self.visit(body.children, level + 1, prefix, "function")
                    continue
                name_node = inner.child_by_field_name(lang.name_field)
                qual = (*prefix, node_text(name_node) if name_node is not None else "?")
                kind = "class" if is_class else "method" if container == "class" else "function"
                if not child.has_error:
                    self.emit(kind, child, level, ".".join(qual), self.signature(inner))
                if body is not None and deeper:
                    self.visit(body.children, level + 1, qual, "class" if is_class else "function")
                continue
            if container == "module" and child.type in lang.import_types and not child.has_error:
                self.import_block(child, level)
                continue
            if child.has_error:
                self.error(child)
            else:
                docstring = was_first and self.is_docstring(child)
                if top and docstring:
                    self.emit("docstring", child, level)
                    continue
                self.emit("statement", child, level, title, "docstring" if docstring else child.type)
            if deeper and (child.type in lang.compound_types or child.type in lang.clause_types):
                self.compound(child, level + 1, prefix, container)

    def compound(self, node: ts.Node, level: int, prefix: tuple[str, ...], container: str) -> None:
        """The blocks and clauses (elif, else, except, finally, case) of a compound statement."""
        lang = self.lang
        for child in node.children:
            if child.type == "ERROR" or child.is_missing:
                self.error(child)
            elif child.type in lang.comment_types:
                self.emit("comment", child, level, ".".join(prefix), "comment")
            elif child.type in lang.block_types:
                self.visit(child.children, level, prefix, container)
            elif child.type in lang.clause_types:
                if child.has_error:
                    self.error(child)
                else:
                    self.emit("statement", child, level, ".".join(prefix), child.type)
                if level < MAX_LEVEL:
                    self.compound(child, level + 1, prefix, container)

    def import_block(self, node: ts.Node, level: int) -> None:
        """An ``import`` block for a module-scope import; records the names it binds."""
        form = self.lang.import_form
        parsed = form(node, self.text) if form is not None else None
        if parsed is None:
            self.emit("statement", node, level, "", node.type)
            return
        info, names = parsed
        self.emit("import", node, level, " ".join(names), info)
        for name in names:
            if name != "*":
                self.bound.setdefault(name, info)

    def refs(self, root: ts.Node) -> None:
        """``ref`` blocks for identifiers that read an imported name.

        A cursor walk, not a tree-sitter query: queries turned quadratic on the wide, flat
        ERROR nodes of inputs like ``"(" * 100000`` (10+ s), and the query progress callback
        that could bound them segfaults in py-tree-sitter 0.26.1.
        """
        lang, bound = self.lang, self.bound
        if not bound:
            return
        is_ref = lang.is_reference
        cursor = root.walk()
        steps = 0
        while True:
            steps += 1
            if steps % 4096 == 0:
                self.deadline.check()
            node = cursor.node
            descend = node is not None and node.type not in lang.import_types
            if node is not None and node.type in lang.identifier_types:
                descend = False
                name = node_text(node)
                if name in bound and (is_ref is None or is_ref(node)):
                    self.emit("ref", node, 0, name)
            if descend and cursor.goto_first_child():
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return


_GRAMMARS: dict[str, ts.Language] = {}


def root_language(lang: CodeLanguage) -> ts.Language:
    if lang.name not in _GRAMMARS:
        _GRAMMARS[lang.name] = lang.grammar()
    return _GRAMMARS[lang.name]


def error_lines(root: ts.Node, deadline: Deadline | None = None) -> list[int]:
    """1-based lines of ERROR and MISSING nodes, found by an iterative descent."""
    lines: set[int] = set()
    stack = [root]
    steps = 0
    while stack:
        node = stack.pop()
        steps += 1
        if deadline is not None and steps % 512 == 0:
            deadline.check()
        if node.is_error or node.is_missing:
            lines.add(node.start_point.row + 1)
            if node.is_missing or len(lines) > MAX_ERROR_LINES:
                continue
        stack.extend(c for c in node.children if c.has_error or c.is_missing)
    return sorted(lines)


def parse_tree(lang: CodeLanguage, data: bytes, deadline: Deadline) -> ts.Tree:
    """Parse with a progress callback that aborts at the deadline (tree-sitter has no default)."""
    parser = ts.Parser(root_language(lang))  # a fresh parser: an aborted parse leaves state behind
    view = memoryview(data)
    step = 1 << 16

    def read(offset: int, _point: ts.Point) -> bytes:
        return bytes(view[offset : offset + step])

    try:
        tree = parser.parse(read, progress_callback=deadline.expired)
    except ValueError as e:  # "Parsing failed": cancelled by the callback, or no tree at all
        deadline.check()
        raise DocumentError(deadline.doc_id, "parse_error", f"tree-sitter failed: {e}") from e
    if tree is None:  # pragma: no cover - older bindings return None on cancellation
        deadline.check()
        raise DocumentError(deadline.doc_id, "parse_error", "tree-sitter returned no tree")
    return tree
