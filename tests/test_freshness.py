"""Index freshness (``tessera.pipeline.freshness``): how long source changes have waited for
publication, per tenant, against ``tenants.<t>.freshness.max_lag_seconds``.

Each guarantee is attacked from several sides: every kind of pending change goes stale past the
bound and stays fresh within it; a listing that fails is never fresh; clock skew never gives a
negative lag; a quarantined change stays pending although other documents publish; the check
writes nothing (store, run workspaces, revision cache) and agrees with the run's planner."""

from __future__ import annotations

import hashlib
import os
import random
import shutil
import time
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from assets.checks import index_freshness
from assets.chunk_embeddings import chunk_embeddings
from assets.document_chunks import document_chunks
from assets.parsed_documents import parsed_documents
from assets.published_index import published_index
from assets.source_listing import source_listing
from resources import (
    ConfiguredSourceResource,
    FakeEmbedderResource,
    TenantRunResource,
    TesseraConfigResource,
)
from resources.sources import FakeSourceResource
from tessera.errors import ConfigError
from tessera.pipeline.freshness import (
    Freshness,
    FreshnessVerdict,
    LiveState,
    check_freshness,
    pending_changes,
)
from tessera.pipeline.listing import check_sources
from tessera.sources.base import Listing, Verdict
from tessera.sources.folder import FolderConnector
from tessera.sources.revision_cache import RevisionCache, cache_path
from tessera.store.index import DocState
from tessera.types import ALWAYS, SourceDocument
from tests.conftest import Workspace

DOCS: dict[str, str | bytes] = {
    "a.md": "# Alpha\n\nalphamarker The alpha guide, first section.\n",
    "b.md": "# Beta\n\nbetamarker The beta guide, first section.\n",
    "c.md": "# Gamma\n\ngammamarker The gamma guide, first section.\n",
}
HOUR = 3600.0
FRESH, STALE = FreshnessVerdict.FRESH, FreshnessVerdict.STALE


def age(path: Path, seconds: float) -> None:
    """Set ``path``'s mtime ``seconds`` in the past (negative: in the future)."""
    t = time.time() - seconds
    os.utime(path, (t, t))


@pytest.fixture
def src(ws: Workspace) -> Path:
    """Tenant acme (bound one hour), published once as run r1."""
    path = ws.tenant("acme", dict(DOCS))
    ws.tenants["acme"]["freshness"] = {"max_lag_seconds": HOUR}
    ws.run("acme", "r1")
    return path


def fresh(ws: Workspace, tenant: str = "acme", **kw: Any) -> Freshness:
    return check_freshness(ws.config(), tenant, ws.embedder.identity, **kw)


def test_fresh_after_a_run(ws: Workspace, src: Path) -> None:
    f = fresh(ws)
    assert f.verdict is FRESH and f.lag_seconds == 0 and f.pending == () and f.oldest_pending_change is None
    assert sum(f.counts.values()) == 0 and set(f.counts) == {
        "new",
        "changed",
        "metadata",
        "removed",
        "unreadable",
    }
    assert f.max_lag_seconds == HOUR and f.run_id == "r1" and f.error == ""
    assert f.live_version == ws.table("acme").version and f.published_version is not None
    assert f.published_at is not None and abs((datetime.now(UTC) - f.published_at).total_seconds()) < 120
    assert f.live_documents == 3 == f.source_documents and f.live_chunks == len(ws.rows("acme"))
    newest = max(datetime.fromtimestamp((src / n).stat().st_mtime, UTC) for n in DOCS)
    assert f.newest_source_change == newest
    out = f.as_dict()
    assert (
        out["verdict"] == "fresh"
        and out["pending"]["changed"] == 0
        and out["published_at"].endswith("+00:00")
    )


def test_default_bound_is_26_hours(ws: Workspace) -> None:
    ws.tenant("acme", dict(DOCS))
    ws.run("acme", "r1")
    assert fresh(ws).max_lag_seconds == 26 * HOUR


@pytest.mark.parametrize("kind", ["changed", "new", "removed", "metadata"])
def test_each_kind_of_change_goes_stale_past_the_bound(ws: Workspace, src: Path, kind: str) -> None:
    if kind == "changed":
        (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
        age(src / "a.md", 2 * HOUR)  # e.g. copied in with its old mtime kept (cp -p, rsync -a)
    elif kind == "new":
        (src / "d.md").write_text("# Delta\n\ndeltamarker new.\n", encoding="utf-8")
        age(src / "d.md", 2 * HOUR)
    elif kind == "removed":
        (src / "c.md").unlink()
    else:  # an access policy edit: the document's own mtime stays as it was
        (src / "_access.yaml").write_text("documents:\n  - match: b.md\n    groups: [hr]\n", encoding="utf-8")
    doc = {"changed": "a.md", "new": "d.md", "removed": "c.md", "metadata": "b.md"}[kind]
    now = fresh(ws)
    assert [(p.doc_id, p.kind) for p in now.pending] == [(doc, kind)]
    assert now.counts[kind] == 1 and sum(now.counts.values()) == 1
    if kind in ("changed", "new"):  # the source's change time: stale right away
        assert now.verdict is STALE and 2 * HOUR - 60 < now.lag_seconds < 2 * HOUR + 60
        return
    # no change time of its own: counts from the last publication, so fresh now, stale later
    assert now.verdict is FRESH and now.oldest_pending_change == now.published_at
    assert now.published_at is not None
    later = fresh(ws, now=now.published_at + timedelta(hours=2))
    assert later.verdict is STALE and later.lag_seconds == pytest.approx(2 * HOUR)


def test_pending_within_the_bound_is_fresh_and_still_counted(ws: Workspace, src: Path) -> None:
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    (src / "d.md").write_text("# Delta\n\ndeltamarker new.\n", encoding="utf-8")
    age(src / "a.md", 50 * 60)
    age(src / "d.md", 10 * 60)
    f = fresh(ws)
    assert f.verdict is FRESH and f.counts["changed"] == 1 and f.counts["new"] == 1
    assert 50 * 60 - 30 < f.lag_seconds < 50 * 60 + 30  # the oldest pending change counts
    assert [p.doc_id for p in f.pending] == ["a.md", "d.md"]  # oldest first
    assert fresh(ws, now=datetime.now(UTC) + timedelta(minutes=15)).verdict is STALE  # ages past it


def test_a_run_clears_what_was_pending(ws: Workspace, src: Path) -> None:
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    (src / "c.md").unlink()
    age(src / "a.md", 2 * HOUR)
    assert fresh(ws).verdict is STALE
    ws.run("acme", "r2")
    after = fresh(ws)
    assert after.verdict is FRESH and after.pending == () and after.run_id == "r2"
    assert after.live_documents == 2


def test_never_published_is_neither_fresh_nor_stale(ws: Workspace) -> None:
    src = ws.tenant("acme", dict(DOCS))
    ws.tenants["acme"]["freshness"] = {"max_lag_seconds": HOUR}
    for name in DOCS:
        age(src / name, 30 * 86_400)
    f = fresh(ws)
    assert f.verdict is FreshnessVerdict.NEVER_PUBLISHED and f.counts["new"] == 3
    assert f.live_version is None and f.published_at is None and f.live_documents == 0
    assert f.lag_seconds > 29 * 86_400  # the lag is reported all the same
    assert f.as_dict()["verdict"] == "never-published"


def test_unknown_tenant_is_a_config_error(ws: Workspace, src: Path) -> None:
    with pytest.raises(ConfigError, match="nope"):
        fresh(ws, "nope")


class Broken:
    """A connector whose listing fails as a connector bug would (not a typed error)."""

    def __init__(self, result: object = None) -> None:
        self.result = result

    def list(self) -> Listing:
        if self.result is None:
            raise RuntimeError("connection reset by peer")
        return self.result  # type: ignore[return-value]

    def read(self, doc: SourceDocument) -> bytes:
        raise AssertionError("a freshness check reads no document")


def _unavailable(f: Freshness, why: str) -> None:
    assert f.verdict is FreshnessVerdict.SOURCE_UNAVAILABLE, f
    assert why in f.error and f.pending == () and f.source_documents == 0


def test_a_source_that_cannot_be_listed_is_unavailable_never_fresh(ws: Workspace, src: Path) -> None:
    shutil.rmtree(src)
    f = fresh(ws)
    _unavailable(f, "SourceError")
    assert f.live_documents == 3 and f.published_version is not None  # what is live is still known
    src.write_text("not a folder", encoding="utf-8")  # the path exists, but is a file
    _unavailable(fresh(ws), "SourceError")
    _unavailable(fresh(ws, connector=Broken()), "RuntimeError: connection reset by peer")
    other = Listing("globex", Verdict.EMPTY, (), "proof")  # another tenant's listing
    _unavailable(fresh(ws, connector=Broken(other)), "no listing of tenant 'acme'")
    _unavailable(fresh(ws, connector=Broken("not a listing")), "no listing")


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads a folder whatever its mode")
def test_an_unreadable_folder_is_unavailable(ws: Workspace, src: Path) -> None:
    src.chmod(0)
    try:
        _unavailable(fresh(ws), "Error")
    finally:
        src.chmod(0o755)


def test_unavailable_wins_over_never_published(ws: Workspace) -> None:
    ws.tenant("acme", dict(DOCS))
    shutil.rmtree(ws.root / "corpus" / "acme")
    _unavailable(fresh(ws), "SourceError")


def test_clock_skew_never_gives_a_negative_lag(ws: Workspace, src: Path) -> None:
    (src / "a.md").write_text("# Alpha\n\nalphamarker from the future.\n", encoding="utf-8")
    age(src / "a.md", -86_400)  # a source clock a day ahead
    f = fresh(ws)
    assert f.verdict is FRESH and f.lag_seconds == 0 and f.counts["changed"] == 1
    assert f.newest_source_change is not None and f.newest_source_change > f.checked_at  # reported as is
    (src / "b.md").write_text("# Beta\n\nbetamarker an old edit.\n", encoding="utf-8")
    age(src / "b.md", 2 * HOUR)  # the future one does not hide an old one
    g = fresh(ws)
    assert g.verdict is STALE and g.pending[0].doc_id == "b.md" and g.lag_seconds > HOUR


def test_unknown_and_future_change_times_are_bounded() -> None:
    """The pure rule: epoch (unknown) counts from the last publication, the future as now."""
    now = datetime(2026, 6, 1, 12, tzinfo=UTC)
    pub = now - timedelta(hours=3)

    def doc(doc_id: str, modified: datetime, revision: str = "r" * 64) -> SourceDocument:
        return SourceDocument(
            tenant="t", doc_id=doc_id, uri=f"file:///{doc_id}", revision=revision, content_type="markdown",
            readers=(), groups=("g",), effective_from=ALWAYS, effective_to=datetime.max.replace(tzinfo=UTC),
            modified_at=modified, size=1,
        )  # fmt: skip

    listing = Listing(
        "t", Verdict.COMPLETE, (doc("old.md", ALWAYS), doc("ahead.md", now + timedelta(days=9))), "p"
    )
    got = {p.doc_id: p.changed_at for p in pending_changes(listing, {}, pub, now)}
    assert got == {"old.md": pub, "ahead.md": now}
    assert {p.changed_at for p in pending_changes(listing, {}, None, now)} == {now}  # before any publication
    live = {"gone.md": DocState("x" * 64, "m", "c", 2)}
    both = pending_changes(listing, live, pub, now)
    assert [(p.doc_id, p.kind, p.changed_at) for p in both] == [  # oldest first
        ("gone.md", "removed", pub), ("old.md", "new", pub), ("ahead.md", "new", now)
    ]  # fmt: skip


def test_a_quarantined_change_stays_pending_while_others_publish(ws: Workspace, src: Path) -> None:
    rng = random.Random(7)
    (src / "a.md").write_bytes(bytes(rng.randrange(0, 256) for _ in range(4000)))  # will not parse
    (src / "b.md").write_text("# Beta\n\nbetamarker a good update.\n", encoding="utf-8")
    age(src / "a.md", 2 * HOUR)
    out = ws.run("acme", "r2")
    assert out["publish"]["quarantined"] == ["a.md"] and out["publish"]["committed"]
    f = fresh(ws)
    assert f.run_id == "r2" and [(p.doc_id, p.kind) for p in f.pending] == [("a.md", "changed")]
    assert f.verdict is STALE and f.lag_seconds > HOUR  # a publication did not reset its lag


def test_agrees_with_the_planner(ws: Workspace, src: Path) -> None:
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    (src / "d.md").write_text("# Delta\n\ndeltamarker new.\n", encoding="utf-8")
    (src / "c.md").unlink()
    (src / "_access.yaml").write_text("documents:\n  - match: b.md\n    groups: [hr]\n", encoding="utf-8")
    f = fresh(ws)
    plan = check_sources(ws.context("acme", "plan"))
    assert f.counts["new"] + f.counts["changed"] == plan["changed"] == 2
    assert f.counts["metadata"] == plan["meta_only"] == 1 and f.counts["removed"] == plan["removed"] == 1


def _snapshot(root: Path) -> dict[str, tuple[int, int, str]]:
    out = {}
    for p in sorted(root.rglob("*")):
        if p.is_file():
            st = p.stat()
            out[str(p.relative_to(root))] = (
                st.st_size,
                st.st_mtime_ns,
                hashlib.sha256(p.read_bytes()).hexdigest(),
            )
    return out


def seed_cache(ws: Workspace, src: Path) -> RevisionCache:
    """Run r2 through a revision cache that stores every entry (no settle time)."""
    cfg = ws.config()
    cache = RevisionCache(cache_path(cfg.store.work_dir, "acme"), "acme", settle_seconds=0)
    ws.run("acme", "r2", connector=FolderConnector("acme", src, cfg.tenant("acme").default_access, cache))
    assert cache.last.stored == 3
    return cache


def test_the_check_writes_nothing(ws: Workspace, src: Path) -> None:
    """Not the store, not a run workspace, not the revision cache (which a run would rewrite)."""
    seed_cache(ws, src)
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    (src / "c.md").unlink()
    age(src / "a.md", 2 * HOUR)
    cache = ws.root / "work" / "acme" / ".source-revisions.json"
    assert cache.exists()
    cfg = ws.config()
    version = ws.table("acme").version
    before = _snapshot(ws.root)
    for _ in range(2):
        assert check_freshness(cfg, "acme", ws.embedder.identity).verdict is STALE
    assert _snapshot(ws.root) == before and ws.table("acme").version == version
    assert not (ws.root / "work" / "acme" / "sources-check").exists()


def test_the_revision_cache_spares_reads_of_unchanged_files(ws: Workspace, src: Path) -> None:
    """Read-only does not mean reading everything: the run's cached revisions are used."""
    from tessera.sources.registry import connector_for

    cfg = ws.config()
    t = cfg.tenant("acme")
    cache = seed_cache(ws, src)
    conn = connector_for(t, cfg.store.work_dir, read_only=True)
    assert isinstance(conn, FolderConnector) and conn.cache is not None
    before = cache.path.read_bytes()
    assert fresh(ws, connector=conn).verdict is FRESH
    assert (conn.cache.last.hits, conn.cache.last.misses) == (3, 0)
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    assert fresh(ws, connector=conn).counts["changed"] == 1  # a changed signature is read
    assert (conn.cache.last.hits, conn.cache.last.misses) == (2, 1)
    assert cache.path.read_bytes() == before  # and never stored


def _run(ws: Workspace, sources: Any = None) -> TenantRunResource:
    cfg = ws.config()
    return TenantRunResource(
        config=TesseraConfigResource(config_path=str(cfg.path)),
        embedder=FakeEmbedderResource(),
        sources=sources or ConfiguredSourceResource(),
    )


MANIFEST = {"tenant": "acme", "workspace_id": "r1"}


def test_asset_check_passes_fresh_and_warns_stale(ws: Workspace, src: Path) -> None:
    run = _run(ws)
    ok = index_freshness(tenant_run=run, published_index=MANIFEST)
    assert ok.passed and ok.metadata["freshness_verdict"].value == "fresh"
    assert ok.metadata["freshness_pending"].value == 0
    (src / "a.md").write_text("# Alpha\n\nalphamarker rewritten.\n", encoding="utf-8")
    age(src / "a.md", 2 * HOUR)
    bad = index_freshness(tenant_run=run, published_index=MANIFEST)
    assert not bad.passed and bad.severity.value == "WARN"
    assert bad.metadata["freshness_verdict"].value == "stale" and bad.metadata["freshness_pending"].value == 1
    assert bad.metadata["freshness_pending_by_kind"].value["changed"] == 1
    assert bad.metadata["freshness_lag_seconds"].value > HOUR and bad.description.startswith("stale")
    shutil.rmtree(src)
    gone = index_freshness(tenant_run=run, published_index=MANIFEST)
    assert not gone.passed and gone.metadata["freshness_verdict"].value == "source-unavailable"
    assert "SourceError" in gone.metadata["freshness_error"].value


def test_asset_check_is_described_non_blocking_and_registered() -> None:
    from pipelines.definitions import build_definitions

    spec = next(iter(index_freshness.check_specs))
    assert spec.name == "index_freshness" and spec.asset_key.to_user_string() == "published_index"
    assert not spec.blocking and "max_lag_seconds" in (spec.description or "")
    defs = build_definitions(config_path="examples/tessera.yaml", fake_embedder=True)
    names = {k.name for k in defs.resolve_asset_graph().asset_check_keys}
    assert "index_freshness" in names


@pytest.mark.parametrize("failure", ["raise", "bare_list", "no_proof"])
def test_asset_check_with_a_failing_fake_source_is_unavailable(
    ws: Workspace, src: Path, failure: str
) -> None:
    run = _run(ws, FakeSourceResource(documents={"acme": {"a.md": "# A\n"}}, failure=failure))
    res = index_freshness(tenant_run=run, published_index=MANIFEST)
    assert not res.passed and res.metadata["freshness_verdict"].value == "source-unavailable"


def test_published_index_reports_freshness_metadata(ws: Workspace) -> None:
    from dagster import build_asset_context

    ws.tenant("acme", dict(DOCS))
    run = _run(ws)
    ctx = build_asset_context(partition_key="acme")
    listing = source_listing(ctx, tenant_run=run).value
    parsed = parsed_documents(ctx, tenant_run=run, source_listing=listing).value
    chunks = document_chunks(ctx, tenant_run=run, parsed_documents=parsed).value
    emb = chunk_embeddings(ctx, tenant_run=run, document_chunks=chunks).value
    out = published_index(ctx, tenant_run=run, chunk_embeddings=emb)
    meta = {k: getattr(v, "value", v) for k, v in out.metadata.items()}
    assert meta["freshness_verdict"] == "fresh" and meta["freshness_pending"] == 0
    assert meta["freshness_lag_seconds"] == 0 and meta["freshness_max_lag_seconds"] == 26 * HOUR
    assert meta["freshness_error"] == "none" and meta["committed"] is True


def test_live_state_is_one_table_version(ws: Workspace, src: Path) -> None:
    """The publications row and the manifest describe the same version (no lock taken)."""
    from tessera.pipeline.freshness import read_live

    live = read_live(ws.context("acme").index)
    assert isinstance(live, LiveState) and live.last is not None
    assert live.version == ws.table("acme").version and set(live.manifest) == set(DOCS)


def test_a_git_tenant_counts_from_the_commit_time_and_a_lost_repo_is_unavailable(ws: Workspace) -> None:
    from tests.test_git_source import commit_all, git, write

    repo = ws.root / "repo"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    write(repo, {"a.md": "# A\n\nalpha\n", "b.md": "# B\n\nbeta\n"})
    now = int(time.time())
    commit_all(repo, "v1", ts=now - 5 * 3600)
    ws.tenants["acme"] = {
        "source": {"kind": "git", "repo": str(repo), "ref": "main"},
        "access": {"default": {"groups": ["staff"]}},
        "freshness": {"max_lag_seconds": HOUR},
    }
    ws.run("acme", "r1")
    assert fresh(ws).verdict is FRESH
    write(repo, {"a.md": "# A\n\nalpha, edited\n"})
    commit_all(repo, "v2", ts=now - 2 * 3600)
    f = fresh(ws)
    assert f.verdict is STALE and [(p.doc_id, p.kind) for p in f.pending] == [("a.md", "changed")]
    assert f.oldest_pending_change == datetime.fromtimestamp(now - 2 * 3600, UTC)
    shutil.rmtree(repo)
    _unavailable(fresh(ws), "Error")
