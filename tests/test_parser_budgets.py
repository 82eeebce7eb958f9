"""Every parser on a budget: pathological inputs end parsed or as a typed quarantine, never a crash.

Through the real pipeline (``ws.run``): each hostile file of ../shared/RELIABILITY.md E4-E6 is
parsed (and chunked, nothing truncated) or quarantined as ``timeout`` / ``too_large``; the
good documents of the same tenant publish in the same run; a document whose new revision
runs out of budget keeps its published chunks. A budget is tested with a tiny budget that
forces the ``timeout``; no test asserts wall time (``bench/parse_linearity.py`` measures it).
"""

from __future__ import annotations

import time
import traceback
from typing import Any

import pytest

from tessera.errors import DocumentError
from tessera.parsing import base
from tessera.parsing.base import SandboxLimits
from tessera.parsing.budget import ParseBudget
from tessera.parsing.code import PythonParser
from tessera.parsing.html import HtmlLimits, HtmlParser
from tessera.parsing.markdown import DEFAULT_BUDGET, MarkdownParser
from tessera.types import ParsedDocument, SourceDocument, sha256_hex

GOOD = {
    "good.md": "# Good guide\n\ngoodmarker The good guide keeps publishing.\n",
    "good.html": "<html><body><article><h1>Page</h1><p>pagemarker "
    + "A paragraph of ordinary prose. " * 4
    + "</p></article></body></html>",
    "good.py": 'def good():\n    """Return goodcode (codemarker)."""\n    return "goodcode"\n',
}
MARKERS = {"good.md": "goodmarker", "good.html": "pagemarker", "good.py": "codemarker"}
TYPED = {"timeout", "too_large"}


def by_doc(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["doc_id"], []).append(r)
    return out


def outcome(ws: Any, run_id: str) -> tuple[set[str], dict[str, str], dict[str, list[str]]]:
    """(parsed doc ids, quarantined doc id -> reason, warnings) of one run."""
    report = ws.context("acme", run_id).read("parse_report.json")
    reasons = {q["doc_id"]: q["reason"] for q in report["quarantined"]}
    return set(report["parsed"]), reasons, report["warnings"]


def assert_good_published(ws: Any) -> dict[str, list[dict[str, Any]]]:
    docs = by_doc(ws.rows("acme"))
    for name, marker in MARKERS.items():
        assert any(marker in r["text"] for r in docs.get(name, [])), f"{name} is published"
    return docs


def use_parser(monkeypatch: pytest.MonkeyPatch, content_type: str, factory: Any) -> None:
    """Serve ``content_type`` with ``factory`` for this test only (the registry is restored)."""
    base.PARSERS.names()  # the built-in parsers are loaded first, so restoring keeps them
    monkeypatch.setitem(base.PARSERS._entries, content_type, factory)


# ------------------------------------------------------------------------------ Markdown (E5)

MD_HOSTILE = {
    "gt.md": ">" * 10000,
    "brackets.md": "[" * 10000,
    "qc.md": ("?c_" * 100000) + "c_",
    "refs.md": "".join(f'[r{i}]: http://example.com/{i} "title {i}"\n' for i in range(3000))
    + "\n"
    + " ".join(f"[r{i}]" for i in range(3000))
    + "\n",
    "comments.md": "<!---" + "-" * 5000 + "->\n\n<!--->\n\ntext after\n",
    "uris.md": "[a](<http://%zz%>) [b](javascript:alert(1)) <http://a b> [c](http://[::1)\n",
    "deep_list.md": "".join("  " * i + f"- item{i}\n" for i in range(500)),
    "long_heading.md": "# " + " ".join(f"word{i}" for i in range(10000)) + "\n\nBody under it.\n",
    "one_line.md": " ".join(f"lorem{i % 97}" for i in range(30000)),
    "table.md": "| a | b |\n|---|---|\n" + "".join(f"| r{i} | v{i} |\n" for i in range(2000)),
    "word.md": "x" * 300_000,
    "dots.md": "Contents " + "." * 20000 + "5\n",
}


@pytest.mark.scenario("E5")
def test_pathological_markdown_is_parsed_and_chunked_and_the_rest_publishes(ws: Any) -> None:
    files: dict[str, str | bytes] = {**GOOD, **MD_HOSTILE}
    files["surrogate.md"] = b"lone surrogate \xed\xa0\x80 here, and text around it.\n"
    ws.tenant("acme", files)
    out = ws.run("acme", "r1")
    parsed, reasons, _ = outcome(ws, "r1")
    assert reasons == {}, "within the default budget every hostile file parses"
    assert parsed == set(files)
    assert out["chunk"]["quarantined"] == 0
    docs = assert_good_published(ws)
    text = {name: " ".join(r["text"] for r in rows) for name, rows in docs.items()}
    # nothing is truncated: the long heading, the one-line file and the deep list are indexed whole
    assert all(f"word{i}" in text["long_heading.md"] for i in range(0, 10000, 997))
    assert "Body under it." in text["long_heading.md"]
    assert "item499" in text["deep_list.md"] and "r1999" in text["table.md"]
    assert sum(r["text"].count("x") for r in docs["word.md"]) == 300_000
    for rows in docs.values():
        for r in rows:
            assert r["token_count"] <= 256 and r["embedding_text"].endswith(r["text"])


@pytest.mark.scenario("E5", "D5")
def test_a_markdown_revision_past_its_budget_is_a_timeout_and_keeps_its_chunks(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {**GOOD, "slow.md": "# Slow\n\nslowmarker the first revision.\n"})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    use_parser(monkeypatch, "text/markdown", lambda: MarkdownParser(ParseBudget(wall_seconds=0.2)))
    (src / "slow.md").write_text("[" * 60000, encoding="utf-8")  # seconds of markdown-it without a budget
    (src / "good.md").write_text("# Good guide\n\ngoodmarker goodnew revised.\n", encoding="utf-8")
    started = time.monotonic()
    out = ws.run("acme", "r2")
    parsed, reasons, _ = outcome(ws, "r2")
    assert reasons == {"slow.md": "timeout"} and parsed == {"good.md"}
    assert out["publish"]["quarantined"] == ["slow.md"]
    after = assert_good_published(ws)
    assert after["slow.md"] == before["slow.md"], "the published chunks are kept unchanged"
    assert "goodnew" in " ".join(r["text"] for r in after["good.md"])
    assert time.monotonic() - started < 120  # a loose bound: the timeout ended it, nothing hung
    report = ws.context("acme", "r2").read("parse_report.json")
    [q] = report["quarantined"]
    assert q["message"] == "slow.md: timeout: parsing took more than 0.2 s"


@pytest.mark.scenario("E5")
def test_markdown_over_its_size_limit_is_too_large_before_parsing(ws: Any) -> None:
    huge = b"# Huge\n\n" + b"a" * DEFAULT_BUDGET.max_bytes
    ws.tenant("acme", {**GOOD, "huge.md": huge})
    ws.run("acme", "r1")
    parsed, reasons, _ = outcome(ws, "r1")
    assert reasons == {"huge.md": "too_large"} and parsed == set(GOOD)
    assert "huge.md" not in by_doc(ws.rows("acme"))
    assert_good_published(ws)


# ---------------------------------------------------------------------------------- HTML (E6)


def nested_headers(n: int) -> str:  # a subtree search per <header> made this quadratic (29 s)
    return "<body>" + "<header><h2>t</h2>" * 500 + "<p>word</p>" * n


def l_shaped_table(width: int, rows: int) -> str:  # padded to width x rows: 15 GB once
    return "<table><tr>" + "<td>h</td>" * width + "</tr>" + "<tr><td>y</td>" * rows + "</table>"


HTML_HOSTILE = {
    "divs.html": "<div>" * 100000 + "deepmarker text at the bottom",
    "one_line.html": "<html><body><p>onelinemarker Intro text of the page.</p><div hidden>"
    + "word " * 10_000_000
    + "</div><p>Outro text.</p></body></html>",
    "nested_tables.html": "<table><tr><td>" * 5000 + "tablemarker cell text",
    "nested_headers.html": nested_headers(12000),
    "l_shaped.html": l_shaped_table(4000, 4000),
    "many_headings.html": "<body>" + "<h2>t</h2>" * 20000 + "<p>headingsmarker the end</p>",
}


@pytest.mark.scenario("E6")
def test_deep_huge_and_wide_html_finish_typed_and_the_rest_publishes(ws: Any) -> None:
    files: dict[str, str | bytes] = {**GOOD, **HTML_HOSTILE}
    files["elements.html"] = "<i>" * 500_001  # over max_elements
    files["huge.html"] = b"<p>" + b"a" * HtmlLimits().max_bytes  # over max_bytes
    ws.tenant("acme", files)
    ws.run("acme", "r1")
    parsed, reasons, warnings = outcome(ws, "r1")
    assert reasons == {"elements.html": "too_large", "huge.html": "too_large"}
    assert parsed == set(GOOD) | set(HTML_HOSTILE)
    docs = assert_good_published(ws)
    text = {name: " ".join(r["text"] for r in rows) for name, rows in docs.items()}
    assert "deepmarker" in text["divs.html"]
    assert any(w.startswith("too_deep:") for w in warnings["divs.html"])
    assert "onelinemarker" in text["one_line.html"] and "word word" not in text["one_line.html"]
    assert "tablemarker" in text["nested_tables.html"]
    assert "headingsmarker" in text["many_headings.html"]
    # the wide table keeps every cell, in text that grows with the page, not rows x columns
    assert sum(r["text"].count("y") for r in docs["l_shaped.html"]) == 4000
    assert sum(len(r["text"]) for r in docs["l_shaped.html"]) < 10 * len(HTML_HOSTILE["l_shaped.html"])


@pytest.mark.scenario("E6")
def test_an_html_revision_past_its_budget_is_a_timeout_and_keeps_its_chunks(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {**GOOD, "slow.html": "<p>slowmarker the first revision of the page.</p>"})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    use_parser(monkeypatch, "text/html", lambda: HtmlParser(HtmlLimits(wall_seconds=0.2)))
    (src / "slow.html").write_text("<div><p>x</p>" * 100000, encoding="utf-8")  # seconds to parse
    ws.run("acme", "r2")
    parsed, reasons, _ = outcome(ws, "r2")
    assert reasons == {"slow.html": "timeout"} and parsed == set()
    after = assert_good_published(ws)
    assert after["slow.html"] == before["slow.html"]


# ---------------------------------------------------------------------------------- code (E4)

CODE_HOSTILE = {
    "parens.py": "(" * 100000,
    "trycatch.py": "{ try { } catch { (, e\n",
    "deep.py": "x = " + "[" * 3000 + "1" + "]" * 3000 + "\n",
    "unbalanced.py": "def f(:\n    return (1,\n\nclass C\n    def g(self): pass\n",
}


@pytest.mark.scenario("E4")
def test_malformed_and_deep_python_is_degraded_or_typed_and_the_rest_publishes(ws: Any) -> None:
    files: dict[str, str | bytes] = {**GOOD, **CODE_HOSTILE}
    files["long_line.py"] = "x = '" + "a" * 600_000 + "'\n"  # data, not code
    ws.tenant("acme", files)
    ws.run("acme", "r1")
    parsed, reasons, warnings = outcome(ws, "r1")
    assert reasons == {"long_line.py": "too_large"}
    assert parsed == set(GOOD) | set(CODE_HOSTILE)
    for name in ("parens.py", "trycatch.py", "unbalanced.py"):
        assert any(w.startswith("degraded:") for w in warnings[name]), name
    docs = assert_good_published(ws)
    assert any("degraded" in r["flags"] for r in docs["parens.py"])


@pytest.mark.scenario("E4")
def test_a_python_parse_past_its_deadline_is_a_timeout(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    ws.tenant("acme", {"good.md": GOOD["good.md"], "parens.py": "(" * 100000})
    use_parser(monkeypatch, "text/x-python", lambda: PythonParser(timeout_s=0.001))
    ws.run("acme", "r1")
    parsed, reasons, _ = outcome(ws, "r1")
    assert reasons == {"parens.py": "timeout"} and parsed == {"good.md"}


# ------------------------------------------------------------------------- a hang (D5)


class HangingMarkdown:
    """Markdown in the sandbox child; a document that says HANG never returns."""

    name = "markdown"
    version = MarkdownParser.version
    content_types = ("text/markdown",)
    sandbox = SandboxLimits(wall_seconds=3.0, memory_mb=1024)

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        if b"HANG" in raw:
            while True:
                time.sleep(1)
        return MarkdownParser().parse(doc, raw)


@pytest.mark.scenario("D5")
def test_a_parser_that_hangs_is_ended_by_the_subprocess_timeout(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {**GOOD, "hang.md": "# Hang\n\nhangmarker the first revision.\n"})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    use_parser(monkeypatch, "text/markdown", HangingMarkdown)
    (src / "hang.md").write_text("# Hang\n\nHANG\n", encoding="utf-8")
    (src / "good.md").write_text("# Good guide\n\ngoodmarker goodnew revised.\n", encoding="utf-8")
    ws.run("acme", "r2")
    parsed, reasons, _ = outcome(ws, "r2")
    assert reasons == {"hang.md": "timeout"} and parsed == {"good.md"}
    after = assert_good_published(ws)
    assert after["hang.md"] == before["hang.md"]
    assert "goodnew" in " ".join(r["text"] for r in after["good.md"])


# ---------------------------------------------------------------------- the budgets themselves


def md(raw: bytes) -> SourceDocument:
    return SourceDocument("acme", "x.md", "file:///x.md", sha256_hex(raw), "text/markdown", (), ())


def test_budgets_are_validated_and_their_defaults_are_stated() -> None:
    assert (DEFAULT_BUDGET.wall_seconds, DEFAULT_BUDGET.max_bytes) == (30.0, 16 * 1024 * 1024)
    assert HtmlLimits().wall_seconds == 30.0 and HtmlLimits().max_bytes == 64 * 1024 * 1024
    with pytest.raises(ValueError, match="wall_seconds"):
        ParseBudget(wall_seconds=0)
    with pytest.raises(ValueError, match="max_bytes"):
        ParseBudget(max_bytes=0)


def raised_in(err: BaseException, module: str) -> bool:
    """Whether ``err`` was raised from inside ``module`` (the deadline interrupted it)."""
    return any(module in frame.filename for frame in traceback.extract_tb(err.__traceback__))


@pytest.mark.parametrize(
    ("raw", "inside"),
    [
        (b"[" * 100000, "parser_inline"),
        (("?c_" * 100000 + "c_").encode(), "parser_inline"),
        (b"*a" * 120000, "parser_inline"),  # 1.3 s of inline parse alone: 40,000 (0.32 s) left the
        # budget's last inline check only just short of it, and the timeout then fired after markdown-it
        ("".join(f"[r{i}]: http://e.com/{i}\n" for i in range(30000)).encode(), "parser_block"),
    ],
)
def test_a_tiny_markdown_budget_times_out_mid_parse_and_normal_text_fits(raw: bytes, inside: str) -> None:
    parser = MarkdownParser(ParseBudget(wall_seconds=0.2))
    with pytest.raises(DocumentError) as err:
        parser.parse(md(raw), raw)
    assert err.value.reason == "timeout"
    assert raised_in(err.value, f"markdown_it/{inside}"), "the deadline stops markdown-it mid-parse"
    normal = b"# Title\n\nA paragraph with *emphasis*, a [link](http://x.y) and `code`.\n"
    assert parser.parse(md(normal), normal).text.startswith("# Title")  # the parser is reusable


@pytest.mark.parametrize(
    ("page", "inside"),
    [
        ("<div><p>x</p>" * 100000, "html_"),
        # 100,000 paragraphs (about 2 s to parse): with 20,000 (0.34 s) the 0.2 s deadline fell
        # in the last pass, and on a loaded machine between its last check and the parse's own
        (nested_headers(100000), "html_"),
        ("<table><tr><td>" * 60000, "html_"),
    ],
)
def test_a_tiny_html_budget_times_out_inside_the_parse(page: str, inside: str) -> None:
    raw = page.encode()
    doc = SourceDocument("acme", "x.html", "file:///x.html", sha256_hex(raw), "text/html", (), ())
    parser = HtmlParser(HtmlLimits(wall_seconds=0.2))
    with pytest.raises(DocumentError) as err:
        parser.parse(doc, raw)
    assert err.value.reason == "timeout" and err.value.doc_id == "x.html"
    assert raised_in(err.value, f"tessera/parsing/{inside}"), "the deadline stops the tree passes"
    normal = b"<html><body><article><h1>T</h1><p>" + b"Prose of a normal page. " * 5 + b"</p></article>"
    assert "Prose of a normal page." in parser.parse(doc, normal).text
