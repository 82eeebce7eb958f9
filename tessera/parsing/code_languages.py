"""Code languages for the tree-sitter parser: a grammar plus the node type names the block
walker needs, registered by name (:data:`LANGUAGES`); :func:`language_for` resolves a content
type or file name. Python is built in."""

from __future__ import annotations

import importlib
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import PurePosixPath

import tree_sitter as ts

from tessera.parsing import versions
from tessera.registry import Registry


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
        return versions.tree_sitter(self.grammar_dist)


def node_text(node: ts.Node) -> str:
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
            clauses.append(f"{node_text(target)} as {node_text(alias)}")
            names.append(node_text(alias))
        else:
            dotted = node_text(child)
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
    return f"from {''.join(node_text(module).split())} import {body}", names


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

LANGUAGES: Registry[CodeLanguage] = Registry("code language")
"""Language name -> :class:`CodeLanguage`; a name is taken once."""


def register_language(lang: CodeLanguage) -> None:
    LANGUAGES.register(lang.name, lang)


register_language(PYTHON)


def language_for(content_type_or_path: str) -> CodeLanguage | None:
    """The language of a content type (``"text/x-python"``) or a file name (``"a/b.py"``)."""
    suffix = PurePosixPath(content_type_or_path).suffix.lower()
    for _, lang in LANGUAGES.items():
        if content_type_or_path in lang.content_types or (suffix and suffix in lang.extensions):
            return lang
    return None
