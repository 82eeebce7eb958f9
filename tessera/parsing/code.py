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

Other languages: :data:`tessera.parsing.code_languages.LANGUAGES` maps a language name to
its grammar module and the node type names the walker needs (the walk itself is in
:mod:`tessera.parsing.code_walk`).
"""

from __future__ import annotations

from tessera.errors import DocumentError
from tessera.offsets import normalize_text_bytes
from tessera.parsing import versions
from tessera.parsing.base import SandboxLimits
from tessera.parsing.code_languages import PYTHON, CodeLanguage
from tessera.parsing.code_walk import MAX_ERROR_LINES, Deadline, Walker, error_lines, parse_tree
from tessera.parsing.validity import check_utf8
from tessera.types import ParsedDocument, SourceDocument


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
        self.version = versions.code(language.grammar_dist)
        self.content_types = language.content_types
        self.timeout_s = timeout_s
        self.max_chars = max_chars
        self.max_line_chars = max_line_chars

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        deadline = Deadline(doc.doc_id, self.timeout_s)
        check_utf8(doc.doc_id, raw)  # binary or garbage bytes: invalid_content
        text, omap, invalid = normalize_text_bytes(raw)
        self._check_size(doc.doc_id, text)
        warnings: list[str] = []
        if invalid:
            warnings.append(f"invalid_utf8: {invalid} bytes replaced")
        tree = parse_tree(self.language, text.encode("utf-8", "surrogatepass"), deadline)
        root = tree.root_node
        walker = Walker(self.language, text, deadline)
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
    version = versions.code(PYTHON.grammar_dist)
    content_types: tuple[str, ...] = PYTHON.content_types

    def __init__(self, timeout_s: float = 20.0, max_chars: int = 20_000_000, max_line_chars: int = 500_000):
        super().__init__(PYTHON, timeout_s, max_chars, max_line_chars)
