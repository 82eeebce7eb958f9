"""The git connector reads one commit of a local repository, never the working tree."""

from __future__ import annotations

import dataclasses
import os
import subprocess
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from tessera.config import AccessRule, SourceConfig, TenantConfig
from tessera.errors import ConfigError, SourceError
from tessera.sources.base import Verdict
from tessera.sources.git import GitConnector
from tessera.sources.registry import connector_for
from tessera.types import sha256_hex

DEFAULT = AccessRule(groups=("staff",))
T1 = 1_704_164_645  # 2024-01-02T03:04:05Z
CAFE = "my caf\u00e9 notes.md"


def _env(ts: int) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("GIT_")}
    stamp = f"@{ts} +0000"
    env.update(
        GIT_CONFIG_GLOBAL=os.devnull,
        GIT_CONFIG_NOSYSTEM="1",
        GIT_AUTHOR_DATE=stamp,
        GIT_COMMITTER_DATE=stamp,
    )
    return env


def git(repo: Path, *args: str, ts: int = T1) -> str:
    cmd = ["git", "-C", str(repo), "-c", "user.name=t", "-c", "user.email=t@example.com", *args]
    out = subprocess.run(cmd, check=True, capture_output=True, env=_env(ts))
    return out.stdout.decode().strip()


def write(root: Path, files: dict[str, str | bytes]) -> None:
    for rel, content in files.items():
        p = root / rel
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(content.encode() if isinstance(content, str) else content)


def commit_all(repo: Path, message: str, ts: int = T1) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message, ts=ts)
    return git(repo, "rev-parse", "HEAD")


FILES: dict[str, str | bytes] = {
    "README.md": "# outside the subdir\n",
    "docs/a.md": "# A\n\nalpha\n",
    "docs/nested/deep/b.md": "# B\n\nbeta\n",
    f"docs/{CAFE}": "# Caf\u00e9\n\ngamma\n",
    "docs/script.sh": "echo not a doc\n",
    "docs/.hidden/x.md": "# hidden\n",
    "docs/_access.yaml": "documents:\n  - match: 'nested/*'\n    readers: [alice]\n",
}


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "src"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, FILES)
    commit_all(r, "v1")
    return r


def conn(repo: Path, ref: str = "main", subdir: str = "docs", timeout: float = 30.0) -> GitConnector:
    return GitConnector("acme", repo, ref, subdir, DEFAULT, timeout)


def test_lists_one_commit_with_policy_and_reads(repo: Path) -> None:
    c = conn(repo)
    listing = c.list()
    head = git(repo, "rev-parse", "HEAD")
    assert listing.verdict is Verdict.COMPLETE and listing.failed == ()
    docs = {d.doc_id: d for d in listing.documents}
    assert set(docs) == {"a.md", "nested/deep/b.md", CAFE}
    assert c.commit == head and head[:12] in listing.proof
    for doc_id, d in docs.items():
        raw = FILES[f"docs/{doc_id}"]
        assert isinstance(raw, str)
        assert d.revision == sha256_hex(raw) and d.size == len(raw.encode())
        assert d.content_type == "text/markdown" and d.tenant == "acme"
        blob = git(repo, "rev-parse", f"{head}:docs/{doc_id}")
        assert f"@{blob}#" in d.uri and d.uri.startswith("git+file://")  # the blob, not the commit
        assert d.modified_at == datetime.fromtimestamp(T1, tz=UTC)
        assert c.read(d) == raw.encode()
    assert docs["nested/deep/b.md"].readers == ("alice",) and docs["nested/deep/b.md"].groups == ()
    assert docs["a.md"].groups == ("staff",) and docs["a.md"].readers == ()
    assert "caf%C3%A9%20notes.md" in docs[CAFE].uri
    # a fresh connector reads through the uri's commit; the registry builds the same connector
    tenant = TenantConfig("acme", SourceConfig("git", repo=repo, ref="main", subdir="docs/"), DEFAULT)
    fresh = connector_for(tenant)
    assert isinstance(fresh, GitConnector)
    assert fresh.read(docs["a.md"]) == b"# A\n\nalpha\n"


def test_whole_repository_without_subdir(repo: Path) -> None:
    ids = {d.doc_id for d in conn(repo, subdir="").list().documents}
    assert ids == {"README.md", "docs/a.md", "docs/nested/deep/b.md", f"docs/{CAFE}"}


def test_older_ref_and_working_tree_ignored(repo: Path) -> None:
    v1 = git(repo, "rev-parse", "HEAD")
    git(repo, "tag", "-a", "v1", "-m", "release 1")  # an annotated tag peels to its commit
    write(repo, {"docs/a.md": "# A\n\nalpha two\n", "docs/c.md": "# C\n"})
    (repo / "docs/nested/deep/b.md").unlink()
    commit_all(repo, "v2", ts=T1 + 60)
    for ref in ("v1", v1, "main~1"):
        listing = conn(repo, ref=ref).list()
        assert {d.doc_id for d in listing.documents} == {"a.md", "nested/deep/b.md", CAFE}
        a = next(d for d in listing.documents if d.doc_id == "a.md")
        assert (
            a.revision == sha256_hex("# A\n\nalpha\n") and git(repo, "rev-parse", f"{v1}:docs/a.md") in a.uri
        )
    # uncommitted edits, staged or not, and untracked files never show up
    write(repo, {"docs/a.md": "# dirty\n", "docs/untracked.md": "# new\n", "docs/staged.md": "# s\n"})
    git(repo, "add", "docs/staged.md")
    listing = conn(repo).list()
    assert {d.doc_id for d in listing.documents} == {"a.md", "c.md", CAFE}
    a = next(d for d in listing.documents if d.doc_id == "a.md")
    assert a.revision == sha256_hex("# A\n\nalpha two\n")
    assert a.modified_at == datetime.fromtimestamp(T1 + 60, tz=UTC)


def test_empty_subdir_is_empty_with_proof(repo: Path) -> None:
    write(repo, {"code/x.sh": "x=1\n", "code/.notes.md": "# hidden\n"})
    commit_all(repo, "code")
    listing = conn(repo, subdir="code").list()
    assert listing.verdict is Verdict.EMPTY and listing.documents == ()
    head = git(repo, "rev-parse", "HEAD")
    assert head[:12] in listing.proof and "'code/'" in listing.proof and "0 supported" in listing.proof
    assert "1 unsupported" in listing.proof and "1 hidden" in listing.proof


def test_failures_raise_source_error(repo: Path, tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="not a folder"):
        conn(repo, subdir="missing").list()
    with pytest.raises(SourceError, match="not a folder"):
        conn(repo, subdir="docs/a.md").list()
    with pytest.raises(SourceError, match="cannot resolve ref 'nope'"):
        conn(repo, ref="nope").list()
    with pytest.raises(SourceError, match="does not exist"):
        conn(tmp_path / "absent").list()
    plain = tmp_path / "plain"
    plain.mkdir()
    with pytest.raises(SourceError, match="not a git repository"):
        conn(plain).list()
    # a folder inside a clone is not the repository (no discovery upwards)
    with pytest.raises(SourceError, match="not a git repository"):
        conn(repo / "docs", subdir="").list()
    for bad in ("-x", "--output=/tmp/x", "", "a b"):
        with pytest.raises(ConfigError):
            conn(repo, ref=bad)
    with pytest.raises(ConfigError):
        conn(repo, subdir="docs/../..")
    with pytest.raises(ConfigError):
        GitConnector.from_config(TenantConfig("acme", SourceConfig("git"), DEFAULT))


def test_empty_repository_has_no_commit(tmp_path: Path) -> None:
    r = tmp_path / "fresh"
    r.mkdir()
    git(r, "init", "-q")
    with pytest.raises(SourceError, match="cannot resolve ref 'HEAD'"):
        conn(r, ref="HEAD", subdir="").list()


def test_bare_repository(repo: Path, tmp_path: Path) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    work, other = conn(repo).list(), conn(bare).list()
    assert other.verdict is Verdict.COMPLETE
    key = [(d.doc_id, d.revision, d.readers, d.groups, d.modified_at) for d in work.documents]
    assert sorted(key) == sorted(
        (d.doc_id, d.revision, d.readers, d.groups, d.modified_at) for d in other.documents
    )
    c = conn(bare)
    for d in other.documents:
        assert str(bare) in d.uri
        assert sha256_hex(c.read(d)) == d.revision


def test_read_stays_on_listed_commit(repo: Path, tmp_path: Path) -> None:
    c = conn(repo)
    listing = c.list()
    a = next(d for d in listing.documents if d.doc_id == "a.md")
    write(repo, {"docs/a.md": "# A moved on\n"})
    (repo / "docs/nested/deep/b.md").unlink()
    commit_all(repo, "moved")
    assert c.read(a) == b"# A\n\nalpha\n"
    assert conn(repo).read(a) == b"# A\n\nalpha\n"  # fresh connector: the uri names the commit
    b = next(d for d in listing.documents if d.doc_id == "nested/deep/b.md")
    assert c.read(b) == b"# B\n\nbeta\n"  # deleted at the new head, still there at the listed one
    with pytest.raises(SourceError, match="revision"):
        c.read(dataclasses.replace(a, revision="0" * 64))
    with pytest.raises(SourceError, match="does not match document"):
        c.read(dataclasses.replace(a, doc_id="c.md"))
    with pytest.raises(SourceError, match="does not name a blob"):
        conn(tmp_path).read(a)  # another repository's document
    with pytest.raises(SourceError, match="does not name a blob"):
        c.read(dataclasses.replace(a, uri="file:///etc/passwd"))


def test_symlinks_and_submodules_skipped(repo: Path) -> None:
    os.symlink("a.md", repo / "docs" / "link.md")
    sub = git(repo, "rev-parse", "HEAD")
    git(repo, "update-index", "--add", "--cacheinfo", f"160000,{sub},docs/vendor.md")
    git(repo, "add", "docs/link.md")
    git(repo, "commit", "-q", "-m", "links")
    modes = git(repo, "ls-tree", "-r", "HEAD", "--", "docs")
    assert "120000 blob" in modes and "160000 commit" in modes
    listing = conn(repo).list()
    assert {d.doc_id for d in listing.documents} == {"a.md", "nested/deep/b.md", CAFE}
    assert "1 symlink" in listing.proof and "1 submodule" in listing.proof


def test_missing_blob_and_lfs_pointer_are_quarantined(repo: Path) -> None:
    write(repo, {"docs/big.md": "version https://git-lfs.github.com/spec/v1\noid sha256:ab\nsize 9\n"})
    commit_all(repo, "lfs")
    oid = git(repo, "rev-parse", "HEAD:docs/a.md")
    (repo / ".git" / "objects" / oid[:2] / oid[2:]).unlink()
    listing = conn(repo).list()
    assert listing.verdict is Verdict.COMPLETE
    assert {d.doc_id for d in listing.documents} == {"nested/deep/b.md", CAFE}
    assert {(f.doc_id, f.reason) for f in listing.failed} == {
        ("a.md", "missing_object"),
        ("big.md", "lfs_pointer"),
    }


def test_bad_policy_is_a_config_error(repo: Path) -> None:
    write(repo, {"docs/_access.yaml": "documents:\n  - match: '*'\n    readers: []\n"})
    commit_all(repo, "bad policy")
    with pytest.raises(ConfigError, match=r"_access\.yaml"):
        conn(repo).list()


def test_timeout_is_a_source_error(repo: Path) -> None:
    with pytest.raises(SourceError, match="timed out"):
        conn(repo, timeout=1e-6).list()


def test_git_missing_is_a_source_error(repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", str(repo))  # no git binary there
    with pytest.raises(SourceError, match="cannot run git"):
        conn(repo).list()


def test_bare_repository_under_explicit_bare_policy(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bare = tmp_path / "bare.git"
    git(tmp_path, "clone", "-q", "--bare", str(repo), str(bare))
    home = tmp_path / "home"
    home.mkdir()
    (home / ".gitconfig").write_text("[safe]\n\tbareRepository = explicit\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.delenv("XDG_CONFIG_HOME", raising=False)
    assert conn(bare).list().verdict is Verdict.COMPLETE


def test_pipeline_indexes_a_git_tenant(ws: Any, repo: Path) -> None:
    ws.tenants["acme"] = {
        "source": {"kind": "git", "repo": str(repo), "ref": "main", "subdir": "docs"},
        "access": {"default": {"groups": ["staff"]}, "users": {"alice": {"groups": ["staff"]}}},
    }
    first = ws.run("acme", "r1")
    assert first["listing"]["verdict"] == "complete" and first["listing"]["changed"] == 3
    assert first["publish"]["committed"] is True
    rows = ws.rows("acme")
    assert {r["doc_id"] for r in rows} == {"a.md", "nested/deep/b.md", CAFE}
    assert {tuple(r["readers"]) for r in rows if r["doc_id"] == "nested/deep/b.md"} == {("alice",)}
    again = ws.run("acme", "r2")  # same commit: nothing to do
    assert again["listing"]["unchanged"] == 3 and again["publish"]["committed"] is False
    write(repo, {"docs/a.md": "# A\n\nalpha, edited\n", "docs/dirty.md": "# not committed\n"})
    git(repo, "add", "docs/a.md")
    git(repo, "commit", "-q", "-m", "edit a")
    third = ws.run("acme", "r3")
    assert third["listing"]["changed"] == 1 and third["publish"]["committed"] is True
    assert "dirty.md" not in {r["doc_id"] for r in ws.rows("acme")}


def test_unrelated_commit_changes_no_metadata(repo: Path) -> None:
    first = {d.doc_id: d for d in conn(repo).list().documents}
    write(repo, {"unrelated.txt": "outside docs/\n"})
    commit_all(repo, "unrelated", ts=T1 + 120)
    second = {d.doc_id: d for d in conn(repo).list().documents}
    assert {k: (d.uri, d.meta_hash, d.revision) for k, d in first.items()} == {
        k: (d.uri, d.meta_hash, d.revision) for k, d in second.items()
    }
