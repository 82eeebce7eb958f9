"""Parse one document with its parser: in-process, or in a sandboxed child process when the
parser asks for one (``Parser.sandbox``, a :class:`~tessera.parsing.base.SandboxLimits`)."""

from __future__ import annotations

from tessera.parsing.base import SandboxLimits, get_parser
from tessera.parsing.sandbox import run_sandboxed
from tessera.types import ParsedDocument, SourceDocument


def parse_document(doc: SourceDocument, raw: bytes) -> ParsedDocument:
    """Parse with the document's parser, in a sandboxed child process when it asks for one."""
    parser = get_parser(doc.content_type)
    limits = getattr(parser, "sandbox", None)
    if isinstance(limits, SandboxLimits):
        return run_sandboxed(doc, raw, limits)
    return parser.parse(doc, raw)
