"""The Parser protocol and its registry by content type."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import PurePosixPath
from typing import Protocol

from tessera.errors import DocumentError
from tessera.types import ParsedDocument, SourceDocument


class Parser(Protocol):
    name: str
    version: str
    content_types: tuple[str, ...]

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument: ...


_REGISTRY: dict[str, Callable[[], Parser]] = {}
_EXTENSIONS: dict[str, str] = {".md": "text/markdown", ".markdown": "text/markdown"}


def register_parser(content_type: str, factory: Callable[[], Parser]) -> None:
    _REGISTRY[content_type] = factory


def get_parser(content_type: str) -> Parser:
    _load_builtin()
    try:
        return _REGISTRY[content_type]()
    except KeyError:
        raise DocumentError("?", "unsupported_type", f"no parser for content type {content_type!r}") from None


def parser_for_path(path: str) -> str | None:
    """Content type for a file name, or None when no parser handles it."""
    return _EXTENSIONS.get(PurePosixPath(path).suffix.lower())


def _load_builtin() -> None:
    if "text/markdown" not in _REGISTRY:
        from tessera.parsing.markdown import MarkdownParser

        register_parser("text/markdown", lambda: MarkdownParser())
