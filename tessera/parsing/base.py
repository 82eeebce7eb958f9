"""The Parser protocol and its registry by content type.

Built-in parsers are registered by module path and loaded on first use. A parser that sets
``sandbox`` (a :class:`SandboxLimits`) runs in a child process with wall-time and memory
limits (``tessera.parsing.sandbox``), because native parsers can crash, hang or blow up.
"""

from __future__ import annotations

import importlib
import importlib.util
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from tessera.errors import DocumentError
from tessera.types import ParsedDocument, SourceDocument


@dataclass(frozen=True)
class SandboxLimits:
    wall_seconds: float = 60.0
    memory_mb: int = 2048


class Parser(Protocol):
    """Parses raw bytes. A parser whose normalized text is not simply the decoded source
    (e.g. HTML: tags, entities) may also define ``slice_matches(raw, byte_start, byte_end,
    text) -> bool`` and ``source_encoding(raw) -> str``; see :func:`slice_matches`."""

    name: str
    version: str
    content_types: tuple[str, ...]

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument: ...


# content type -> ("module:Class", file extensions)
_BUILTIN: dict[str, tuple[str, tuple[str, ...]]] = {
    "text/markdown": ("tessera.parsing.markdown:MarkdownParser", (".md", ".markdown")),
    "application/pdf": ("tessera.parsing.pdf:PdfParser", (".pdf",)),
    "text/html": ("tessera.parsing.html:HtmlParser", (".html", ".htm")),
    "text/x-python": ("tessera.parsing.code:PythonParser", (".py",)),
}
_REGISTRY: dict[str, Callable[[], Parser]] = {}
_EXTENSIONS: dict[str, str] = {}
_CANONICAL: dict[str, str] = {}  # content type -> its first registered extension
_LOADED: list[bool] = []


def register_parser(
    content_type: str, factory: Callable[[], Parser], extensions: tuple[str, ...] = ()
) -> None:
    _REGISTRY[content_type] = factory
    for ext in extensions:
        _EXTENSIONS[ext.lower()] = content_type
        _CANONICAL.setdefault(content_type, ext.lower())


def _available(target: str) -> bool:
    return importlib.util.find_spec(target.split(":")[0]) is not None


def _load_builtin() -> None:
    if _LOADED:
        return
    _LOADED.append(True)
    for content_type, (target, extensions) in _BUILTIN.items():
        if content_type in _REGISTRY or not _available(target):
            continue  # a parser whose module is absent handles no files

        def factory(target: str = target) -> Parser:
            module, cls = target.split(":")
            parser: Parser = getattr(importlib.import_module(module), cls)()
            return parser

        register_parser(content_type, factory, extensions)


def get_parser(content_type: str) -> Parser:
    _load_builtin()
    try:
        return _REGISTRY[content_type]()
    except KeyError:
        raise DocumentError("?", "unsupported_type", f"no parser for content type {content_type!r}") from None


def parser_for_path(path: str) -> str | None:
    """Content type for a file name, or None when no parser handles it."""
    _load_builtin()
    return _EXTENSIONS.get(PurePosixPath(path).suffix.lower())


def canonical_suffix(suffix: str) -> str | None:
    """The one extension that stands for every extension of the same content type, any case
    (``.MARKDOWN`` -> ``.md``, ``.HTM`` -> ``.html``); None when no parser handles it. Access
    policies compare names by it, so a rule reaches exactly the files that are selected."""
    _load_builtin()
    content_type = _EXTENSIONS.get(suffix.lower())
    return None if content_type is None else _CANONICAL[content_type]


def parse_document(doc: SourceDocument, raw: bytes) -> ParsedDocument:
    """Parse with the document's parser, in a sandboxed child process when it asks for one."""
    parser = get_parser(doc.content_type)
    limits = getattr(parser, "sandbox", None)
    if isinstance(limits, SandboxLimits):
        from tessera.parsing.sandbox import run_sandboxed  # type: ignore[import-not-found,unused-ignore]

        result: ParsedDocument = run_sandboxed(doc, raw, limits)
        return result
    return parser.parse(doc, raw)


def _hook(content_type: str | None, name: str) -> Callable[..., object] | None:
    if content_type is None:
        return None
    try:
        hook: Callable[..., object] | None = getattr(get_parser(content_type), name, None)
    except DocumentError:
        return None
    return hook


def slice_matches(content_type: str | None, raw: bytes, byte_start: int, byte_end: int, text: str) -> bool:
    """Whether a source byte range gives a chunk's text, by the rules of its format.

    The default is the text formats' rule: the range, decoded and normalized (BOM, CRLF), is
    the text. A parser with markup in its ranges provides its own ``slice_matches``.
    """
    hook = _hook(content_type, "slice_matches")
    if hook is not None:
        return bool(hook(raw, byte_start, byte_end, text))
    from tessera.offsets import normalize_text_bytes

    return normalize_text_bytes(raw[byte_start:byte_end])[0] == text


def source_encoding(content_type: str | None, raw: bytes) -> str:
    """The codec a document's bytes are decoded with (UTF-8 unless its parser says otherwise)."""
    hook = _hook(content_type, "source_encoding")
    return str(hook(raw)) if hook is not None else "utf-8"
