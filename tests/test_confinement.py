"""Source confinement: no connector reads a byte from outside the tenant's root.

Attacked through the real CLI (``tessera run`` / ``tessera search``) and the connectors: links to
another tenant's file, to a system file, to a folder outside every root, link loops, FIFOs,
hard links, a root that is itself a link, a file swapped for a link between listing and read,
a linked policy file, and S3 keys with ``..``. Each test also checks that the legitimate
documents of the same tenant are still indexed and readable.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tessera.cli import main
from tessera.errors import PolicyError, SourceError
from tessera.sources.confine import read_confined, walk_confined
from tessera.sources.folder import FolderConnector
from tessera.sources.s3 import S3Connector
from tests.s3server import client

from .test_config import DEFAULT
from .test_git_source import commit_all, git
from .test_s3_source import admin, moto, new_bucket  # noqa: F401  (fixtures)

SECRET = "Globex salary bands: principal engineers earn 412000 zorkmids"
OWN = "Acme onboarding checklist: badge, laptop, pager rotation"


@pytest.fixture
def tenants(ws: Any) -> tuple[Any, Path, Path]:
    acme = ws.tenant("acme", {"guide.md": f"# Guide\n\n{OWN}.\n"}, users={"alice": ["staff"]})
    globex = ws.tenant("globex", {"hr/pay.md": f"# Pay\n\n{SECRET}.\n"}, users={"gina": ["staff"]})
    return ws, acme, globex


def _cli(ws: Any, *args: str) -> int:
    return main(["--config", str(ws.config().path), "--fake-embedder", *args])


def _search(ws: Any, capsys: Any, query: str) -> list[dict[str, Any]]:
    capsys.readouterr()
    assert _cli(ws, "search", "--tenant", "acme", "--user", "alice", "--json", "--k", "20", query) == 0
    hits: list[dict[str, Any]] = json.loads(capsys.readouterr().out)
    return hits


def _indexed(ws: Any) -> dict[str, str]:
    return {r["doc_id"]: r["text"] for r in ws.rows("acme")}


def _run_and_check(ws: Any, capsys: Any) -> dict[str, Any]:
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", f"r{len(os.listdir(ws.root))}") == 0
    summary: dict[str, Any] = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    texts = " ".join(_indexed(ws).values())
    assert "zorkmids" not in texts and "root:" not in texts  # the attack got nothing
    assert OWN in texts  # legitimate work still succeeds
    hits = _search(ws, capsys, "onboarding checklist badge laptop")
    assert hits and hits[0]["doc_id"] == "guide.md"
    assert not any("zorkmids" in h["text"] for h in _search(ws, capsys, "salary bands zorkmids"))
    return summary


@pytest.mark.scenario("safety-confinement")
def test_symlinked_files_are_skipped_by_name(tenants: tuple[Any, Path, Path], capsys: Any) -> None:
    ws, acme, globex = tenants
    (acme / "stolen.md").symlink_to(globex / "hr" / "pay.md")  # another tenant's HR document
    (acme / "passwd.md").symlink_to("/etc/passwd")  # a system file
    (acme / "inside.md").symlink_to(acme / "guide.md")  # even a link that stays inside is not followed
    (acme / "dangling.md").symlink_to(acme / "nowhere.md")
    summary = _run_and_check(ws, capsys)
    assert set(_indexed(ws)) == {"guide.md"}
    assert summary["listing"]["skipped"] == {"symlink": 4}


@pytest.mark.scenario("safety-confinement")
def test_linked_folders_and_link_loops_are_not_walked(tenants: tuple[Any, Path, Path], capsys: Any) -> None:
    ws, acme, globex = tenants
    outside = ws.root / "outside-every-root"
    outside.mkdir()
    (outside / "leak.md").write_text(f"# Leak\n\n{SECRET}.\n", encoding="utf-8")
    (acme / "shared").symlink_to(outside)  # a folder outside every root
    (acme / "globex-hr").symlink_to(globex / "hr")  # another tenant's folder
    (acme / "loop").mkdir()
    (acme / "loop" / "again").symlink_to(acme)  # a loop back to the root
    (acme / "self").symlink_to("self")  # a link to itself
    summary = _run_and_check(ws, capsys)
    assert set(_indexed(ws)) == {"guide.md"}
    assert summary["listing"]["skipped"] == {"symlink": 4}


@pytest.mark.scenario("safety-confinement")
def test_special_files_and_hard_links_are_skipped(tenants: tuple[Any, Path, Path], capsys: Any) -> None:
    ws, acme, globex = tenants
    os.mkfifo(acme / "pipe.md")  # reading a FIFO would hang the run
    os.link(globex / "hr" / "pay.md", acme / "pay-copy.md")  # a hard link into another tenant
    summary = _run_and_check(ws, capsys)
    assert set(_indexed(ws)) == {"guide.md"}
    assert summary["listing"]["skipped"] == {"hardlink": 1, "special": 1}


@pytest.mark.scenario("safety-confinement")
def test_root_that_is_a_link_is_refused_and_nothing_deleted(
    tenants: tuple[Any, Path, Path], capsys: Any
) -> None:
    ws, acme, globex = tenants
    _run_and_check(ws, capsys)
    before = ws.rows("acme")
    real = acme.with_name("acme-real")
    acme.rename(real)
    acme.symlink_to(globex)  # the root now points at another tenant
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "via-link") == 1
    assert "is a symbolic link" in capsys.readouterr().err
    assert ws.rows("acme") == before  # nothing published, nothing deleted
    with pytest.raises(SourceError, match="symbolic link"):
        FolderConnector("acme", acme, DEFAULT).list()


@pytest.mark.scenario("safety-confinement")
def test_a_file_swapped_for_a_link_after_listing_is_not_read(tenants: tuple[Any, Path, Path]) -> None:
    _, acme, globex = tenants
    connector = FolderConnector("acme", acme, DEFAULT)
    listing = connector.list()
    doc = next(d for d in listing.documents if d.doc_id == "guide.md")
    (acme / "guide.md").unlink()
    (acme / "guide.md").symlink_to(globex / "hr" / "pay.md")  # the race: list, swap, read
    with pytest.raises(SourceError, match="without following a link"):
        connector.read(doc)
    # a folder component swapped for a link is refused too
    (acme / "sub").mkdir()
    (acme / "sub" / "x.md").write_text("# x\n", encoding="utf-8")
    assert read_confined(acme, "sub/x.md")[0] == b"# x\n"
    (acme / "sub" / "x.md").unlink()
    (acme / "sub").rmdir()
    (acme / "sub").symlink_to(globex / "hr")
    with pytest.raises(SourceError):
        read_confined(acme, "sub/pay.md")
    for bad in ("../globex/hr/pay.md", "/etc/passwd", "a/../../x.md", ""):
        with pytest.raises(SourceError):
            read_confined(acme, bad)


@pytest.mark.scenario("safety-confinement")
def test_a_linked_policy_file_fails_closed(tenants: tuple[Any, Path, Path], capsys: Any) -> None:
    ws, acme, _ = tenants
    (acme / "secret.md").write_text("# Secret\n\nboard minutes.\n", encoding="utf-8")
    (acme / "_access.yaml").write_text("documents:\n  - match: secret.md\n    groups: [board]\n")
    _run_and_check(ws, capsys)
    before = ws.rows("acme")
    (ws.root / "lax.yaml").write_text("documents: []\n", encoding="utf-8")
    (acme / "_access.yaml").unlink()
    (acme / "_access.yaml").symlink_to(ws.root / "lax.yaml")  # a policy from outside the root
    with pytest.raises(PolicyError, match=r"_access\.yaml"):
        FolderConnector("acme", acme, DEFAULT).list()
    capsys.readouterr()
    assert _cli(ws, "run", "--tenant", "acme", "--run-id", "linked-policy") == 1
    assert "PolicyError" in capsys.readouterr().err
    assert ws.rows("acme") == before


def test_walk_counts_names_it_cannot_trust(tmp_path: Path) -> None:
    (tmp_path / "ok.md").write_text("# ok\n", encoding="utf-8")
    bad = os.path.join(os.fsencode(tmp_path), b"caf\xe9.md")  # not UTF-8
    with open(bad, "wb") as f:
        f.write(b"# latin-1 name\n")
    (tmp_path / ".hidden.md").write_text("# hidden\n", encoding="utf-8")
    walk = walk_confined(tmp_path)
    assert walk.files == ("ok.md",)
    assert [s.reason for s in walk.skipped] == ["non_utf8_name"]
    assert walk.hidden == 1


@pytest.mark.scenario("safety-confinement")
def test_s3_keys_that_are_not_plain_paths_are_skipped(ws: Any, moto: Any, admin: Any) -> None:  # noqa: F811
    bucket = new_bucket(
        admin,
        {
            "acme/.tessera-root": b"",
            "acme/guide.md": f"# Guide\n\n{OWN}.\n".encode(),
            "acme/../globex/hr/pay.md": f"# Pay\n\n{SECRET}.\n".encode(),
            "acme/a/./b.md": f"# B\n\n{SECRET}.\n".encode(),
            "acme/a//c.md": f"# C\n\n{SECRET}.\n".encode(),
            "acme/bad\x01name.md": f"# D\n\n{SECRET}.\n".encode(),
        },
    )
    ws.tenant("acme", {}, users={"alice": ["staff"]})
    default = ws.config().tenant("acme").default_access
    out = ws.run("acme", "r1", connector=S3Connector("acme", bucket, "acme/", default, client(moto.endpoint)))
    assert set(_indexed(ws)) == {"guide.md"} and OWN in _indexed(ws)["guide.md"]
    assert out["listing"]["skipped"] == {"unsafe_key": 4}


@pytest.mark.scenario("A6")
def test_s3_empty_page_with_200_is_not_an_empty_tenant(ws: Any, moto: Any, admin: Any) -> None:  # noqa: F811
    bucket = new_bucket(admin, {"acme/.tessera-root": b"", "acme/guide.md": f"# Guide\n\n{OWN}.\n".encode()})
    ws.tenant("acme", {}, users={"alice": ["staff"]})
    default = ws.config().tenant("acme").default_access
    ws.run("acme", "r1", connector=S3Connector("acme", bucket, "acme/", default, client(moto.endpoint)))
    before = ws.rows("acme")

    def empty_page(parsed: dict[str, Any], **_: Any) -> None:  # HTTP 200 with nothing in it
        parsed.update(Contents=[], KeyCount=0, IsTruncated=False)

    conn = S3Connector("acme", bucket, "acme/", default, client(moto.endpoint))
    conn.client.meta.events.register("after-call.s3.ListObjectsV2", empty_page)
    with pytest.raises(SourceError, match="omitted the root marker"):
        ws.run("acme", "r2", connector=conn)
    assert ws.rows("acme") == before


@pytest.mark.scenario("safety-confinement")
def test_git_policy_behind_a_link_fails_closed(ws: Any, tmp_path: Path) -> None:
    repo = tmp_path / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    (tmp_path / "lax.yaml").write_text("documents: []\n", encoding="utf-8")
    (repo / "guide.md").write_text(f"# Guide\n\n{OWN}.\n", encoding="utf-8")
    (repo / "stolen.md").symlink_to(tmp_path / "lax.yaml")
    commit_all(repo, "v1")
    ws.tenant("acme", {}, users={"alice": ["staff"]})
    ws.tenants["acme"]["source"] = {"kind": "git", "repo": str(repo), "ref": "main"}
    ws.run("acme", "r1")
    assert set(_indexed(ws)) == {"guide.md"}  # a committed link is never read
    (repo / "_access.yaml").symlink_to(tmp_path / "lax.yaml")
    commit_all(repo, "linked policy")
    with pytest.raises(PolicyError, match="may not be a symlink"):
        ws.run("acme", "r2")
    link = tmp_path / "repo-link"
    link.symlink_to(repo)
    ws.tenants["acme"]["source"]["repo"] = str(link)
    with pytest.raises(SourceError, match="symbolic link"):
        ws.run("acme", "r3")
    assert set(_indexed(ws)) == {"guide.md"}
