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
        return TesseraOutput("", (), e.reason, time.perf_counter() - t0, 0, 0, 0, ())
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
    return TesseraOutput(parsed.text, parsed.warnings, "", seconds, blocks, chunks, len(bad), tuple(bad[:3]))


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
