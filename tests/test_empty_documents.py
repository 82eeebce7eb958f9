"""No silent empties: a document that yields no text or no chunk is named in the run's reports.

A document whose new revision yields nothing counts as lost for the deletion guard (see
``tests/test_deletion_safety.py``); here: it is never published as zero chunks in silence."""

from __future__ import annotations

from typing import Any

import pytest

GOOD = {"good.md": "# Good\n\nThe good document has words in it.\n"}


def _reports(ws: Any, run_id: str) -> tuple[dict[str, Any], dict[str, Any]]:
    rc = ws.context("acme", run_id)
    return rc.read("parse_report.json"), rc.read("chunk_report.json")


@pytest.mark.parametrize(
    ("name", "body"),
    [
        ("blank.md", "   \n\n\t\n"),
        ("blank.py", "\n \n"),
        ("empty.html", "<html><head><title></title></head><body>  </body></html>"),
    ],
)
def test_a_document_without_text_is_reported_not_published_silently(ws: Any, name: str, body: str) -> None:
    ws.tenant("acme", {**GOOD, name: body})
    out = ws.run("acme", "r1")
    parse, chunk = _reports(ws, "r1")
    assert name in parse["parsed"] or any(q["doc_id"] == name for q in parse["quarantined"])
    if name in parse["parsed"]:  # parsed, but empty: a warning names it, and the chunk report too
        assert any(w.startswith("no_text") for w in parse["warnings"][name]), parse["warnings"]
        assert chunk["empty"] == [name] and out["chunk"]["empty_documents"] == 1
    rows = ws.rows("acme")
    assert {r["doc_id"] for r in rows} == {"good.md"}  # the good document is published
    assert "good.md" not in parse["warnings"]  # and carries no warning


def test_documents_with_text_are_not_reported_empty(ws: Any) -> None:
    ws.tenant("acme", {**GOOD, "b.md": "# B\n\nAnother document.\n", "c.py": "def f():\n    return 1\n"})
    out = ws.run("acme", "r1")
    parse, chunk = _reports(ws, "r1")
    assert chunk["empty"] == [] and out["chunk"]["empty_documents"] == 0
    assert not any(w.startswith("no_text") for ws_ in parse["warnings"].values() for w in ws_)
