"""The lineage site: an index with search over documents and chunks, a chunk table with access,
restricted documents marked, and a diff between two publications that says what changed and
why; checked as files and in headless Chromium (elements, filtering, no external requests)."""

from __future__ import annotations

import re
import shutil
import subprocess
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import partial
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import InvalidArgument
from tessera.lineage_diff import diff_versions
from tessera.lineage_html import CSP, _html, page_name, write_report
from tessera.lineage_site import diff_name

from .test_lifecycle import md_sections

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
_PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
POLICY = "documents:\n  - match: pay.md\n    groups: [hr]\n"


@pytest.fixture
def site(ws: Any, tmp_path: Path) -> tuple[Any, Path, dict[str, Any]]:
    src = ws.tenant(
        "acme",
        {
            "guide.md": md_sections("Guide", 3, title="Install guide"),
            "pay.md": "# Pay\n\nSalary bands are reviewed yearly by the zebrafish committee.\n",
            "old.md": "# Old\n\nA page that will be removed.\n",
            "team.md": "# Team\n\nThe team meets on Mondays.\n",
            "_access.yaml": POLICY,
        },
    )
    first = ws.run("acme", "r1")["publish"]["version"]
    (src / "guide.md").write_text(md_sections("Guide", 4, title="Install guide v2"), encoding="utf-8")
    (src / "old.md").unlink()
    (src / "new.md").write_text("# New\n\nA page added later.\n", encoding="utf-8")
    (src / "_access.yaml").write_text(POLICY + "  - match: team.md\n    groups: [leads]\n", encoding="utf-8")
    second = ws.run("acme", "r2", allow_mass_delete=True)["publish"]["version"]
    index = write_report(ws.context("acme").index, ws.config().store.uri, tmp_path / "lineage")
    return ws, index, {"first": first, "second": second}


def test_the_index_lists_every_chunk_with_its_provenance_and_access(site: tuple[Any, Path, Any]) -> None:
    ws, index, _ = site
    text = index.read_text()
    rows = ws.rows("acme")
    assert {r["doc_id"] for r in rows} == {"guide.md", "pay.md", "team.md", "new.md"}
    for r in rows:
        assert f'data-id="{r["id"]}"' in text and f"{page_name(r['doc_id'])}#chunk-{r['id']}" in text
        assert r["run_id"] in text and r["chunker_version"] in text
    row = re.search(
        r'<tr data-kind="document" data-search="[^"]*pay\.md[^"]*" class="restricted-row">(.*?)</tr>', text
    )
    assert row and "groups: hr" in row.group(1) and "restricted" in row.group(1)
    guide = re.search(r'<tr data-kind="document" data-search="[^"]*guide\.md[^"]*">(.*?)</tr>', text)
    assert guide and "restricted" not in guide.group(1)  # the tenant default is not marked
    pay_page = (index.parent / page_name("pay.md")).read_text()
    assert "restricted: access set by" in pay_page and "groups: hr" in pay_page


def test_the_diff_says_what_changed_and_why(site: tuple[Any, Path, Any]) -> None:
    ws, index, v = site
    page = (index.parent / diff_name(v["first"], v["second"])).read_text()
    assert f'href="{diff_name(v["first"], v["second"])}"' in index.read_text()
    status = dict(re.findall(r'<tr class="(\w+)" data-doc="([^"]+)"', page)[::1])
    by_doc = {doc: st for st, doc in re.findall(r'<tr class="(\w+)" data-doc="([^"]+)"', page)}
    assert by_doc == {"guide.md": "changed", "old.md": "removed", "new.md": "added", "team.md": "relabelled"}
    assert status and "pay.md" not in page  # unchanged documents are not listed
    assert "source changed: revision" in page and "new document" in page and "no longer published" in page
    assert "access changed: groups [staff]" in page and "groups [leads]" in page
    diff = diff_versions(ws.context("acme").index, v["first"], v["second"])
    live = {r["id"] for r in ws.rows("acme")}
    for d in diff.documents:  # every listed id is really added to or removed from the table
        assert set(d.added) <= live and not set(d.removed) & live
        for cid in d.added:
            assert f'<li class="added" data-id="{cid}">' in page
    team = next(d for d in diff.documents if d.doc_id == "team.md")
    assert team.added == team.removed == () and team.kept >= 1  # the same chunks, other readers
    with pytest.raises(InvalidArgument, match="does not exist"):
        diff_versions(ws.context("acme").index, v["first"], 10_000)


def test_pages_request_nothing_outside_the_report(site: tuple[Any, Path, Any]) -> None:
    _, index, _ = site
    for page in index.parent.glob("*.html"):
        text = page.read_text()
        assert CSP in text
        assert not re.search(r'(src|href)="(https?:)?//', text), page.name
        for link in re.findall(r'href="([^"#]+)', text):
            assert (index.parent / link).exists(), (page.name, link)  # every link resolves locally


def test_the_cli_writes_a_requested_diff(site: tuple[Any, Path, Any], tmp_path: Path, capsys: Any) -> None:
    ws, _, v = site
    out = tmp_path / "cli"
    args = ["--config", str(ws.root / "tessera.yaml"), "--fake-embedder", "lineage", "--tenant", "acme"]
    assert main([*args, "--html", str(out), "--diff", str(v["first"]), str(v["second"])]) == 0
    assert (out / diff_name(v["first"], v["second"])).exists()
    assert main([*args, "--html", str(out), "--diff", str(v["first"]), "99999"]) == 2
    assert "does not exist" in capsys.readouterr().err


def _dom(url: str, tmp_path: Path) -> str:
    cmd = [str(CHROMIUM), "--headless", "--no-sandbox", "--disable-gpu", "--window-size=1200,800"]
    cmd += ["--disable-background-networking", "--virtual-time-budget=3000"]
    cmd += [f"--user-data-dir={tmp_path / 'profile'}", "--dump-dom", url]
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120, check=True).stdout


@pytest.mark.skipif(CHROMIUM is None, reason="Debian chromium is not installed (make browser)")
def test_search_filters_the_index_and_the_diff_renders_in_chromium(
    site: tuple[Any, Path, Any], tmp_path: Path
) -> None:
    ws, index, v = site
    dom = _dom(index.as_uri() + "?q=zebrafish", tmp_path)
    body = re.search(r"<body([^>]*)>", dom)
    assert body is not None and 'data-matches="1"' in body.group(1), dom[:300]
    shown = re.findall(r'<tr data-kind="chunk" data-id="(\w+)"(?![^>]*hidden)', dom)
    pay = [r["id"] for r in ws.rows("acme") if r["doc_id"] == "pay.md"]
    assert shown == pay  # only the chunk holding the word; the rest are hidden
    everything = _dom(index.as_uri(), tmp_path)
    assert f'data-matches="{len(ws.rows("acme"))}"' in everything
    diff = _dom((index.parent / diff_name(v["first"], v["second"])).as_uri(), tmp_path)
    assert re.search(r'<tr class="removed" data-doc="old.md">', diff) and 'class="added"' in diff
    with _served(index.parent) as base:  # over HTTP, where the browser times every resource
        pages = [f"{base}/index.html?q=salary", f"{base}/{diff_name(v['first'], v['second'])}"]
        for url in [*pages, f"{base}/{page_name('guide.md')}"]:
            assert 'data-resources="0"' in _dom(url, tmp_path), url  # nothing besides the page
        # the count is real: the same wrapper without its policy, around an image, loads one
        (index.parent / "dot.png").write_bytes(_PNG)
        (index.parent / "probe.html").write_text(_html("probe", '<img src="dot.png">', csp=""), "utf-8")
        assert 'data-resources="1"' in _dom(f"{base}/probe.html", tmp_path)


@contextmanager
def _served(folder: Path) -> Iterator[str]:
    handler = partial(SimpleHTTPRequestHandler, directory=str(folder))
    server = ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
