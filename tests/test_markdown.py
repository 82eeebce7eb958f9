"""MarkdownParser: golden block lists, fences, warnings and pathological inputs.

Golden files: ``tests/golden/<name>.md`` is parsed and compared with
``tests/golden/<name>.blocks.json`` (one ``[kind, level, title, info, first line]`` per block).
Regenerate after an intended parser change with ``UPDATE_GOLDEN=1 pytest tests/test_markdown.py``
and review the diff.
"""

from __future__ import annotations

import json
import os
import time
from pathlib import Path

import pytest

from tessera.offsets import normalize_text_bytes
from tessera.parsing.markdown import MarkdownParser
from tessera.types import Block, ParsedDocument, SourceDocument, sha256_hex

GOLDEN = Path(__file__).parent / "golden"
GOLDEN_MD = sorted(p.name for p in GOLDEN.glob("*.md"))


def _doc(raw: bytes) -> SourceDocument:
    return SourceDocument(
        tenant="acme",
        doc_id="doc.md",
        uri="file:///doc.md",
        revision=sha256_hex(raw),
        content_type="text/markdown",
        readers=(),
        groups=("staff",),
    )


def parse(raw: bytes | str) -> ParsedDocument:
    data = raw.encode() if isinstance(raw, str) else raw
    return MarkdownParser().parse(_doc(data), data)


def first_line(text: str, block: Block) -> str:
    return text[block.start : block.end].split("\n", 1)[0]


def summarize(parsed: ParsedDocument) -> list[list[object]]:
    return [[b.kind, b.level, b.title, b.info, first_line(parsed.text, b)] for b in parsed.blocks]


def check_block_invariants(parsed: ParsedDocument) -> None:
    text = parsed.text
    prev_end = 0
    for b in parsed.blocks:
        assert 0 <= b.start < b.end <= len(text), b
        assert b.start >= prev_end, "blocks are in order and do not overlap"
        assert b.start == 0 or text[b.start - 1] == "\n", "blocks start at a line start"
        assert b.end == len(text) or text[b.end - 1] == "\n", "blocks end at a line end"
        prev_end = b.end


# --- golden files -----------------------------------------------------------------------------


def test_golden_fixtures_exist() -> None:
    assert {"headings.md", "fences.md", "tables.md", "crlf.md"} <= set(GOLDEN_MD)
    assert b"\r\n" in (GOLDEN / "crlf.md").read_bytes(), "crlf.md lost its CRLF line ends"


@pytest.mark.parametrize("name", GOLDEN_MD)
def test_golden_blocks(name: str) -> None:
    raw = (GOLDEN / name).read_bytes()
    parsed = parse(raw)
    check_block_invariants(parsed)
    got = summarize(parsed)
    expected_path = GOLDEN / name.replace(".md", ".blocks.json")
    if os.environ.get("UPDATE_GOLDEN") == "1":
        rows = ",\n".join(" " + json.dumps(row, ensure_ascii=False) for row in got)
        expected_path.write_text(f"[\n{rows}\n]\n", encoding="utf-8")
    assert expected_path.exists(), f"missing {expected_path.name}: run with UPDATE_GOLDEN=1"
    expected = json.loads(expected_path.read_text(encoding="utf-8"))
    assert got == expected


def test_golden_headings_structure() -> None:
    """Spot checks of the golden data itself, so a bad regeneration is caught."""
    parsed = parse((GOLDEN / "headings.md").read_bytes())
    heads = [(b.level, b.title) for b in parsed.blocks if b.kind == "heading"]
    assert heads == [
        (1, "Guide"),
        (2, "Install"),
        (3, "Linux"),
        (4, "Debian packages"),
        (3, "macOS"),
        (1, "Setext Title"),
        (2, "Setext Subtitle"),
        (2, "Indented heading (three spaces)"),
    ]
    kinds = [b.kind for b in parsed.blocks]
    assert kinds[0] == "paragraph"
    assert "code" in kinds and "hr" in kinds


def test_golden_fences_structure() -> None:
    parsed = parse((GOLDEN / "fences.md").read_bytes())
    heads = [b.title for b in parsed.blocks if b.kind == "heading"]
    assert heads == ["Fences", "Last section"]
    fences = [b for b in parsed.blocks if b.kind == "fence"]
    assert [(f.info, f.title) for f in fences] == [
        ("```python", ""),
        ("~~~ sh", ""),
        ("````markdown", ""),
        ("~~~", ""),
        ("```text", "unclosed"),
    ]
    outer = fences[2]
    assert parsed.text[outer.start : outer.end].rstrip("\n").endswith("still inside the outer fence\n````")
    assert fences[-1].end == len(parsed.text)
    assert len([w for w in parsed.warnings if w.startswith("unclosed_fence")]) == 1


def test_golden_crlf_matches_lf_version() -> None:
    raw = (GOLDEN / "crlf.md").read_bytes()
    crlf, lf = parse(raw), parse(raw.replace(b"\r\n", b"\n"))
    assert "\r" not in crlf.text
    assert crlf.text == lf.text
    assert crlf.blocks == lf.blocks
    assert crlf.warnings == lf.warnings
    for b in crlf.blocks:  # block ranges map back to the CRLF bytes exactly
        b0, b1 = crlf.offsets.span(crlf.text, b.start, b.end)
        assert normalize_text_bytes(raw[b0:b1])[0] == crlf.text[b.start : b.end]
        assert raw[b0:b1].count(b"\r\n") == crlf.text[b.start : b.end].count("\n")


# --- direct tests -----------------------------------------------------------------------------


def test_heading_inside_fence_is_not_a_heading() -> None:
    parsed = parse("# Real\n\n```\n# not a heading\n## nor this\n```\n\ntext\n")
    assert [b.kind for b in parsed.blocks] == ["heading", "fence", "paragraph"]
    assert [b.title for b in parsed.blocks if b.kind == "heading"] == ["Real"]
    fence = parsed.blocks[1]
    assert "# not a heading" in parsed.text[fence.start : fence.end]
    assert parsed.warnings == ()


def test_tilde_fence_with_heading_line() -> None:
    parsed = parse("~~~\n# comment\n~~~\n")
    assert [(b.kind, b.info, b.title) for b in parsed.blocks] == [("fence", "~~~", "")]


def test_longer_outer_fence_is_closed_only_by_matching_fence() -> None:
    src = "````md\n```\n# inner\n```\n````\n\nafter\n"
    parsed = parse(src)
    assert [b.kind for b in parsed.blocks] == ["fence", "paragraph"]
    fence = parsed.blocks[0]
    assert parsed.text[fence.start : fence.end] == "````md\n```\n# inner\n```\n````\n"
    assert (fence.info, fence.title) == ("````md", "")
    assert parsed.warnings == ()


def test_shorter_inner_fence_does_not_close_and_outer_runs_to_end() -> None:
    parsed = parse("````\n```\ncode\n```\n")
    assert [(b.kind, b.title) for b in parsed.blocks] == [("fence", "unclosed")]
    assert parsed.blocks[0].end == len(parsed.text)
    assert len(parsed.warnings) == 1 and parsed.warnings[0].startswith("unclosed_fence")


def test_tilde_fence_not_closed_by_backticks() -> None:
    parsed = parse("~~~\n```\n")
    assert [(b.kind, b.title) for b in parsed.blocks] == [("fence", "unclosed")]
    assert parsed.warnings[0].startswith("unclosed_fence")


def test_longer_closing_fence_closes() -> None:
    parsed = parse("```\ncode\n``````\nafter\n")
    assert [(b.kind, b.title) for b in parsed.blocks] == [("fence", ""), ("paragraph", "")]
    assert parsed.warnings == ()


def test_closed_fence_without_final_newline() -> None:
    parsed = parse("```\ncode\n```")
    assert [(b.kind, b.title, b.end) for b in parsed.blocks] == [("fence", "", len(parsed.text))]
    assert parsed.warnings == ()


@pytest.mark.parametrize(
    "src",
    [
        "```\ncode\n",
        "```",
        "# T\n\n```py\nx = 1\n# comment\n",
        "~~~\ncode\n```\n",
        "```\n```x\n",  # a closing fence takes no info string
    ],
)
def test_unclosed_fence_warns_and_is_marked(src: str) -> None:
    parsed = parse(src)
    fence = [b for b in parsed.blocks if b.kind == "fence"]
    assert len(fence) == 1
    assert fence[0].title == "unclosed"
    assert fence[0].end == len(parsed.text)
    assert len(parsed.warnings) == 1
    assert parsed.warnings[0].startswith("unclosed_fence")


@pytest.mark.parametrize("src", ["```\ncode\n>```\n", "```\ncode\n    ```\n", "```\ncode\n\t```\n"])
def test_unclosed_fence_whose_last_line_only_looks_like_a_closer(src: str) -> None:
    # CommonMark: a closing fence has at most 3 spaces of indentation, and a top-level fence
    # has no '>' prefix; markdown-it runs these fences to the end of the document.
    parsed = parse(src)
    fence = [b for b in parsed.blocks if b.kind == "fence"]
    assert len(fence) == 1 and fence[0].end == len(parsed.text)
    assert fence[0].title == "unclosed"
    assert parsed.warnings and parsed.warnings[0].startswith("unclosed_fence")


def test_closing_fence_indented_up_to_three_spaces_closes() -> None:
    parsed = parse("```\ncode\n   ```\nafter\n")
    assert [(b.kind, b.title) for b in parsed.blocks] == [("fence", ""), ("paragraph", "")]
    assert parsed.warnings == ()


def test_setext_and_atx_levels_and_titles() -> None:
    parsed = parse("Title\n=====\n\nSub *emph*\n---\n\n### Three ###\n")
    assert [(b.kind, b.level, b.title) for b in parsed.blocks] == [
        ("heading", 1, "Title"),
        ("heading", 2, "Sub *emph*"),
        ("heading", 3, "Three"),
    ]


def test_table_is_one_block() -> None:
    parsed = parse("| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n\npara\n")
    assert [b.kind for b in parsed.blocks] == ["table", "paragraph"]
    t = parsed.blocks[0]
    assert parsed.text[t.start : t.end] == "| a | b |\n|---|---|\n| 1 | 2 |\n| 3 | 4 |\n"


def test_nested_headings_are_not_top_level_blocks() -> None:
    parsed = parse("> # quoted\n\n- # listed\n")
    assert [b.kind for b in parsed.blocks] == ["quote", "list"]


def test_invalid_utf8_is_replaced_with_warning() -> None:
    raw = b"# Caf\xe9\n\nbad \xff\xfe bytes\n"
    parsed = parse(raw)
    assert parsed.text == "# Caf\ufffd\n\nbad \ufffd\ufffd bytes\n"
    assert parsed.warnings == ("invalid_utf8: 3 bytes replaced",)
    assert parsed.blocks[0].title == "Caf\ufffd"


def test_encoded_surrogates_are_invalid_utf8() -> None:
    raw = b"text \xed\xa0\x80 more\n"  # a UTF-8-encoded lone surrogate is not valid UTF-8
    parsed = parse(raw)
    assert "\ufffd" in parsed.text
    assert not any(0xD800 <= ord(c) <= 0xDFFF for c in parsed.text)
    assert [w for w in parsed.warnings if w.startswith("invalid_utf8")]


def test_bom_and_crlf_are_normalized() -> None:
    raw = b"\xef\xbb\xbf# Head\r\n\r\nbody\r\n"
    parsed = parse(raw)
    assert parsed.text == "# Head\n\nbody\n"
    assert [(b.kind, b.title) for b in parsed.blocks] == [("heading", "Head"), ("paragraph", "")]
    assert parsed.offsets.span(parsed.text, 0, 6) == (3, 9)
    assert parsed.warnings == ()


def test_empty_document() -> None:
    parsed = parse(b"")
    assert (parsed.text, parsed.blocks, parsed.warnings) == ("", (), ())


def test_parser_identity() -> None:
    parsed = parse("x\n")
    assert parsed.parser == "markdown"
    assert parsed.parser_version == MarkdownParser.version
    assert parsed.doc_id == "doc.md"


PATHOLOGICAL = {
    "quotes": ">" * 10000,
    "brackets": "[" * 10000,
    "stars": "*" * 10000 + "a",
    "emphasis_underscores": ("?c_" * 20000) + "c_",
    "reference_definitions": "".join(f'[ref{i}]: https://example.com/{i} "t{i}"\n' for i in range(2000))
    + "".join(f"[ref{i}] " for i in range(0, 2000, 7)),
    "nested_lists": "".join("  " * i + "- item\n" for i in range(500)),
    "backticks": "`" * 5000 + "a" + "`" * 4999,
    "links": "[a](" * 5000,
    "many_fences": "```\n" * 3000,
    "long_line": "word " * 50000,
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_inputs_finish_fast(name: str) -> None:
    src = PATHOLOGICAL[name]
    t0 = time.perf_counter()
    parsed = parse(src)
    elapsed = time.perf_counter() - t0
    assert elapsed < 5.0, f"{name} took {elapsed:.2f}s"
    assert parsed.text == src
    check_block_invariants(parsed)


def test_reference_definitions_produce_no_blocks_but_usages_do() -> None:
    parsed = parse(PATHOLOGICAL["reference_definitions"])
    assert [b.kind for b in parsed.blocks] == ["paragraph"]
