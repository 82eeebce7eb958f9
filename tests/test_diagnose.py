"""``tessera diagnose``: one failure of each kind, each with the verdict naming the stage that lost
the document, and the positive cases (retrieved at rank r) that must keep working.

One tenant holds every case (module-scoped, hash embedder); cases that change the tenant's state
(a cutover, an edit after the run) get their own small workspace.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tessera.cli import main
from tessera.config import load_config
from tessera.diagnose import STAGES, DiagnoseRequest, diagnose
from tessera.embedding.fake import HashEmbedder
from tessera.errors import InvalidArgument
from tests.conftest import Workspace

PARA = (
    "The {w} section explains how the team runs the {w} process, who owns each step and what "
    "to check before the next one starts, with examples drawn from past incidents. "
)
LONG = "# Handbook\n\n" + "".join(f"## Part {i}\n\n{PARA.format(w=w) * 3}\n\n" for i, w in enumerate(
    ["intake", "triage", "review", "release", "audit", "archive"]
))  # fmt: skip
NOISY = "# Pager {n}\n\npager pager rotation: the pager rotation and the pager schedule, pager.\n"
DOCS: dict[str, str | bytes] = {
    "runbook.md": "# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool.\n",
    "secret.md": "# Salaries\n\nSalary bands for engineers are reviewed yearly.\n",
    "old.md": "# Old policy\n\nThe retired travel allowance policy for contractors.\n",
    "broken.md": b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8,
    "page.html": (
        "<html><body><nav>zebra crossing menu</nav><article><h1>Guide</h1>"
        "<p>Visible guide text about office plants and their watering schedule.</p>"
        '<div style="display:none">zebra crossing secret note</div></article></body></html>'
    ),
    "long.md": LONG,
    "notes.md": "# Notes\n\nMeeting notes on budgets, hiring, the office move and one pager mention.\n",
    "data.bin": b"\x00\x01",
    "hidden.md": (
        "# Hidden\n\nThe garden shed holds the tools.\n\n"
        "<!-- the llamas graze behind the shed every morning before work -->\n"
    ),
    **{f"pager{n}.md": NOISY.format(n=n) for n in range(4)},
    "_access.yaml": (
        "documents:\n"
        "  - match: secret.md\n    groups: [hr]\n"
        "  - match: old.md\n    effective_to: 2020-01-01\n"
    ),
}
USERS = {"alice": ["staff"], "carol": ["staff", "hr"], "bob": []}


@pytest.fixture(scope="module")
def project(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Workspace]:
    ws = Workspace(tmp_path_factory.mktemp("diagnose"))
    ws.tenant("acme", DOCS, users=USERS)
    ws.run("acme", "r1")
    yield ws


def _diagnose(ws: Workspace, **kw: Any) -> Any:
    kw.setdefault("tenant", "acme")
    kw.setdefault("user", "alice")
    return diagnose(load_config(ws.root / "tessera.yaml"), DiagnoseRequest(**kw), [HashEmbedder()])


def _cli(ws: Workspace, *args: str) -> int:
    return main(["--config", str(ws.root / "tessera.yaml"), "--fake-embedder", "diagnose", *args])


def _status(d: Any) -> dict[str, str]:
    return {f.stage: f.status for f in d.findings}


def test_retrieved_at_rank_one(project: Workspace) -> None:
    d = _diagnose(project, question="page the on-call engineer", doc_id="runbook.md")
    assert d.verdict_stage == "retrieved" and d.rank == 1, d.verdict
    assert [f.stage for f in d.findings] == list(STAGES)
    assert set(_status(d).values()) == {"ok"}
    assert d.listing.listed and d.listing.indexed_revisions == (d.listing.source_revision,)
    assert d.access.matched == "group staff" and d.access.rule == "default"
    hybrid = next(r for r in d.ranking if r.mode == "hybrid")
    assert hybrid.rank == hybrid.visible_rank == 1 and hybrid.score is not None


def test_expect_text_is_found_in_one_chunk(project: Workspace) -> None:
    d = _diagnose(
        project, question="page the on-call engineer", doc_id="runbook.md", expect="on-call   ENGINEER"
    )
    assert d.verdict_stage == "retrieved"
    assert d.parse.in_parse is True and d.parse.target_start >= 0
    assert len(d.chunks.covering) == 1 and d.chunks.covering[0].whole


def test_not_listed_missing_and_excluded(project: Workspace) -> None:
    d = _diagnose(project, question="anything", doc_id="gone.md")
    assert d.verdict_stage == "listing" and "not in the source" in d.verdict
    assert _status(d)["parse"] == "skipped"
    d = _diagnose(project, question="anything", doc_id="data.bin")
    assert d.verdict_stage == "listing" and "no parser" in d.verdict
    d = _diagnose(project, question="anything", doc_id=".hidden/x.md")
    assert d.verdict_stage == "listing" and "hidden" in d.verdict


def test_quarantined_binary_markdown(project: Workspace) -> None:
    d = _diagnose(project, question="anything", doc_id="broken.md")
    assert d.verdict_stage == "parse" and d.parse.failure_reason == "invalid_content", d.verdict
    assert d.listing.listed and not d.listing.indexed_revisions
    assert "quarantined: invalid_content" in d.verdict


def test_a_byte_range_names_text_sources_only(project: Workspace) -> None:
    # a PDF added after the run; the option is refused before anything is parsed (a corrupt PDF
    # is quarantined in the sandbox like the binary Markdown above, at seconds of worker start)
    (project.root / "corpus/acme/scan.pdf").write_bytes(b"%PDF-1.4\n1 0 obj << /Type /Catalog >> junk\n")
    with pytest.raises(InvalidArgument, match="range"):
        _diagnose(project, question="anything", doc_id="scan.pdf", byte_range=(0, 4))


def test_text_pruned_by_the_html_parser(project: Workspace) -> None:
    d = _diagnose(project, question="zebra crossing", doc_id="page.html", expect="zebra crossing secret note")
    assert d.verdict_stage == "parse", d.verdict
    assert d.parse.in_parse is False and d.parse.in_source is True
    assert "it is in the source bytes" in d.verdict
    # the visible text of the same page is found, and retrieved
    ok = _diagnose(project, question="office plants watering", doc_id="page.html", expect="office plants")
    assert ok.verdict_stage == "retrieved", ok.verdict
    # text that is nowhere in the document says so
    nowhere = _diagnose(project, question="x", doc_id="page.html", expect="giraffe")
    assert nowhere.verdict_stage == "parse" and "not in the source either" in nowhere.verdict


def test_a_byte_range_of_pruned_markup_is_not_in_the_parse(project: Workspace) -> None:
    raw = (project.root / "corpus/acme/page.html").read_bytes()
    start = raw.index(b"<nav>")
    d = _diagnose(project, question="zebra", doc_id="page.html", byte_range=(start, raw.index(b"</nav>")))
    assert d.verdict_stage == "parse" and d.parse.in_parse is False
    start = raw.index(b"Visible guide")
    d = _diagnose(project, question="visible guide text", doc_id="page.html", byte_range=(start, start + 18))
    assert d.parse.in_parse is True and d.chunks.covering and d.chunks.covering[0].whole


def test_cut_across_chunks(project: Workspace) -> None:
    size = len(LONG.encode())
    d = _diagnose(project, question="triage process", doc_id="long.md", byte_range=(0, size))
    assert d.chunks.doc_chunks > 1
    assert d.verdict_stage == "chunking" and "cut across" in d.verdict, d.verdict
    assert len(d.chunks.covering) == d.chunks.doc_chunks and not any(c.whole for c in d.chunks.covering)
    # one paragraph of it lies inside one chunk
    d = _diagnose(project, question="triage process", doc_id="long.md", expect="## Part 1")
    assert d.chunks.covering and d.chunks.covering[0].whole and _status(d)["chunking"] == "ok"


def test_ranked_beyond_k(project: Workspace) -> None:
    d = _diagnose(project, question="pager rotation schedule", doc_id="notes.md", k=2)
    assert d.verdict_stage == "ranking", d.verdict
    hybrid = next(r for r in d.ranking if r.mode == "hybrid")
    assert hybrid.visible_rank is not None and hybrid.visible_rank > 2
    assert f"needs k >= {hybrid.visible_rank}" in d.verdict
    # with that k it is retrieved
    again = _diagnose(project, question="pager rotation schedule", doc_id="notes.md", k=hybrid.visible_rank)
    assert again.verdict_stage == "retrieved" and again.rank == hybrid.visible_rank


def test_authorization_names_the_rule(project: Workspace) -> None:
    d = _diagnose(project, question="salary bands", doc_id="secret.md")
    assert d.verdict_stage == "authorization", d.verdict
    assert d.access.readable == () and d.access.rule == "_access.yaml" and "['hr']" in d.verdict
    # the ranking evidence is not hidden by the ACL
    hybrid = next(r for r in d.ranking if r.mode == "hybrid")
    assert hybrid.rank == 1 and hybrid.visible_rank == 1
    carol = _diagnose(project, question="salary bands", doc_id="secret.md", user="carol")
    assert carol.verdict_stage == "retrieved" and carol.access.matched == "group hr"
    stranger = _diagnose(project, question="page the on-call", doc_id="runbook.md", user="mallory")
    assert stranger.verdict_stage == "authorization" and not stranger.access.known
    nobody = _diagnose(project, question="page the on-call engineer", doc_id="runbook.md", user="bob")
    assert nobody.verdict_stage == "authorization"


def test_effective_date(project: Workspace) -> None:
    d = _diagnose(project, question="travel allowance", doc_id="old.md")
    assert d.verdict_stage == "effective_date", d.verdict
    from datetime import UTC, datetime

    back = _diagnose(
        project, question="travel allowance", doc_id="old.md", as_of=datetime(2019, 6, 1, tzinfo=UTC)
    )
    assert back.verdict_stage == "retrieved", back.verdict


def test_report_never_carries_chunk_text(project: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        _cli(
            project,
            "--tenant",
            "acme",
            "--as",
            "alice",
            "--question",
            "bands",
            "--doc",
            "secret.md",
            "--json",
        )
        == 0
    )
    out = capsys.readouterr().out
    report = json.loads(out)
    assert report["verdict_stage"] == "authorization"
    assert "Salary" not in out and "reviewed yearly" not in out


def test_cli_table_and_json(project: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    args = (
        "--tenant",
        "acme",
        "--as",
        "alice",
        "--question",
        "page the on-call engineer",
        "--doc",
        "runbook.md",
    )
    assert _cli(project, *args) == 0
    out = capsys.readouterr().out
    assert out.splitlines()[1] == "verdict: retrieved at rank 1 within k=5"
    assert all(f"  {s}" in out for s in STAGES)
    assert _cli(project, *args, "--json", "-k", "3") == 0
    data = json.loads(capsys.readouterr().out)
    assert data["rank"] == 1 and data["k"] == 3 and [f["stage"] for f in data["findings"]] == list(STAGES)


def test_citation(project: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    rows = [r for r in project.rows("acme") if r["doc_id"] == "runbook.md"]
    cite = f"tessera:acme/{rows[0]['id']}"
    d = _diagnose(project, question="page the on-call engineer", citation=cite)
    assert d.doc_id == "runbook.md" and d.verdict_stage == "retrieved"
    assert [c.chunk_id for c in d.chunks.covering] == [rows[0]["id"]]
    assert "pager tool" not in json.dumps(d.as_json())  # the cited chunk's text is not echoed
    # another tenant's citation, or a chunk that is not live, is a usage error naming --citation
    for bad in (f"tessera:other/{rows[0]['id']}", f"tessera:acme/{'0' * 64}", "not-a-citation"):
        assert _cli(project, "--tenant", "acme", "--as", "alice", "--question", "q", "--citation", bad) == 2
        assert "InvalidArgument: citation" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("args", "key"),
    [
        (("--doc", "a.md", "--citation", "tessera:acme/" + "0" * 64), "--citation"),
        (("--doc", "a.md", "--range", "5:2"), "--range"),
        (("--doc", "a.md", "--range", "x"), "--range"),
        (("--doc", "a.md", "--range", "0:4", "--expect", "x"), "range"),
        (("--doc", "a.md", "-k", "0"), "-k/--k"),
        (("--doc", "a.md", "--as-of", "yesterday"), "--as-of"),
    ],
)
def test_bad_options_are_usage_errors(
    project: Workspace, capsys: pytest.CaptureFixture[str], args: tuple[str, ...], key: str
) -> None:
    assert _cli(project, "--tenant", "acme", "--as", "alice", "--question", "q", *args) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]
    assert err.startswith(f"tessera: InvalidArgument: {key}"), err


def test_request_checks() -> None:
    with pytest.raises(InvalidArgument, match="question"):
        DiagnoseRequest("acme", "alice", " ", doc_id="a.md")
    with pytest.raises(InvalidArgument, match="doc"):
        DiagnoseRequest("acme", "alice", "q")
    with pytest.raises(InvalidArgument, match="k"):
        DiagnoseRequest("acme", "alice", "q", doc_id="a.md", k=True)


def test_flagged_chunks_are_left_out_by_search(project: Workspace) -> None:
    d = _diagnose(project, question="llamas graze", doc_id="hidden.md", expect="llamas graze")
    assert d.verdict_stage == "chunking" and "hidden_text" in d.verdict, d.verdict
    assert all("hidden_text" in c.flags for c in d.chunks.covering)


@pytest.fixture
def small(ws: Workspace) -> Workspace:
    ws.tenant("acme", {k: DOCS[k] for k in ("runbook.md", "secret.md", "_access.yaml")}, users=USERS)
    ws.run("acme", "r1")
    return ws


def test_source_changes_after_the_run(small: Workspace) -> None:
    src = small.root / "corpus/acme/runbook.md"
    src.write_text("# Runbook\n\n## Paging\n\nPage the on-call engineer with the pager tool. Call twice.\n")
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert _status(d)["listing"] == "warning" and d.verdict_stage == "retrieved", d.verdict
    # text only in the new, unpublished revision: lost at listing
    d = _diagnose(small, question="call twice", doc_id="runbook.md", expect="Call twice")
    assert d.verdict_stage == "listing" and "unpublished revision" in d.verdict, d.verdict
    # a new revision that fails to parse: quarantined, the old rows still answer
    src.write_bytes(b"\x89PNG\r\n\x1a\n" + bytes(range(256)) * 8)
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert _status(d)["parse"] == "warning" and d.verdict_stage == "retrieved", d.verdict
    # removed from the source: its live rows answer until the next run
    src.unlink()
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert _status(d)["listing"] == "warning" and d.verdict_stage == "retrieved", d.verdict
    small.run("acme", "r2")
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert d.verdict_stage == "listing" and d.chunks.doc_chunks == 0, d.verdict


def test_a_model_that_does_not_serve_the_tenant(small: Workspace) -> None:
    cfg = load_config(small.root / "tessera.yaml")
    req = DiagnoseRequest("acme", "alice", "page the on-call engineer", doc_id="runbook.md")
    d = diagnose(cfg, req, [HashEmbedder(dimension=32)])
    assert d.verdict_stage == "model", d.verdict
    assert d.model.active == d.model.table == HashEmbedder().identity.key
    assert _status(d)["ranking"] == "skipped" and _status(d)["chunking"] == "ok"
    # with the serving model among those loaded, that one is used
    assert diagnose(cfg, req, [HashEmbedder(dimension=32), HashEmbedder()]).verdict_stage == "retrieved"


@pytest.mark.parametrize(
    ("doc", "question", "user", "k"),
    [
        ("runbook.md", "page the on-call engineer", "alice", 5),
        ("secret.md", "salary bands", "alice", 5),
        ("secret.md", "salary bands", "carol", 5),
        ("notes.md", "pager rotation schedule", "alice", 2),
        ("notes.md", "pager rotation schedule", "alice", 10),
        ("old.md", "travel allowance", "alice", 5),
        ("hidden.md", "llamas graze", "alice", 5),
        ("runbook.md", "page the on-call engineer", "bob", 5),
    ],
)
def test_the_verdict_agrees_with_the_real_search(
    project: Workspace, doc: str, question: str, user: str, k: int
) -> None:
    """A "retrieved" verdict exactly when the principal's own search returns the document within k."""
    from tessera.search import principal_from_config, search

    d = _diagnose(project, question=question, doc_id=doc, user=user, k=k)
    cfg = load_config(project.root / "tessera.yaml")
    hits = search(cfg.store.uri, HashEmbedder(), principal_from_config(cfg, "acme", user), question, k=k)
    found = [n for n, h in enumerate(hits, 1) if any(s.citation.doc_id == doc for s in h.sources)]
    assert (d.verdict_stage == "retrieved") == bool(found), (d.verdict, found)
    if found:
        assert d.rank == found[0]


def test_a_doc_id_cannot_inject_filter_syntax(project: Workspace) -> None:
    d = _diagnose(project, question="page the on-call engineer", doc_id="x' OR doc_id != '.md")
    assert d.verdict_stage == "listing" and d.chunks.doc_chunks == 0 and d.chunks.covering == ()


def test_a_failed_listing_is_evidence_not_an_error(small: Workspace) -> None:
    (small.root / "corpus/acme/_access.yaml").write_text("", encoding="utf-8")  # fails closed
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert _status(d)["listing"] == "warning" and "PolicyError" in d.findings[0].detail
    assert d.verdict_stage == "retrieved"  # the live rows still answer: nothing was deleted
    gone = _diagnose(small, question="x", doc_id="never.md")
    assert gone.verdict_stage == "listing" and "the listing failed" in gone.verdict


def test_the_listing_reads_the_revision_cache_and_never_writes_it(
    small: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    import os
    import time

    import tessera.sources.folder as folder
    from tessera.sources.revision_cache import cache_path

    cache = cache_path(small.config().store.work_dir, "acme")
    old = time.time() - 60
    for f in (small.root / "corpus" / "acme").iterdir():
        os.utime(f, (old, old))
    time.sleep(2.2)  # past the cache's 2 s settling window (utime moved ctime to now)
    small.run("acme", "r2")
    assert cache.exists()
    before = (cache.read_bytes(), cache.stat().st_mtime_ns)
    reads: list[str] = []
    real = folder.read_confined
    monkeypatch.setattr(folder, "read_confined", lambda root, rel: (reads.append(rel), real(root, rel))[1])
    d = _diagnose(small, question="page the on-call engineer", doc_id="runbook.md")
    assert d.verdict_stage == "retrieved" and _status(d)["listing"] == "ok", d.verdict
    assert "secret.md" not in reads  # an unchanged file the diagnosis is not about is not read
    assert (cache.read_bytes(), cache.stat().st_mtime_ns) == before  # read, never written
    src = small.root / "corpus" / "acme" / "runbook.md"
    src.write_text("# Runbook\n\nPage twice now.\n")  # a change the cache must not hide
    d = _diagnose(small, question="page twice now", doc_id="runbook.md", expect="Page twice now")
    assert d.verdict_stage == "listing" and "unpublished revision" in d.verdict, d.verdict
    assert (cache.read_bytes(), cache.stat().st_mtime_ns) == before
