"""Office files through the real pipeline: good files publish rows with verified structural
citations; bad files are quarantined with a typed reason; a file that turns bad keeps its old
chunks in the index."""

from __future__ import annotations

from typing import Any

from tessera.parsing.office_locate import part_spans, parts_match
from tessera.pipeline.run import verify_step
from tests import office_fixtures as F


def test_bad_office_files_are_quarantined_and_old_chunks_kept(ws: Any) -> None:
    good = {"good.docx": F.docx_sample(), "deck.pptx": F.pptx_sample(), "rates.xlsx": F.xlsx_sample()}
    corpus = ws.tenant(
        "acme",
        {
            **good,
            "locked.docx": F.encrypted(),
            "cut.xlsx": F.xlsx_sample()[:400],
            "macro.pptx": F.macro_only(F.empty_pptx, "ppt/vbaProject.bin"),
            "bomb.xlsx": F.fixed(
                F.xlsx_sample(), {"xl/worksheets/sheet1.xml": b"<a>" + b" " * (24 << 20) + b"</a>"}
            ),
        },
    )
    out = ws.run("acme", "r1")
    assert out["parse"]["parsed"] == 3 and out["parse"]["quarantined"] == 4
    report = ws.context("acme", "r1").read("parse_report.json")
    reasons = {q["doc_id"]: q["reason"] for q in report["quarantined"]}
    assert reasons == {
        "locked.docx": "encrypted",
        "cut.xlsx": "corrupt",
        "macro.pptx": "macro_only",
        "bomb.xlsx": "too_large",
    }
    rows = ws.rows("acme")
    assert {r["doc_id"] for r in rows} == set(good)
    for r in rows:
        assert r["byte_start"] == -1 and not r["pages"] and r["parts"]
        assert parts_match(good[r["doc_id"]], part_spans(r["parts"]), r["text"])
    flagged = {r["doc_id"] for r in rows if "hidden_text" in r["flags"]}
    assert flagged == {"deck.pptx", "rates.xlsx"}  # hidden slide, hidden row and sheets
    assert verify_step(ws.context("acme", "r1"))[0] == []  # the publish-time check reads parts back

    before = sorted((r["doc_id"], r["id"]) for r in rows)
    turned = {  # each format's file turns bad in its own way; every one keeps its old chunks
        "good.docx": (good["good.docx"][:500], "corrupt"),
        "deck.pptx": (F.encrypted(), "encrypted"),
        "rates.xlsx": (F.macro_only(F.empty_xlsx, "xl/vbaProject.bin"), "macro_only"),
    }
    for name, (data, _) in turned.items():
        (corpus / name).write_bytes(data)
    ws.run("acme", "r2")
    report = ws.context("acme", "r2").read("parse_report.json")
    reasons = {q["doc_id"]: q["reason"] for q in report["quarantined"]}
    assert {n: reasons.get(n) for n in turned} == {n: why for n, (_, why) in turned.items()}
    after = sorted((r["doc_id"], r["id"]) for r in ws.rows("acme"))
    assert after == before  # kept, not deleted
