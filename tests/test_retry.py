"""``tessera retry``: one document through the normal run path, the run restricted to it.

Guarantees attacked: nothing but the document is parsed, published or deleted (other changed
documents keep their live rows, removed ones are not deleted, the deletion guard counts only
the document); a document the source does not list is a typed error that writes nothing; a
retry that fails again counts an attempt and keeps the old chunks; one that succeeds clears
the document and no other.
"""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import ConfigError, MassDeletionBlocked
from tessera.pipeline.failures import DocumentNotListed
from tessera.pipeline.run import run_tenant, verify_step
from tessera.pipeline.staging import PARSE_REPORT
from tessera.sources.memory import MemoryConnector
from tessera.store.failures import FailureQueue, FailureRecord
from tests.conftest import Workspace
from tests.test_failures import BINARY, GOOD, cli, doc_rows, queue, queue_version

FIXED = "# Image\n\nThe image caption, now in plain text.\n"


def state(ws: Workspace, tenant: str = "acme") -> tuple[Any, ...]:
    """Everything a refused retry must leave as it was: table and queue versions, rows, log."""
    rc = ws.context(tenant, "inspect")
    pubs = rc.index.publications()
    return rc.index.version(), queue_version(ws, tenant), ws.rows(tenant), len(pubs)


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


def test_retry_publishes_only_its_document(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    src = ws.tenant("acme", {**GOOD, "old.md": "# Old\n\nSoon removed.\n", "image.md": BINARY})
    ws.run("acme", "r1")
    guide, old = doc_rows(ws, "guide.md"), doc_rows(ws, "old.md")
    (src / "image.md").write_text(FIXED, encoding="utf-8")
    (src / "guide.md").write_text("# Guide\n\nA new guide that waits for the next run.\n", encoding="utf-8")
    (src / "old.md").unlink()
    capsys.readouterr()
    assert main(cli(ws, "retry", "--tenant", "acme", "image.md", "--run-id", "retry-1")) == 0
    out = capsys.readouterr().out
    assert out.startswith("retried acme/image.md: published as version ")
    assert doc_rows(ws, "image.md") and "image.md" not in queue(ws)
    assert doc_rows(ws, "guide.md") == guide  # changed in the source, left for the next run
    assert doc_rows(ws, "old.md") == old  # removed from the source, not deleted by a retry
    last = ws.context("acme", "inspect").index.publications()[-1]
    assert last["run_id"] == "retry-1" and last["inserted"] == len(doc_rows(ws, "image.md"))
    assert (last["updated"], last["deleted"]) == (0, 0)  # no row of another document changed
    report = json.loads((ws.root / "work" / "acme" / "retry-1" / PARSE_REPORT).read_text("utf-8"))
    assert report["parsed"] == ["image.md"]  # nothing else was even parsed
    # its verification answers for the retried document only; a full run's would see stale rows
    scoped = ws.context("acme", "retry-1", doc_scope=frozenset({"image.md"}))
    assert verify_step(scoped)[0] == []
    assert any("stale rows" in p for p in verify_step(ws.context("acme", "retry-1"))[0])
    ws.run("acme", "r2")  # the next full run publishes the rest
    assert doc_rows(ws, "guide.md") != guide and not doc_rows(ws, "old.md")


def test_a_retry_that_fails_again_counts_and_keeps_the_old_chunks(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    src = ws.tenant("acme", {**GOOD, "image.md": FIXED, "other.md": BINARY})
    ws.run("acme", "r1")
    published = doc_rows(ws, "image.md")
    (src / "image.md").write_bytes(BINARY)
    ws.run("acme", "r2")
    before = queue(ws)
    assert before["image.md"].attempts == 1 and before["other.md"].attempts == 2
    capsys.readouterr()
    assert main(cli(ws, "retry", "--tenant", "acme", "image.md", "--run-id", "retry-1")) == 1
    line = one_error_line(capsys)
    assert line.startswith(
        "tessera: DocumentError: image.md: invalid_content: failed again at parse (attempt 2)"
    )
    after = queue(ws)
    assert after["image.md"].attempts == 2 and after["image.md"].last_run_id == "retry-1"
    assert after["image.md"].first_failed_at == before["image.md"].first_failed_at
    assert after["other.md"] == before["other.md"]  # another failing document is not retried
    assert doc_rows(ws, "image.md") == published
    # --json prints the outcome, then the same error and exit code
    assert main(cli(ws, "retry", "--tenant", "acme", "image.md", "--json")) == 1
    captured = capsys.readouterr()
    data = json.loads(captured.out)
    assert data["status"] == "failed" and data["failure"]["attempts"] == 3
    assert captured.err.startswith("tessera: DocumentError: image.md:")


def test_a_document_the_source_does_not_list_is_a_typed_error_that_writes_nothing(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    src = ws.tenant("acme", {**GOOD, "old.md": "# Old\n\nSoon removed.\n", "image.md": BINARY})
    ws.tenant("globex", GOOD)
    ws.run("acme", "r1")
    (src / "old.md").unlink()  # still live, no longer listed
    (src / "image.md").write_text(FIXED, encoding="utf-8")
    before = state(ws)
    for doc in ("nope.md", "old.md", "IMAGE.md", "image.md/", "corpus/acme/image.md"):
        capsys.readouterr()
        assert main(cli(ws, "retry", "--tenant", "acme", doc)) == 1, doc
        line = one_error_line(capsys)
        assert line.startswith("tessera: DocumentNotListed: ") and repr(doc) in line, line
        assert state(ws) == before, doc
    assert main(cli(ws, "retry", "--tenant", "globex", "image.md")) == 1  # another tenant's document
    assert one_error_line(capsys).startswith("tessera: DocumentNotListed: tenant 'globex'")
    assert main(cli(ws, "retry", "--tenant", "acme", "")) == 1
    assert one_error_line(capsys).startswith("tessera: ConfigError: doc_scope")
    assert main(cli(ws, "retry", "--tenant", "nobody", "image.md")) == 1
    assert "nobody" in one_error_line(capsys)
    assert state(ws) == before
    with pytest.raises(DocumentNotListed) as e:  # the core refuses it too, before any write
        run_tenant(ws.context("acme", "core", doc_scope=frozenset({"image.md", "ghost.md"})))
    assert e.value.doc_ids == ["ghost.md"] and state(ws) == before
    with pytest.raises(ConfigError, match="doc_scope"):
        ws.context("acme", "core", doc_scope=frozenset())


def test_a_retry_clears_its_document_and_no_other(ws: Workspace, capsys: pytest.CaptureFixture[str]) -> None:
    src = ws.tenant("acme", {**GOOD, "x.md": BINARY, "y.md": BINARY + b"y"})
    ws.run("acme", "r1")
    (src / "x.md").write_text("# X\n\nFixed x.\n", encoding="utf-8")
    (src / "y.md").write_text("# Y\n\nFixed y.\n", encoding="utf-8")
    y_before = queue(ws)["y.md"]
    assert main(cli(ws, "retry", "--tenant", "acme", "x.md")) == 0
    assert queue(ws) == {"y.md": y_before} and not doc_rows(ws, "y.md")
    ws.run("acme", "r2")
    assert queue(ws) == {} and doc_rows(ws, "y.md")


def test_a_retry_of_an_up_to_date_document_publishes_nothing(
    ws: Workspace, capsys: pytest.CaptureFixture[str]
) -> None:
    ws.tenant("acme", GOOD)
    ws.run("acme", "r1")
    before = state(ws)
    capsys.readouterr()
    # --fake-embedder before or after the command
    assert main(["--config", str(ws.root / "tessera.yaml"), "retry", "--tenant", "acme", "guide.md",
                 "--fake-embedder", "--json"]) == 0  # fmt: skip
    data = json.loads(capsys.readouterr().out)
    assert data["status"] == "up-to-date" and data["failure"] is None and data["inserted"] == 0
    assert state(ws)[:3] == before[:3]  # no table version, no queue, same rows


def test_the_deletion_guard_of_a_retry_counts_only_its_document(ws: Workspace) -> None:
    docs: dict[str, str | bytes] = {f"d{i}.md": f"# Doc {i}\n\nBody {i} text.\n" for i in range(12)}
    src = ws.tenant("acme", {**docs, "image.md": BINARY})
    ws.run("acme", "r1")
    for i in range(8):  # 8 of 12 documents gone: a full run is refused by the guard
        (src / f"d{i}.md").unlink()
    (src / "image.md").write_text(FIXED, encoding="utf-8")
    with pytest.raises(MassDeletionBlocked):
        ws.run("acme", "r2")
    assert main(cli(ws, "retry", "--tenant", "acme", "image.md")) == 0
    live = {r["doc_id"] for r in ws.rows("acme")}
    assert live == set(docs) | {"image.md"}  # the removed documents are all still live
    with pytest.raises(MassDeletionBlocked):
        ws.run("acme", "r3")  # and the next full run is still guarded


def test_retry_of_a_listing_failure_through_the_core(ws: Workspace) -> None:
    """The same run path with another connector: a download failure, retried."""
    ws.tenant("acme", {})
    access = ws.config().tenant("acme").default_access
    files = {**GOOD, "flaky.md": "# Flaky\n\nv1\n"}
    ws.run("acme", "r1", connector=MemoryConnector("acme", files, access))
    files = {**files, "flaky.md": "# Flaky\n\nv2\n", "notes.md": "# Notes\n\nchanged\n"}
    flaky = MemoryConnector("acme", files, access, unreadable=("flaky.md",))
    ws.run("acme", "r2", connector=flaky)
    scope = frozenset({"flaky.md"})
    run_tenant(ws.context("acme", "retry-1", connector=flaky, doc_scope=scope))
    record: FailureRecord = queue(ws)["flaky.md"]
    assert (record.stage, record.attempts, record.last_run_id) == ("listing", 2, "retry-1")
    notes = doc_rows(ws, "notes.md")
    run_tenant(
        ws.context("acme", "retry-2", connector=MemoryConnector("acme", files, access), doc_scope=scope)
    )
    assert queue(ws) == {} and "v2" in doc_rows(ws, "flaky.md")[0][2]
    assert doc_rows(ws, "notes.md") == notes  # r2 published it already; the retry did not touch it
    assert FailureQueue(ws.context("acme", "x").db, "acme").records() == []


def test_fake_embedder_may_follow_the_command() -> None:
    from tessera.cli import build_parser

    p = build_parser()
    for argv in (
        ["--fake-embedder", "retry", "--tenant", "a", "d"],
        ["retry", "--tenant", "a", "d", "--fake-embedder"],
    ):
        assert p.parse_args(argv).fake_embedder is True, argv
    assert p.parse_args(["retry", "--tenant", "a", "d"]).fake_embedder is (
        os.environ.get("TESSERA_FAKE_EMBEDDER") == "1"
    )
