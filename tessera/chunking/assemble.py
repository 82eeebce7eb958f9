"""Turn a chunker's pieces into Chunk objects: ids, neighbours, provenance, budget check.

Every chunker describes its output as :class:`Draft` pieces (a range, its embedding text and
its place in the document); this module is the one place that assigns content-addressed ids,
links neighbours and parents, maps ranges back to source bytes, PDF pages or Office parts, adds the trust
flags (``hidden_text``: invisible characters or a range the parser marked hidden;
``untrusted``: instruction-like text; see :mod:`tessera.parsing.trust`), and refuses a chunk
over the token budget (nothing is ever truncated). Flags are not part of a chunk's id or
checksum.
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Sequence
from dataclasses import dataclass

from tessera.chunking.base import ChunkContext
from tessera.chunking.identity import chunk_id, section_id
from tessera.errors import ChunkingError
from tessera.parsing.trust import chunk_flags
from tessera.types import Chunk, ParsedDocument, PartSpan, SourceDocument


@dataclass(frozen=True)
class Draft:
    start: int
    end: int
    embedding_text: str
    heading_path: tuple[str, ...]
    anchor: str
    parent: tuple[int, int]
    kind: str
    flags: tuple[str, ...] = ()
    tokens: int = -1  # exact count when the chunker already measured it


class HiddenIndex:
    """The parser's hidden ranges, for "does ``[start, end)`` overlap one?" in O(log n).

    Sorted by start with the running maximum of their ends: some range starting before
    ``end`` reaches past ``start`` exactly when the longest-reaching of them does. Scanning
    every range for every chunk was quadratic (thousands of titled reference definitions).
    """

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        ordered = sorted(spans)
        self._starts = [a for a, _ in ordered]
        self._reach: list[tuple[int, int]] = []  # the span reaching furthest among ordered[: k + 1]
        for span in ordered:
            if not self._reach or span[1] > self._reach[-1][1]:
                self._reach.append(span)
            else:
                self._reach.append(self._reach[-1])

    def witness(self, start: int, end: int) -> tuple[tuple[int, int], ...]:
        """One hidden range overlapping ``[start, end)``, or none."""
        k = bisect_left(self._starts, end)
        if k and self._reach[k - 1][1] > start:
            return (self._reach[k - 1],)
        return ()


def assemble(
    doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext, drafts: Sequence[Draft], version: str
) -> list[Chunk]:
    text, cfg_hash = parsed.text, ctx.config_hash
    hidden = HiddenIndex(parsed.trust.hidden_spans)
    ids = [
        chunk_id(doc.tenant, doc.doc_id, doc.revision, d.start, d.end, cfg_hash, ctx.model_hash)
        for d in drafts
    ]
    chunks: list[Chunk] = []
    for k, d in enumerate(drafts):
        n = d.tokens if d.tokens >= 0 else ctx.tokens(d.embedding_text)
        if n > ctx.config.max_tokens:
            raise ChunkingError(f"{doc.doc_id}[{d.start}:{d.end}] has {n} tokens > {ctx.config.max_tokens}")
        flags = d.flags + chunk_flags(text[d.start : d.end], d.start, d.end, hidden.witness(d.start, d.end))
        parts: tuple[PartSpan, ...] = ()
        if parsed.layout is not None:  # paginated: provenance is page + bbox
            b0, b1, pages = -1, -1, parsed.layout.spans(d.start, d.end)
            flags += ("ocr",) if parsed.layout.ocr(d.start, d.end) else ()
        elif parsed.structure is not None:  # Office: provenance is zip part + element + range
            b0, b1, pages = -1, -1, ()
            parts = parsed.structure.spans(text, d.start, d.end)
        else:
            (b0, b1), pages = parsed.offsets.span(text, d.start, d.end), ()
        chunks.append(
            Chunk(
                id=ids[k],
                tenant=doc.tenant,
                doc_id=doc.doc_id,
                revision=doc.revision,
                start=d.start,
                end=d.end,
                text=text[d.start : d.end],
                embedding_text=d.embedding_text,
                byte_start=b0,
                byte_end=b1,
                heading_path=d.heading_path,
                anchor=d.anchor,
                position=k,
                parent_id=section_id(doc.tenant, doc.doc_id, doc.revision, *d.parent, cfg_hash),
                prev_id=ids[k - 1] if k > 0 else "",
                next_id=ids[k + 1] if k + 1 < len(ids) else "",
                token_count=n,
                kind=d.kind,
                flags=tuple(dict.fromkeys(flags)),
                chunking_config_hash=cfg_hash,
                chunker_version=version,
                parser_version=parsed.parser_version,
                tokenizer_version=ctx.counter.version,
                pages=pages,
                parts=parts,
            )
        )
    return chunks
