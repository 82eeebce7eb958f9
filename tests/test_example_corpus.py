"""The bundled example corpus (``examples/``) indexes end to end, in every supported format.

One module-scoped run of the real CLI (``tessera run`` with the hash embedder) over a copy of
``examples/``; the tests then read the real LanceDB index and call ``search``/``show`` as users
would. They check that every file of both tenants gives chunks (PDF, HTML, Markdown, Python),
that the scanned page is read by OCR when tesseract is installed and reported when it is not,
that ``show`` gives exact slices (byte ranges for text formats, page plus bbox for PDF), that
the new files' access rules and effective dates hold, and that ``examples/generate_corpus.py``
reproduces the committed PDFs byte for byte.
"""

from __future__ import annotations

import contextlib
import hashlib
import importlib.util
import io
import json
import re
import shutil
from collections import Counter
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pymupdf as _pymupdf
import pytest

from tessera.cli import main
from tessera.config import load_config
from tessera.embedding.fake import HashEmbedder
from tessera.parsing import ocr
from tessera.parsing.base import OFFICE_TYPES, get_parser, parser_for_path, slice_matches
from tessera.parsing.office_locate import cited_text, part_spans, parts_match
from tessera.pipeline.run import RunContext
from tessera.types import ALWAYS, NEVER, SourceDocument

EXAMPLES = Path(__file__).resolve().parent.parent / "examples"
FORMATS = {
    "application/pdf": "pdf",
    "text/html": "html",
    "text/markdown": "md",
    "text/x-python": "py",
    "application/vnd.openxmlformats-officedocument.wordprocessingml.document": "docx",
    "application/vnd.openxmlformats-officedocument.presentationml.presentation": "pptx",
    "application/vnd.openxmlformats-officedocument.spreadsheetml.sheet": "xlsx",
}
EXPECTED_FORMATS = {
    "acme": {"pdf", "html", "md", "py", "docx", "pptx"},
    "globex": {"pdf", "html", "md", "xlsx"},
}
pymupdf: Any = _pymupdf  # mostly unannotated
USER = {"acme": "alice", "globex": "dana"}  # can read every current, non-HR document
SCAN = "archive/change-approval-chg-2291.pdf"
REPORT = "reports/reliability-review-2026-q3.pdf"
RATES = "rates/freight-rate-card-2026.pdf"
DOCX = "handbook/onboarding-checklist.docx"
PPTX = "reports/platform-roadmap-2027.pptx"
XLSX = "rates/surcharge-table-2026.xlsx"


def _cli(cfg: Path, *args: str) -> tuple[int, str]:
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["--config", str(cfg), "--fake-embedder", *args])
    return code, out.getvalue()


def _corpus_files(tenant: str) -> set[str]:
    root = EXAMPLES / "corpus" / tenant
    return {
        p.relative_to(root).as_posix()
        for p in root.rglob("*")
        if p.is_file() and parser_for_path(p.name) is not None and "__pycache__" not in p.parts
    }


@pytest.fixture(scope="module")
def indexed(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("example")
    shutil.copytree(EXAMPLES, root / "examples", ignore=shutil.ignore_patterns("__pycache__", ".tessera"))
    cfg = root / "examples" / "tessera.yaml"
    code, out = _cli(cfg, "run", "--json", "--run-id", "example-1")
    assert code == 0, out
    summaries = {s["tenant"]: s for s in map(json.loads, out.splitlines())}
    config = load_config(cfg)
    rows = {}
    for tenant in config.tenants:
        table = RunContext(config, tenant, "read", embedder=HashEmbedder()).index.table()
        assert table is not None
        rows[tenant] = table.to_arrow().to_pylist()
    return {"cfg": cfg, "root": root, "summaries": summaries, "rows": rows}


def _doc_rows(indexed: dict[str, Any], tenant: str, doc_id: str) -> list[dict[str, Any]]:
    return sorted((r for r in indexed["rows"][tenant] if r["doc_id"] == doc_id), key=lambda r: r["start"])


def test_every_file_of_every_format_yields_chunks_in_both_tenants(indexed: dict[str, Any]) -> None:
    for tenant, formats in EXPECTED_FORMATS.items():
        summary = indexed["summaries"][tenant]
        assert summary["ok"] and summary["listing"]["verdict"] == "complete"
        assert summary["listing"]["quarantined"] == 0 and summary["parse"]["quarantined"] == 0
        assert summary["chunk"]["empty_documents"] == 0
        rows = indexed["rows"][tenant]
        per_doc = Counter(r["doc_id"] for r in rows)
        files = _corpus_files(tenant)
        assert set(per_doc) == files  # every file on disk, and nothing else, has chunks
        assert summary["listing"]["documents"] == len(files)
        by_format = Counter(FORMATS[r["content_type"]] for r in rows)
        assert set(by_format) == formats, by_format
        for row in rows:
            assert row["text"].strip() and (row["groups"] or row["readers"])


def test_pdf_tables_and_two_columns_come_out_in_reading_order(indexed: dict[str, Any]) -> None:
    text = "\n\n".join(r["text"] for r in _doc_rows(indexed, "acme", REPORT))
    assert "| ledger-worker | 99.90% | 99.81% | 190% | Payments |" in text  # ruled table as GFM rows
    assert "Acme Engineering - Reliability Review" not in text  # running header removed
    assert "Page 1 of 2" not in text
    # the left column is read to its end before the right column starts
    left_end, right_start = text.index("reached after eleven minutes"), text.index("What we will change")
    assert left_end < right_start
    rates = "\n".join(r["text"] for r in _doc_rows(indexed, "globex", RATES))
    assert "| Z8 | United Kingdom | 214.00 | 24.90 | 3-5 |" in rates


def test_html_boilerplate_is_left_out(indexed: dict[str, Any]) -> None:
    cases = {
        ("acme", "web/zero-downtime-migrations.html"): ("expand and contract routine", "forty-one schema"),
        ("globex", "help/book-a-pickup.html"): ("cut-off time for your area", "tail-lift box"),
    }
    boilerplate = ("cookies", "Subscribe", "Popular posts", "Related articles", "helpful", "rights reserved")
    for (tenant, doc_id), wanted in cases.items():
        text = "\n".join(r["text"] for r in _doc_rows(indexed, tenant, doc_id))
        assert all(w in text for w in wanted), text
        assert not [b for b in boilerplate if b.lower() in text.lower()], text
        assert "Great write-up" not in text and "acmeAnalytics" not in text  # comments, scripts


def test_python_package_is_chunked_by_definition(indexed: dict[str, Any]) -> None:
    rows = [r for r in indexed["rows"]["acme"] if r["doc_id"].startswith("tools/ledgerkit/")]
    assert {r["doc_id"] for r in rows} == {
        f"tools/ledgerkit/{m}.py" for m in ("__init__", "money", "reconcile")
    }
    paths = {tuple(r["heading_path"]) for r in rows}
    assert ("Money", "allocate") in paths and ("Reconciler", "reconcile") in paths


def test_scanned_page_is_read_by_ocr(indexed: dict[str, Any]) -> None:
    rows = _doc_rows(indexed, "acme", SCAN)
    text = "\n".join(r["text"] for r in rows)
    assert "no text layer" in text  # page 1, typed, with or without OCR
    if not ocr.available():
        pytest.skip("tesseract (or pytesseract) is not installed: `make ocr` installs it")
    on_scan = [r for r in rows if any(p["page"] == 2 for p in r["pages"])]
    assert on_scan and all("ocr" in r["flags"] for r in on_scan)
    scanned = " ".join(r["text"] for r in on_scan)
    for words in ("CHANGE APPROVAL FORM", "CHG-2291", "Maintenance window", "Rollback plan"):
        assert words in scanned, scanned


def test_scanned_page_is_reported_not_dropped_without_tesseract(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A machine without the tesseract binary: the parse succeeds, page 1 is kept, page 2 is
    named in the warnings (the run's parse report carries them)."""
    with contextlib.suppress(ImportError):
        import pytesseract  # type: ignore[import-untyped,unused-ignore]

        monkeypatch.setattr(pytesseract.pytesseract, "tesseract_cmd", str(tmp_path / "no-tesseract"))
    assert not ocr.available()
    raw = (EXAMPLES / "corpus" / "acme" / SCAN).read_bytes()
    doc = SourceDocument(
        tenant="acme",
        doc_id=SCAN,
        uri="file:///scan.pdf",
        revision=hashlib.sha256(raw).hexdigest(),
        content_type="application/pdf",
        readers=(),
        groups=("staff",),
        effective_from=ALWAYS,
        effective_to=NEVER,
        modified_at=datetime(2026, 11, 2, tzinfo=UTC),
        size=len(raw),
    )
    parsed = get_parser("application/pdf").parse(doc, raw)
    assert "ocr_unavailable: page 2" in parsed.warnings
    assert any(w.startswith("images_not_ocred: page 2: images cover 100%") for w in parsed.warnings)
    assert "no text layer" in parsed.text and "Maintenance window" not in parsed.text
    assert parsed.layout is not None and {r.page for r in parsed.layout.runs} == {1}


def _words(text: str) -> list[str]:
    """Words as PyMuPDF's ``get_text("words")`` splits them, GFM table syntax left out."""
    return sorted(w for w in re.split(r"\s+", text) if w and w != "|" and not re.fullmatch(r"\|?(-+\|)+", w))


def _show(indexed: dict[str, Any], tenant: str, user: str, chunk_id: str) -> tuple[int, str]:
    return _cli(
        indexed["cfg"], "show", "--tenant", tenant, "--user", user, "--json", f"tessera:{tenant}/{chunk_id}"
    )


SHOWN = {
    "acme": (
        "runbooks/deploy.md", REPORT, "web/zero-downtime-migrations.html", "tools/ledgerkit/money.py",
        DOCX, PPTX,
    ),
    "globex": ("products/shipment-tracking.md", "help/book-a-pickup.html", XLSX),
}  # fmt: skip


def test_show_gives_the_exact_slice_for_every_format(indexed: dict[str, Any]) -> None:
    seen = set()
    for tenant, docs in SHOWN.items():
        source = indexed["root"] / "examples" / "corpus" / tenant
        for doc_id in docs:
            rows = _doc_rows(indexed, tenant, doc_id)
            for row in (rows[0], rows[-1]):
                seen.add((tenant, FORMATS[row["content_type"]]))
                code, out = _show(indexed, tenant, USER[tenant], row["id"])
                assert code == 0, out
                shown = json.loads(out)
                cite = shown["citation"]
                raw = (source / doc_id).read_bytes()
                assert cite["revision"] == hashlib.sha256(raw).hexdigest()
                assert shown["text"] == row["text"]
                if row["content_type"] == "application/pdf":
                    assert cite["byte_start"] == cite["byte_end"] == -1
                    assert [(p["page"], tuple(p["bbox"])) for p in cite["pages"]] == [
                        (p["page"], (p["x0"], p["y0"], p["x1"], p["y1"])) for p in row["pages"]
                    ]
                    assert _boxed(raw, cite["pages"], row["text"])
                    continue
                if row["content_type"] in OFFICE_TYPES:  # read back from the cited zip parts
                    assert cite["byte_start"] == cite["byte_end"] == -1 and cite["parts"] == row["parts"]
                    assert shown["source_slice"] == cited_text(raw, part_spans(cite["parts"])) == row["text"]
                    assert parts_match(raw, part_spans(cite["parts"]), row["text"])
                    continue
                start, end = cite["byte_start"], cite["byte_end"]
                assert 0 <= start < end <= len(raw)
                assert shown["source_slice"] == raw[start:end].decode("utf-8")
                assert slice_matches(row["content_type"], raw, start, end, row["text"])
                if row["content_type"] != "text/html":  # text formats: the bytes are the text
                    assert shown["source_slice"] == row["text"]
    assert seen == {(t, f) for t, fs in EXPECTED_FORMATS.items() for f in fs} - {("globex", "pdf")}
    # byte offsets, not character offsets: money.py has a "€" before its last chunk
    last = _doc_rows(indexed, "acme", "tools/ledgerkit/money.py")[-1]
    assert last["byte_start"] > last["start"]


def _box_words(raw: bytes, pages: list[dict[str, Any]]) -> Counter[str]:
    """The words PyMuPDF finds inside a citation's page boxes (``bbox`` or ``x0``..``y1``)."""
    pdf = pymupdf.open(stream=raw, filetype="pdf")
    words: Counter[str] = Counter()
    for p in pages:
        clip = pymupdf.Rect(p["bbox"] if "bbox" in p else (p["x0"], p["y0"], p["x1"], p["y1"]))
        words.update(w[4] for w in pdf[p["page"] - 1].get_text("words", clip=clip))
    return words


def _boxed(raw: bytes, pages: list[dict[str, Any]], text: str) -> bool:
    """Whether the page boxes hold every word of ``text``, as often as it occurs."""
    return not Counter(_words(text)) - _box_words(raw, pages)


def test_pdf_citations_box_exactly_their_words(indexed: dict[str, Any]) -> None:
    """Every PDF chunk's page boxes hold all of its words, and a chunk of one column or one table
    no others (globex's dated rate card included, which ``show`` cannot reach after 2026)."""
    checked = 0
    for tenant in EXPECTED_FORMATS:
        source = indexed["root"] / "examples" / "corpus" / tenant
        for row in indexed["rows"][tenant]:
            if row["content_type"] != "application/pdf" or "ocr" in row["flags"]:
                continue
            raw = (source / row["doc_id"]).read_bytes()
            assert _boxed(raw, row["pages"], row["text"]), row["text"]
            # a box is the union of the chunk's lines on a page: one that takes in both columns
            # of the review's page 2 holds the other column's words too; any other holds no others
            both = row["doc_id"] == REPORT and any(
                p["page"] == 2 and p["x0"] < 297 < p["x1"] for p in row["pages"]
            )
            if not both:
                assert _box_words(raw, row["pages"]) == Counter(_words(row["text"])), row["text"]
            checked += 1
    assert checked >= 8
    # the boxes are tight: a box around one chunk's words misses the words of another
    rows = _doc_rows(indexed, "globex", RATES)
    assert len(rows) >= 2
    raw = (indexed["root"] / "examples" / "corpus" / "globex" / RATES).read_bytes()
    assert not _boxed(raw, rows[0]["pages"], rows[-1]["text"])


def _hits(indexed: dict[str, Any], tenant: str, user: str, query: str, *extra: str) -> list[str]:
    who = ("--tenant", tenant, "--user", user)
    code, out = _cli(
        indexed["cfg"], "search", *who, "--mode", "lexical", "--k", "50", "--json", *extra, query
    )
    assert code == 0, out
    return [h["doc_id"] for h in json.loads(out)]


def test_new_files_keep_their_access_rules_and_dates(indexed: dict[str, Any]) -> None:
    query = "ledger-worker search-indexer error budget freeze"
    assert REPORT in _hits(indexed, "acme", "alice", query)  # groups [eng]
    for user in ("bob", "carol", "mallory"):
        assert REPORT not in _hits(indexed, "acme", user, query)
    chunk = _doc_rows(indexed, "acme", REPORT)[0]["id"]
    assert _show(indexed, "acme", "alice", chunk)[0] == 0
    assert _show(indexed, "acme", "bob", chunk)[0] != 0  # not found, not "forbidden"
    assert SCAN in _hits(indexed, "acme", "bob", "change approval record PostgreSQL")  # default ACL
    query = "pallet parcel zone United Kingdom transit"
    assert RATES in _hits(indexed, "globex", "erik", query, "--as-of", "2026-06-01T00:00:00Z")
    for when in ("2025-12-31T23:59:59Z", "2027-01-01T00:00:00Z"):
        assert RATES not in _hits(indexed, "globex", "erik", query, "--as-of", when)
    assert RATES not in _hits(indexed, "globex", "trent", query, "--as-of", "2026-06-01T00:00:00Z")
    globex_docs = {r["doc_id"] for r in indexed["rows"]["globex"]} - {
        r["doc_id"] for r in indexed["rows"]["acme"]
    }
    assert RATES in globex_docs
    assert not globex_docs & set(_hits(indexed, "acme", "alice", query))  # no tenant sees the other's


def _generator() -> Any:
    spec = importlib.util.spec_from_file_location("generate_corpus", EXAMPLES / "generate_corpus.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_generator_reproduces_the_committed_files(tmp_path: Path) -> None:
    gen = _generator()
    written = gen.generate(tmp_path)
    assert {p.relative_to(tmp_path).as_posix() for p in written} == set(gen.FILES)
    for rel in gen.FILES:
        data = (tmp_path / rel).read_bytes()
        assert data == (EXAMPLES / "corpus" / rel).read_bytes(), f"{rel} differs: run the generator"
        assert len(data) < 200_000
        if rel.endswith(".pdf"):
            assert pymupdf.open(stream=data, filetype="pdf").metadata["creationDate"] == gen.DATE
    gen.generate(tmp_path / "again")  # and again, in the same process
    for rel in gen.FILES:
        assert (tmp_path / "again" / rel).read_bytes() == (tmp_path / rel).read_bytes()


def test_readme_lists_every_example_document() -> None:
    readme = (EXAMPLES / "README.md").read_text(encoding="utf-8")
    for tenant in EXPECTED_FORMATS:
        missing = sorted(f for f in _corpus_files(tenant) if f"`{f}`" not in readme)
        assert not missing, f"examples/README.md does not list {missing}"


def test_lineage_report_covers_the_pdfs(indexed: dict[str, Any], tmp_path: Path) -> None:
    code, out = _cli(indexed["cfg"], "lineage", "--tenant", "acme", "--html", str(tmp_path), "--doc", REPORT)
    assert code == 0, out
    pages = [p for p in tmp_path.rglob("*.html") if p.name != "index.html"]
    assert len(pages) == 1 and "p1 [56.0, " in pages[0].read_text(encoding="utf-8")


def test_office_files_cite_parts_and_split_the_sheet_with_its_header(indexed: dict[str, Any]) -> None:
    """Every Office chunk cites zip parts that give its text exactly; the sheet is cut at rows
    with the header row repeated in every part; slide titles and notes are kept."""
    for tenant, doc_id, part in (
        ("acme", DOCX, "word/document.xml"),
        ("acme", PPTX, "ppt/slides/slide"),
        ("globex", XLSX, "xl/worksheets/sheet1.xml"),
    ):
        raw = (indexed["root"] / "examples" / "corpus" / tenant / doc_id).read_bytes()
        rows = _doc_rows(indexed, tenant, doc_id)
        assert rows and all(r["byte_start"] == -1 and not r["pages"] for r in rows)
        for r in rows:
            assert parts_match(raw, part_spans(r["parts"]), r["text"]), r["text"]
        assert any(p["part"].startswith(part) for r in rows for p in r["parts"])
    sheet = [
        r
        for r in _doc_rows(indexed, "globex", XLSX)
        if r["kind"] == "table" and r["parts"][-1]["part"] == "xl/worksheets/sheet1.xml"
    ]
    header = "| Code | Zone | Shipment | Surcharge EUR | Valid from |"
    assert len(sheet) >= 3 and all(header in r["embedding_text"] for r in sheet)
    body = "\n".join(r["text"] for r in sheet)
    assert all(f"| S{n:03d} |" in body for n in range(1, 73))
    deck = "\n".join(r["text"] for r in _doc_rows(indexed, "acme", PPTX))
    assert "measured at the ledger API" in deck and "| Q2 2027 | Search indexer rewrite |" in deck
    assert ("Engineering Onboarding Checklist", "First day") in {
        tuple(r["heading_path"]) for r in _doc_rows(indexed, "acme", DOCX)
    }


def test_lineage_shows_and_verifies_office_parts(indexed: dict[str, Any], tmp_path: Path) -> None:
    row = _doc_rows(indexed, "globex", XLSX)[-1]
    code, out = _cli(indexed["cfg"], "lineage", "--tenant", "globex", "--json", row["id"])
    assert code == 0, out
    lineage = json.loads(out)
    assert lineage["source_verified"] and lineage["source_slice"] == row["text"] and lineage["parts"]
    code, out = _cli(indexed["cfg"], "lineage", "--tenant", "globex", "--html", str(tmp_path), "--doc", XLSX)
    assert code == 0, out
    pages = [p for p in tmp_path.rglob("*.html") if p.name != "index.html"]
    assert len(pages) == 1 and "xl/worksheets/sheet1.xml A1.." in pages[0].read_text(encoding="utf-8")
