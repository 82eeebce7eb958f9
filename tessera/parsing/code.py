"""Source code with tree-sitter: definitions, imports and statements as blocks.

The normalized text is the decoded source (``normalize_text_bytes``: BOM dropped, CRLF -> LF),
so ``source[byte_start:byte_end]`` gives a block's exact text back. Tree-sitter parses the
UTF-8 encoding of that text; node byte offsets are mapped to code points.

Blocks (all ``start``/``end`` are code point offsets, half-open):

* ``function`` / ``class`` / ``method``: a definition, decorators included. ``title`` is the
  qualified name (``"Session.request"``), ``info`` the verbatim signature (``"def get(self,
  url, **kwargs):"``, several lines when the source has them). Definitions inside a
  module- or class-level ``if``/``try``/``with`` are blocks too. Nested functions stay inside
  their parent: they are statements of its body, not definition blocks.
* ``docstring``: the module docstring.
* ``import``: a module-scope import statement (also inside a module-level ``try``/``if``).
  ``info`` is its canonical one-line form (``"from .models import Request, Response as R"``),
  ``title`` the names it binds, space-separated, in clause order (``"*"`` for a wildcard).
* ``statement`` / ``comment``: a statement of the module, of a class or function body, of a
  compound statement's block, or a clause (``elif``/``else``/``except``/``finally``/``case``):
  the boundaries at which an oversized definition may be split. ``title`` is the qualified
  name of the enclosing definition (``""`` at module level), ``info`` the node type,
  ``"docstring"``, or ``"definition"`` for a function or class nested in a function.
* ``ref``: an identifier that refers to a name bound by a module-scope import (``title`` is
  the name). Chunkers use it to put the imports a definition really uses into its context.

``level`` is the nesting depth (0: module level; a method directly in a class body: 1).
Blocks nest by containment, which is how a chunker rebuilds the tree.

A tree with syntax errors (``root_node.has_error``) adds the warning ``"degraded: syntax
errors at lines ..."``. Only subtrees without errors produce blocks (the clean definitions
and statements inside a broken one included); ``error`` blocks mark the ERROR nodes and the
broken nodes skipped for them, which the chunker covers with line windows flagged
``degraded``.

Parsing is bounded: a progress callback aborts tree-sitter after ``timeout_s`` (tree-sitter
has no timeout by default; reason ``timeout``), overlong files or lines are refused before
parsing (``too_large``: a multi-megabyte single line is data, not code, and its token windows
would cost more than they are worth), and the tree is walked with a cursor or with recursion
bounded by :data:`MAX_LEVEL`, never by its own depth. The parser also declares ``sandbox``
limits so the pipeline runs it in a child process: a native crash cannot take the worker down.

Other languages: :data:`LANGUAGES` maps a language name to its grammar module and the node
type names the walker needs; :func:`language_for` resolves a content type or file name.
"""

from __future__ import annotations

import bisect
import importlib
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version
from pathlib import PurePosixPath

import tree_sitter as ts

from tessera.errors import DocumentError
from tessera.offsets import normalize_text_bytes
from tessera.parsing.base import SandboxLimits
from tessera.parsing.validity import check_utf8
from tessera.types import Block, ParsedDocument, SourceDocument

MAX_LEVEL = 12
"""Blocks nested deeper than this stay inside their parent (a chunker windows them if too big)."""
MAX_ERROR_LINES = 20


def _version(dist: str) -> str:
    try:
        return dist_version(dist)
    except PackageNotFoundError:  # pragma: no cover - an editable or vendored build
        return "unknown"


@dataclass(frozen=True)
class CodeLanguage:
    """A tree-sitter grammar plus the node type names the block walker relies on."""

    name: str
    content_types: tuple[str, ...]
    extensions: tuple[str, ...]
    grammar_module: str
    grammar_dist: str
    function_types: frozenset[str]
    class_types: frozenset[str]
    decorated_types: frozenset[str] = frozenset()
    import_types: frozenset[str] = frozenset()
    comment_types: frozenset[str] = frozenset({"comment"})
    identifier_types: frozenset[str] = frozenset({"identifier"})
    docstring_statement: str = ""
    string_types: frozenset[str] = frozenset({"string"})
    compound_types: frozenset[str] = frozenset()
    """Statements whose blocks and clauses are walked too (split points inside them)."""
    clause_types: frozenset[str] = frozenset()
    block_types: frozenset[str] = frozenset({"block"})
    body_field: str = "body"
    name_field: str = "name"
    definition_field: str = "definition"
    import_form: Callable[[ts.Node, str], tuple[str, list[str]] | None] | None = field(
        default=None, compare=False
    )
    """Canonical one-line form and bound names of an import node (None: binds nothing)."""
    is_reference: Callable[[ts.Node], bool] | None = field(default=None, compare=False)
    """Whether an identifier node reads a name (not an attribute, keyword or definition name)."""

    def grammar(self) -> ts.Language:
        module = importlib.import_module(self.grammar_module)
        return ts.Language(module.language())

    @property
    def version(self) -> str:
        return f"tree-sitter/{_version('tree-sitter')}+{self.grammar_dist}/{_version(self.grammar_dist)}"


def _node_text(node: ts.Node) -> str:
    raw = node.text
    return raw.decode("utf-8", "replace") if raw is not None else ""


def _python_import(node: ts.Node, _text: str) -> tuple[str, list[str]] | None:
    """``("from .models import Request, Response as R", ["Request", "R"])``."""
    clauses: list[str] = []
    names: list[str] = []
    for k, child in enumerate(node.children):
        if node.field_name_for_child(k) != "name" and child.type != "wildcard_import":
            continue
        if child.type == "wildcard_import":
            clauses.append("*")
            names.append("*")
        elif child.type == "aliased_import":
            target = child.child_by_field_name("name")
            alias = child.child_by_field_name("alias")
            if target is None or alias is None:
                return None
            clauses.append(f"{_node_text(target)} as {_node_text(alias)}")
            names.append(_node_text(alias))
        else:
            dotted = _node_text(child)
            clauses.append(dotted)
            names.append(dotted if node.type != "import_statement" else dotted.split(".")[0])
    if not clauses:
        return None
    body = ", ".join(" ".join(c.split()) for c in clauses)
    if node.type == "import_statement":
        return f"import {body}", names
    if node.type == "future_import_statement":
        return f"from __future__ import {body}", []
    module = node.child_by_field_name("module_name")
    if module is None:
        return None
    return f"from {''.join(_node_text(module).split())} import {body}", names


_NOT_READS = {
    "attribute": "attribute",
    "keyword_argument": "name",
    "function_definition": "name",
    "class_definition": "name",
}


def _python_reference(node: ts.Node) -> bool:
    parent = node.parent
    if parent is None:
        return False
    fname = _NOT_READS.get(parent.type)
    return fname is None or parent.child_by_field_name(fname) != node


PYTHON = CodeLanguage(
    name="python",
    content_types=("text/x-python",),
    extensions=(".py",),
    grammar_module="tree_sitter_python",
    grammar_dist="tree-sitter-python",
    function_types=frozenset({"function_definition"}),
    class_types=frozenset({"class_definition"}),
    decorated_types=frozenset({"decorated_definition"}),
    import_types=frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
    docstring_statement="expression_statement",
    compound_types=frozenset(
        {
            "if_statement",
            "for_statement",
            "while_statement",
            "try_statement",
            "with_statement",
            "match_statement",
        }
    ),
    clause_types=frozenset(
        {
            "elif_clause",
            "else_clause",
            "except_clause",
            "except_group_clause",
            "finally_clause",
            "case_clause",
        }
    ),
    import_form=_python_import,
    is_reference=_python_reference,
)

LANGUAGES: dict[str, CodeLanguage] = {"python": PYTHON}


def register_language(lang: CodeLanguage) -> None:
    LANGUAGES[lang.name] = lang


def language_for(content_type_or_path: str) -> CodeLanguage | None:
    """The language of a content type (``"text/x-python"``) or a file name (``"a/b.py"``)."""
    suffix = PurePosixPath(content_type_or_path).suffix.lower()
    for lang in LANGUAGES.values():
        if content_type_or_path in lang.content_types or (suffix and suffix in lang.extensions):
            return lang
    return None


class _Deadline:
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


class _CharMap:
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


class _Walker:
    def __init__(self, lang: CodeLanguage, text: str, deadline: _Deadline) -> None:
        self.lang = lang
        self.text = text
        self.deadline = deadline
        self.char = _CharMap(text)
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
                qual = (*prefix, _node_text(name_node) if name_node is not None else "?")
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
                name = _node_text(node)
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


def error_lines(root: ts.Node, deadline: _Deadline | None = None) -> list[int]:
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


def parse_tree(lang: CodeLanguage, data: bytes, deadline: _Deadline) -> ts.Tree:
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


class CodeParser:
    """Blocks of one tree-sitter language (see the module docstring for the block kinds)."""

    sandbox = SandboxLimits(wall_seconds=60.0, memory_mb=2048)

    def __init__(
        self,
        language: CodeLanguage,
        timeout_s: float = 20.0,
        max_chars: int = 20_000_000,
        max_line_chars: int = 500_000,
    ) -> None:
        self.language = language
        self.name = f"{language.name}-tree-sitter"
        self.version = f"{language.version}+tessera.1"
        self.content_types = language.content_types
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        deadline = _Deadline(doc.doc_id, self.timeout_s)
        check_utf8(doc.doc_id, raw)  # binary or garbage bytes: invalid_content
        text, omap, invalid = normalize_text_bytes(raw)
        self._check_size(doc.doc_id, text)
        warnings: list[str] = []
        if invalid:
            warnings.append(f"invalid_utf8: {invalid} bytes replaced")
        tree = parse_tree(self.language, text.encode("utf-8", "surrogatepass"), deadline)
        root = tree.root_node
        walker = _Walker(self.language, text, deadline)
        if root.has_error:
            lines = error_lines(root, deadline)
            shown = ", ".join(map(str, lines[:MAX_ERROR_LINES])) + (
                " …" if len(lines) > MAX_ERROR_LINES else ""
            )
            warnings.append(f"degraded: syntax errors at lines {shown}")
        if root.type == "ERROR":
            walker.error(root)
        walker.visit(root.children, 0, (), "module", top=True)
        walker.refs(root)
        blocks = sorted(walker.blocks + walker.error_blocks(), key=lambda b: (b.start, -b.end, b.kind))
        return ParsedDocument(
            doc_id=doc.doc_id,
            text=text,
            blocks=tuple(b for b in blocks if b.start < b.end),
            offsets=omap,
            parser=self.name,
            parser_version=self.version,
            warnings=tuple(warnings),
        )

    def _check_size(self, doc_id: str, text: str) -> None:
        if len(text) > self.max_chars:
            raise DocumentError(doc_id, "too_large", f"{len(text)} chars > {self.max_chars}")
        lines = text.split("\n")
        longest = max(range(len(lines)), key=lambda k: len(lines[k]))
        if len(lines[longest]) > self.max_line_chars:
            raise DocumentError(
                doc_id,
                "too_large",
                f"line {longest + 1} has {len(lines[longest])} chars > {self.max_line_chars}",
            )


class PythonParser(CodeParser):
    """Python source (``.py``) with tree-sitter-python."""

    name = "python-tree-sitter"
    version = f"{PYTHON.version}+tessera.1"
    content_types: tuple[str, ...] = PYTHON.content_types

    def __init__(self, timeout_s: float = 20.0, max_chars: int = 20_000_000, max_line_chars: int = 500_000):
        super().__init__(PYTHON, timeout_s, max_chars, max_line_chars)
