"""E1/E2 end to end: a published PDF replaced by a broken or encrypted one keeps its chunks.

The unit tests (``tests/test_pdf.py``) check each typed reason; here a tenant's live PDF is
overwritten, in turn, by a user-password file, a file with an unknown encryption algorithm,
an empty and a truncated file, and every time the document is quarantined with its reason,
its published chunks stay, and the other documents of the batch are published.
"""

from __future__ import annotations

import re

import pytest

from tests import pdf_fixtures as F
from tests.conftest import Workspace

from .test_lifecycle import md_sections


def _unknown_algorithm() -> bytes:
    raw = F.encrypted_pdf()
    bad, n = re.subn(rb"/V \d", b"/V 9", raw, count=1)  # an encryption dictionary version no reader knows
    assert n == 1
    return bad


@pytest.mark.scenario("E1", "E2")
def test_a_live_pdf_replaced_by_an_unreadable_one_keeps_its_chunks(ws: Workspace) -> None:
    src = ws.tenant("acme", {"report.pdf": F.two_column_pdf(pages=1), "notes.md": md_sections("Notes", 1)})
    ws.run("acme", "r1")
    live = sorted(r["id"] for r in ws.rows("acme") if r["doc_id"] == "report.pdf")
    assert live
    cases = [
        ("encrypted", F.encrypted_pdf(), {"encrypted"}),  # labelled encrypted, never empty
        ("unknown-algorithm", _unknown_algorithm(), {"encrypted", "corrupt"}),  # typed, no crash
        ("empty", b"", {"empty"}),
        ("truncated", F.truncated_pdf(), {"corrupt"}),
    ]
    for i, (name, raw, reasons) in enumerate(cases):
        (src / "report.pdf").write_bytes(raw)
        (src / "notes.md").write_text(md_sections(f"Notes {name}", 1), encoding="utf-8")  # the batch goes on
        out = ws.run("acme", f"r{i + 2}")
        report = ws.context("acme", f"r{i + 2}").read("parse_report.json")
        (q,) = [q for q in report["quarantined"] if q["doc_id"] == "report.pdf"]
        assert q["reason"] in reasons, (name, q)
        assert "closed or encrypted" not in q["message"]  # no raw PyMuPDF ValueError
        assert sorted(r["id"] for r in ws.rows("acme") if r["doc_id"] == "report.pdf") == live, name
        notes = " ".join(r["text"] for r in ws.rows("acme") if r["doc_id"] == "notes.md")
        assert f"Notes {name}" in notes and out["publish"]["committed"], name

    (src / "report.pdf").write_bytes(F.owner_only_pdf())  # an owner password only: extracted
    out = ws.run("acme", "r-owner")
    assert out["parse"]["quarantined"] == 0
    assert sorted(r["id"] for r in ws.rows("acme") if r["doc_id"] == "report.pdf") != live
