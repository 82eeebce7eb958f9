"""Each built-in parser's version, in one place, and known without importing the parser.

A document parsed by another version of its parser is parsed again, so every listing asks the
installed version of each content type it lists (:class:`tessera.parsing.base.ParserVersions`).
Asking a parser meant importing it and its library (markdown-it-py, tree-sitter, PyMuPDF):
about 0.03 s of a 10,000-document no-op run's 0.7 s for Markdown alone. The parser classes take
their ``version`` from here, so a bump is made here and nowhere else.
"""

from __future__ import annotations

from collections.abc import Callable
from importlib.metadata import PackageNotFoundError
from importlib.metadata import version as dist_version

MARKDOWN = "markdown-it-py/4.3.0+tessera.2"
"""2: trust report (hidden spans)."""

HTML = "tessera-html/11"
"""2: a pipe inside a table cell is escaped; 3: trust report; 4: budgets (a table whose padded
grid would pass MAX_TABLE_CELLS keeps each row's own cells); 5: thin extractions fall back to
the visible text, whitespace-only lines dropped, boilerplate guards, runs of short blocks at the
edges of the content dropped (``ContentParams.edge_run``); 6: a readability-style scored
container (``html_score``, ``ContentParams.scored``); 7: UTF-8 over a stale legacy charset, CJK
prose weight, single named widgets, outweighing asides, teaser feeds, a dominant scored
container; 8: MathML is text, photo galleries, widgets named by id, teaser cards with
paragraphs inside links after the article, short control labels; 9: datelines and bylines
above an article's first paragraph are dropped (``html_lead``; a heading that repeats the page
title too, with ``ContentParams.title_repeat``, off by default); a breadcrumb trail is pruned
even when it reads as prose; 10: hidden ``modal`` dialogs, widget words run together with a
container noun (``jp-relatedposts``), ``cta`` blocks, a block under a short heading that names
a widget ("Related"), a short line of ``<time>`` marks that reads as prose above the first
paragraph, and a ``<div>`` of inline prose beside the scored container joins it like a
``<p>``; 11: a list is never the scored container (a paper's reference list outscored its
abstract), an author box is a widget."""

DOCX = "tessera-docx/1"
PPTX = "tessera-pptx/1"
XLSX = "tessera-xlsx/1"


def installed(dist: str) -> str:
    """The installed version of a distribution (``"unknown"`` for an editable or vendored build)."""
    try:
        return dist_version(dist)
    except PackageNotFoundError:  # pragma: no cover - an editable or vendored build
        return "unknown"


def pdf() -> str:
    """PyMuPDF's version (= ``pymupdf.VersionBind``) and ours. 2: trust report (hidden spans
    dropped); 3: OCR decided by image area, tables validated (prose rows kept out), banded rows
    split, cell lines kept, empty pages reported."""
    return f"pymupdf-{installed('pymupdf')}+tessera.3"


def tree_sitter(grammar_dist: str) -> str:
    """A tree-sitter grammar's version: the runtime's and the grammar distribution's."""
    return f"tree-sitter/{installed('tree-sitter')}+{grammar_dist}/{installed(grammar_dist)}"


def code(grammar_dist: str) -> str:
    """The code parser's version for one grammar."""
    return f"{tree_sitter(grammar_dist)}+tessera.1"


BUILTIN: dict[str, Callable[[], str]] = {
    "text/markdown": lambda: MARKDOWN,
    "application/pdf": pdf,
    "text/html": lambda: HTML,
    "text/x-python": lambda: code("tree-sitter-python"),
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": lambda: DOCX,
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": lambda: PPTX,
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": lambda: XLSX,
}
"""Content type -> its built-in parser's version (the keys are ``parsing.base``'s built-ins)."""
