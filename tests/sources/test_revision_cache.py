"""The revision cache on a folder: a no-op listing opens no document, and the cache is only
ever a shortcut to a revision the enumeration already vouched for."""

from __future__ import annotations

import dataclasses
import json
import logging
import os
import time
from pathlib import Path

import pytest

from tessera.errors import PolicyError, SourceError
from tessera.sources.base import Listing, Verdict
from tessera.sources.folder import FolderConnector
from tessera.sources.registry import connector_for
from tessera.sources.revision_cache import CACHE_FILE, RevisionCache, cache_path
from tessera.types import sha256_hex
from tests.conftest import Workspace, write_tree
from tests.sources.helpers import DEFAULT, cache, folder_reads

FILES: dict[str, str | bytes] = {"_access.yaml": "documents:\n  - match: 'd1/*'\n    readers: [alice]\n"}
FILES.update({f"d{i}/doc{j}.md": f"# Doc {i}.{j}\n\nbody {i} {j}\n" for i in range(3) for j in range(20)})


def docs(listing: Listing) -> dict[str, tuple[str, int, str]]:
    return {d.doc_id: (d.revision, d.size, d.meta_hash) for d in listing.documents}


@pytest.fixture
def src(tmp_path: Path) -> Path:
    root = tmp_path / "src"
    write_tree(root, FILES)
    return root


def test_a_noop_listing_opens_no_document(tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    reads = folder_reads(monkeypatch)
    c = cache(tmp_path / "state")
    first = FolderConnector("acme", src, DEFAULT, c).list()
    assert len(reads) == 60 and c.last.misses == 60 and c.path.exists()
    reads.clear()
    written = c.path.stat().st_mtime_ns
    again = FolderConnector("acme", src, DEFAULT, c).list()
    assert reads == [] and c.last.hits == 60
    assert c.path.stat().st_mtime_ns == written  # a no-op listing rewrites nothing
    assert again == first  # identical documents, ACLs from the policy read again, same proof
    assert first == FolderConnector("acme", src, DEFAULT).list()  # same as with no cache at all


def test_a_changed_file_is_read_again_and_gets_its_new_revision(
    tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cache(tmp_path / "state")
    FolderConnector("acme", src, DEFAULT, c).list()
    (src / "d0/doc3.md").write_text("# Changed, and longer than before\n", encoding="utf-8")
    reads = folder_reads(monkeypatch)
    listing = FolderConnector("acme", src, DEFAULT, c).list()
    assert reads == ["d0/doc3.md"]
    assert docs(listing)["d0/doc3.md"][0] == sha256_hex(b"# Changed, and longer than before\n")


def test_a_same_size_edit_that_restores_the_mtime_is_read_again(
    tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``touch -r``, ``cp -p`` and ``rsync -t`` restore the mtime; the ctime still moves."""
    c = cache(tmp_path / "state")
    FolderConnector("acme", src, DEFAULT, c).list()
    path = src / "d2/doc7.md"
    before = os.stat(path)
    edited = path.read_bytes().replace(b"body", b"BODY")
    path.write_bytes(edited)
    os.utime(path, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert os.stat(path).st_mtime_ns == before.st_mtime_ns and os.stat(path).st_size == before.st_size
    reads = folder_reads(monkeypatch)
    listing = FolderConnector("acme", src, DEFAULT, c).list()
    assert reads == ["d2/doc7.md"] and docs(listing)["d2/doc7.md"][0] == sha256_hex(edited)


def test_a_file_changed_within_the_settling_window_is_hashed_every_time(
    tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Timestamps have a granularity: a second same-size edit in the same tick keeps the
    signature, so nothing changed less than ``settle_seconds`` ago is cached."""
    c = cache(tmp_path / "state", settle=3600.0)
    FolderConnector("acme", src, DEFAULT, c).list()
    reads = folder_reads(monkeypatch)
    FolderConnector("acme", src, DEFAULT, c).list()
    assert len(reads) == 60 and c.last.stored == 0
    settled = cache(tmp_path / "state", settle=2.0)
    for p in src.rglob("*.md"):  # an hour old (the ctime stays now, so it still counts)
        os.utime(p, (time.time() - 3600, time.time() - 3600))
    FolderConnector("acme", src, DEFAULT, settled).list()
    assert settled.last.stored == 0  # ctime is still within the window


@pytest.mark.parametrize("garbage", [b"{not json", b'{"format": 1}', b"\xff\xfe", b""])
def test_a_corrupt_cache_is_ignored_and_logged(
    tmp_path: Path,
    src: Path,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
    garbage: bytes,
) -> None:
    c = cache(tmp_path / "state")
    truth = FolderConnector("acme", src, DEFAULT, c).list()
    c.path.write_bytes(garbage)
    reads = folder_reads(monkeypatch)
    with caplog.at_level(logging.WARNING, "tessera.sources.revision_cache"):
        assert FolderConnector("acme", src, DEFAULT, c).list() == truth
    assert len(reads) == 60 and "is ignored" in caplog.text and c.last.ignored
    json.loads(c.path.read_bytes())  # rewritten whole
    reads.clear()
    FolderConnector("acme", src, DEFAULT, c).list()
    assert reads == []


def test_a_cached_revision_that_is_not_a_sha256_voids_the_whole_cache(
    tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cache(tmp_path / "state")
    truth = FolderConnector("acme", src, DEFAULT, c).list()
    data = json.loads(c.path.read_bytes())
    data["entries"]["d0/doc0.md"]["revision"] = "../../etc/passwd"
    c.path.write_text(json.dumps(data), encoding="utf-8")
    reads = folder_reads(monkeypatch)
    assert FolderConnector("acme", src, DEFAULT, c).list() == truth and len(reads) == 60


def test_a_deleted_file_leaves_the_listing_though_the_cache_knows_it(tmp_path: Path, src: Path) -> None:
    c = cache(tmp_path / "state")
    FolderConnector("acme", src, DEFAULT, c).list()
    (src / "d1/doc4.md").unlink()
    listing = FolderConnector("acme", src, DEFAULT, c).list()
    assert "d1/doc4.md" not in docs(listing) and len(listing.documents) == 59
    assert "d1/doc4.md" not in json.loads(c.path.read_bytes())["entries"]  # dropped on save
    for p in sorted(src.rglob("*.md")):
        p.unlink()
    empty = FolderConnector("acme", src, DEFAULT, c).list()
    assert empty.verdict is Verdict.EMPTY and not empty.emptiness_proven  # no marker: not proof


def test_the_cache_never_makes_a_failing_listing_complete(tmp_path: Path, src: Path) -> None:
    c = cache(tmp_path / "state")
    FolderConnector("acme", src, DEFAULT, c).list()
    before = c.path.read_bytes()
    (src / "d0/_access.yml").write_text("documents: []\n", encoding="utf-8")
    with pytest.raises(PolicyError):
        FolderConnector("acme", src, DEFAULT, c).list()
    (src / "d0/_access.yml").unlink()
    (src / "_access.yaml").write_text("", encoding="utf-8")  # an empty policy fails closed
    with pytest.raises(PolicyError):
        FolderConnector("acme", src, DEFAULT, c).list()
    moved = tmp_path / "unmounted"
    src.rename(moved)
    with pytest.raises(SourceError):
        FolderConnector("acme", src, DEFAULT, c).list()
    assert c.path.read_bytes() == before  # a failed listing writes no cache


def test_read_still_verifies_what_it_reads(tmp_path: Path, src: Path) -> None:
    c = cache(tmp_path / "state")
    conn = FolderConnector("acme", src, DEFAULT, c)
    conn.list()
    doc = next(d for d in conn.list().documents if d.doc_id == "d0/doc1.md")
    assert conn.read(doc) == (src / "d0/doc1.md").read_bytes()
    (src / "d0/doc1.md").write_text("# changed after the listing\n", encoding="utf-8")
    with pytest.raises(SourceError, match="revision mismatch"):
        conn.read(doc)
    forged = dataclasses.replace(doc, revision=sha256_hex(b"forged"))
    with pytest.raises(SourceError, match="revision mismatch"):
        conn.read(forged)


def test_tenants_do_not_share_caches(tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    state = tmp_path / "state"
    a, b = cache(state, "acme"), cache(state, "beta")
    assert a.path != b.path and a.path.parent.name == "acme" and b.path.parent.name == "beta"
    FolderConnector("acme", src, DEFAULT, a).list()
    b.path.parent.mkdir(parents=True)
    b.path.write_bytes(a.path.read_bytes())  # acme's cache where beta's belongs
    reads = folder_reads(monkeypatch)
    FolderConnector("beta", src, DEFAULT, b).list()
    assert len(reads) == 60 and "acme" in b.last.ignored
    assert json.loads(b.path.read_bytes())["tenant"] == "beta"


def test_a_cache_of_another_source_is_not_used(
    tmp_path: Path, src: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = cache(tmp_path / "state")
    FolderConnector("acme", src, DEFAULT, c).list()
    other = tmp_path / "other"
    write_tree(other, FILES)
    reads = folder_reads(monkeypatch)
    FolderConnector("acme", other, DEFAULT, c).list()
    assert len(reads) == 60


def test_an_unwritable_cache_is_logged_and_the_listing_stands(
    tmp_path: Path, src: Path, caplog: pytest.LogCaptureFixture
) -> None:
    blocker = tmp_path / "state"
    blocker.write_text("a file where the state folder should be", encoding="utf-8")
    c = RevisionCache(blocker / "acme" / CACHE_FILE, "acme")
    with caplog.at_level(logging.WARNING, "tessera.sources.revision_cache"):
        listing = FolderConnector("acme", src, DEFAULT, c).list()
    assert listing.verdict is Verdict.COMPLETE and "could not be written" in caplog.text


def test_the_run_keeps_the_cache_with_the_tenant_state(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws.tenant("acme", {f"doc{i}.md": f"# Doc {i}\n\nsome text {i}\n" for i in range(5)})
    rc = ws.context("acme")
    assert isinstance(rc.connector, FolderConnector) and rc.connector.cache is not None
    assert rc.connector.cache.path == cache_path(rc.config.store.work_dir, "acme")
    assert rc.connector.cache.path.parent == rc.workspace.parent
    tenant = rc.config.tenant("acme")
    assert getattr(connector_for(tenant), "cache", "absent") is None  # without state: no cache
    ws.run("acme", "r1")
    assert rc.connector.cache.path.exists()
    time.sleep(2.2)  # past the settling window: the next listing stores its reads
    ws.run("acme", "r2")
    reads = folder_reads(monkeypatch)
    out = ws.run("acme", "r3")
    assert reads == [] and out["listing"]["unchanged"] == 5


def test_the_walk_keeps_of_each_stat_what_the_listing_uses(tmp_path: Path, src: Path) -> None:
    """The walk holds a few fields of each file's ``lstat``, not the ``stat_result``: the
    cache's signatures and the documents' modification times are those of the full stat (a
    cache written before still hits), and a second listing takes every file from the cache."""
    from datetime import UTC, datetime

    c = cache(tmp_path / "state")
    listing = FolderConnector("acme", src, DEFAULT, c).list()
    entries = json.loads(c.path.read_text("utf-8"))["entries"]
    assert len(listing.documents) == len(entries) == 60
    for doc in listing.documents:
        st = os.lstat(src / doc.doc_id)
        assert (
            entries[doc.doc_id]["signature"]
            == f"{st.st_size}:{st.st_mtime_ns}:{st.st_ctime_ns}:{st.st_ino}:{st.st_dev}"
        )
        assert doc.modified_at == datetime.fromtimestamp(st.st_mtime, tz=UTC)
    assert FolderConnector("acme", src, DEFAULT, c).list() == listing and c.last.hits == 60
