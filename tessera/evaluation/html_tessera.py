"""Tessera on one evaluation page: text, warnings, time, and the offset checks.

Every block and every chunk (structural chunker, the default profile's budget) is checked:
its byte range must be what the offset map gives for its text range, and
``source_bytes[byte_start:byte_end]`` must hold its text
(:func:`~tessera.parsing.html.html_slice_matches`, the publish-time check). A page is
*silently empty* when it yields no text and no warning says why.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker
from tessera.config import ChunkingConfig, EmbeddingConfig
from tessera.errors import DocumentError, TesseraError
from tessera.evaluation.html_sets import EvalPage
from tessera.parsing.html import HtmlParser, html_slice_matches
from tessera.types import ParsedDocument, SourceDocument, sha256_hex

log = logging.getLogger(__name__)
MODEL = "sentence-transformers/all-MiniLM-L6-v2"


@dataclass(frozen=True)
class Checker:
    parser: HtmlParser
    chunk_ctx: ChunkContext | None
    """None: the model's tokenizer is not available here; only blocks are checked."""

    @staticmethod
    def default(parser: HtmlParser | None = None, chunks: bool = True) -> Checker:
        ctx = None
        if chunks:
            try:
                from tessera.chunking.tokens import load_counter
                from tessera.embedding.model_files import model_dir

                counter = load_counter(model_dir(EmbeddingConfig(model=MODEL)))
                ctx = ChunkContext(ChunkingConfig("structural", 256, 200, 32), counter, "eval")
            except (TesseraError, OSError) as e:
                log.warning("chunk offsets not checked: no tokenizer for %s (%s)", MODEL, e)
        return Checker(parser or HtmlParser(), ctx)


@dataclass(frozen=True)
class TesseraOutput:
    text: str
    nodes: str
    """The same selection rendered as its text nodes with a space between them
    (:func:`nodes_text`), the convention of the Mozilla set's gold."""
    warnings: tuple[str, ...]
    error: str
    seconds: float
    blocks_checked: int
    chunks_checked: int
    violations: int
    examples: tuple[str, ...]

    @property
    def silently_empty(self) -> bool:
        return not self.error and not self.text.strip() and not self.warnings


def eval_doc(name: str, raw: bytes) -> SourceDocument:
    return SourceDocument(
        tenant="eval",
        doc_id=name,
        uri=f"file:///{name}",
        revision=sha256_hex(raw),
        content_type="text/html",
        readers=(),
        groups=(),
    )


def run_tessera(page: EvalPage, checker: Checker) -> TesseraOutput:
    doc = eval_doc(f"{page.set_name}/{page.page_id}", page.raw)
    t0 = time.perf_counter()
    try:
        parsed = checker.parser.parse(doc, page.raw)
    except DocumentError as e:
        return TesseraOutput("", "", (), e.reason, time.perf_counter() - t0, 0, 0, 0, ())
    seconds = time.perf_counter() - t0
    bad: list[str] = []
    blocks = _check_blocks(parsed, page.raw, bad)
    chunks = 0
    if checker.chunk_ctx is not None and parsed.text:
        for c in StructuralChunker().chunk(doc, parsed, checker.chunk_ctx):
            chunks += 1
            span = parsed.offsets.span(parsed.text, c.start, c.end)
            if (
                parsed.text[c.start : c.end] != c.text
                or span != (c.byte_start, c.byte_end)
                or not html_slice_matches(page.raw, c.byte_start, c.byte_end, c.text)
            ):
                bad.append(f"chunk [{c.start}, {c.end}) {c.text[:60]!r}")
    return TesseraOutput(
        parsed.text,
        nodes_text(parsed, page.raw),
        parsed.warnings,
        "",
        seconds,
        blocks,
        chunks,
        len(bad),
        tuple(bad[:3]),
    )


def nodes_text(parsed: ParsedDocument, raw: bytes) -> str:
    """``parsed.text`` as the text nodes it came from, a space between nodes: a space where the
    source has a tag between two consecutive characters (``<a>Mozilla</a>.`` reads ``Mozilla .``),
    and characters with no source bytes (a table's ``|`` and ``---``) read as a space.

    This is how the Mozilla set's gold, and the readability-lxml peer's output, are turned into
    text (:func:`~tessera.evaluation.html_sets.html_text_nodes`); scoring Tessera's own
    selection the same way compares what each extractor keeps, not how it spaces inline
    elements. Verbatim runs of the offset map are contiguous, so only anchors can sit after a
    gap."""
    text, anchors = parsed.text, parsed.offsets.anchors
    out: list[str] = []
    prev_end = -1
    for k, (i, b, w) in enumerate(anchors):
        stop = anchors[k + 1][0] if k + 1 < len(anchors) else parsed.offsets.text_len
        if i >= stop:
            continue
        if 0 <= prev_end < b and b"<" in raw[prev_end:b]:
            out.append(" ")
        if w < 0:
            out.append(text[i:stop])
            prev_end = b + len(text[i:stop].encode("utf-8", "surrogatepass"))
            continue
        out.append(text[i] if w > 0 else " ")
        rest = text[i + 1 : stop]
        out.append(rest)
        prev_end = b + w + len(rest.encode("utf-8", "surrogatepass"))
    return " ".join("".join(out).split())


def _check_blocks(parsed: ParsedDocument, raw: bytes, bad: list[str]) -> int:
    text = parsed.text
    for b in parsed.blocks:
        piece = text[b.start : b.end]
        if not piece.strip():
            bad.append(f"{b.kind} [{b.start}, {b.end}) holds no text")
            continue
        b0, b1 = parsed.offsets.span(text, b.start, b.end)
        if not html_slice_matches(raw, b0, b1, piece):
            bad.append(f"{b.kind} [{b.start}, {b.end}) {piece[:60]!r}")
    return len(parsed.blocks)
