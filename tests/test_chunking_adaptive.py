"""The ``adaptive`` strategy: structural chunks where the document has headings at the window's
scale, longer windows inside long sections; chosen from the document alone."""

from __future__ import annotations

import itertools
import random

import pytest

from tessera.chunking.adaptive import LONG_FLAG, AdaptiveChunker
from tessera.chunking.base import ChunkContext
from tessera.chunking.profile import AdaptiveConfig, ChunkingConfig, parse_chunking
from tessera.chunking.registry import get_chunker
from tessera.chunking.structural import StructuralChunker
from tessera.chunking.tokens import HFTokenCounter
from tessera.errors import ConfigError
from tessera.types import Chunk, ParsedDocument
from tests.test_chunking_properties import PARSER, check_invariants, source

WORDS = [
    "river",
    "stone",
    "cloud",
    "amber",
    "harbour",
    "keeper",
    "market",
    "barley",
    "choir",
    "cyclist",
    "mural",
    "station",
]


def prose(rng: random.Random, sentences: int) -> str:
    out = []
    for _ in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def wiki_and_report() -> bytes:
    """A wiki-like part (short sections under headings) and a long report without headings."""
    rng = random.Random(7)
    parts = ["# Atlas\n"]
    for n in range(6):
        parts.append(f"## Part {n}\n\n{prose(rng, 4)}\n")
    parts.append("# Annual report\n")
    parts += [prose(rng, 6) + "\n" for _ in range(30)]
    return "\n".join(parts).encode()


def run_chunker(raw: bytes, context: ChunkContext) -> tuple[ParsedDocument, list[Chunk]]:
    doc = source(raw=raw)
    parsed = PARSER.parse(doc, raw)
    chunks = get_chunker(context.config.strategy).chunk(doc, parsed, context)
    check_invariants(raw, parsed, chunks, context)
    return parsed, chunks


def ctx(
    counter: HFTokenCounter, strategy: str, target: int, overlap: int = 0, **adaptive: int
) -> ChunkContext:
    cfg = ChunkingConfig(strategy, 256, target, overlap, False, adaptive=AdaptiveConfig(**adaptive))
    return ChunkContext(cfg, counter, "test-model")


def test_short_sections_chunk_as_structural_long_ones_get_long_windows(counter: HFTokenCounter) -> None:
    raw = wiki_and_report()
    adaptive = ctx(counter, "adaptive", 64, long_section_tokens=300, long_target_tokens=200)
    parsed, chunks = run_chunker(raw, adaptive)
    _, small = run_chunker(raw, ctx(counter, "structural", 64))
    _, large = run_chunker(raw, ctx(counter, "structural", 200))
    assert all(parsed.text[c.start : c.end] == c.text for c in chunks)
    long_ = [c for c in chunks if LONG_FLAG in c.flags]
    short = [c for c in chunks if LONG_FLAG not in c.flags]
    assert long_ and short
    report = parsed.text.index("# Annual report")
    assert all(c.start >= report for c in long_) and all(c.end <= report for c in short)
    # each part is exactly what structural gives at that size (so cached vectors are reused)
    assert {(c.start, c.end, c.embedding_text) for c in short} == {
        (c.start, c.end, c.embedding_text) for c in small if c.end <= report
    }
    assert {(c.start, c.end, c.embedding_text) for c in long_} == {
        (c.start, c.end, c.embedding_text) for c in large if c.start >= report
    }
    assert max(c.token_count for c in long_) > 150 >= max(c.token_count for c in short)
    # ids are the adaptive profile's own, never a structural profile's
    assert not {c.id for c in chunks} & {c.id for c in small + large}
    assert all(c.chunker_version == AdaptiveChunker.version for c in chunks)


def test_threshold_decides_and_a_huge_threshold_is_plain_structural(counter: HFTokenCounter) -> None:
    raw = wiki_and_report()
    _, never = run_chunker(raw, ctx(counter, "adaptive", 64, long_section_tokens=10**6))
    _, small = run_chunker(raw, ctx(counter, "structural", 64))
    assert [(c.start, c.end) for c in never] == [(c.start, c.end) for c in small]
    assert not any(LONG_FLAG in c.flags for c in never)
    _, always = run_chunker(raw, ctx(counter, "adaptive", 64, long_section_tokens=1, long_target_tokens=200))
    assert all(LONG_FLAG in c.flags for c in always) and len(always) < len(never)


def test_overlap_in_long_sections_and_determinism(counter: HFTokenCounter) -> None:
    raw = wiki_and_report()
    c = ctx(counter, "adaptive", 64, long_section_tokens=300, long_target_tokens=200, long_overlap_tokens=50)
    _, a = run_chunker(raw, c)
    _, b = run_chunker(raw, c)
    assert [x.id for x in a] == [x.id for x in b]
    long_ = [x for x in a if LONG_FLAG in x.flags]
    assert any(p.end > q.start for p, q in itertools.pairwise(long_))  # windows overlap


def test_adaptive_config_is_parsed_and_checked() -> None:
    cfg = parse_chunking(
        {"strategy": "adaptive", "adaptive": {"long_section_tokens": 900, "long_target_tokens": 200}}
    )
    assert cfg.adaptive == AdaptiveConfig(900, 200, 0)
    assert cfg.as_dict()["adaptive"]["long_section_tokens"] == 900
    assert "adaptive" not in parse_chunking({"strategy": "structural"}).as_dict()  # other hashes unchanged
    with pytest.raises(ConfigError):
        parse_chunking(
            {"strategy": "adaptive", "adaptive": {"long_target_tokens": 100, "long_overlap_tokens": 100}}
        )
    with pytest.raises(ConfigError):
        parse_chunking({"adaptive": {"questions": "x"}})  # unknown key
    with pytest.raises(ConfigError):
        parse_chunking({"max_tokens": 128, "adaptive": {"long_target_tokens": 200}})  # over the budget


def test_structural_is_unchanged_by_the_subclass(counter: HFTokenCounter) -> None:
    assert StructuralChunker.version == "structural/3" and AdaptiveChunker.name == "adaptive"
