"""Structural chunking: heading sections, sentence-aware pieces packed to the target.

1. The document is cut at headings into sections (:func:`tessera.chunking.headings.sections`:
   the parser's headings, else MediaWiki-style heading lines; a bare heading joins its first
   subsection). Each section's heading path (breadcrumb) is prepended to ``embedding_text``
   as ``"A > B > C\\n\\n"``; the target and the budget count it.
2. Prose is cut recursively (paragraph, line, sentence, clause, word; see
   :mod:`tessera.chunking.recursive`) into pieces of at most the target, and consecutive
   pieces are packed greedily up to ``target_tokens``, with up to ``overlap_tokens`` of
   overlap between consecutive chunks. A paragraph longer than the target is cut on its
   own (flag ``windowed``), so its cuts do not depend on its neighbours.
3. A table or fence that fits packs with the prose as one unbreakable piece. A bigger one
   is split: a fence by lines, each part repeating the fence's opening line as context (flag
   ``fence_split``); a table by whole rows with :mod:`tessera.chunking.tables` (the one table
   chunker of every format), each part repeating the header rows (flags ``table_split`` and
   ``rows:a-b``, the 1-based body rows it holds; a row too big alone is cut, flag
   ``row_split``). Nothing is ever truncated.
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from dataclasses import dataclass, replace

from tessera.chunking import versions
from tessera.chunking.assemble import Draft, assemble
from tessera.chunking.base import ChunkContext
from tessera.chunking.headings import Section, sections
from tessera.chunking.recursive import TokenIndex, atoms, fit, merge
from tessera.chunking.tables import split_table
from tessera.chunking.tokens import TokenCounter
from tessera.chunking.windows import token_windows, trim
from tessera.errors import ChunkingError
from tessera.types import Block, Chunk, ParsedDocument, SourceDocument


@dataclass(frozen=True)
class Piece:
    start: int
    end: int
    section: Section
    kind: str
    context: str = ""
    flags: tuple[str, ...] = ()
    tokens: int = -1
    """The exact count of ``document prefix + breadcrumb + text`` when the packer measured it
    (a piece with ``context`` is counted again, on the text it embeds)."""


class _Blocks:
    """The document's non-heading blocks by start, so a section finds its own in O(log n + k)
    (a scan of every block per section was quadratic: 25 s for 5,000 sections)."""

    def __init__(self, parsed: ParsedDocument) -> None:
        order = sorted(
            ((b.start, k, b) for k, b in enumerate(parsed.blocks) if b.kind != "heading"),
            key=lambda x: (x[0], x[1]),
        )
        self._starts = [x[0] for x in order]
        self._order = order

    def inside(self, start: int, end: int) -> list[Block]:
        """Blocks starting in ``[start, end)``, in the document's own block order."""
        lo, hi = bisect_left(self._starts, start), bisect_left(self._starts, end)
        return [b for _, _, b in sorted(self._order[lo:hi], key=lambda x: x[1])]


def _units(blocks: _Blocks, sec: Section) -> list[tuple[int, int, Block | None]]:
    inner = blocks.inside(sec.start, sec.end)
    starts = [b.start for b in inner]
    by_start = {b.start: b for b in inner}
    if starts and sec.path:  # only heading lines lie before the first block: keep them with it
        by_start[sec.start] = by_start.pop(starts[0])
        starts[0] = sec.start
    bounds = sorted({sec.start, *starts})
    return [
        (s, bounds[k + 1] if k + 1 < len(bounds) else sec.end, by_start.get(s)) for k, s in enumerate(bounds)
    ]


def _kind(block: Block | None) -> str:
    if block is None:
        return "text"
    return {"fence": "code", "code": "code", "table": "table"}.get(block.kind, "text")


class StructuralChunker:
    name = "structural"
    version = versions.STRUCTURAL

    def chunk(self, doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext) -> list[Chunk]:
        pieces: list[Piece] = []
        idx = TokenIndex(parsed.text, ctx)
        blocks = _Blocks(parsed)
        for sec in sections(parsed):
            pieces.extend(self._section(parsed, sec, ctx, idx, blocks))
        return build_chunks(doc, parsed, ctx, pieces, self.version)

    def _section(
        self, parsed: ParsedDocument, sec: Section, ctx: ChunkContext, idx: TokenIndex, blocks: _Blocks
    ) -> list[Piece]:
        """Prose is cut recursively (paragraph, line, sentence, clause, word) and packed up to
        ``target_tokens`` with ``overlap_tokens`` of overlap; a table or fence that fits packs
        with the prose as one unbreakable atom, a bigger one is split by rows or lines."""
        text = parsed.text
        sctx, size = section_budget(sec, ctx)
        overlap = min(ctx.config.overlap_tokens, size - 1)
        out: list[Piece] = []
        run: list[tuple[int, int]] = []
        whole: dict[tuple[int, int], str] = {}  # atoms that are whole units, by range -> kind

        def flush() -> None:
            if not run:
                return
            merged = merge(text, run, idx, size, overlap)
            units = list(whole)  # disjoint, in document order: bisect instead of a scan per piece
            unit_ends = [u1 for _, u1 in units]
            unit_starts = [u0 for u0, _ in units]
            for a, b, n in fit(text, merged, sctx, idx):
                near = units[bisect_right(unit_ends, a) : bisect_left(unit_starts, b)]
                kinds = {whole[u] for u in near}
                is_unit = any(a <= u0 and u1 <= b for u0, u1 in near)
                kind = kinds.pop() if len(kinds) == 1 and is_unit else "text"
                out.append(Piece(a, b, sec, kind, flags=() if is_unit else ("windowed",), tokens=n))
            run.clear()
            whole.clear()

        for s, e, block in _units(blocks, sec):
            s, e = trim(text, s, e)
            if s >= e:
                continue
            if idx.count(s, e) <= size:
                run.append((s, e))
                whole[(s, e)] = _kind(block)
            elif block is None or block.kind not in ("table", "fence"):
                flush()  # a long paragraph is split on its own: its cuts do not depend on neighbours
                run.extend(atoms(text, s, e, idx, size))
                flush()
            else:
                flush()
                out.extend(self._split(text, s, e, block, sec, ctx))
        flush()
        return out

    def _split(
        self, text: str, s: int, e: int, block: Block | None, sec: Section, ctx: ChunkContext
    ) -> list[Piece]:
        crumb = breadcrumb(sec.path, ctx)
        if block is not None and block.kind == "table":
            return _table(text, s, e, block, sec, crumb, ctx)
        if block is not None and block.kind == "fence":
            header_end = text.find("\n", block.start) + 1 or block.end
            context = text[block.start : header_end].rstrip("\n")
            if ctx.tokens(render(crumb, context, "")) > ctx.config.max_tokens // 2:
                context = ""  # an opening line too long to repeat: parts go without it
            return _pack_lines(text, s, e, header_end, context, crumb, sec, _kind(block), "fence_split", ctx)
        return _windowed(text, s, e, sec, crumb, ctx)


def _windowed(text: str, s: int, e: int, sec: Section, crumb: str, ctx: ChunkContext) -> list[Piece]:
    """Prose too big for one chunk: token windows with ``overlap_tokens`` of overlap."""
    size = min(ctx.config.target_tokens, ctx.config.max_tokens - ctx.tokens(render(crumb, "", "")))
    spans = token_windows(text, s, e, ctx, size, ctx.config.overlap_tokens, lambda t: render(crumb, "", t))
    return [Piece(a, b, sec, "text", flags=("windowed",)) for a, b in spans]


def _table(
    text: str, s: int, e: int, block: Block, sec: Section, crumb: str, ctx: ChunkContext
) -> list[Piece]:
    """The unit ``[s, e)`` holding a table block, split by rows (see :mod:`tessera.chunking.tables`).

    Text before the block (the section's heading line) goes with the first part; any text
    after it inside the unit (normally only blank lines) is windowed as prose.
    """
    end = min(block.end, e)
    table = block if end == block.end else replace(block, end=end)
    out: list[Piece] = []
    for p in split_table(text, table, ctx, lambda c, t: render(crumb, c, t), lead=s):
        rows = (f"rows:{p.rows[0] + 1}-{p.rows[1]}",) if p.rows[1] > p.rows[0] else ()
        out.append(Piece(p.start, p.end, sec, "table", p.context, p.flags + rows))
    if text[end:e].strip():
        out.extend(_windowed(text, end, e, sec, crumb, ctx))
    return out


def section_budget(sec: Section, ctx: ChunkContext) -> tuple[ChunkContext, int]:
    """The context of a section's chunks (its breadcrumb joins the document prefix, so counts
    include it) and the content tokens a chunk may hold: the target, within ``max_tokens``."""
    sctx = replace(ctx, document_prefix=ctx.document_prefix + render(breadcrumb(sec.path, ctx), "", ""))
    size = min(ctx.config.target_tokens, ctx.config.max_tokens) - sctx.tokens("")
    if size < 1:
        raise ChunkingError(f"section {sec.anchor!r}: its breadcrumb leaves no room for text")
    return sctx, size


def breadcrumb(path: tuple[str, ...], ctx: ChunkContext) -> str:
    """``"A > B > C"``, shortened to at most a quarter of the budget.

    The breadcrumb is context for the embedding, not content: outer headings are dropped
    first (``"… > C"``), then the innermost heading is cut. The chunk text is never cut.
    Memoized per (path, tokenizer, budget): every chunk of a section asks for the same one,
    and a 10,000-word heading costs one tokenization per shortening step, not per chunk.
    """
    if not path:
        return ""
    key = (path, id(ctx.counter), ctx.document_prefix, ctx.config.max_tokens // 4)
    hit = _CRUMBS.get(key)
    if hit is not None and hit[0] is ctx.counter:  # the counter itself: an id can be reused
        return hit[1]
    if len(_CRUMBS) >= 64:
        _CRUMBS.clear()
    crumb = _breadcrumb(path, ctx.counter, ctx.document_prefix, ctx.config.max_tokens // 4)
    _CRUMBS[key] = (ctx.counter, crumb)
    return crumb


_CRUMBS: dict[tuple[tuple[str, ...], int, str, int], tuple[TokenCounter, str]] = {}


def _breadcrumb(path: tuple[str, ...], counter: TokenCounter, prefix: str, limit: int) -> str:
    def tokens(s: str) -> int:
        return counter.count(prefix + s)

    crumb = " > ".join(path)
    if not crumb or tokens(crumb) <= limit:
        return crumb
    for k in range(1, len(path)):
        crumb = "… > " + " > ".join(path[k:])
        if tokens(crumb) <= limit:
            return crumb
    last = path[-1]
    while last and tokens(last + "…") > limit:
        last = last[: len(last) * 3 // 4]
    return last + "…" if last else ""


def render(crumb: str, context: str, body: str) -> str:
    """The embedding text: breadcrumb, optional repeated context, then the chunk text."""
    head = f"{crumb}\n\n" if crumb else ""
    ctx_line = f"{context}\n" if context else ""
    return f"{head}{ctx_line}{body}"


def _pack_lines(
    text: str,
    s: int,
    e: int,
    header_end: int,
    context: str,
    crumb: str,
    sec: Section,
    kind: str,
    flag: str,
    ctx: ChunkContext,
) -> list[Piece]:
    """Greedy line packing; parts after the header repeat ``context`` in their embedding."""
    lines: list[tuple[int, int]] = []
    pos = s
    while pos < e:
        nl = text.find("\n", pos, e)
        end = e if nl < 0 else nl + 1
        lines.append((pos, end))
        pos = end
    out: list[Piece] = []
    cur_start: int | None = None
    cur_end = s

    def ctx_for(start: int) -> str:
        return "" if start < header_end else context

    def emit(a: int, b: int) -> None:
        ta, tb = trim(text, a, b)
        if ta < tb:
            out.append(Piece(ta, tb, sec, kind, ctx_for(ta), (flag,)))

    for a, b in lines:
        if cur_start is not None:
            body = text[cur_start:b].strip()
            if body and ctx.tokens(render(crumb, ctx_for(cur_start), body)) <= ctx.config.target_tokens:
                cur_end = b
                continue
            emit(cur_start, cur_end)
            cur_start = None
        line = text[a:b].strip()
        if not line or ctx.fits(render(crumb, ctx_for(a), line)):
            cur_start, cur_end = a, b
            continue
        line_ctx = ctx_for(a)

        def r(t: str, line_ctx: str = line_ctx) -> str:
            return render(crumb, line_ctx, t)

        size = ctx.config.max_tokens - ctx.tokens(r(""))
        for wa, wb in token_windows(text, a, b, ctx, size, 0, r):
            out.append(Piece(wa, wb, sec, kind, ctx_for(a), (flag, "line_split")))
    if cur_start is not None:
        emit(cur_start, cur_end)
    return out


def build_chunks(
    doc: SourceDocument, parsed: ParsedDocument, ctx: ChunkContext, pieces: list[Piece], version: str
) -> list[Chunk]:
    unclosed = [b for b in parsed.blocks if b.kind == "fence" and b.title == "unclosed"]
    drafts = [
        Draft(
            start=p.start,
            end=p.end,
            embedding_text=render(breadcrumb(p.section.path, ctx), p.context, parsed.text[p.start : p.end]),
            heading_path=p.section.path,
            anchor=p.section.anchor,
            parent=(p.section.start, p.section.end),
            kind=p.kind,
            flags=p.flags
            + (("unclosed_fence",) if any(b.start < p.end and p.start < b.end for b in unclosed) else ()),
            tokens=-1 if p.context else p.tokens,  # fit counted exactly this embedding text
        )
        for p in pieces
    ]
    return assemble(doc, parsed, ctx, drafts, version)
