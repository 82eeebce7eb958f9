"""Python code ingestion: tree-sitter parser blocks, the AST-aware code chunker, pathological
inputs, the pipeline end to end, and a property test over generated modules.

Fixtures live in tests/code_fixtures/*.py.txt (stored with a .txt suffix so linters and
formatters leave the deliberately odd code alone).
"""

from __future__ import annotations

import ast
import re
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.chunking.base import ChunkContext
from tessera.chunking.code import CodeChunker
from tessera.chunking.registry import chunker_for
from tessera.errors import DocumentError
from tessera.evaluation.code_eval import intact
from tessera.parsing.base import get_parser, parser_for_path
from tessera.parsing.code import PythonParser
from tessera.parsing.code_languages import PYTHON, language_for
from tessera.parsing.slices import source_slice_text
from tessera.types import Chunk, ParsedDocument, SourceDocument, sha256_hex

FIXTURES = Path(__file__).parent / "code_fixtures"
PARSER = PythonParser()
CHUNKER = CodeChunker()
MakeCtx = Callable[..., ChunkContext]


def fixture(name: str) -> bytes:
    return (FIXTURES / f"{name}.py.txt").read_bytes()


def doc_for(raw: bytes, doc_id: str = "pkg/shop.py") -> SourceDocument:
    return SourceDocument(
        "acme", doc_id, f"file:///{doc_id}", sha256_hex(raw), "text/x-python", (), ("staff",)
    )


def run(raw: bytes, ctx: ChunkContext, doc_id: str = "pkg/shop.py") -> tuple[ParsedDocument, list[Chunk]]:
    doc = doc_for(raw, doc_id)
    parsed = PARSER.parse(doc, raw)
    return parsed, CHUNKER.chunk(doc, parsed, ctx)


def definitions(source: str) -> list[tuple[str, int, int, str]]:
    """Every def/class per Python's own ``ast``: (name, start, end, signature line)."""
    starts = [0]
    for line in source.split("\n"):
        starts.append(starts[-1] + len(line) + 1)
    lines = source.split("\n")
    out = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            first = min([node.lineno] + [d.lineno for d in node.decorator_list])
            assert node.end_lineno is not None
            end = starts[node.end_lineno - 1] + len(lines[node.end_lineno - 1])
            out.append((node.name, starts[first - 1], end, lines[node.lineno - 1].strip()))
    return out


def assert_contract(raw: bytes, parsed: ParsedDocument, chunks: list[Chunk], ctx: ChunkContext) -> None:
    """Offsets, bytes, budget and coverage: what every code chunk must satisfy."""
    text = parsed.text
    covered = bytearray(len(text))
    for k, c in enumerate(chunks):
        assert text[c.start : c.end] == c.text
        assert source_slice_text(raw, c.byte_start, c.byte_end) == c.text
        assert c.embedding_text.endswith(c.text)
        assert c.token_count == ctx.tokens(c.embedding_text) <= ctx.config.max_tokens
        assert c.kind == "code" and c.position == k
        first, last = re.fullmatch(r"L(\d+)-L(\d+)", c.anchor).groups()  # type: ignore[union-attr]
        assert int(first) == text.count("\n", 0, c.start) + 1
        assert int(last) == text.count("\n", 0, c.end - 1) + 1
        covered[c.start : c.end] = b"\x01" * (c.end - c.start)
        if k:
            assert chunks[k - 1].end <= c.start and c.prev_id == chunks[k - 1].id
    missed = [i for i, ch in enumerate(text) if not ch.isspace() and not covered[i]]
    assert not missed, f"uncovered non-whitespace at {missed[:5]}"


def assert_intact(parsed: ParsedDocument, chunks: list[Chunk]) -> None:
    for name, start, end, signature in definitions(parsed.text):
        verdict = intact(parsed.text, chunks, start, end, signature)
        assert verdict in ("whole", "split"), f"{name}: {verdict}"


# --- parser ----------------------------------------------------------------------------------


def test_parser_blocks() -> None:
    raw = fixture("shop")
    parsed = PARSER.parse(doc_for(raw), raw)
    assert parsed.parser == "python-tree-sitter"
    assert "tree-sitter/0.26" in parsed.parser_version and "tree-sitter-python/0.25" in parsed.parser_version
    assert parsed.warnings == ()
    text = parsed.text
    by_title = {(b.kind, b.title): b for b in parsed.blocks}
    assert [b.kind for b in parsed.blocks][:1] == ["docstring"]
    cart = by_title[("class", "Cart")]
    assert cart.info == "class Cart:" and cart.level == 0
    item = by_title[("class", "Item")]
    assert text[item.start :].startswith("@dataclass(frozen=True)\nclass Item:")
    save = by_title[("method", "Cart.save")]
    assert text[save.start : save.end].startswith("@retry(times=2)\n    def save(self, path: str) -> None:")
    assert save.info == "def save(self, path: str) -> None:" and save.level == 1
    assert by_title[("method", "Cart.from_json")].info == "def from_json(cls, path: str) -> Cart:"
    assert by_title[("function", "retry")].info.startswith("def retry(times: int = 3) ->")
    # nested functions stay inside their parent: no definition block of their own
    assert not [b for b in parsed.blocks if b.kind in ("function", "method") and "decorate" in b.title]
    imports = {b.info: b.title for b in parsed.blocks if b.kind == "import"}
    assert imports["from decimal import ROUND_HALF_UP, Decimal"] == "ROUND_HALF_UP Decimal"
    assert imports["import os.path"] == "os"
    assert imports["import simplejson as fastjson"] == "fastjson"  # inside a module-level try
    assert "import sys" not in imports  # function-local import
    refs = {b.title for b in parsed.blocks if b.kind == "ref"}
    assert {"Decimal", "json", "OrderedDict", "wraps"} <= refs
    for b in parsed.blocks:
        assert 0 <= b.start < b.end <= len(text)


def test_docstring_after_comments_and_empty_files(chunk_ctx: MakeCtx) -> None:
    src = b'#!/usr/bin/env python\n# licence header\n"""Module doc."""\nX = 1\n'
    parsed = PARSER.parse(doc_for(src), src)
    assert [b.kind for b in parsed.blocks] == ["comment", "comment", "docstring", "statement"]
    for raw in (b"", b"\n\n   \n", b"\xef\xbb\xbf"):
        parsed, chunks = run(raw, chunk_ctx(64, 48))
        assert chunks == [] and parsed.warnings == ()


def test_signature_spans_lines() -> None:
    src = b"def f(\n    a: int,\n    b: int = 2,\n) -> int:  # note\n    return a + b\n"
    parsed = PARSER.parse(doc_for(src), src)
    (f,) = [b for b in parsed.blocks if b.kind == "function"]
    assert f.info == "def f(\n    a: int,\n    b: int = 2,\n) -> int:"


def test_registry_and_languages() -> None:
    assert parser_for_path("pkg/mod.py") == "text/x-python"
    assert isinstance(get_parser("text/x-python"), PythonParser)
    assert chunker_for("text/x-python", "structural").name == "code"
    assert language_for("a/b.py") is PYTHON and language_for("text/x-python") is PYTHON
    assert language_for("a/b.rs") is None


# --- chunker on the fixtures -----------------------------------------------------------------


@pytest.mark.parametrize("name", ["shop", "huge", "broken"])
@pytest.mark.parametrize("budget", [(256, 200), (128, 100)])
def test_fixture_contract(name: str, budget: tuple[int, int], chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(*budget)
    raw = fixture(name)
    parsed, chunks = run(raw, ctx)
    assert_contract(raw, parsed, chunks, ctx)
    for c in chunks:
        assert raw[c.byte_start : c.byte_end].decode("utf-8") == c.text  # LF files: bytes verbatim
    if name != "broken":
        assert_intact(parsed, chunks)
        assert not any("degraded" in c.flags for c in chunks)


def test_crlf_and_bom_offsets(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(128, 100)
    raw = b"\xef\xbb\xbf" + fixture("shop").replace(b"\n", b"\r\n")
    parsed, chunks = run(raw, ctx)
    assert_contract(raw, parsed, chunks, ctx)
    assert_intact(parsed, chunks)


def test_whole_definitions_and_packing(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    _, chunks = run(fixture("shop"), ctx)
    item = [c for c in chunks if c.heading_path == ("Item",)]
    assert len(item) == 1 and item[0].text.startswith("@dataclass(frozen=True)\nclass Item:")
    assert "split_definition" not in item[0].flags
    # small helpers are packed together; the __main__ block is covered with main()
    helpers = [c for c in chunks if "def to_cents" in c.text]
    assert len(helpers) == 1 and "def format_price" in helpers[0].text and "def clamp" in helpers[0].text
    assert any('if __name__ == "__main__":' in c.text for c in chunks)
    assert any("TAX_RATES = {" in c.text for c in chunks)
    retry = next(c for c in chunks if c.heading_path == ("retry",))
    assert "def decorate" in retry.text and "def wrapper" in retry.text  # nested defs stay inside


def test_class_too_big_is_split_with_context(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    _, chunks = run(fixture("shop"), ctx)
    cart = [c for c in chunks if c.heading_path[:1] == ("Cart",)]
    assert len(cart) > 1 and all("split_definition" in c.flags for c in cart)
    head = cart[0]
    assert head.text.startswith("class Cart:") and '"""A shopping cart' in head.text
    assert "currency = DEFAULT_CURRENCY" in head.text and "def __init__" in head.text
    for c in cart[1:]:  # each method chunk repeats the class signature as context
        assert "class Cart:\n    ...\n" in c.embedding_text
        assert "class Cart:" not in c.text
    save = next(c for c in cart if c.heading_path == ("Cart", "save"))
    assert save.text.startswith("@retry(times=2)\n    def save(")
    assert save.anchor == "L118-L135"
    # parts are numbered within their class
    parts = [f for c in cart for f in c.flags if f.startswith("part:")]
    assert parts == [f"part:{k}/{len(cart)}" for k in range(1, len(cart) + 1)]


def test_method_context_with_class_decorators(chunk_ctx: MakeCtx) -> None:
    src = (
        b"import functools\n\n\n@functools.total_ordering\nclass Version(tuple):\n"
        + b'    """A version."""\n\n'
        + b"".join(
            f"    def m{k}(self, o):\n        return self.cmp(o) == {k} or len(self) > {k}\n\n".encode()
            for k in range(30)
        )
    )
    ctx = chunk_ctx(128, 100)
    parsed, chunks = run(src, ctx, "pkg/version.py")
    methods = [c for c in chunks if len(c.heading_path) == 2 or c.text.lstrip().startswith("def m")]
    assert methods
    for c in methods:
        assert "@functools.total_ordering\nclass Version(tuple):\n    ...\n" in c.embedding_text
    assert_contract(src, parsed, chunks, ctx)
    assert_intact(parsed, chunks)


def test_used_imports_only(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    _, chunks = run(fixture("shop"), ctx)

    def imports_of(c: Chunk) -> str:
        m = re.search(r"^# imports: (.*)$", c.embedding_text, re.M)
        return m.group(1) if m else ""

    from_json = next(c for c in chunks if c.heading_path == ("Cart", "from_json"))
    assert imports_of(from_json) == "import json"
    total = next(c for c in chunks if c.heading_path == ("Cart", "total_cents"))
    assert "from functools import lru_cache" in imports_of(total)
    assert "from decimal import Decimal" in imports_of(total)
    assert "ROUND_HALF_UP" not in imports_of(total) and "json" not in imports_of(total)
    save = next(c for c in chunks if c.heading_path == ("Cart", "save"))
    assert "import os.path" in imports_of(save) and "import simplejson as fastjson" in imports_of(save)
    helpers = next(c for c in chunks if "def to_cents" in c.text)
    assert imports_of(helpers) == "from decimal import Decimal, ROUND_HALF_UP"
    describe = next(c for c in chunks if c.heading_path == ("Cart", "describe"))
    assert imports_of(describe) == ""
    for c in chunks:  # never imported, or never used: never in a context line
        assert "dataclasses" not in imports_of(c) or "dataclass" in c.text
        assert "Any" not in imports_of(c) or "Any" in c.text
        assert "import logging" not in imports_of(c) or "logging." in c.text
    assert chunks[0].embedding_text.startswith("# file: pkg/shop.py\n")


def test_huge_function_split_at_statements(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    raw = fixture("huge")
    parsed, chunks = run(raw, ctx)
    parts = [c for c in chunks if c.heading_path == ("process_order",)]
    n = len(parts)
    assert n > 10
    sig = "def process_order(order, inventory, config, *, now=None, dry_run=False):"
    for k, c in enumerate(parts, start=1):
        assert "split_definition" in c.flags and f"part:{k}/{n}" in c.flags
        assert sig in c.embedding_text
        if k > 1:
            assert sig not in c.text and "\n    ...\n" in c.embedding_text
    assert parts[0].text.startswith(sig)
    # the giant dict literal is one statement: cut by lines, each window still a part
    assert any("line_split" in c.flags and '"zone-' in c.text for c in parts)
    # statement boundaries: apart from line windows, parts end at the end of a line
    for c in parts:
        assert parsed.text[c.end : c.end + 1] in ("\n", "")
    helper = [c for c in chunks if c.heading_path == ("small_helper",)]
    assert len(helper) == 1 and not helper[0].flags


def test_deterministic_ids(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(128, 100)
    raw = fixture("shop")
    _, a = run(raw, ctx)
    _, b = run(raw, ctx)
    assert [(c.id, c.embedding_text) for c in a] == [(c.id, c.embedding_text) for c in b]
    assert len({c.id for c in a}) == len(a)
    _, other = run(raw, chunk_ctx(256, 200))
    assert not {c.id for c in a} & {c.id for c in other}


# --- malformed and pathological input -------------------------------------------------------


def test_malformed_degrades(chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    raw = fixture("broken")
    parsed, chunks = run(raw, ctx)
    (warning,) = [w for w in parsed.warnings if w.startswith("degraded")]
    assert re.fullmatch(r"degraded: syntax errors at lines [\d, ]+", warning)
    titles = {b.title for b in parsed.blocks if b.kind in ("function", "method", "class")}
    assert {"clean_before", "clean_after", "Half.good"} <= titles
    assert not titles & {"broken_call", "Half", "Half.bad"}
    assert any(b.kind == "error" for b in parsed.blocks)
    degraded = [c for c in chunks if "degraded" in c.flags]
    assert any("compute(x, (1, 2" in c.text for c in degraded)
    assert any("@@ this line is not Python" in c.text for c in degraded)
    for name in ("clean_before", "clean_after"):
        (c,) = [c for c in chunks if f"def {name}" in c.text]
        assert "degraded" not in c.flags
    good = next(c for c in chunks if c.heading_path == ("Half", "good"))
    assert good.text.startswith("def good(self):") and "degraded" not in good.flags
    assert_contract(raw, parsed, chunks, ctx)


def _nested(kind: str, depth: int, indent: str = " ") -> str:
    head = "def f{k}():" if kind == "def" else "if x{k}:"
    return "".join(indent * k + head.format(k=k) + "\n" for k in range(depth)) + indent * depth + "pass\n"


PATHOLOGICAL = {
    "open_parens": "(" * 100_000,
    "nested_defs": _nested("def", 1000),
    "nested_ifs": _nested("if", 1000),
    "nested_ifs_4": _nested("if", 1000, "    "),
    "brackets": "x = " + "[" * 20_000 + "]" * 20_000 + "\n",
    "braces": "{ try { } catch { (, e",
}


@pytest.mark.parametrize("name", sorted(PATHOLOGICAL))
def test_pathological_inputs_finish(name: str, chunk_ctx: MakeCtx) -> None:
    ctx = chunk_ctx(256, 200)
    raw = PATHOLOGICAL[name].encode()
    t0 = time.monotonic()
    try:
        parsed, chunks = run(raw, ctx, f"bad/{name}.py")
    except DocumentError as e:
        assert e.reason in ("timeout", "too_deep", "too_large")
    else:
        if name != "brackets":  # deep but valid
            assert any(w.startswith("degraded") for w in parsed.warnings)
        assert chunks and all(c.token_count <= ctx.config.max_tokens for c in chunks)
        assert "".join(c.text for c in chunks).replace(" ", "").replace("\n", "") == PATHOLOGICAL[
            name
        ].replace(" ", "").replace("\n", "")
    assert time.monotonic() - t0 < 8.0


def test_five_megabyte_single_line_is_refused_fast() -> None:
    raw = ("DATA = [" + ", ".join(str(i % 1000) for i in range(1_100_000)) + "]\n").encode()
    assert len(raw) > 5_000_000
    t0 = time.monotonic()
    with pytest.raises(DocumentError) as err:
        PARSER.parse(doc_for(raw, "bad/data.py"), raw)
    assert err.value.reason == "too_large"
    assert time.monotonic() - t0 < 2.0


def test_parse_timeout_is_enforced() -> None:
    raw = "".join(f"x{i} = f({i}, y)\n" for i in range(40_000)).encode()
    t0 = time.monotonic()
    with pytest.raises(DocumentError) as err:
        PythonParser(timeout_s=0.0).parse(doc_for(raw, "bad/slow.py"), raw)
    assert err.value.reason == "timeout"
    assert time.monotonic() - t0 < 2.0
    # the same input parses with a normal deadline: an aborted parse leaves no state behind
    assert PythonParser().parse(doc_for(raw, "bad/slow.py"), raw).warnings == ()


def test_parser_declares_sandbox() -> None:
    limits = PARSER.sandbox
    assert limits.wall_seconds > PARSER.timeout_s and limits.memory_mb >= 512


# --- evaluation --------------------------------------------------------------------------------


def test_evaluation_on_a_small_package(tmp_path: Path, counter) -> None:  # type: ignore[no-untyped-def]
    import json

    from tessera.embedding.fake import HashEmbedder
    from tessera.evaluation.code_eval import evaluate_code, evaluate_queries

    pkg = tmp_path / "shop"
    pkg.mkdir()
    raw = fixture("shop")
    (pkg / "shop.py").write_bytes(raw)
    text = raw.decode("utf-8")
    defs = [
        {
            "qualname": name,
            "kind": "def",
            "start_char": s,
            "end_char": e,
            "def_line": text.count("\n", 0, s) + 1,
        }
        for name, s, e, _ in definitions(text)
    ]
    for d in defs:  # def_line: the line of the def/class keyword, after decorators
        while text.split("\n")[d["def_line"] - 1].lstrip().startswith("@"):
            d["def_line"] += 1
    manifest = tmp_path / "manifest.json"
    manifest.write_text(json.dumps({"shop.py": {"sha256": sha256_hex(raw), "defs": defs}}))
    result = evaluate_code(pkg, manifest, 128, 100, counter=counter)
    assert result["overall"]["definitions"] == len(defs) > 10
    assert result["overall"]["share"] == 1.0 and result["fitting"]["share"] == 1.0
    queries = tmp_path / "q.jsonl"
    cart = next(d for d in defs if d["qualname"] == "from_json")
    query = {"query": "Load a cart saved by save", "file": "shop.py", **cart}
    queries.write_text(json.dumps(query) + "\n")
    found = evaluate_queries(pkg, queries, HashEmbedder(), 256, 200, counter=counter)
    assert found["queries"] == 1 and found["answer_in_one_chunk"] == 1.0 and found["hit@10"] == 1.0


# --- end to end --------------------------------------------------------------------------------


def test_pipeline_indexes_code(ws) -> None:  # type: ignore[no-untyped-def]
    source = fixture("shop").decode("utf-8")
    ws.tenant("acme", {"pkg/shop.py": source, "README.md": "# Shop\n\nSee pkg/shop.py.\n"})
    result = ws.run("acme")
    assert result["parse"]["quarantined"] == 0 and result["chunk"]["quarantined"] == 0
    assert result["chunk"]["max_tokens"] <= 256
    rows = [r for r in ws.rows("acme") if r["doc_id"] == "pkg/shop.py"]
    assert rows and all(r["kind"] == "code" and r["chunker_version"] == "code/1" for r in rows)
    assert all(r["parser_version"].startswith("tree-sitter/") for r in rows)
    by_path = {tuple(r["heading_path"]): r for r in rows}
    from_json = by_path[("Cart", "from_json")]
    assert "class Cart:" in from_json["embedding_text"] and from_json["anchor"].startswith("L")
    assert all(r["embedding_text"].startswith("# file: pkg/shop.py") for r in rows)
    raw = fixture("shop")
    for r in rows:
        assert raw[r["byte_start"] : r["byte_end"]].decode("utf-8") == r["text"]
    text = raw.decode("utf-8")
    covered = "".join(sorted((r["text"] for r in rows), key=text.index))
    assert re.sub(r"\s", "", covered) == re.sub(r"\s", "", text)


# --- property test -------------------------------------------------------------------------------

WORDS = ["alpha", "beta", "items", "total", "café", "東京", "x", "value_2", "supercalifragilistic"]
word = st.sampled_from(WORDS)
ident = st.sampled_from(["a", "b", "count", "name", "data", "result", "cfg", "Decimal", "json", "os"])


@st.composite
def statement(draw: st.DrawFn, indent: str, depth: int) -> str:
    kind = draw(st.sampled_from(["assign", "call", "comment", "string", "if", "for", "def", "return"]))
    if depth > 2 and kind in ("if", "for", "def"):
        kind = "assign"
    if kind == "assign":
        return f"{indent}{draw(ident)} = {draw(ident)}({draw(st.integers(0, 99))}, {draw(word)!r})\n"
    if kind == "call":
        return f"{indent}{draw(ident)}.update({draw(word)!r}, {draw(ident)})\n"
    if kind == "comment":
        return f"{indent}# {' '.join(draw(st.lists(word, min_size=1, max_size=8)))}\n"
    if kind == "string":
        return f'{indent}"""{" ".join(draw(st.lists(word, min_size=1, max_size=30)))}"""\n'
    if kind == "return":
        return f"{indent}return {draw(ident)}\n"
    body = "".join(draw(st.lists(statement(indent + "    ", depth + 1), max_size=5)))
    body += f"{indent}    {draw(ident)} += 1\n"  # never a body of comments only
    if kind == "if":
        return f"{indent}if {draw(ident)} > {draw(st.integers(0, 9))}:\n{body}"
    if kind == "for":
        return f"{indent}for {draw(ident)} in {draw(ident)}:\n{body}"
    return f"{indent}def inner_{draw(st.integers(0, 9))}({draw(ident)}):\n{body}"


@st.composite
def function(draw: st.DrawFn, indent: str = "", method: bool = False) -> str:
    deco = draw(st.sampled_from(["", "@property\n", "@cache(size=3)\n", "@staticmethod\n"]))
    params = ", ".join(["self"] * method + draw(st.lists(ident, max_size=3, unique=True)))
    name = draw(st.sampled_from(["run", "load", "save", "compute", "check"])) + str(draw(st.integers(0, 99)))
    body = "".join(draw(st.lists(statement(indent + "    ", 0), max_size=12)))
    body += f"{indent}    return {draw(ident)}\n"
    return (
        "".join(f"{indent}{line}\n" for line in deco.splitlines()) + f"{indent}def {name}({params}):\n{body}"
    )


@st.composite
def module(draw: st.DrawFn) -> str:
    parts = ["import os\nimport json\nfrom decimal import Decimal\n"]
    for _ in range(draw(st.integers(1, 6))):
        kind = draw(st.sampled_from(["function", "class", "constant", "comment", "main"]))
        if kind == "function":
            parts.append(draw(function()))
        elif kind == "class":
            methods = draw(st.lists(function("    ", method=True), min_size=1, max_size=5))
            base = draw(st.sampled_from(["", "(Base)", "(Base, metaclass=Meta)"]))
            parts.append(f"class Thing{draw(st.integers(0, 99))}{base}:\n" + "\n".join(methods))
        elif kind == "constant":
            parts.append(f"LIMIT_{draw(st.integers(0, 9))} = {draw(st.integers())}\n")
        elif kind == "comment":
            parts.append(f"# {' '.join(draw(st.lists(word, min_size=1, max_size=12)))}\n")
        else:
            parts.append(f'if __name__ == "__main__":\n    {draw(ident)}()\n')
    return "\n\n".join(parts)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(source=module(), budget=st.sampled_from([(64, 48), (128, 100), (256, 200)]), crlf=st.booleans())
def test_property_generated_modules(source: str, budget: tuple[int, int], crlf: bool, counter) -> None:  # type: ignore[no-untyped-def]
    from tessera.config import ChunkingConfig

    ast.parse(source)  # the generator only writes valid Python
    ctx = ChunkContext(ChunkingConfig("code", *budget, 0), counter, "m")
    raw = source.replace("\n", "\r\n").encode() if crlf else source.encode()
    parsed, chunks = run(raw, ctx, "gen/mod.py")
    assert parsed.warnings == ()
    assert_contract(raw, parsed, chunks, ctx)
    assert not any("degraded" in c.flags for c in chunks)
    if budget[0] >= 128:
        assert_intact(parsed, chunks)
    _, again = run(raw, ctx, "gen/mod.py")
    assert [c.id for c in again] == [c.id for c in chunks]
