"""The Parser protocol and its registry by content type.

Built-in parsers are registered by module path and loaded on first use. A parser that sets
``sandbox`` (a :class:`SandboxLimits`) runs in a child process with wall-time and memory
limits (``tessera.parsing.sandbox``), because native parsers can crash, hang or blow up.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import PurePosixPath
from typing import Protocol

from tessera.errors import DocumentError
from tessera.offsets import normalize_text_bytes
from tessera.parsing import versions
from tessera.registry import (
    DuplicateRegistration,
    Registry,
    UnknownName,
    load_target,
    target_available,
    target_loaded,
)
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
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": (
        "tessera.parsing.office_docx:DocxParser",
        (".docx",),
    ),
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": (
        "tessera.parsing.office_pptx:PptxParser",
        (".pptx",),
    ),
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": (
        "tessera.parsing.office_xlsx:XlsxParser",
        (".xlsx",),
    ),
}
OFFICE_TYPES = frozenset(ct for ct in _BUILTIN if ct.startswith("application/vnd.openxmlformats"))
"""Content types whose chunks cite zip parts (``Chunk.parts``), not bytes or pages."""
ParserFactory = Callable[[], Parser]


def _factory(target: str) -> ParserFactory:
    def factory() -> Parser:
        parser: Parser = load_target(target)()  # type: ignore[operator]
        return parser

    return factory


PARSERS: Registry[ParserFactory] = Registry(
    "parser", {ct: target for ct, (target, _) in _BUILTIN.items()}, _factory
)
EXTENSIONS: Registry[str] = Registry("file extension")
"""Lower-case file extension -> content type; an extension belongs to one parser."""
_CANONICAL: dict[str, str] = {}  # content type -> its first registered extension


def _claim(content_type: str, extensions: tuple[str, ...]) -> None:
    for ext in extensions:
        EXTENSIONS.register(ext.lower(), content_type)
        _CANONICAL.setdefault(content_type, ext.lower())


for _ct, (_target, _exts) in _BUILTIN.items():
    if target_available(_target):
        _claim(_ct, _exts)


def register_parser(content_type: str, factory: ParserFactory, extensions: tuple[str, ...] = ()) -> None:
    """Add a parser for a new content type and its extensions; a content type or extension
    that is taken (built-ins included) raises ``DuplicateRegistration``."""
    taken = [ext for ext in extensions if ext.lower() in EXTENSIONS]
    if taken:
        raise DuplicateRegistration("file extension", taken[0].lower())
    PARSERS.register(content_type, factory)
    _claim(content_type, extensions)


_BUILT: dict[str, tuple[ParserFactory, Parser]] = {}
"""content type -> (the factory registered when it was built, the parser)."""


def get_parser(content_type: str) -> Parser:
    """The parser of ``content_type``: one per registered factory and process, reused for every
    document. Parsers keep no state between documents (each parse has its own deadline and
    offset map), and building one cost more than parsing a short document: markdown-it's
    renderer inspects itself on every build (about 1 ms, paid twice per document: once to ask
    the parse cache for its version, once to parse; and per sampled row by the offset checks)."""
    try:
        factory = PARSERS.get(content_type)
    except UnknownName:
        raise DocumentError("?", "unsupported_type", f"no parser for content type {content_type!r}") from None
    built = _BUILT.get(content_type)
    if built is not None and built[0] is factory:
        return built[1]
    parser = factory()
    _BUILT[content_type] = (factory, parser)
    return parser


def path_suffix(path: str) -> str:
    """``PurePosixPath(path).suffix``, by string operations where that is exact (no ``.`` part,
    no trailing slash): a listing asks for every file, several times."""
    if "/." in path or path.endswith("/") or path in (".", ".."):
        return PurePosixPath(path).suffix
    name = path.rsplit("/", 1)[-1]
    i = name.rfind(".")
    return name[i:] if 0 < i < len(name) - 1 else ""


def parser_for_path(path: str) -> str | None:
    """Content type for a file name, or None when no parser handles it."""
    ext = path_suffix(path).lower()
    return EXTENSIONS.get(ext) if ext in EXTENSIONS else None


def canonical_suffix(suffix: str) -> str | None:
    """The one extension that stands for every extension of the same content type, any case
    (``.MARKDOWN`` -> ``.md``, ``.HTM`` -> ``.html``); None when no parser handles it. Access
    policies compare names by it, so a rule reaches exactly the files that are selected."""
    ext = suffix.lower()
    return _CANONICAL[EXTENSIONS.get(ext)] if ext in EXTENSIONS else None


_HOOKED = frozenset({"text/html"})
"""The built-ins that define ``slice_matches`` or ``source_encoding`` (markup in their ranges)."""


def _loaded(content_type: str) -> bool:
    """Whether a built-in parser's module is imported (asking it costs nothing more)."""
    return target_loaded(_BUILTIN[content_type][0])


def _hook(content_type: str | None, name: str) -> Callable[..., object] | None:
    """A parser's own hook, or None. A built-in without hooks that is not imported yet is not
    imported to learn that (the offset checks of a run that parsed nothing)."""
    if content_type is None:
        return None
    if content_type in _BUILTIN and content_type not in _HOOKED and not _loaded(content_type):
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
    return normalize_text_bytes(raw[byte_start:byte_end])[0] == text


def source_encoding(content_type: str | None, raw: bytes) -> str:
    """The codec a document's bytes are decoded with (UTF-8 unless its parser says otherwise)."""
    hook = _hook(content_type, "source_encoding")
    return str(hook(raw)) if hook is not None else "utf-8"


def installed_version(content_type: str) -> str | None:
    """The version of the parser that would parse ``content_type``; None when none is installed.

    A built-in that is not imported yet answers from :mod:`tessera.parsing.versions` (no
    plug-in can take a built-in's content type), so asking does not import it; any other
    parser is built (once per process, :func:`get_parser`) and asked."""
    declared = versions.BUILTIN.get(content_type)
    if declared is not None and content_type in _BUILTIN:
        if content_type not in PARSERS:  # a built-in whose module is not installed
            return None
        if not _loaded(content_type):
            return declared()
    try:
        return get_parser(content_type).version
    except DocumentError:  # no parser installed: the parse step quarantines it
        return None


class ParserVersions:
    """The installed parser's version per content type, asked once each: a document parsed by
    another version of its parser is parsed again (exactly that parser's documents)."""

    def __init__(self) -> None:
        self._versions: dict[str, str | None] = {}

    def changed(self, content_type: str, live_version: str) -> bool:
        if content_type not in self._versions:
            self._versions[content_type] = installed_version(content_type)
        current = self._versions[content_type]
        return bool(live_version) and current is not None and live_version != current
