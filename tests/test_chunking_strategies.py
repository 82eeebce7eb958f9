"""Property tests for every chunking strategy, plus sentence-boundary examples.

For ``token``, ``recursive``, ``semantic`` (with the fake HashEmbedder as its embed hook)
and ``structural``: offsets reproduce the text, the budget holds as recounted with the real
tokenizer, ids are deterministic and scoped by the config, every non-whitespace character
is covered; token windows overlap by exactly ``overlap_tokens`` tokens, recursive chunks by
at most that.
"""

from __future__ import annotations

import dataclasses
import itertools
from bisect import bisect_left

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.chunking.base import ChunkContext
from tessera.chunking.profile import SemanticConfig, parse_chunking
from tessera.chunking.registry import get_chunker
from tessera.chunking.sentences import sentence_spans
from tessera.chunking.token import TokenWindows, configured_inflation, inflation, window_size
from tessera.chunking.tokens import TokenCounter
from tessera.config import ChunkingConfig
from tessera.embedding.fake import HashEmbedder
from tessera.errors import ChunkingError, ConfigError
from tessera.types import Chunk, ParsedDocument
from tests.conftest import Workspace
from tests.test_chunking_properties import PARSER, SHORT_WORDS, build_raw, document, line_ending, source

STRATEGIES = ["token", "recursive", "semantic", "structural"]
# (max_tokens, target_tokens, overlap_tokens, document_prefix)
CONTEXTS = [
    (32, 24, 0, ""),
    (32, 32, 8, ""),
    (64, 48, 16, ""),
    (64, 48, 16, "search_document: "),
    (256, 200, 32, ""),
    (128, 128, 0, ""),
]
Key = tuple[str, int, int, int, str]
SETTINGS = settings(
    max_examples=40,
    deadline=None,
    database=None,
    suppress_health_check=[
        HealthCheck.too_slow,
        HealthCheck.function_scoped_fixture,
        HealthCheck.data_too_large,
    ],
)

sentence = st.builds(
    lambda ws, end: " ".join(ws).capitalize() + end,
    st.lists(
        st.sampled_from([*SHORT_WORDS, "Dr.", "e.g.", "U.S.", "3.5", "said,", "(x)"]), min_size=1, max_size=25
    ),
    st.sampled_from([".", ".", "?", "!", "...", "。", ".”", ":", ";"]),
)
prose = st.lists(
    st.tuples(
        sentence, st.sampled_from([" ", " ", " ", "\n", "\n\n", "  ", r"\n", r"\n\n", r"\r\n", r" \n"])
    ),
    min_size=0,
    max_size=60,
).map(lambda parts: "".join(s + sep for s, sep in parts))  # r"\n": a serialized string's escaped break
any_text = st.one_of(document, prose)


def make_ctx(counter: TokenCounter, key: Key) -> ChunkContext:
    strategy, m, t, o, prefix = key
    cfg = ChunkingConfig(strategy, m, t, o, semantic=SemanticConfig(min_tokens=min(8, t)))
    return ChunkContext(cfg, counter, "test-model", prefix, embed=HashEmbedder().embed_documents)


def chunk(text: str, ctx: ChunkContext, eol: str = "\n") -> tuple[ParsedDocument, list[Chunk]]:
    raw = build_raw(text, eol, b"")
    doc = source(raw=raw)
    parsed = PARSER.parse(doc, raw)
    return parsed, get_chunker(ctx.config.strategy).chunk(doc, parsed, ctx)


def token_starts(ctx: ChunkContext, text: str) -> list[int]:
    return [s for s, _ in ctx.counter.spans(text)[0]]


def check(parsed: ParsedDocument, chunks: list[Chunk], ctx: ChunkContext) -> None:
    text = parsed.text
    for k, c in enumerate(chunks):
        assert 0 <= c.start < c.end <= len(text)
        assert text[c.start : c.end] == c.text
        assert (c.byte_start, c.byte_end) == parsed.offsets.span(text, c.start, c.end)
        assert ctx.tokens(c.embedding_text) == c.token_count <= ctx.config.max_tokens
        assert c.position == k and c.chunking_config_hash == ctx.config_hash
        assert c.prev_id == (chunks[k - 1].id if k else "")
        if ctx.config.strategy in ("structural", "semantic"):  # breadcrumb + text
            assert c.embedding_text.endswith(c.text)
        else:
            assert c.embedding_text == c.text
    assert len({c.id for c in chunks}) == len(chunks)
    assert [c.start for c in chunks] == sorted(c.start for c in chunks)
    covered = bytearray(len(text))
    for c in chunks:
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
    missing = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missing, f"uncovered chars at {missing[:10]}"
    if text.strip():
        assert chunks


@pytest.fixture(scope="module")
def contexts(counter: TokenCounter) -> dict[Key, ChunkContext]:
    return {(s, *c): make_ctx(counter, (s, *c)) for s in STRATEGIES for c in CONTEXTS}


@SETTINGS
@given(text=any_text, eol=line_ending, strategy=st.sampled_from(STRATEGIES), which=st.sampled_from(CONTEXTS))
def test_invariants_of_every_strategy(
    contexts: dict[Key, ChunkContext], text: str, eol: str, strategy: str, which: tuple[int, int, int, str]
) -> None:
    ctx = contexts[(strategy, *which)]
    try:
        parsed, chunks = chunk(text, ctx, eol)
    except ChunkingError as e:  # only the breadcrumb strategies refuse, when it leaves no room
        assert strategy in ("structural", "semantic") and ("context" in str(e) or "breadcrumb" in str(e))
        return
    check(parsed, chunks, ctx)
    _, again = chunk(text, ctx, eol)
    assert again == chunks  # deterministic, field for field
    if chunks:
        other = dataclasses.replace(
            ctx, config=dataclasses.replace(ctx.config, target_tokens=ctx.config.target_tokens - 1)
        )
        _, changed = chunk(text, other, eol)
        assert {c.id for c in chunks}.isdisjoint(c.id for c in changed)


@SETTINGS
@given(text=any_text, which=st.sampled_from(CONTEXTS))
def test_token_windows_overlap_exactly(
    contexts: dict[Key, ChunkContext], text: str, which: tuple[int, int, int, str]
) -> None:
    ctx = contexts[("token", *which)]
    parsed, chunks = chunk(text, ctx)
    size, overlap = window_size(ctx)
    assert overlap == min(ctx.config.overlap_tokens, size - 1)
    starts = token_starts(ctx, parsed.text)
    if len(starts) <= size:
        assert len(chunks) <= 1
        return
    assert len(chunks) > 1
    for a, b in itertools.pairwise(chunks):
        if "shrunk" in a.flags or "shrunk" in b.flags:
            continue
        a0, a1 = bisect_left(starts, a.start), bisect_left(starts, a.end)
        b0 = bisect_left(starts, b.start)
        assert a1 - a0 == size, "every window but the last has exactly s tokens"
        assert a1 - b0 == overlap, "consecutive windows share exactly o tokens"


@SETTINGS
@given(text=any_text, which=st.sampled_from(CONTEXTS))
def test_recursive_overlap_is_at_most_configured(
    contexts: dict[Key, ChunkContext], text: str, which: tuple[int, int, int, str]
) -> None:
    ctx = contexts[("recursive", *which)]
    parsed, chunks = chunk(text, ctx)
    starts = token_starts(ctx, parsed.text)
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start and a.end < b.end
        if b.start < a.end and "refit" not in a.flags + b.flags:
            shared = bisect_left(starts, a.end) - bisect_left(starts, b.start)
            assert 0 < shared <= ctx.config.overlap_tokens
            before = parsed.text[: b.start]
            assert before[-1].isspace() or before.endswith(r"\n"), "overlap starts at a word boundary"
        if ctx.config.overlap_tokens == 0:
            assert b.start >= a.end


GLUED = (
    "東京café東京東京東京supercalifragilisticexpialidociouscaféx_y" + "a" * 31 + "**bold**"
    "supercalifragilisticexpialidocious東京pneumonoultramicroscopicsilicovolcanoconiosisultra"
) * 3


@pytest.mark.parametrize(("strategy", "flag"), [("token", "shrunk"), ("recursive", "refit")])
@pytest.mark.parametrize(("m", "t", "o"), [(24, 24, 0), (16, 16, 4)])
def test_cuts_inside_words_that_retokenize_longer_are_refitted(
    counter: TokenCounter, strategy: str, flag: str, m: int, t: int, o: int
) -> None:
    # No room to spare (s = max_tokens - 2) and cuts inside glued words: some windows
    # re-tokenize to more tokens than they had in context and must shrink or be re-split.
    ctx = make_ctx(counter, (strategy, m, t, o, ""))
    parsed, chunks = chunk(GLUED, ctx)
    check(parsed, chunks, ctx)
    assert any(flag in c.flags for c in chunks)
    for a, b in itertools.pairwise(chunks):
        assert a.start < b.start and a.end < b.end


def test_recursive_prefers_paragraphs_and_reaches_overlap(counter: TokenCounter) -> None:
    ctx = make_ctx(counter, ("recursive", 64, 48, 12, ""))
    paras = [" ".join(f"Sentence {p}-{s} has several plain words." for s in range(3)) for p in range(12)]
    parsed, chunks = chunk("\n\n".join(paras), ctx)
    check(parsed, chunks, ctx)
    starts = token_starts(ctx, parsed.text)
    overlaps = [
        bisect_left(starts, a.end) - bisect_left(starts, b.start) for a, b in itertools.pairwise(chunks)
    ]
    assert all(0 < o <= 12 for o in overlaps)
    assert sum(o >= 6 for o in overlaps) == len(overlaps), "sentence overlap of at least half"
    assert all(c.text[0] == "S" for c in chunks), "chunks start at sentence starts"


def test_semantic_cuts_between_topics_and_counts_cost(counter: TokenCounter) -> None:
    embedder = HashEmbedder()
    ctx = dataclasses.replace(
        make_ctx(counter, ("semantic", 256, 200, 0, "")), embed=embedder.embed_documents
    )
    cats = " ".join("Cats purr and cats nap." for _ in range(6))
    rockets = " ".join("Rockets burn fuel and rockets fly." for _ in range(6))
    parsed, chunks = chunk(f"{cats} {rockets}", ctx)
    check(parsed, chunks, ctx)
    assert [c.text.count("Rockets") for c in chunks] == [0, 6]
    assert ctx.stats.sentences_embedded == 12
    assert ctx.stats.embed_tokens == sum(
        counter.count(s) for s in (cats + " " + rockets).replace(". ", ".\0").split("\0")
    )
    _, again = chunk(f"{cats} {rockets}", ctx)
    assert again == chunks
    assert ctx.stats.sentences_embedded == 24


@pytest.mark.model
def test_semantic_with_the_real_model_is_deterministic(counter: TokenCounter) -> None:
    from tessera.config import EmbeddingConfig
    from tessera.embedding.sentence import SentenceTransformerEmbedder

    embedder = SentenceTransformerEmbedder(EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2"))
    cfg = ChunkingConfig("semantic", 256, 200, 0, semantic=SemanticConfig("absolute", 0.5, 1, 8))
    ctx = ChunkContext(cfg, counter, embedder.identity.hash, embed=embedder.embed_documents)
    cooking = (
        "Boil the pasta in salted water. Drain it and add the tomato sauce. Serve with basil and cheese."
    )
    space = "The rocket reached orbit. Its satellite deployed solar panels. Mission control confirmed."
    parsed, chunks = chunk(f"{cooking} {space}", ctx)
    check(parsed, chunks, ctx)
    assert [c.text for c in chunks] == [cooking, space]
    assert chunk(f"{cooking} {space}", ctx)[1] == chunks
    assert ctx.stats.sentences_embedded == 12


def test_semantic_strategy_runs_in_a_pipeline(ws: Workspace) -> None:
    ws.tenant(
        "acme", {"a.md": "# Cats\n\nCats purr. Cats nap.\n\n# Rockets\n\nRockets fly. Rockets burn fuel.\n"}
    )
    ws.chunking = {"strategy": "semantic", "max_tokens": 128, "target_tokens": 64, "overlap_tokens": 0}
    result = ws.run("acme")
    assert result["chunk"]["strategy"] == "semantic" and result["chunk"]["chunks"] >= 1
    assert ws.embedder.calls, "sentences were embedded through the run's embedder"
    doc = "# Cats\n\nCats purr. Cats nap.\n\n# Rockets\n\nRockets fly. Rockets burn fuel.\n"
    assert ws.rows("acme") and all(r["text"] in doc for r in ws.rows("acme"))


def test_semantic_without_embedder_is_a_chunking_error(counter: TokenCounter) -> None:
    ctx = dataclasses.replace(make_ctx(counter, ("semantic", 64, 48, 0, "")), embed=None)
    with pytest.raises(ChunkingError, match="embedder"):
        chunk("One sentence. Another one.", ctx)


def test_inflation_and_stats(counter: TokenCounter) -> None:
    assert inflation(250, 125) == 2.0 and inflation(128, 0) == 1.0
    with pytest.raises(ValueError):
        inflation(10, 10)
    ctx = make_ctx(counter, ("token", 64, 48, 16, ""))
    chunk(" ".join(f"w{i}" for i in range(2000)), ctx)
    assert configured_inflation(ctx) == inflation(48, 16) == 1.5
    assert ctx.stats.inflation == pytest.approx(1.5, rel=0.02)


def test_unknown_strategy_is_a_config_error() -> None:
    with pytest.raises(ConfigError, match="unknown strategy"):
        get_chunker("no-such-strategy")
    with pytest.raises(ConfigError, match="strategy"):
        parse_chunking({"strategy": "sentencepiece-magic"})
    for name in ("token", "recursive", "semantic"):
        assert parse_chunking({"strategy": name}).strategy == name


def test_context_identity_ignores_embed_and_stats(counter: TokenCounter) -> None:
    a = make_ctx(counter, ("semantic", 64, 48, 0, ""))
    b = dataclasses.replace(a, embed=None)
    b.stats.sentences_embedded += 3
    assert a == b and a.config_hash == b.config_hash and hash(a) == hash(b)


def sentences(text: str) -> list[str]:
    return [text[s:e] for s, e in sentence_spans(text)]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("Mr. Smith met Dr. Jones. They talked.", ["Mr. Smith met Dr. Jones.", "They talked."]),
        ("Use e.g. a fork, i.e. a tool. Done.", ["Use e.g. a fork, i.e. a tool.", "Done."]),
        ("The U.S. Army grew. Then it shrank.", ["The U.S. Army grew.", "Then it shrank."]),
        ("Pi is 3.14 today. Tau is 6.28!", ["Pi is 3.14 today.", "Tau is 6.28!"]),
        ("Wait... what? Yes... Really.", ["Wait... what?", "Yes...", "Really."]),
        ("Apples, pears, etc. Then more.", ["Apples, pears, etc.", "Then more."]),
        ("J. R. R. Tolkien wrote it. Fine.", ["J. R. R. Tolkien wrote it.", "Fine."]),
        ('He said "Stop." Then left.', ['He said "Stop."', "Then left."]),
        ("(It was late.) We slept.", ["(It was late.)", "We slept."]),
        ("東京は大きい。大阪も大きい！本当？はい", ["東京は大きい。", "大阪も大きい！", "本当？", "はい"]),
        ("「よし。」次へ。", ["「よし。」", "次へ。"]),
        ("यह एक वाक्य है। यह दूसरा है।", ["यह एक वाक्य है।", "यह दूसरा है।"]),
        ("هل أنت بخير؟ نعم", ["هل أنت بخير؟", "نعم"]),
        ("A title\n\nBody text without a stop", ["A title", "Body text without a stop"]),
        ("Intro line\n- item one\n- item two", ["Intro line", "- item one", "- item two"]),
        ("wrapped line\ncontinues here. Next one.", ["wrapped line\ncontinues here.", "Next one."]),
        (  # an all-lowercase text still has sentences (issue 16)
            "the company had a net loss in 2017. the loss was driven by impairments of goodwill. "
            "revenue rose.",
            [
                "the company had a net loss in 2017.",
                "the loss was driven by impairments of goodwill.",
                "revenue rose.",
            ],
        ),
        ("use e.g. the hammer at 3.5 volts. it works.", ["use e.g. the hammer at 3.5 volts.", "it works."]),
        ("mr. smith left... and then came back. ok.", ["mr. smith left... and then came back.", "ok."]),
        ("apples, pears, etc. the rest.", ["apples, pears, etc. the rest."]),
        ("see j. smith. he knows.", ["see j. smith.", "he knows."]),
        ("", []),
        ("   \n\n  ", []),
        # escaped line breaks (a JSON/repr export): the escapes end the sentence before them
        (
            r"It rose (Lee, 2013).\n\nHowever, it fell. Then",
            [r"It rose (Lee, 2013).\n\n", "However, it fell.", "Then"],
        ),
        (r"Open the store.\r\nClick Save.", [r"Open the store.\r\n", "Click Save."]),
        (r"Conclusion\n\nIn short, yes.", [r"Conclusion\n\n", "In short, yes."]),
        (r"Steps:\n- one\n- two", [r"Steps:\n", r"- one\n", "- two"]),
        (r"Portland, USA\nPortland is green.", [r"Portland, USA\nPortland is green."]),  # one break: a line
        # not a break before a lowercase letter (a path, TeX), nor after an abbreviation
        (r"Saved in C:\new. Done.", [r"Saved in C:\new.", "Done."]),
        (r"It ends.\newline here. More.", [r"It ends.\newline here.", "More."]),
        (r"Trees, etc.\nthe rest. Ok.", [r"Trees, etc.\nthe rest.", "Ok."]),
        (r"Ask Mr.\nSmith now.", [r"Ask Mr.\nSmith now."]),
        (r"東京は大きい。\n大阪", [r"東京は大きい。\n", "大阪"]),
    ],
)
def test_sentence_spans_examples(text: str, expected: list[str]) -> None:
    assert sentences(text) == expected


_PARAGRAPHS = [
    "Social media lets people share their lives with friends. It can also bring them closer, "
    "because sharing builds trust over time. Many studies agree on this point.",
    "However, social media also has costs. Comparing oneself with others breeds envy. "
    "Some people feel worse after an hour of scrolling than before it.",
    "Finally, time online is time not spent together. Couples report more arguments "
    "about phones than about money. The advice is simple: put the phone away.",
]


@pytest.mark.parametrize("strategy", ["recursive", "structural", "adaptive"])
def test_an_exported_chat_log_is_cut_at_its_escaped_paragraph_breaks(
    counter: TokenCounter, strategy: str
) -> None:
    # a chat log exported as a Python repr: one line, the messages' paragraphs joined by the
    # two characters backslash-n; each paragraph (~35 tokens) fits a 48-token chunk, two do not
    body = r"\n\n".join(_PARAGRAPHS)
    text = "[{'content': 'Write about social media.', 'role': 'user'}, {'content': '" + body + "'}]\n"
    ctx = make_ctx(counter, (strategy, 48, 48, 0, ""))
    parsed, chunks = chunk(text, ctx)
    check(parsed, chunks, ctx)
    starts = {c.start for c in chunks}
    for p in _PARAGRAPHS[1:]:  # every paragraph after an escaped break starts a chunk
        assert parsed.text.index(p) in starts, p[:30]
    for c in chunks[:-1]:  # and the escapes stay with the chunk before them
        assert not c.text.startswith("\\")
    assert any(c.text.endswith(r"\n\n") for c in chunks)


@pytest.mark.parametrize("strategy", ["recursive", "structural"])
def test_a_backslash_n_before_a_lowercase_letter_is_not_a_break(counter: TokenCounter, strategy: str) -> None:
    # a Windows path or a TeX command: cutting there would split a word, so it stays inside
    path = r"Reports are saved in C:\new\notes by default and copied to D:\nightly each evening. "
    text = path * 6
    ctx = make_ctx(counter, (strategy, 32, 32, 0, ""))
    parsed, chunks = chunk(text, ctx)
    check(parsed, chunks, ctx)
    for c in chunks:
        assert not c.text.endswith(r"C:\n") and not c.text.endswith(r"D:\n"), c.text


@settings(max_examples=60, deadline=None, database=None)
@given(text=any_text, cut=st.integers(0, 50))
def test_sentence_spans_partition_the_range(text: str, cut: int) -> None:
    start, end = min(cut, len(text)), len(text)
    spans = sentence_spans(text, start, end)
    for (_, a1), (b0, _) in itertools.pairwise(spans):
        assert a1 <= b0 and not text[a1:b0].strip()  # whitespace, or nothing (escapes, CJK)
    for s, e in spans:
        assert start <= s < e <= end and text[s:e] == text[s:e].strip()
    covered = {i for s, e in spans for i in range(s, e)}
    assert all(i in covered for i in range(start, end) if not text[i].isspace())


# --- token: exact counts without re-encoding every window -------------------------------------

_odd_words = [
    "café", "naïve", "e\u0301te\u0301", "東京", "한국어", "İstanbul", "ﬁne", "Straße", "x_y", "[MASK]",
    "[CLS]x", "\x00", "\x01a", "\u200b", "\ufffd", "—", "...", "3.14159", "1,000,000", "😀👍", "##ab",
    "supercalifragilisticexpialidocious", "pneumonoultramicroscopicsilicovolcanoconiosis",
]  # fmt: skip
_word = st.one_of(
    st.sampled_from(SHORT_WORDS),
    st.sampled_from(_odd_words),
    st.text(st.characters(min_codepoint=0xAC00, max_codepoint=0xD7A3), min_size=1, max_size=5),  # Hangul
    st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), min_size=1, max_size=8),
    st.text(st.sampled_from("abcdefghijklmnopqrstuvwxyzéß0123456789"), min_size=12, max_size=130),
    st.integers(0, 10**30).map(str),
)
wild_text = st.lists(
    st.tuples(_word, st.sampled_from([" ", " ", "", "\n", "\t", ", ", "-", "\u00a0", "\u3000", "\n\n"])),
    min_size=5,
    max_size=120,
).map(lambda parts: "".join(w + sep for w, sep in parts))


class _FullRecount:
    """The same tokenizer without ``local_wordpiece``: every window is recounted in full."""

    def __init__(self, inner: TokenCounter) -> None:
        self.inner, self.version = inner, inner.version

    def count(self, text: str) -> int:
        return self.inner.count(text)

    def count_many(self, texts: list[str]) -> list[int]:
        return self.inner.count_many(texts)

    def spans(self, text: str) -> tuple[list[tuple[int, int]], list[bool]]:
        return self.inner.spans(text)


@settings(SETTINGS, max_examples=80)
@given(
    text=wild_text,
    m=st.integers(10, 64),
    t=st.integers(1, 48),
    o=st.integers(0, 48),
    prefix=st.sampled_from(["", "search_document: ", "title", "q:", "passage-", "東"]),
)
def test_token_counts_are_exact_without_full_recount(
    counter: TokenCounter, text: str, m: int, t: int, o: int, prefix: str
) -> None:
    assert getattr(counter, "local_wordpiece", False) is True, "the fast path is the one under test"
    ctx = ChunkContext(ChunkingConfig("token", m, min(t, m), min(o, t)), counter, "test-model", prefix)
    slow = dataclasses.replace(ctx, counter=_FullRecount(counter))
    # Straight on the raw text (control characters, combining marks, Hangul, ...).
    fast_windows = TokenWindows(text, ctx)
    fast = fast_windows.spans()
    for s, e, n in fast:
        assert n == counter.count(prefix + text[s:e]) <= m or n == -1
    slow_windows = TokenWindows(text, slow)
    assert fast == slow_windows.spans() and fast_windows.shrunk == slow_windows.shrunk
    # Through the chunker: budget, recount and the exact overlap in token-index space.
    parsed, chunks = chunk(text, ctx)
    for c in chunks:
        assert c.token_count == counter.count(prefix + c.embedding_text) <= m
    # A character the tokenizer splits into several pieces (Hangul under NFD) hides which of
    # them a cut is at: such pairs are measured by the exact counts above only.
    size, overlap = window_size(ctx)
    offs = ctx.counter.spans(parsed.text)[0]
    starts = [s for s, _ in offs]
    shared = {c for p, q in itertools.pairwise(offs) for c in range(q[0], p[1])}
    for a, b in itertools.pairwise(chunks):
        if "shrunk" in a.flags or "shrunk" in b.flags or {a.start, a.end - 1, b.start} & shared:
            continue
        a0, a1 = bisect_left(starts, a.start), bisect_left(starts, a.end)
        assert a1 - a0 == size and a1 - bisect_left(starts, b.start) == overlap


def test_semantic_sentence_vectors_come_from_the_cache_on_a_rerun(ws: Workspace) -> None:
    sentences = [f"Topic {i} sentence about item{i} and thing{i}." for i in range(12)]
    ws.tenant("acme", {"a.md": "# Notes\n\n" + " ".join(sentences) + "\n"})
    ws.chunking = {"strategy": "semantic", "max_tokens": 128, "target_tokens": 64, "overlap_tokens": 0}
    ws.run("acme", "r1")
    first = sum(ws.embedder.calls)
    assert first >= len(sentences)  # every sentence was embedded once
    edited = [*sentences[:-1], "A brand new closing sentence appears here."]
    (ws.root / "corpus" / "acme" / "a.md").write_text(
        "# Notes\n\n" + " ".join(edited) + "\n", encoding="utf-8"
    )
    ws.run("acme", "r2")
    again = sum(ws.embedder.calls) - first
    assert 0 < again < len(sentences)  # only the new sentence and the changed chunks
