"""The revision cache on git: a blob id the cache knows is never read again (its existence is
still checked from object headers), and revisions stay the sha256 of the bytes."""

from __future__ import annotations

import logging
import subprocess
from pathlib import Path

import pytest

from tessera.errors import SourceError
from tessera.sources.base import Listing
from tessera.sources.git import GitConnector
from tessera.sources.revision_cache import RevisionCache
from tessera.types import sha256_hex
from tests.sources.helpers import DEFAULT, blob_reads, cache
from tests.test_git_source import commit_all, git, write

FILES: dict[str, str | bytes] = {
    "docs/_access.yaml": "documents:\n  - match: '00*'\n    readers: [alice]\n",
    "docs/big.md": "# Big\n\n" + "x" * 100_000 + "\n",
}
FILES.update({f"docs/{i:03d}.md": f"# Doc {i}\n\nbody {i}\n" for i in range(300)})


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    r = tmp_path / "src"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    write(r, FILES)
    commit_all(r, "initial")
    return r


def connector(repo: Path, c: RevisionCache | None) -> GitConnector:
    return GitConnector("acme", repo, "main", "docs", DEFAULT, cache=c)


def revisions(listing: Listing) -> dict[str, str]:
    return {d.doc_id: d.revision for d in listing.documents}


def test_a_noop_listing_reads_no_blob(tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    c = cache(tmp_path / "state")
    reads = blob_reads(monkeypatch)
    first = connector(repo, c).list()
    assert len(first.documents) == 301 and c.last.misses == 301
    reads.clear()
    again = connector(repo, c).list()
    assert [r for r in reads if "--batch" in r] == [] and c.last.hits == 301
    assert reads == [("cat-file", "blob", reads[0][2])]  # only the policy file, read every time
    assert again == first
    plain = connector(repo, None).list()  # revisions exactly as without a cache: no re-index
    assert plain == first and revisions(plain)["001.md"] == sha256_hex(b"# Doc 1\n\nbody 1\n")


def test_a_changed_blob_is_read_and_a_renamed_one_is_not(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cache(tmp_path / "state")
    connector(repo, c).list()
    (repo / "docs/010.md").write_text("# Doc 10, edited\n", encoding="utf-8")
    (repo / "docs/011.md").rename(repo / "docs/moved.md")
    commit_all(repo, "edit and move", ts=1_704_200_000)
    reads = blob_reads(monkeypatch)
    listing = connector(repo, c).list()
    assert c.last.misses == 1 and len([r for r in reads if "--batch" in r]) == 1
    assert revisions(listing)["010.md"] == sha256_hex(b"# Doc 10, edited\n")
    assert revisions(listing)["moved.md"] == sha256_hex(b"# Doc 11\n\nbody 11\n")


def test_a_deleted_file_leaves_the_listing_though_the_cache_knows_it(tmp_path: Path, repo: Path) -> None:
    c = cache(tmp_path / "state")
    connector(repo, c).list()
    (repo / "docs/020.md").unlink()
    commit_all(repo, "delete", ts=1_704_200_000)
    listing = connector(repo, c).list()
    assert "020.md" not in revisions(listing) and len(listing.documents) == 300


def test_a_cached_blob_missing_from_the_repository_still_fails(tmp_path: Path, repo: Path) -> None:
    """``cat-file --batch-check`` still proves each cached blob exists."""
    c = cache(tmp_path / "state")
    connector(repo, c).list()
    oid = git(repo, "rev-parse", "main:docs/030.md")
    (repo / ".git/objects" / oid[:2] / oid[2:]).unlink()
    listing = connector(repo, c).list()
    assert [(f.doc_id, f.reason) for f in listing.failed] == [("030.md", "missing_object")]
    assert listing == connector(repo, None).list()


def test_the_cache_never_makes_a_failing_listing_complete(tmp_path: Path, repo: Path) -> None:
    c = cache(tmp_path / "state")
    connector(repo, c).list()
    with pytest.raises(SourceError, match="cannot resolve ref"):
        GitConnector("acme", repo, "no-such-branch", "docs", DEFAULT, cache=c).list()
    with pytest.raises(SourceError, match="not a folder"):
        GitConnector("acme", repo, "main", "nowhere", DEFAULT, cache=c).list()
    subprocess.run(["rm", "-rf", str(repo / ".git/objects")], check=True)
    with pytest.raises(SourceError):
        connector(repo, c).list()


def test_a_corrupt_cache_is_ignored(
    tmp_path: Path, repo: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    c = cache(tmp_path / "state")
    truth = connector(repo, c).list()
    c.path.write_bytes(c.path.read_bytes()[:-40])  # truncated
    with caplog.at_level(logging.WARNING, "tessera.sources.revision_cache"):
        assert connector(repo, c).list() == truth
    assert c.last.misses == 301 and "corrupt" in caplog.text


def test_read_still_verifies_the_blob(tmp_path: Path, repo: Path) -> None:
    import dataclasses

    c = cache(tmp_path / "state")
    connector(repo, c).list()
    conn = connector(repo, c)
    doc = next(d for d in conn.list().documents if d.doc_id == "005.md")
    assert conn.read(doc) == b"# Doc 5\n\nbody 5\n"
    with pytest.raises(SourceError, match="does not match the listed revision"):
        conn.read(dataclasses.replace(doc, revision=sha256_hex(b"something else")))
