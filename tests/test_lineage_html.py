"""The HTML lineage report: pages per document, exact highlights, and a browser that scrolls to a chunk."""

from __future__ import annotations

import html
import re
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tessera.lineage_html import page_name, write_report

from .test_lifecycle import md_sections

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


def _report(ws: Any, tmp_path: Path) -> tuple[Path, list[dict[str, Any]]]:
    long_doc = "".join(md_sections(f"Part{i}", 6, title=f"Manual {i}") for i in range(12))
    ws.tenant("acme", {"manual.md": long_doc, "faq.md": "# FAQ\n\nAsk the <b>desk</b> & wait.\n"})
    ws.run("acme", "r1")
    index = write_report(ws.context("acme").index, ws.config().store.uri, tmp_path / "lineage")
    return index, ws.rows("acme")


def test_report_highlights_every_chunk_on_its_exact_source_range(ws: Any, tmp_path: Path) -> None:
    index, rows = _report(ws, tmp_path)
    assert {"manual.md", "faq.md"} <= set(re.findall(r">([\w.]+\.md)</a>", index.read_text()))
    for doc_id in ("manual.md", "faq.md"):
        page = (index.parent / page_name(doc_id)).read_text()
        src = (ws.root / "corpus" / "acme" / doc_id).read_bytes()
        for r in (r for r in rows if r["doc_id"] == doc_id):
            assert f'id="chunk-{r["id"]}"' in page
            spans = re.findall(
                r'<span class="c[^"]*" data-c="([^"]*)" title="[^"]*">(.*?)</span>', page, re.S
            )
            mine = "".join(html.unescape(t) for ids, t in spans if r["id"] in ids.split())
            assert mine == src[r["byte_start"] : r["byte_end"]].decode()  # the highlight is the exact slice
            assert f"run {r['run_id']}" in page and r["model_version"] in page
    assert "&lt;b&gt;desk&lt;/b&gt; &amp; wait" in (index.parent / page_name("faq.md")).read_text()


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (make browser)")
def test_a_chunk_anchor_scrolls_to_its_highlight_in_headless_chromium(ws: Any, tmp_path: Path) -> None:
    index, rows = _report(ws, tmp_path)
    manual = sorted((r for r in rows if r["doc_id"] == "manual.md"), key=lambda r: r["start"])
    target = manual[-3]  # far down a long page: it must be scrolled to
    url = (index.parent / page_name("manual.md")).as_uri() + f"#chunk-{target['id']}"
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1000,700"]
    cmd += ["--virtual-time-budget=3000", f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url]
    dom = subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None, dom[:500]
    attrs = dict(re.findall(r'data-([\w-]+)="([^"]*)"', body.group(1)))
    assert attrs["highlighted"] == target["id"]
    assert int(attrs["highlighted-parts"]) >= 1 and attrs["visible"] == "true"
    assert int(attrs["scroll-y"]) > 1000  # the page scrolled down to it
    marked = re.findall(r'<span class="c[^"]* hl" data-c="[^"]*" title="[^"]*">(.*?)</span>', dom, re.S)
    assert html.unescape("".join(marked)) == target["text"]
    shot = tmp_path / "page.png"
    subprocess.run([*cmd[:-2], f"--screenshot={shot}", url], capture_output=True, timeout=120, check=True)
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"  # the page renders
