"""Fail-closed policies: a rule that cannot be read never widens a document to the tenant default.

Attacked through the real CLI and pipeline, for folders, S3 sidecars and git: empty, unparsable,
binary and vanished policy files; case and extension variants that used to escape their rule;
nested policy files; misnamed lookalikes. Every test checks that the restricted document stays
restricted (or the run fails before publishing) and that legitimate readers keep their results.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import PolicyError
from tessera.search import principal_from_config, search
from tessera.sources.s3 import S3Connector
from tests.s3server import client

from .test_git_source import commit_all, git, write
from .test_s3_source import admin, moto, new_bucket  # noqa: F401  (fixtures)

OPEN = "Cafeteria menu: tacos on Tuesday"
SECRET = "Merger plan codename bluefin closes in March"
POLICY = "documents:\n  - match: 'board/*.md'\n    groups: [board]\n"
USERS = {"alice": ["staff"], "bea": ["staff", "board"]}


def _cli(ws: Any, *args: str) -> tuple[int, str]:
    code = main(["--config", str(ws.config().path), "--fake-embedder", *args])
    return code, ""


def _visible(ws: Any, user: str, query: str = "merger plan codename bluefin") -> set[str]:
    cfg = ws.config()
    hits = search(cfg.store.uri, ws.embedder, principal_from_config(cfg, "acme", user), query, k=20)
    return {h.doc_id for h in hits}


def _tenant(ws: Any, extra: dict[str, str] | None = None) -> Path:
    files = {
        "menu.md": f"# Menu\n\n{OPEN}.\n",
        "board/plan.md": f"# Plan\n\n{SECRET}.\n",
        "_access.yaml": POLICY,
    }
    return ws.tenant("acme", {**files, **(extra or {})}, users=USERS)


def _assert_restricted(ws: Any) -> None:
    assert "board/plan.md" not in _visible(ws, "alice")  # the attack got nothing
    assert "board/plan.md" in _visible(ws, "bea")  # the board still reads it
    assert "menu.md" in _visible(ws, "alice", "cafeteria menu tacos")  # and staff their menu


@pytest.mark.parametrize(
    "content",
    [
        b"",
        b"   \n\n",
        b"# rules moved to the wiki\n",
        b"documents:\n",
        b"documents: [\n",
        b"\x89PNG\r\n\x1a\n\x00",
    ],
    ids=["zero-bytes", "whitespace", "comment-only", "null-rules", "unparsable", "binary"],
)
@pytest.mark.scenario("safety-policy", "F2")
def test_unreadable_policy_fails_the_run_and_keeps_the_acl(ws: Any, content: bytes, capsys: Any) -> None:
    src = _tenant(ws)
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r1")[0] == 0
    _assert_restricted(ws)
    before = ws.rows("acme")
    (src / "_access.yaml").write_bytes(content)
    (src / "menu.md").write_text(f"# Menu\n\n{OPEN}, and soup.\n", encoding="utf-8")  # a real change waits
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r2")[0] == 1
    err = capsys.readouterr().err
    assert "PolicyError" in err and "_access.yaml" in err and SECRET not in err
    assert ws.rows("acme") == before
    _assert_restricted(ws)
    (src / "_access.yaml").write_text(POLICY, encoding="utf-8")  # the fix: the run goes through
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r3")[0] == 0
    _assert_restricted(ws)


@pytest.mark.scenario("safety-policy", "F2")
def test_a_vanished_policy_fails_closed_until_removed_deliberately(ws: Any, capsys: Any) -> None:
    src = _tenant(ws)
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r1")[0] == 0
    before = ws.rows("acme")
    assert {r["acl_source"] for r in before if r["doc_id"] == "board/plan.md"} == {"_access.yaml"}
    (src / "_access.yaml").unlink()  # an accidental delete, or a sync that lost the file
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r2")[0] == 1
    err = capsys.readouterr().err
    assert "PolicyError" in err and "_access.yaml" in err and "board/plan.md" in err
    assert ws.rows("acme") == before
    _assert_restricted(ws)
    # deliberately: an explicit empty policy for one run, then the file may go
    (src / "_access.yaml").write_text("documents: []\n", encoding="utf-8")
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r3")[0] == 0
    assert "board/plan.md" in _visible(ws, "alice")  # now opened, on purpose
    (src / "_access.yaml").unlink()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "r4")[0] == 0


@pytest.mark.scenario("safety-policy", "F2")
def test_rules_reach_every_case_and_extension_that_selection_reaches(ws: Any) -> None:
    extra = {
        "board/Bonus.MD": f"# Bonus\n\n{SECRET} bonus pool.\n",
        "board/notes.markdown": f"# Notes\n\n{SECRET} notes.\n",
        "BOARD/minutes.Md": f"# Minutes\n\n{SECRET} minutes.\n",
        "board/deck.HTM": f"<html><body><main><h1>Deck</h1><p>{SECRET} deck text.</p></main></body></html>",
        "_access.yaml": POLICY + "  - match: 'board/*.html'\n    groups: [board]\n",  # .HTM is .html
    }
    _tenant(ws, extra)
    ws.run("acme", "r1")
    board = {"board/plan.md", *extra} - {"_access.yaml"}
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert board <= set(rows)  # every variant is indexed ...
    for doc in board:
        assert rows[doc]["groups"] == ["board"], doc  # ... and restricted by the rule
    assert not board & _visible(ws, "alice")
    assert board <= _visible(ws, "bea")
    assert "menu.md" in _visible(ws, "alice", "cafeteria menu tacos")


@pytest.mark.scenario("safety-policy", "F2")
def test_nested_policy_files_are_honoured_nearest_first(ws: Any) -> None:
    extra = {
        "board/_access.yaml": "documents:\n  - match: 'public-*.md'\n    groups: [staff]\n",
        "board/public-agenda.md": "# Agenda\n\nMerger plan codename agenda for all staff.\n",
        "board/deep/_access.yaml": "documents:\n  - match: '*'\n    readers: [bea]\n",
        "board/deep/eyes-only.md": f"# Eyes only\n\n{SECRET} eyes only.\n",
    }
    _tenant(ws, extra)
    ws.run("acme", "r1")
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert rows["board/public-agenda.md"]["groups"] == ["staff"]  # the nearer file decides
    assert rows["board/public-agenda.md"]["acl_source"] == "board/_access.yaml"
    assert rows["board/plan.md"]["groups"] == ["board"]  # no nearer rule: the root file decides
    assert (rows["board/deep/eyes-only.md"]["readers"], rows["board/deep/eyes-only.md"]["groups"]) == (
        ["bea"],
        [],
    )
    assert _visible(ws, "alice") & {"board/deep/eyes-only.md", "board/plan.md"} == set()
    assert "board/public-agenda.md" in _visible(ws, "alice", "merger plan codename agenda")
    (ws.root / "corpus" / "acme" / "board" / "deep" / "_access.yaml").write_text("", encoding="utf-8")
    with pytest.raises(PolicyError, match=r"deep/_access\.yaml"):  # a nested empty file fails closed too
        ws.run("acme", "r2")
    assert {r["doc_id"]: r for r in ws.rows("acme")} == rows


@pytest.mark.parametrize("name", ["_access.yml", "_ACCESS.yaml", "board/_Access.YAML"])
@pytest.mark.scenario("safety-policy", "F2")
def test_a_misnamed_policy_is_refused_not_ignored(ws: Any, name: str) -> None:
    src = ws.tenant("acme", {"menu.md": f"# Menu\n\n{OPEN}.\n", "board/plan.md": f"# Plan\n\n{SECRET}.\n"})
    (src / name).write_text(POLICY, encoding="utf-8")
    with pytest.raises(PolicyError, match="looks like an access policy"):
        ws.run("acme", "r1")
    assert ws.table("acme") is None  # nothing was published with the default ACL


@pytest.mark.scenario("safety-policy", "F2")
def test_s3_sidecars_fail_closed_and_nest(ws: Any, moto: Any, admin: Any) -> None:  # noqa: F811
    files: dict[str, Any] = {
        "acme/.tessera-root": b"",
        "acme/menu.md": f"# Menu\n\n{OPEN}.\n".encode(),
        "acme/board/plan.md": f"# Plan\n\n{SECRET}.\n".encode(),
        "acme/board/public-agenda.md": b"# Agenda\n\nMerger plan codename agenda for all staff.\n",
        "acme/_access.yaml": POLICY.encode(),
        "acme/board/_access.yaml": b"documents:\n  - match: 'public-*'\n    groups: [staff]\n",
    }
    bucket = new_bucket(admin, files)
    ws.tenant("acme", {}, users=USERS)

    def connector() -> S3Connector:
        return S3Connector(
            "acme", bucket, "acme/", ws.config().tenant("acme").default_access, client(moto.endpoint)
        )

    ws.run("acme", "r1", connector=connector())
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert rows["board/plan.md"]["groups"] == ["board"]
    assert rows["board/public-agenda.md"]["acl_source"] == "board/_access.yaml"
    _assert_restricted(ws)
    before = ws.rows("acme")
    admin.put_object(Bucket=bucket, Key="acme/_access.yaml", Body=b"")  # emptied sidecar
    with pytest.raises(PolicyError, match=r"_access\.yaml"):
        ws.run("acme", "r2", connector=connector())
    admin.delete_object(Bucket=bucket, Key="acme/_access.yaml")  # vanished sidecar
    with pytest.raises(PolicyError, match="is gone"):
        ws.run("acme", "r3", connector=connector())
    assert ws.rows("acme") == before
    _assert_restricted(ws)


@pytest.mark.scenario("safety-policy", "F2")
def test_git_policies_fail_closed_and_nest(ws: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(
        repo,
        {
            "menu.md": f"# Menu\n\n{OPEN}.\n",
            "board/plan.md": f"# Plan\n\n{SECRET}.\n",
            "board/Minutes.MARKDOWN": f"# Minutes\n\n{SECRET} minutes.\n",
            "_access.yaml": POLICY,
        },
    )
    commit_all(repo, "v1")
    ws.tenant("acme", {}, users=USERS)
    ws.tenants["acme"]["source"] = {"kind": "git", "repo": str(repo), "ref": "main"}
    ws.run("acme", "r1")
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert rows["board/Minutes.MARKDOWN"]["groups"] == ["board"]
    _assert_restricted(ws)
    before = ws.rows("acme")
    write(repo, {"_access.yaml": "\n"})
    commit_all(repo, "empty the policy")
    with pytest.raises(PolicyError, match=r"_access\.yaml"):
        ws.run("acme", "r2")
    (repo / "_access.yaml").unlink()
    commit_all(repo, "remove the policy")
    with pytest.raises(PolicyError, match="is gone"):
        ws.run("acme", "r3")
    assert ws.rows("acme") == before
    summary = json.dumps(ws.context("acme", "probe").index.publications(), default=str)
    assert SECRET not in summary


@pytest.mark.scenario("safety-policy")
def test_a_rule_covers_the_unicode_twin_of_its_name(ws: Any) -> None:
    nfc, nfd = "board/caf\u00e9.md", "board/cafe\u0301.md"  # the same name, composed and decomposed
    policy = f"documents:\n  - match: '{nfc}'\n    groups: [board]\n"
    files = {"menu.md": f"# Menu\n\n{OPEN}.\n", nfd: f"# Cafe\n\n{SECRET}.\n", "_access.yaml": policy}
    ws.tenant("acme", files, users=USERS)
    ws.run("acme", "r1")
    rows = {r["doc_id"]: r for r in ws.rows("acme")}
    assert rows[nfd]["groups"] == ["board"]  # not widened to the tenant default
    assert nfd not in _visible(ws, "alice") and nfd in _visible(ws, "bea")
