"""``tessera eval html`` on small self-built sets in each of the three formats (issue 15)."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest

from tessera.cli import main as cli_main
from tessera.errors import InvalidArgument
from tessera.evaluation.html_eval import main
from tessera.evaluation.html_metrics import bag_prf, snippet_prf, word_tokens
from tessera.evaluation.html_sets import detect_set, html_text_nodes, load_pages

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
    assert report["set"] == fmt and report["extractors"] == ["tessera"]
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
