"""``tessera eval html`` on small self-built sets in each of the three formats (issue 15)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tessera.cli import main as cli_main
from tessera.errors import InvalidArgument
from tessera.evaluation.html_eval import evaluate_pages, main
from tessera.evaluation.html_metrics import bag_prf, snippet_prf, word_tokens
from tessera.evaluation.html_peers import Peer
from tessera.evaluation.html_sets import EvalPage, detect_set, html_block_text, html_text_nodes, load_pages
from tessera.evaluation.html_tessera import eval_doc, nodes_text
from tessera.parsing.html import HtmlParser

BODY = (
    "The harbour was dredged in the spring so that larger ships could dock at the old quay. "
    "Merchants welcomed the change, and the town council paid for new cranes along the pier."
)
NAV = "".join(f'<li><a href="/n/{k}">Menu entry {k}</a></li>' for k in range(20))
PAGE = (
    f"<html><body><nav><ul>{NAV}</ul></nav><article><p>{BODY}</p><p>{BODY.upper()}</p></article>"
    "<footer>Copyright Harbour News</footer></body></html>"
)
THIN = '<html><body><div class="comments"><p>' + BODY + "</p></div></body></html>"


def _wcxb(root: Path) -> Path:
    (root / "dev" / "html").mkdir(parents=True)
    (root / "dev" / "ground-truth").mkdir(parents=True)
    for pid, html, kind, gold in (
        ("0001", PAGE, "article", f"{BODY}\n\n{BODY.upper()}"),
        ("0002", THIN, "forum", BODY),
    ):
        (root / "dev" / "html" / f"{pid}.html.gz").write_bytes(gzip.compress(html.encode()))
        truth = {
            "ground_truth": {
                "main_content": gold,
                "with": [BODY[:40]],
                "without": ["Menu entry 3"],
            },
            "_internal": {"page_type": {"primary": kind}},
        }
        (root / "dev" / "ground-truth" / f"{pid}.json").write_text(json.dumps(truth), encoding="utf-8")
    return root


def _mozilla(root: Path) -> Path:
    pages = root / "test" / "test-pages"
    for slug, html in (("harbour", PAGE), ("lorem-fixture", THIN)):
        (pages / slug).mkdir(parents=True)
        (pages / slug / "source.html").write_text(html, encoding="utf-8")
        expected = f"<div><p>{BODY}</p><p>{BODY.upper()}</p></div>"
        (pages / slug / "expected.html").write_text(expected, encoding="utf-8")
    (root / "SOURCE.txt").write_text(
        "Real pages vs. synthetic fixtures: these are small hand-written fixtures for\n"
        "single features; leave them out:\n  lorem-fixture other-one \n\nMore text.\n",
        encoding="utf-8",
    )
    return root


def _trafilatura(root: Path) -> Path:
    (root / "html").mkdir(parents=True)
    (root / "html" / "harbour.html").write_text(PAGE, encoding="utf-8")
    data = {
        "https://x/harbour": {"file": "harbour.html", "with": [BODY[:30]], "without": ["Copyright Harbour"]}
    }
    (root / "evaldata_subset.json").write_text(json.dumps(data), encoding="utf-8")
    return root


@pytest.mark.parametrize("fmt", ["wcxb", "mozilla", "trafilatura"])
def test_eval_html_scores_each_format(tmp_path: Path, fmt: str) -> None:
    data = {"wcxb": _wcxb, "mozilla": _mozilla, "trafilatura": _trafilatura}[fmt](tmp_path / "data")
    assert detect_set(data) == fmt
    out = tmp_path / "out"
    assert main([str(data), "--no-peers", "--out", str(out)]) == 0
    report = json.loads((out / "report.json").read_text(encoding="utf-8"))
    assert (out / "worst_pages.md").read_text(encoding="utf-8").startswith("# Worst pages")
    nodes = ["tessera_nodes"] if fmt == "mozilla" else []  # the Mozilla gold's rendering too
    assert report["set"] == fmt and report["extractors"] == ["tessera", *nodes]
    assert report["pages"] == {"wcxb": 2, "mozilla": 1, "trafilatura": 1}[fmt]  # the fixture is left out
    assert report["offsets"]["violations"] == 0 and report["offsets"]["blocks_checked"] > 0
    assert report["silently_empty"] == []
    assert report["overall"]["tessera"]["f1"] > 0.9, report["overall"]
    page = next(r for r in report["per_page"] if r["page"] in ("0001", "harbour", "harbour.html"))
    assert page["scores"]["tessera"]["f1"] > 0.95
    if fmt == "wcxb":
        assert set(report["by_type"]) == {"article", "forum"}
        thin = next(r for r in report["per_page"] if r["page"] == "0002")
        assert (
            any(w.startswith("thin_extraction") for w in thin["warnings"])
            or thin["scores"]["tessera"]["r"] > 0.4
        )
    if fmt == "trafilatura":
        assert report["kept_pct"] == 100.0 and report["dropped_pct"] == 100.0


def test_cli_eval_html_with_set_option(tmp_path: Path) -> None:
    data = _mozilla(tmp_path / "data")
    out = tmp_path / "o"
    assert (
        cli_main(["eval", "html", "--data", str(data), "--set", "mozilla", "--no-peers", "--out", str(out)])
        == 0
    )
    assert json.loads((out / "report.json").read_text(encoding="utf-8"))["pages"] == 1


def test_unknown_folder_is_a_typed_error(tmp_path: Path) -> None:
    with pytest.raises(InvalidArgument):
        detect_set(tmp_path)
    with pytest.raises(InvalidArgument):
        load_pages(tmp_path, "wcxb")


def test_metrics_count_a_bag_of_tokens() -> None:
    prf = bag_prf(["a", "a", "b", "c"], ["a", "b", "b", "d"])  # common: a, b -> 2
    assert (prf.p, prf.r) == (0.5, 0.5)
    assert bag_prf([], ["a"]).f1 == 0.0 and bag_prf([], []).f1 == 1.0
    assert word_tokens("Hello, World-wide!") == ["hello", "world", "wide"]
    s = snippet_prf(tp=3, fn=1, fp=1)
    assert s.p == 0.75 and s.r == 0.75
    assert html_text_nodes("<p>one<b>two</b></p><script>x()</script><p>three&amp;</p>") == "one two three&"


INLINE = (
    "<html><body><nav><a href='/'>Home</a> <a href='/a'>About</a></nav><article>"
    "<p>The <a href='/m'>harbour</a>. It was rebuilt in <b>1850</b>, after the storm; "
    "the <i>new</i> walls <span hidden>secret text</span>held for a century and more.</p>"
    "<table><tr><th>Year</th><th>Ships</th></tr><tr><td>1850</td><td>12</td></tr></table>"
    "<p>Fishing boats still use the inner basin every morning, as they have since then.</p>"
    "</article></body></html>"
)


def test_nodes_text_spaces_every_node_of_the_selection_and_nothing_else() -> None:
    raw = INLINE.encode()
    parsed = HtmlParser().parse(eval_doc("inline", raw), raw)
    assert "harbour." in parsed.text and "| --- |" in parsed.text  # own text: as a browser reads it
    nodes = nodes_text(parsed, raw)
    assert nodes.startswith("The harbour . It was rebuilt in 1850 , after the storm; the new walls held")
    assert "Year Ships 1850 12" in nodes  # a table's pipes and rules are not text nodes
    assert "secret" not in nodes and "Home" not in nodes  # hidden and pruned text stays out
    assert "|" not in nodes and "---" not in nodes
    # the same as the gold's rendering of the same markup
    assert nodes == html_text_nodes(
        "<p>The <a>harbour</a>. It was rebuilt in <b>1850</b>, after the storm; the <i>new</i> walls "
        "held for a century and more.</p><table><tr><th>Year</th><th>Ships</th></tr><tr><td>1850</td>"
        "<td>12</td></tr></table><p>Fishing boats still use the inner basin every morning, as they "
        "have since then.</p>"
    )
    assert html_block_text("<p>The <a>harbour</a>.</p><p>Next</p>") == "The harbour. Next"


def test_each_rendering_is_compared_with_peers_rendered_the_same_way() -> None:
    gold = html_text_nodes(INLINE.split("<article>")[1].replace("<span hidden>secret text</span>", ""))
    page = EvalPage("mozilla", "inline", "article", INLINE.encode(), gold)

    def gold_nodes(raw: bytes) -> str:
        return gold

    def half_text(raw: bytes) -> str:
        return " ".join(gold.split()[: len(gold.split()) // 2])

    peers = [Peer("exact_nodes", "1", gold_nodes, rendering="nodes"), Peer("half", "1", half_text)]
    report = evaluate_pages([page], peers, None)
    scores = report["per_page"][0]["scores"]
    assert scores["tessera_nodes"]["f1"] == 1.0 > scores["tessera"]["f1"]
    assert report["renderings"]["tessera_nodes"] == "nodes" and report["renderings"]["half"] == "text"
    like = report["like_for_like"]["article"]
    # text against the half-text peer (ahead), nodes against the exact peer (level), and the
    # mixed comparison against the best of all peers
    assert like["text"] == round(scores["tessera"]["f1"] - scores["half"]["f1"], 4) > 0
    assert like["nodes"] == 0.0
    assert report["tessera_minus_best_peer"]["article"] < 0
    # a page of a set whose gold is plain text gets no node rendering
    plain = evaluate_pages([EvalPage("wcxb", "p", "article", INLINE.encode(), gold)], [], None)
    assert plain["extractors"] == ["tessera"] and "tessera_nodes" not in plain["per_page"][0]["scores"]
