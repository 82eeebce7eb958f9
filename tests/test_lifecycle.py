"""The index lifecycle on the real stack (folder source -> LanceDB), with the HashEmbedder.

Every test runs full tenant runs through ``ws.run`` and inspects the live table, the
manifest, the embedding cache, tags and the publications log.
"""

from __future__ import annotations

import hashlib
import shutil
from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import yaml

from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import (
    EmbeddingError,
    MassDeletionBlocked,
    ModelIdentityError,
    PermanentEmbeddingError,
    PublishError,
    SourceError,
    TransientEmbeddingError,
)
from tessera.parsing.markdown import MarkdownParser
from tessera.pipeline.run import verify_step
from tessera.search import principal_from_config, search
from tessera.store.db import list_tables, open_table
from tessera.store.embedding_cache import EmbeddingCache
from tessera.store.index import TenantIndex
from tessera.types import SourceDocument

# ----------------------------------------------------------------------------- helpers


def md_sections(prefix: str, n: int, title: str = "Guide") -> str:
    """A Markdown document with ``n`` short sections, each its own chunk."""
    parts = [f"# {title}\n\nAbout {prefix}.\n\n"]  # not a bare heading: its own chunk
    for i in range(n):
        parts.append(
            f"## {prefix} section {i}\n\n"
            f"{prefix} paragraph {i} explains topic{i} with words alpha{i} beta{i} gamma{i}.\n\n"
        )
    return "".join(parts)


def by_doc(rows: list[dict[str, Any]]) -> dict[str, list[dict[str, Any]]]:
    out: dict[str, list[dict[str, Any]]] = {}
    for r in rows:
        out.setdefault(r["doc_id"], []).append(r)
    return out


def by_id(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["id"]: r for r in rows}


def write_policy(src: Path, rules: list[dict[str, Any]]) -> None:
    (src / "_access.yaml").write_text(yaml.safe_dump({"documents": rules}), encoding="utf-8")


def cache_state(ws: Any, tenant: str, embedder: Any = None) -> tuple[int, int | None]:
    rc = ws.context(tenant, "inspect", **({"embedder": embedder} if embedder else {}))
    cache = EmbeddingCache(rc.db, tenant, rc.embedder.identity)
    table = open_table(rc.db, cache.name)
    return cache.count(), None if table is None else int(table.version)


def hit_docs(ws: Any, tenant: str, user: str, query: str, k: int = 50) -> list[str]:
    cfg = ws.config()
    principal = principal_from_config(cfg, tenant, user)
    assert principal is not None, user
    return [h.doc_id for h in search(cfg.store.uri, ws.embedder, principal, query, k=k)]


class FlakyEmbedder:
    """Wraps an embedder; a batch containing ``marker`` fails ``failures`` times (None: always)."""

    def __init__(
        self,
        inner: HashEmbedder,
        marker: str,
        failures: int | None,
        error: type[Exception] = TransientEmbeddingError,
    ) -> None:
        self.inner = inner
        self.identity = inner.identity
        self.marker = marker
        self.failures = failures
        self.error = error
        self.calls: Counter[tuple[str, ...]] = Counter()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        key = tuple(texts)
        self.calls[key] += 1
        failing = self.failures is None or self.calls[key] <= self.failures
        if failing and any(self.marker in t for t in texts):
            raise self.error(f"injected failure #{self.calls[key]}")
        return self.inner.embed_documents(texts)

    def embed_query(self, text: str) -> Vectors:
        return self.inner.embed_query(text)


# ----------------------------------------------------------------------------- 1. no-op re-ingest


@pytest.mark.scenario("A1")
def test_unchanged_reingest_is_a_noop(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)})
    first = ws.run("acme", "r1")
    assert first["publish"]["committed"] is True
    version, rows = ws.table("acme").version, ws.rows("acme")
    assert len(rows) == first["chunk"]["chunks"] > 0
    ws.embedder.calls.clear()

    second = ws.run("acme", "r2")

    assert second["listing"]["changed"] == 0
    assert second["listing"]["meta_only"] == 0
    assert second["listing"]["removed"] == 0
    assert second["listing"]["unchanged"] == 2
    assert second["publish"]["committed"] is False
    assert second["embed"]["embedded"] == 0
    assert ws.embedder.calls == []
    assert ws.table("acme").version == version
    assert ws.rows("acme") == rows
    assert "run-r2" not in ws.table("acme").tags.list()
    assert [p["kind"] for p in ws.context("acme").index.publications()] == ["publish"]


def test_emptied_document_loses_its_rows(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2), "b.md": md_sections("Beta", 2)})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    (src / "b.md").write_text("\n   \n", encoding="utf-8")
    out = ws.run("acme", "r2")
    assert out["publish"]["committed"] is True
    assert out["publish"]["deleted"] == len(before["b.md"])
    after = by_doc(ws.rows("acme"))
    assert set(after) == {"a.md"}
    assert by_id(after["a.md"]) == by_id(before["a.md"])


def test_unchanged_reingest_with_an_empty_document_is_a_noop(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 2), "empty.md": "", "blank.md": "\n\n   \n"})
    ws.run("acme", "r1")
    version, rows = ws.table("acme").version, ws.rows("acme")
    assert {r["doc_id"] for r in rows} == {"a.md"}

    out = ws.run("acme", "r2")

    assert out["publish"]["committed"] is False
    assert ws.table("acme").version == version
    assert ws.rows("acme") == rows
    assert set(ws.table("acme").tags.list()) == {"run-r1"}
    assert len(ws.context("acme").index.publications()) == 1


# ----------------------------------------------------------------------------- 2. shortened document


@pytest.mark.scenario("A2")
def test_shortened_document_leaves_no_stale_chunks(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 5), "b.md": md_sections("Beta", 3)})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    old_a_ids = {r["id"] for r in before["a.md"]}
    assert len(old_a_ids) >= 5

    (src / "a.md").write_text(md_sections("Alpha", 2), encoding="utf-8")
    out = ws.run("acme", "r2")

    assert out["listing"]["changed"] == 1
    assert out["publish"]["committed"] is True
    after = by_doc(ws.rows("acme"))
    new_a = after["a.md"]
    assert not old_a_ids & {r["id"] for r in new_a}
    assert {r["revision"] for r in new_a} == {out_rev(src / "a.md")}
    texts = " ".join(r["text"] for r in new_a)
    assert "Alpha section 1" in texts
    assert all(f"Alpha section {i}" not in texts for i in (2, 3, 4))
    assert len(new_a) == len(old_a_ids) - 3
    # the other document is byte-identical, every column included
    assert by_id(after["b.md"]) == by_id(before["b.md"])
    assert ws.context("acme", "v").index.manifest()["a.md"].chunks == len(new_a)


def out_rev(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# ----------------------------------------------------------------------------- 3. removed document


@pytest.mark.scenario("A5")
def test_removed_document_is_deleted_others_untouched(ws: Any) -> None:
    src = ws.tenant(
        "acme",
        {
            "a.md": md_sections("Alpha", 2),
            "b.md": md_sections("Beta", 2),
            "sub/c.md": md_sections("Gamma", 2),
        },
    )
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    assert set(before) == {"a.md", "b.md", "sub/c.md"}

    (src / "b.md").unlink()
    ws.embedder.calls.clear()
    out = ws.run("acme", "r2")

    assert out["listing"]["removed"] == 1
    assert out["publish"]["committed"] is True
    assert out["publish"]["docs_removed"] == 1
    assert out["publish"]["deleted"] == len(before["b.md"])
    assert ws.embedder.calls == []
    after = by_doc(ws.rows("acme"))
    assert set(after) == {"a.md", "sub/c.md"}
    for doc in ("a.md", "sub/c.md"):
        assert by_id(after[doc]) == by_id(before[doc])
    assert "b.md" not in ws.context("acme", "v").index.manifest()


# ----------------------------------------------------------------------------- 4. ACL-only change


@pytest.mark.scenario("A3", "F3")
def test_acl_only_change_reuses_vectors_and_changes_readers(ws: Any) -> None:
    src = ws.tenant(
        "acme",
        {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)},
        groups=["staff"],
        users={"alice": ["staff"], "bob": ["legal"]},
    )
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    query = "Alpha paragraph explains topic1 alpha1 beta1"
    assert "a.md" in hit_docs(ws, "acme", "alice", query)
    assert hit_docs(ws, "acme", "bob", query) == []
    cached = cache_state(ws, "acme")
    ws.embedder.calls.clear()

    write_policy(src, [{"match": "a.md", "groups": ["legal"]}])
    out = ws.run("acme", "r2")

    assert out["listing"]["changed"] == 0
    assert out["listing"]["meta_only"] == 1
    assert out["embed"]["embedded"] == 0
    # relabelled in place (tessera.pipeline.relabel): not parsed, chunked or embedded again,
    # not even from the embedding cache
    assert out["listing"]["relabel"] == 1 and out["parse"]["parsed"] == 0
    assert out["embed"]["texts"] == 0
    assert ws.embedder.calls == []
    assert cache_state(ws, "acme") == cached
    assert out["publish"]["committed"] is True
    assert out["publish"]["updated"] == len(before["a.md"])
    assert out["publish"]["inserted"] == 0
    assert out["publish"]["deleted"] == 0

    after = by_doc(ws.rows("acme"))
    old_a, new_a = by_id(before["a.md"]), by_id(after["a.md"])
    assert set(new_a) == set(old_a)  # chunk ids kept
    for cid, row in new_a.items():
        assert row["groups"] == ["legal"]
        assert row["readers"] == []
        assert row["meta_hash"] != old_a[cid]["meta_hash"]
        assert row["vector"] == old_a[cid]["vector"]
        assert row["text"] == old_a[cid]["text"]
        assert row["checksum"] == old_a[cid]["checksum"]
    assert by_id(after["b.md"]) == by_id(before["b.md"])

    assert "a.md" not in hit_docs(ws, "acme", "alice", query)
    assert "b.md" in hit_docs(ws, "acme", "alice", query)
    assert set(hit_docs(ws, "acme", "bob", query)) == {"a.md"}


# ----------------------------------------------------------------------------- 5. embedding failures


@pytest.mark.scenario("B1", "A10")
def test_embedding_failure_before_publish_changes_nothing(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 3)})
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    version, rows, manifest = rc.index.version(), ws.rows("acme"), rc.index.manifest()
    pubs = rc.index.publications()
    cached = cache_state(ws, "acme")
    assert cached[0] > 0

    # a changed doc plus a new doc: several new batches (batch_size 4). The kaboom chunk is the
    # shortest text, so its batch comes last and earlier batches succeed before it always fails.
    (src / "a.md").write_text(md_sections("Alpha", 6), encoding="utf-8")
    (src / "c.md").write_text(md_sections("Gamma", 6) + "## Tail\n\nkaboom\n", encoding="utf-8")
    flaky = FlakyEmbedder(ws.embedder, "kaboom", failures=None)
    with pytest.raises(EmbeddingError, match="failed after 3 attempts"):
        ws.run("acme", "r2", embedder=flaky)

    failing = [k for k in flaky.calls if any("kaboom" in t for t in k)]
    assert len(failing) == 1
    assert flaky.calls[failing[0]] == 3  # max_retries=2 -> 3 attempts, then give up
    assert len(flaky.calls) >= 3  # batches before the failing one went through
    assert all(n == 1 for k, n in flaky.calls.items() if k != failing[0])

    rc = ws.context("acme", "inspect")
    assert rc.index.version() == version
    assert ws.rows("acme") == rows
    assert rc.index.manifest() == manifest
    assert rc.index.publications() == pubs
    assert cache_state(ws, "acme") == cached

    # with a healthy embedder the same sources converge
    out = ws.run("acme", "r3")
    assert out["publish"]["committed"] is True
    assert any("kaboom" in r["text"] for r in ws.rows("acme"))
    assert {r["doc_id"] for r in ws.rows("acme")} == {"a.md", "b.md", "c.md"}


@pytest.mark.scenario("B1")
def test_transient_embedding_failure_retries_only_that_batch(ws: Any) -> None:
    ws.chunking["sentence_vectors"] = True  # the sentence batches are retried alone too
    ws.tenant(
        "acme",
        {
            "a.md": md_sections("Alpha", 6).replace("explains topic2", "explains kaboom"),
            "b.md": md_sections("Beta", 6),
        },
    )
    flaky = FlakyEmbedder(ws.embedder, "kaboom", failures=1)
    out = ws.run("acme", "r1", embedder=flaky)

    assert out["publish"]["committed"] is True
    embed, sentences = out["embed"], out["embed"]["sentences"]
    # the chunk batch and the sentence batch holding "kaboom" each failed once and were retried
    assert embed["retries"] == 1 and sentences["retries"] == 1
    assert sentences["texts"] > 0  # each section's paragraph is a sentence probe
    assert embed["batches"] + sentences["batches"] == len(flaky.calls) > 2
    failing = [k for k in flaky.calls if any("kaboom" in t for t in k)]
    assert len(failing) == 2
    assert all(flaky.calls[k] == 2 for k in failing)
    assert sum(flaky.calls.values()) == len(flaky.calls) + 2
    # every batch that reached the model counted once, and each unique text embedded once
    unique = embed["unique"] + sentences["unique"]
    assert sum(len(k) for k in flaky.calls) == unique
    assert cache_state(ws, "acme")[0] == unique


@pytest.mark.scenario("B2")
def test_permanent_embedding_error_is_not_retried(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 3).replace("explains topic1", "explains kaboom")})
    flaky = FlakyEmbedder(ws.embedder, "kaboom", failures=None, error=PermanentEmbeddingError)
    with pytest.raises(PermanentEmbeddingError):
        ws.run("acme", "r1", embedder=flaky)
    failing = [k for k in flaky.calls if any("kaboom" in t for t in k)]
    assert [flaky.calls[k] for k in failing] == [1]
    assert ws.table("acme") is None
    assert cache_state(ws, "acme") == (0, None)


# ----------------------------------------------------------------------------- 6. model version


@pytest.mark.scenario("B4")
def test_new_model_version_gets_separate_tables(ws: Any) -> None:
    ws.chunking["sentence_vectors"] = True  # chunk and sentence vectors both re-embedded
    ws.tenant("acme", {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)})
    v1, v2 = ws.embedder, HashEmbedder(version="2")
    assert v1.identity.key != v2.identity.key
    assert v1.identity.hash != v2.identity.hash
    first = ws.run("acme", "r1")
    rc1 = ws.context("acme", "inspect")
    v1_version, v1_rows = rc1.index.version(), ws.rows("acme")

    second = ws.run("acme", "r2", embedder=v2)

    # nothing of model 1 is reused: all documents are new for model 2, all texts embedded
    assert second["listing"]["changed"] == 2
    assert second["embed"]["cache_hits"] == 0
    assert second["embed"]["embedded"] == first["embed"]["unique"]
    assert second["embed"]["sentences"]["cache_hits"] == 0
    assert second["embed"]["sentences"]["embedded"] == first["embed"]["sentences"]["unique"] > 0
    assert v2.calls and sum(v2.calls) == first["embed"]["unique"] + first["embed"]["sentences"]["unique"]
    assert second["publish"]["table"] == f"chunks__acme__{v2.identity.key}"
    assert first["publish"]["table"] == f"chunks__acme__{v1.identity.key}"

    tables = set(list_tables(rc1.db))
    assert {
        f"chunks__acme__{v1.identity.key}",
        f"chunks__acme__{v2.identity.key}",
        f"embed_cache__acme__{v1.identity.key}",
        f"embed_cache__acme__{v2.identity.key}",
    } <= tables
    texts = first["embed"]["unique"] + first["embed"]["sentences"]["unique"]
    assert cache_state(ws, "acme", v1)[0] == texts
    assert cache_state(ws, "acme", v2)[0] == texts

    rc2 = ws.context("acme", "inspect", embedder=v2)
    v2_rows = rc2.index.table().to_arrow().to_pylist()
    assert rc1.index.version() == v1_version
    assert ws.rows("acme") == v1_rows
    assert {r["model_version"] for r in v1_rows} == {v1.identity.key}
    assert {r["model_version"] for r in v2_rows} == {v2.identity.key}
    assert not {r["id"] for r in v1_rows} & {r["id"] for r in v2_rows}
    assert sorted(r["text"] for r in v1_rows) == sorted(r["text"] for r in v2_rows)

    cfg = ws.config()
    alice = principal_from_config(cfg, "acme", "alice")
    with pytest.raises(ModelIdentityError):
        search(cfg.store.uri, v1, alice, "Alpha paragraph", model_version=v2.identity.key)
    with pytest.raises(ModelIdentityError):
        search(cfg.store.uri, v2, alice, "Alpha paragraph", model_version=v1.identity.key)
    # The complete model-2 build cut the tenant over: model 1 stays on disk, but is not served.
    assert second["cutover"]["moved"] and second["cutover"]["previous"] == v1.identity.key
    with pytest.raises(ModelIdentityError, match=f"served by model {v2.identity.key}"):
        search(cfg.store.uri, v1, alice, "Alpha paragraph", k=50, model_version=v1.identity.key)
    hits2 = search(cfg.store.uri, v2, alice, "Alpha paragraph", k=50)
    assert {h.chunk_id for h in hits2} == {r["id"] for r in v2_rows}


@pytest.mark.scenario("B4")
def test_row_of_another_model_in_the_table_is_refused_at_search(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 1)})
    ws.run("acme", "r1")
    table = ws.table("acme")
    forged = table.to_arrow().slice(0, 1).to_pylist()[0]
    forged.update(id="forged", model_version="some-other-model-000000000000")
    table.add([forged])
    cfg = ws.config()
    alice = principal_from_config(cfg, "acme", "alice")
    with pytest.raises(ModelIdentityError):
        search(cfg.store.uri, ws.embedder, alice, forged["text"], k=50)


# ----------------------------------------------------------------------------- 7. repeated text


@pytest.mark.scenario("A1")
def test_identical_text_at_two_offsets_keeps_two_chunks(ws: Any) -> None:
    para = "Restart the router, then wait thirty seconds before testing the connection again."
    doc = f"# Manual\n\nHow to set it up.\n\n## Setup\n\n{para}\n\n## Setup\n\n{para}\n"
    src = ws.tenant("acme", {"manual.md": doc})
    out = ws.run("acme", "r1")

    dup = [r for r in ws.rows("acme") if para in r["text"]]
    assert len(dup) == 2
    assert dup[0]["id"] != dup[1]["id"]
    assert dup[0]["text"] == dup[1]["text"]
    assert dup[0]["embedding_text"] == dup[1]["embedding_text"]
    assert dup[0]["vector"] == dup[1]["vector"]
    assert {r["heading_path"] == ["Manual", "Setup"] for r in dup} == {True}
    assert sorted(r["anchor"] for r in dup) == ["setup", "setup-1"]
    raw = (src / "manual.md").read_bytes()
    starts = sorted(r["byte_start"] for r in dup)
    assert starts[0] != starts[1]
    for r in dup:
        assert raw[r["byte_start"] : r["byte_end"]].decode() == r["text"]
    # the shared text was embedded once
    assert out["embed"]["unique"] == out["embed"]["texts"] - 1
    # and a re-run keeps both
    ws.run("acme", "r2")
    assert len([r for r in ws.rows("acme") if para in r["text"]]) == 2


# ----------------------------------------------------------------------------- 8. empty vs missing source


@pytest.mark.scenario("A5", "A6")
def test_empty_snapshot_deletes_only_that_tenant(ws: Any) -> None:
    src_a = ws.tenant("acme", {"a.md": md_sections("Alpha", 2), "sub/b.md": md_sections("Beta", 2)})
    ws.tenant("globex", {"g.md": md_sections("Globex", 2)})
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    g_version, g_rows = ws.table("globex").version, ws.rows("globex")
    assert ws.rows("acme")

    (src_a / "a.md").unlink()
    (src_a / "sub" / "b.md").unlink()
    (src_a / "notes.txt").write_text("not indexable", encoding="utf-8")
    # An empty folder is what an unmounted mount point looks like: without the provisioning
    # marker its emptiness is not proven, and the guard keeps the tenant.
    a_rows = ws.rows("acme")
    with pytest.raises(MassDeletionBlocked, match="did not prove it is empty"):
        ws.run("acme", "r2-unproven")
    assert ws.rows("acme") == a_rows
    (src_a / ".tessera-root").write_bytes(b"")
    out = ws.run("acme", "r2")

    assert out["listing"]["verdict"] == "empty"
    assert out["listing"]["removed"] == 2
    assert out["publish"]["committed"] is True
    assert out["publish"]["docs_removed"] == 2
    assert ws.rows("acme") == []
    assert ws.context("acme", "v").index.manifest() == {}
    assert ws.table("globex").version == g_version
    assert ws.rows("globex") == g_rows


@pytest.mark.scenario("A6")
def test_missing_source_folder_raises_and_deletes_nothing(ws: Any) -> None:
    ws.tenant("acme", {"a.md": md_sections("Alpha", 2)})
    src_g = ws.tenant("globex", {"g.md": md_sections("Globex", 2)})
    ws.run("acme", "r1")
    ws.run("globex", "r1")
    a_version, a_rows = ws.table("acme").version, ws.rows("acme")
    g_version, g_rows = ws.table("globex").version, ws.rows("globex")

    shutil.rmtree(src_g)
    with pytest.raises(SourceError):
        ws.run("globex", "r2")

    assert ws.table("globex").version == g_version
    assert ws.rows("globex") == g_rows
    assert ws.table("acme").version == a_version
    assert ws.rows("acme") == a_rows


# ----------------------------------------------------------------------------- 9. tenant isolation


@pytest.mark.scenario("F1")
def test_tenants_never_see_each_other(ws: Any) -> None:
    body = (
        "# Vacation policy\n\nEmployees of {co} get twenty days of paid vacation per year.\n\n"
        "## Carry over\n\nAt {co}, up to five unused days carry over to the next year.\n"
    )
    ws.tenant(
        "acme", {"acme-vacation.md": body.format(co="Acme"), "acme-travel.md": md_sections("Travel", 2)}
    )
    ws.tenant(
        "globex",
        {"globex-vacation.md": body.format(co="Globex"), "globex-travel.md": md_sections("Travel", 2)},
    )
    ws.run("acme", "r1")
    ws.run("globex", "r1")

    a_rows, g_rows = ws.rows("acme"), ws.rows("globex")
    assert a_rows and g_rows
    assert {r["tenant"] for r in a_rows} == {"acme"}
    assert {r["tenant"] for r in g_rows} == {"globex"}
    a_docs = {r["doc_id"] for r in a_rows}
    g_docs = {r["doc_id"] for r in g_rows}
    assert not a_docs & g_docs

    for k in (1, 5, 50):
        for tenant, own, other in (("acme", a_docs, g_docs), ("globex", g_docs, a_docs)):
            for query in ("Globex paid vacation days", "Acme unused days carry over", "Travel paragraph"):
                docs = hit_docs(ws, tenant, "alice", query, k=k)
                assert docs, (tenant, query, k)
                assert len(docs) <= k
                assert set(docs) <= own
                assert not set(docs) & other
    assert len(hit_docs(ws, "acme", "alice", "vacation", k=50)) == len(a_rows)


# ----------------------------------------------------------------------------- 10/11. fences


def test_oversized_fence_is_split_never_truncated(ws: Any) -> None:
    code_lines = [f"    result_{i} = compute_value(alpha_{i}, beta_{i})  # step {i}" for i in range(300)]
    fence = "```python\ndef pipeline():\n" + "\n".join(code_lines) + "\n    return result_299\n```"
    doc = f"# Code\n\nThe pipeline below is long.\n\n{fence}\n\nAfter the code.\n"
    src = ws.tenant("acme", {"code.md": doc})
    ws.run("acme", "r1")
    rows = sorted(ws.rows("acme"), key=lambda r: r["position"])
    text = (src / "code.md").read_text(encoding="utf-8")
    f0 = text.index("```python")
    f1 = text.index("\n```\n", f0) + len("\n```")
    assert text[f0:f1] == fence

    fence_rows = [r for r in rows if "fence_split" in r["flags"]]
    assert len(fence_rows) > 5
    covered = np.zeros(len(text), dtype=bool)
    for r in fence_rows:
        assert text[r["start"] : r["end"]] == r["text"]
        covered[r["start"] : r["end"]] = True
        assert r["token_count"] <= 256
        assert r["kind"] == "code"
    missing = [i for i in range(f0, f1) if not text[i].isspace() and not covered[i]]
    assert missing == [], text[missing[0] : missing[0] + 40] if missing else ""
    assert all(r["token_count"] <= 256 for r in rows)
    joined = "\n".join(r["text"] for r in fence_rows)
    for i in range(300):
        assert f"# step {i}\n" in joined + "\n"

    first = [r for r in fence_rows if r["start"] == f0]
    assert len(first) == 1 and first[0]["text"].startswith("```python\n")
    opening_end = text.index("\n", f0) + 1
    continuations = [r for r in fence_rows if r["start"] >= opening_end]
    assert len(continuations) == len(fence_rows) - 1
    for r in continuations:
        assert r["embedding_text"].endswith("```python\n" + r["text"]), r["embedding_text"][:80]
        assert r["embedding_text"].startswith("Code\n\n")
    assert fence_rows[-1]["text"].endswith("return result_299\n```")
    assert any(r["text"] == "After the code." for r in rows)


def test_heading_inside_fence_is_not_a_section(ws: Any) -> None:
    outer = (
        "````markdown\n"
        "# Inner heading\n"
        "\n"
        "```python\n"
        "x = 1\n"
        "```\n"
        "\n"
        "## Inner sub heading\n"
        "still inside the outer fence\n"
        "````"
    )
    doc = f"# Guide\n\n## Example\n\n{outer}\n\n## Next\n\nA paragraph after the fence.\n"
    src = ws.tenant("acme", {"guide.md": doc})
    out = ws.run("acme", "r1")

    assert out["parse"]["warnings"] == 0
    rows = ws.rows("acme")
    paths = {tuple(r["heading_path"]) for r in rows}
    assert paths == {("Guide", "Example"), ("Guide", "Next")}  # a bare "# Guide" joins its subsection
    assert not any(t in p for p in paths for t in ("Inner heading", "Inner sub heading"))
    text = (src / "guide.md").read_text(encoding="utf-8")
    f0, f1 = text.index(outer), text.index(outer) + len(outer)
    holders = [r for r in rows if r["start"] <= f0 and r["end"] >= f1]
    assert len(holders) == 1
    code = holders[0]
    assert code["kind"] == "code"
    assert code["heading_path"] == ["Guide", "Example"]
    assert "```python\nx = 1\n```" in code["text"]
    assert code["text"].endswith("````")
    assert "unclosed_fence" not in code["flags"]
    after = [r for r in rows if "A paragraph after the fence." in r["text"]]
    assert len(after) == 1 and after[0]["heading_path"] == ["Guide", "Next"]
    assert after[0]["kind"] == "text"

    # the parser agrees: one fence block, no heading block inside it
    parsed = MarkdownParser().parse(
        SourceDocument("acme", "guide.md", "file:///guide.md", "rev", "text/markdown", (), ("staff",)),
        doc.encode(),
    )
    fences = [b for b in parsed.blocks if b.kind == "fence"]
    assert [(b.start, b.end) for b in fences] == [(f0, f1 + 1)]
    assert all(not (f0 <= b.start < f1) for b in parsed.blocks if b.kind == "heading")


# ----------------------------------------------------------------------------- 12. crash safety


@pytest.mark.scenario("A9")
def test_publish_crash_keeps_previous_version_and_rerun_converges(
    ws: Any, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    files_v1 = {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)}
    src = ws.tenant("acme", files_v1)
    ws.run("acme", "r1")
    rc = ws.context("acme", "inspect")
    version, rows, manifest = rc.index.version(), ws.rows("acme"), rc.index.manifest()

    (src / "a.md").write_text(md_sections("Alpha", 4, title="Guide v2"), encoding="utf-8")
    (src / "b.md").unlink()
    (src / "c.md").write_text(md_sections("Gamma", 2), encoding="utf-8")

    staged: list[tuple[int, set[str]]] = []

    def crash(self: TenantIndex, rows: Any, scope: set[str], run_id: str, config_hash: str) -> Any:
        staged.append((rows.num_rows, set(scope)))
        raise PublishError("injected crash after staging")

    with monkeypatch.context() as m:
        m.setattr(TenantIndex, "publish", crash)
        with pytest.raises(PublishError, match="injected"):
            ws.run("acme", "r2")
    assert staged and staged[0][0] > 0 and staged[0][1] == {"a.md", "b.md", "c.md"}

    rc = ws.context("acme", "inspect")
    assert rc.index.version() == version
    assert ws.rows("acme") == rows
    assert rc.index.manifest() == manifest
    assert "b.md" in hit_docs(ws, "acme", "alice", "Beta paragraph")
    assert "run-r2" not in ws.table("acme").tags.list()

    out = ws.run("acme", "r3")
    assert out["publish"]["committed"] is True
    assert out["publish"]["docs_changed"] == 2 and out["publish"]["docs_removed"] == 1
    fresh = type(ws)(tmp_path / "fresh")
    fresh.tenant("acme", {"a.md": md_sections("Alpha", 4, title="Guide v2"), "c.md": md_sections("Gamma", 2)})
    fresh.run("acme", "f1")
    got = {(r["id"], r["doc_id"], r["text"], r["revision"]) for r in ws.rows("acme")}
    want = {(r["id"], r["doc_id"], r["text"], r["revision"]) for r in fresh.rows("acme")}
    assert got == want
    problems, _ = verify_step(ws.context("acme", "r3"))
    assert problems == []


@pytest.mark.scenario("A8", "A9")
def test_failed_commit_is_a_publish_error_and_changes_nothing(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 3)})
    ws.run("acme", "r1")
    table = ws.table("acme")
    version, rows = table.version, ws.rows("acme")
    (src / "a.md").write_text(md_sections("Alpha", 1), encoding="utf-8")

    def broken(self: Any, on: Any) -> Any:
        raise OSError("disk full")

    monkeypatch.setattr(type(table), "merge_insert", broken)
    with pytest.raises(PublishError, match="disk full"):
        ws.run("acme", "r2")
    monkeypatch.undo()

    assert ws.table("acme").version == version
    assert ws.rows("acme") == rows
    out = ws.run("acme", "r3")
    assert out["publish"]["committed"] is True
    assert len(ws.rows("acme")) < len(rows)


@pytest.mark.scenario("C1")
def test_crash_after_commit_converges_on_rerun(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)})
    ws.run("acme", "r1")
    (src / "a.md").write_text(md_sections("Alpha", 1), encoding="utf-8")
    tags_cls = type(ws.table("acme").tags)

    def crash(self: Any, tag: str, version: int) -> None:
        raise OSError("process killed after the commit")

    with monkeypatch.context() as m:
        m.setattr(tags_cls, "create", crash)
        with pytest.raises(PublishError, match="is live, but tagging or logging it failed"):
            ws.run("acme", "r2")
    committed = ws.rows("acme")
    assert len(by_doc(committed)["a.md"]) == 2  # the commit itself landed, atomically

    out = ws.run("acme", "r3")
    assert out["listing"]["changed"] == 0
    assert out["publish"]["committed"] is False
    assert ws.rows("acme") == committed
    assert verify_step(ws.context("acme", "r3"))[0] == []


# ----------------------------------------------------------------------------- 13. restore


@pytest.mark.scenario("C6")
def test_restore_makes_first_version_current_again(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)})
    v1 = ws.run("acme", "r1")["publish"]["version"]
    first = ws.rows("acme")

    (src / "a.md").write_text(md_sections("Alpha", 1), encoding="utf-8")
    (src / "c.md").write_text(md_sections("Gamma", 2), encoding="utf-8")
    v2 = ws.run("acme", "r2")["publish"]["version"]
    second = ws.rows("acme")
    assert v2 > v1
    assert {r["id"] for r in second} != {r["id"] for r in first}

    rc = ws.context("acme", "rollback")
    result = rc.index.restore(v1, "rollback")
    assert result.committed is True
    assert result.version is not None and result.version > v2
    assert ws.table("acme").version == result.version
    restored = ws.rows("acme")
    assert [r["id"] for r in restored] == [r["id"] for r in first]
    assert [r["text"] for r in restored] == [r["text"] for r in first]
    assert restored == first
    pubs = rc.index.publications()
    assert [p["kind"] for p in pubs] == ["publish", "publish", "restore"]
    assert [p["table_version"] for p in pubs] == [v1, v2, result.version]
    assert pubs[-1]["rows"] == len(first)
    assert ws.table("acme").tags.list()["run-rollback"]["version"] == result.version

    with pytest.raises(PublishError):
        rc.index.restore(10_000, "bogus")

    # the next run brings the index back in line with the source
    out = ws.run("acme", "r3")
    assert out["publish"]["committed"] is True
    assert {(r["id"], r["text"]) for r in ws.rows("acme")} == {(r["id"], r["text"]) for r in second}


def test_restore_with_a_used_run_id_is_refused_or_logged(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2)})
    v1 = ws.run("acme", "r1")["publish"]["version"]
    (src / "b.md").write_text(md_sections("Beta", 2), encoding="utf-8")
    v2 = ws.run("acme", "r2")["publish"]["version"]
    second = ws.rows("acme")
    rc = ws.context("acme", "r1")
    with pytest.raises(PublishError, match="already published"):
        rc.index.restore(v1, "r1")  # tag run-r1 already names version v1
    assert ws.table("acme").version == v2  # refused before anything changed
    assert ws.rows("acme") == second
    assert [p["kind"] for p in rc.index.publications()] == ["publish", "publish"]


def test_publish_with_a_used_run_id_is_refused_or_logged(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2)})
    ws.run("acme", "cli-fixed")
    version, rows = ws.table("acme").version, ws.rows("acme")
    (src / "b.md").write_text(md_sections("Beta", 2), encoding="utf-8")
    with pytest.raises(PublishError, match="already published"):
        ws.run("acme", "cli-fixed")
    assert ws.table("acme").version == version  # refused before the commit
    assert ws.rows("acme") == rows
    assert ws.run("acme", "cli-fresh")["publish"]["committed"] is True


# ----------------------------------------------------------------------------- 14. tags


def test_each_committed_publish_is_tagged(ws: Any) -> None:
    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2)})
    p1 = ws.run("acme", "r1")["publish"]
    (src / "b.md").write_text(md_sections("Beta", 2), encoding="utf-8")
    p2 = ws.run("acme", "r2")["publish"]
    p3 = ws.run("acme", "r3")["publish"]

    assert p1["tag"] == "run-r1" and p2["tag"] == "run-r2"
    assert p3["committed"] is False and p3["tag"] == ""
    tags = ws.table("acme").tags.list()
    assert set(tags) == {"run-r1", "run-r2"}
    assert tags["run-r1"]["version"] == p1["version"]
    assert tags["run-r2"]["version"] == p2["version"]
    table = ws.table("acme")
    table.checkout(p1["version"])
    assert {r["doc_id"] for r in table.to_arrow().to_pylist()} == {"a.md"}
    assert [p["tag"] for p in ws.context("acme").index.publications()] == ["run-r1", "run-r2"]


# ----------------------------------------------------------------------------- chunking failures


@pytest.mark.scenario("A10")
def test_chunking_failure_quarantines_the_document_and_keeps_its_rows(ws: Any, monkeypatch: Any) -> None:
    from tessera.chunking.structural import StructuralChunker
    from tessera.errors import ChunkingError

    src = ws.tenant("acme", {"a.md": md_sections("Alpha", 2), "b.md": md_sections("Beta", 2)})
    ws.run("acme", "r1")
    before = by_doc(ws.rows("acme"))
    (src / "a.md").write_text(md_sections("Alpha", 4), encoding="utf-8")
    (src / "b.md").write_text(md_sections("Beta", 1), encoding="utf-8")
    original = StructuralChunker.chunk

    def failing(self: Any, doc: Any, parsed: Any, ctx: Any) -> Any:
        if doc.doc_id == "a.md":
            raise ChunkingError("cannot fit")
        return original(self, doc, parsed, ctx)

    monkeypatch.setattr(StructuralChunker, "chunk", failing)
    out = ws.run("acme", "r2")
    assert out["chunk"]["quarantined"] == 1 and out["publish"]["quarantined"] == ["a.md"]
    after = by_doc(ws.rows("acme"))
    assert after["a.md"] == before["a.md"]  # kept, not deleted
    assert len(after["b.md"]) < len(before["b.md"])  # the other document was updated
    assert verify_step(ws.context("acme", "r2"))[0] == []


def test_very_long_headings_shorten_the_breadcrumb_not_the_text(ws: Any) -> None:
    long_title = " ".join(f"word{i}" for i in range(120))
    doc = f"# {long_title}\n\n## Second {long_title}\n\nBody text that must be indexed whole.\n"
    ws.tenant("acme", {"a.md": doc})
    ws.run("acme", "r1")
    rows = ws.rows("acme")
    assert any("Body text that must be indexed whole." in r["text"] for r in rows)
    for r in rows:
        assert r["token_count"] <= 256
        assert r["embedding_text"].endswith(r["text"])
