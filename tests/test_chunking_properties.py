"""Property tests of StructuralChunker over generated Markdown, plus token_windows units.

Every chunk must cite its exact source (text and bytes), fit the model budget as recounted
with the real tokenizer, carry a deterministic id, and together the chunks must cover every
non-whitespace character of the document.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Callable

import pytest
from hypothesis import HealthCheck, event, given, reject, settings
from hypothesis import strategies as st

from tessera.chunking.base import ChunkContext
from tessera.chunking.structural import StructuralChunker, breadcrumb, render, sections
from tessera.chunking.tokens import TokenCounter
from tessera.chunking.windows import token_windows, trim
from tessera.config import ChunkingConfig
from tessera.errors import ChunkingError
from tessera.offsets import normalize_text_bytes
from tessera.parsing.markdown import MarkdownParser
from tessera.types import Chunk, ParsedDocument, SourceDocument, sha256_hex

PARSER = MarkdownParser()
CHUNKER = StructuralChunker()

# (max_tokens, target_tokens, overlap_tokens, document_prefix)
CONTEXTS = [
    (32, 24, 0, ""),
    (32, 32, 8, ""),
    (64, 48, 8, ""),
    (64, 64, 16, ""),
    (64, 48, 16, "search_document: "),
    (256, 200, 16, ""),
    (256, 128, 0, ""),
]
Key = tuple[int, int, int, str]

# --- document strategies ----------------------------------------------------------------------

SHORT_WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "index",
    "tenant",
    "chunk",
    "token",
    "vector",
    "ledger",
    "the",
    "a",
    "of",
    "and",
    "to",
    "deploy",
    "rollback",
    "on-call",
    "p99",
    "42",
    "3.14",
    "café",
    "naïve",
    "Zürich",
    "東京",
    "данные",
    "😀",
    "—",
    "x_y",
    "`code`",
    "**bold**",
    "[link](x)",
]
LONG_WORDS = ["supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis"]
short_word = st.sampled_from(SHORT_WORDS)
word = st.one_of(
    short_word,
    short_word,
    short_word,
    short_word,
    st.sampled_from(LONG_WORDS),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyzé", min_size=15, max_size=120),  # long words
)


def words(min_size: int, max_size: int, of: st.SearchStrategy[str] = word) -> st.SearchStrategy[str]:
    return st.lists(of, min_size=min_size, max_size=max_size).map(" ".join)


# Titles are short as a rule (a breadcrumb has to leave room in a 32-token budget); a rare long
# one exercises the "context too long" path.
title = st.one_of(words(1, 3, short_word), words(1, 3, short_word), words(1, 3, short_word), words(1, 6))
heading = st.builds(lambda lvl, t: "#" * lvl + " " + t + "\n", st.integers(1, 4), title)
setext = st.builds(lambda t, ch: f"{t}\n{ch * 3}\n", title, st.sampled_from("=-"))
paragraph = st.lists(words(1, 14), min_size=1, max_size=4).map(lambda ls: "\n".join(ls) + "\n")
long_paragraph = words(150, 400).map(lambda s: s + "\n")
code_line = st.one_of(
    st.just("# comment"),
    st.just("## not a heading either"),
    words(0, 10).map(lambda s: "    " + s),
    st.text(alphabet="abcxyz_=()[]{}:;.,+-*/0123456789 ", max_size=60),
)
fence = st.builds(
    lambda mark, info, lines: f"{mark}{info}\n" + "".join(f"{ln}\n" for ln in lines) + f"{mark}\n",
    st.sampled_from(["```", "~~~", "````"]),
    st.sampled_from(["", "python", "sh", "yaml"]),
    st.lists(code_line, max_size=8),
)
long_fence = st.builds(
    lambda lines: "```text\n" + "".join(f"{ln}\n" for ln in lines) + "```\n",
    st.lists(code_line, min_size=40, max_size=120),
)
head_cell = words(1, 2, short_word).map(lambda s: s.replace("|", "/"))
cell = words(1, 3).map(lambda s: s.replace("|", "/"))
table = st.integers(1, 4).flatmap(
    lambda ncol: st.builds(
        lambda head, rows: (
            "| "
            + " | ".join(head)
            + " |\n"
            + "|"
            + "---|" * ncol
            + "\n"
            + "".join("| " + " | ".join(r) + " |\n" for r in rows)
        ),
        st.lists(head_cell, min_size=ncol, max_size=ncol),
        st.lists(st.lists(cell, min_size=ncol, max_size=ncol), max_size=30),
    )
)
block = st.one_of(
    heading,
    heading,
    setext,
    paragraph,
    paragraph,
    paragraph,
    fence,
    table,
    st.just("\n"),
    st.just("\n\n\n"),
    st.just("- item one\n- item two\n"),
    st.just("> quoted text\n"),
)
rare_block = st.one_of(long_paragraph, long_fence)
document = st.lists(
    st.one_of(block, block, block, block, block, block, block, rare_block),
    min_size=0,
    max_size=16,
).map(lambda blocks: "\n".join(blocks))
line_ending = st.sampled_from(["\n", "\n", "\r\n"])
bom = st.sampled_from([b"", b"", b"\xef\xbb\xbf"])


def source(tenant: str = "acme", doc_id: str = "doc.md", raw: bytes = b"") -> SourceDocument:
    return SourceDocument(
        tenant=tenant,
        doc_id=doc_id,
        uri=f"file:///{doc_id}",
        revision=sha256_hex(raw),
        content_type="text/markdown",
        readers=(),
        groups=("staff",),
    )


def run_chunker(
    raw: bytes, ctx: ChunkContext, doc: SourceDocument | None = None
) -> tuple[ParsedDocument, list[Chunk]]:
    doc = doc or source(raw=raw)
    parsed = PARSER.parse(doc, raw)
    return parsed, CHUNKER.chunk(doc, parsed, ctx)


# --- invariants -------------------------------------------------------------------------------


def check_invariants(raw: bytes, parsed: ParsedDocument, chunks: list[Chunk], ctx: ChunkContext) -> None:
    text = parsed.text
    cfg = ctx.config
    for k, c in enumerate(chunks):
        # (a) offsets: text slice and source byte slice
        assert 0 <= c.start < c.end <= len(text)
        assert text[c.start : c.end] == c.text
        assert (c.byte_start, c.byte_end) == parsed.offsets.span(text, c.start, c.end)
        assert normalize_text_bytes(raw[c.byte_start : c.byte_end])[0] == c.text
        # (b) budget, recounted with the real tokenizer
        assert ctx.tokens(c.embedding_text) == c.token_count
        assert c.token_count <= cfg.max_tokens
        assert c.embedding_text.endswith(c.text)
        # (d) no empty or whitespace-only chunks; trimmed
        assert c.text.strip()
        assert c.text == c.text.strip()
        # (f) position and neighbour chain
        assert c.position == k
        assert c.prev_id == (chunks[k - 1].id if k else "")
        assert c.next_id == (chunks[k + 1].id if k + 1 < len(chunks) else "")
        assert c.chunking_config_hash == ctx.config_hash
        assert c.tokenizer_version == ctx.counter.version
        assert c.parser_version == parsed.parser_version
        if c.heading_path:
            crumb = breadcrumb(c.heading_path, ctx)  # shortened when the headings are long
            assert c.embedding_text.startswith(crumb + "\n\n")
            assert ctx.tokens(crumb) <= max(cfg.max_tokens // 4, ctx.tokens(""))
    # (g) unique ids
    ids = [c.id for c in chunks]
    assert len(set(ids)) == len(ids)
    # document order
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    # (e) coverage of every non-whitespace char
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered chars at {missing[:10]}: {text[missing[0] : missing[0] + 40]!r}"


def build_raw(doc_text: str, eol: str, prefix: bytes) -> bytes:
    return prefix + doc_text.replace("\n", eol).encode("utf-8")


@pytest.fixture(scope="module")
def contexts(counter: TokenCounter) -> dict[Key, ChunkContext]:
    return {
        (m, t, o, p): ChunkContext(ChunkingConfig("structural", m, t, o), counter, "test-model", p)
        for m, t, o, p in CONTEXTS
    }


# A section whose breadcrumb and repeated context leave at least this many tokens must chunk.
MIN_ROOM = 1

SETTINGS = settings(
    max_examples=60,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)


def min_room(parsed: ParsedDocument, ctx: ChunkContext) -> int:
    """Fewest tokens any section leaves for chunk text after its breadcrumb and repeated context."""
    text, room = parsed.text, ctx.config.max_tokens
    for sec in sections(parsed):
        crumb = " > ".join(sec.path)
        contexts = [""]
        for b in parsed.blocks:
            if sec.start <= b.start < sec.end and b.kind in ("fence", "table"):
                lines = text[b.start : b.end].split("\n")
                contexts.append("\n".join(lines[: 1 if b.kind == "fence" else 2]))
        used = max(ctx.tokens(render(crumb, c, "")) for c in contexts)
        room = min(room, ctx.config.max_tokens - used)
    return room


@SETTINGS
@given(doc_text=document, eol=line_ending, prefix=bom, which=st.sampled_from(CONTEXTS))
def test_chunk_invariants(
    contexts: dict[Key, ChunkContext],
    doc_text: str,
    eol: str,
    prefix: bytes,
    which: Key,
) -> None:
    ctx = contexts[which]
    raw = build_raw(doc_text, eol, prefix)
    doc = source(raw=raw)
    parsed = PARSER.parse(doc, raw)
    room = min_room(parsed, ctx)
    try:
        chunks = CHUNKER.chunk(doc, parsed, ctx)
    except ChunkingError as e:
        # Refusing is allowed only when a breadcrumb (plus a repeated fence/table header) leaves
        # no room at all; it must be the "context too long" refusal, never an oversize chunk.
        event("refused: context too long")
        assert room < MIN_ROOM, f"room {room} tokens, yet: {e}"
        assert "context" in str(e)
        return
    event("chunked")
    check_invariants(raw, parsed, chunks, ctx)
    if parsed.text.strip():
        assert chunks


@settings(
    max_examples=15,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)
@given(doc_text=document, eol=line_ending)
def test_chunk_ids_are_deterministic_and_scoped(
    contexts: dict[Key, ChunkContext], doc_text: str, eol: str
) -> None:
    ctx = contexts[(64, 48, 8, "")]
    raw = build_raw(doc_text, eol, b"")
    doc = source(raw=raw)
    try:
        parsed, first = run_chunker(raw, ctx, doc)
    except ChunkingError:
        reject()  # a breadcrumb too long for the budget: covered by test_chunk_invariants
    _, second = run_chunker(raw, ctx, doc)
    assert first == second  # (c) same input, same chunk list, field for field
    if not first:
        return
    ids = {c.id for c in first}
    other_tenant = CHUNKER.chunk(dataclasses.replace(doc, tenant="globex"), parsed, ctx)
    other_rev = CHUNKER.chunk(dataclasses.replace(doc, revision=sha256_hex(b"x" + raw)), parsed, ctx)
    other_doc = CHUNKER.chunk(dataclasses.replace(doc, doc_id="other.md"), parsed, ctx)
    other_cfg_ctx = dataclasses.replace(ctx, config=dataclasses.replace(ctx.config, overlap_tokens=9))
    other_cfg = CHUNKER.chunk(doc, parsed, other_cfg_ctx)
    other_model = CHUNKER.chunk(doc, parsed, dataclasses.replace(ctx, model_hash="other-model"))
    for variant in (other_tenant, other_rev, other_doc, other_cfg, other_model):
        assert variant
        assert ids.isdisjoint(c.id for c in variant)
    parents = {c.parent_id for c in first}
    for variant in (other_tenant, other_rev, other_doc, other_cfg):
        assert parents.isdisjoint(c.parent_id for c in variant)
    # a section id names the section, not the model: the same for another model
    assert [c.parent_id for c in other_model] == [c.parent_id for c in first]
    # the text and offsets do not depend on identity
    assert [(c.start, c.end) for c in other_tenant] == [(c.start, c.end) for c in first]


# --- explicit documents -------------------------------------------------------------------------


def test_long_paragraph_is_windowed_with_overlap(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=64, target_tokens=48, overlap_tokens=16)
    body = " ".join(f"word{i}" for i in range(400))
    raw = f"# Title\n\n{body}\n".encode()
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    windowed = [c for c in chunks if "windowed" in c.flags]
    assert len(windowed) > 3
    for a, b in itertools.pairwise(windowed):
        assert b.start < a.end, "consecutive windows overlap"
        assert a.start < b.start
    assert all(c.heading_path == ("Title",) for c in chunks)


def test_long_fence_is_split_by_lines_with_context(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=64, target_tokens=48, overlap_tokens=8)
    lines = "".join(f"value_{i} = compute({i}, {i + 1})\n" for i in range(80))
    raw = f"# Code\n\n```python\n# comment\n{lines}```\n".encode()
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    parts = [c for c in chunks if "fence_split" in c.flags]
    assert len(parts) > 2
    assert all(c.kind == "code" for c in parts)
    for c in parts[1:]:
        assert "```python\n" in c.embedding_text  # the opening line is repeated as context
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == ["Code"]


def test_long_table_is_split_by_rows_with_header(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=64, target_tokens=48, overlap_tokens=8)
    rows = "".join(f"| row {i} | value {i * 7} |\n" for i in range(60))
    raw = f"| name | value |\n|---|---|\n{rows}".encode()
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    parts = [c for c in chunks if "table_split" in c.flags]
    assert len(parts) > 2
    for c in parts[1:]:
        assert "| name | value |\n|---|---|\n" in c.embedding_text


def test_unclosed_fence_chunks_are_flagged(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=256, target_tokens=200, overlap_tokens=16)
    raw = b"# T\n\nintro\n\n```\ncode\n# comment\n"
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    assert any("unclosed_fence" in c.flags for c in chunks)


def test_empty_and_blank_documents_have_no_chunks(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx()
    for raw in (b"", b"\n\n", b"  \r\n\t\n", b"\xef\xbb\xbf"):
        _, chunks = run_chunker(raw, ctx)
        assert chunks == []


def test_heading_path_and_anchors(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=0)
    raw = b"# A\n\npara a\n\n## B\n\npara b\n\n### C\n\npara c\n\n## B\n\nagain b\n\n# D\n\npara d\n"
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    paths = {c.text.splitlines()[-1]: (c.heading_path, c.anchor) for c in chunks}
    assert paths["para a"] == (("A",), "a")
    assert paths["para b"] == (("A", "B"), "b")
    assert paths["para c"] == (("A", "B", "C"), "c")
    assert paths["again b"] == (("A", "B"), "b-1")
    assert paths["para d"] == (("D",), "d")


# --- token_windows ------------------------------------------------------------------------------


def _check_windows(
    text: str, start: int, end: int, spans: list[tuple[int, int]], ctx: ChunkContext, r: Callable[[str], str]
) -> None:
    for a, b in spans:
        assert start <= a < b <= end
        assert text[a:b] == text[a:b].strip()
        assert ctx.fits(r(text[a:b]))
    covered = set()
    for a, b in spans:
        covered.update(range(a, b))
    assert all(i in covered for i in range(start, end) if not text[i].isspace())


def test_token_windows_overlap(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=8)
    text = " ".join(f"w{i}" for i in range(300))
    plain: Callable[[str], str] = lambda t: t  # noqa: E731
    with_overlap = token_windows(text, 0, len(text), ctx, 20, 8, plain)
    without = token_windows(text, 0, len(text), ctx, 20, 0, plain)
    _check_windows(text, 0, len(text), with_overlap, ctx, plain)
    _check_windows(text, 0, len(text), without, ctx, plain)
    assert len(with_overlap) > len(without) > 3
    for (a0, a1), (b0, b1) in itertools.pairwise(with_overlap):
        assert a0 < b0 < a1 < b1, "each window overlaps the next"
    for (_a0, a1), (b0, _b1) in itertools.pairwise(without):
        assert a1 <= b0, "without overlap windows are disjoint"


def test_token_windows_respect_offsets_of_subrange(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=4)
    text = "HEAD " + " ".join(f"w{i}" for i in range(200)) + " TAIL"
    start, end = 5, len(text) - 5
    plain: Callable[[str], str] = lambda t: t  # noqa: E731
    spans = token_windows(text, start, end, ctx, 16, 4, plain)
    _check_windows(text, start, end, spans, ctx, plain)
    assert spans[0][0] == start and spans[-1][1] == end


@pytest.mark.parametrize(
    "long_word",
    [
        "a" * 5000,  # one word > 100 chars: WordPiece makes it a single [UNK]
        "é" * 5000,
        "東" * 5000,  # CJK: one token per char, no word boundary in between
        "ab-" * 1700,  # punctuation: many tiny words
        ("pneumonoultramicroscopicsilicovolcanoconiosis" * 2)[:99] + "-" + "x" * 4900,
    ],
)
def test_single_very_long_word_is_split_within_budget(
    chunk_ctx: Callable[..., ChunkContext], long_word: str
) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=8)
    text = f"before {long_word} after"
    r: Callable[[str], str] = lambda t: render("Crumb > Path", "", t)  # noqa: E731
    size = ctx.config.max_tokens - ctx.tokens(r(""))
    spans = token_windows(text, 0, len(text), ctx, size, 8, r)
    _check_windows(text, 0, len(text), spans, ctx, r)
    if ctx.tokens(r(text)) > ctx.config.max_tokens:
        assert len(spans) > 1
    if ctx.tokens(text) > 1000:
        assert len(spans) > ctx.tokens(text) // ctx.config.max_tokens


def test_word_longer_than_window_is_cut_inside_the_word(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=16, target_tokens=12, overlap_tokens=0)
    long_word = "pneumonoultramicroscopicsilicovolcanoconiosis"  # one word, ~15 word pieces
    text = f"{long_word} {long_word}"
    plain: Callable[[str], str] = lambda t: t  # noqa: E731
    spans = token_windows(text, 0, len(text), ctx, 6, 0, plain)
    _check_windows(text, 0, len(text), spans, ctx, plain)
    assert any(0 < a < len(long_word) for a, _b in spans), "a cut falls inside the first word"
    assert "".join(text[a:b] for a, b in spans) == text.replace(" ", "")


def test_window_with_one_token_of_room_still_fits(chunk_ctx: Callable[..., ChunkContext]) -> None:
    # A word piece re-tokenized alone can cost more than in context ('##ult' -> 'ul', '##t'):
    # with one token of room the window must fall back to a character cut, not give up.
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=0)
    prefix = "**bold** pneumonoultramicroscopicsilicovolcanoconiosis aaaaaaaaaaaaaaa\n\n"
    assert ctx.config.max_tokens - ctx.tokens(prefix) == 1  # one token of room

    def render_with_prefix(t: str) -> str:
        return prefix + t

    text = "pneumonoultramicroscopicsilicovolcanoconiosis ultra"
    spans = token_windows(text, 0, len(text), ctx, 1, 0, render_with_prefix)
    assert spans and all(ctx.fits(render_with_prefix(text[a:b])) for a, b in spans)
    covered = {i for a, b in spans for i in range(a, b)}
    assert all(i in covered for i, ch in enumerate(text) if not ch.isspace())


def test_long_word_document_chunks_within_budget(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=8)
    raw = ("# Heading\n\nstart " + "q" * 5000 + " end\n\n```\n" + "z" * 3000 + "\n```\n").encode()
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    assert max(c.token_count for c in chunks) <= 32


def test_repeated_paragraphs_get_distinct_ids(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=0)
    para = "The same paragraph repeated verbatim, word for word."
    raw = ("# Same\n\n" + "\n\n".join([para] * 6) + "\n").encode()
    parsed, chunks = run_chunker(raw, ctx)
    check_invariants(raw, parsed, chunks, ctx)
    same = [c for c in chunks if c.text == para]
    assert len(same) >= 4
    assert len({c.id for c in same}) == len(same)
    assert len({(c.start, c.end) for c in same}) == len(same)
    assert len({c.checksum for c in same}) == len(same)


def test_token_windows_empty_and_whitespace(chunk_ctx: Callable[..., ChunkContext]) -> None:
    ctx = chunk_ctx(max_tokens=32, target_tokens=24, overlap_tokens=0)
    plain: Callable[[str], str] = lambda t: t  # noqa: E731
    assert token_windows("   \n\t ", 0, 6, ctx, 10, 0, plain) == []
    assert token_windows("ab", 1, 1, ctx, 10, 0, plain) == []
    assert trim("  ab  ", 0, 6) == (2, 4)
    assert trim("    ", 0, 4)[0] == trim("    ", 0, 4)[1]
