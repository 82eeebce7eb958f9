"""Strategy ``adaptive``: structure where the document has it, long windows where it has none.

Documents differ: a wiki page has a heading every few paragraphs, a report or a story may
have none for thousands of tokens. This chunker reads only the document (never a question):
each heading section (:func:`tessera.chunking.headings.sections`, the parser's headings or
inferred wiki headings) is measured in model tokens, then

* a section of at most ``adaptive.long_section_tokens`` is chunked exactly as ``structural``
  does with the profile's ``target_tokens`` / ``overlap_tokens`` (the headings carry the
  structure at that scale, and the breadcrumb names it);
* a longer section is chunked by the same sentence-aware packing with
  ``adaptive.long_target_tokens`` / ``adaptive.long_overlap_tokens`` (flag ``long_section``):
  without structure nearby, a larger window keeps a passage and its context together.

Chunk ids, neighbours and parents come from the adaptive profile (its own config hash); a
chunk's text and embedding text are what ``structural`` gives the section at that size, so
an embedding cache shared with a structural profile reuses its vectors.
"""

from __future__ import annotations

from dataclasses import replace

from tessera.chunking import versions
from tessera.chunking.base import ChunkContext
from tessera.chunking.headings import sections
from tessera.chunking.recursive import TokenIndex
from tessera.chunking.structural import Piece, StructuralChunker, _Blocks, build_chunks
from tessera.types import Chunk, ParsedDocument, SourceDocument

LONG_FLAG = "long_section"


def long_context(ctx: ChunkContext) -> ChunkContext:
    """The context of long sections: the same profile with the long window's size/overlap."""
    cfg, a = ctx.config, ctx.config.adaptive
    size = min(a.long_target_tokens, cfg.max_tokens)
    return replace(
        ctx, config=replace(cfg, target_tokens=size, overlap_tokens=min(a.long_overlap_tokens, size - 1))
    )


class AdaptiveChunker(StructuralChunker):
    name = "adaptive"
    version = versions.ADAPTIVE

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        idx = TokenIndex(parsed.text, ctx)
        blocks = _Blocks(parsed)
        long_ctx = long_context(ctx)
        limit = ctx.config.adaptive.long_section_tokens
        pieces: list[Piece] = []
        for sec in sections(parsed):
            if idx.count(sec.start, sec.end) > limit:
                found = self._section(parsed, sec, long_ctx, idx, blocks)
                pieces.extend(replace(p, flags=(*p.flags, LONG_FLAG)) for p in found)
            else:
                pieces.extend(self._section(parsed, sec, ctx, idx, blocks))
        return build_chunks(doc, parsed, ctx, pieces, self.version)
