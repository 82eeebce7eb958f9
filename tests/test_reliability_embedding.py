"""Embedding scenarios the unit tests cover only in part: B2 in Dagster, B3 and B4 end to end."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
from dagster import DagsterInstance, materialize

from assets import INDEXING_ASSETS, INDEXING_CHECKS
from resources import ConfiguredSourceResource, FakeEmbedderResource, TenantRunResource, TesseraConfigResource
from tessera.config import EmbeddingConfig
from tessera.embedding.base import Embedder, Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import EmbeddingError, PermanentEmbeddingError
from tessera.store.embedding_cache import EmbeddingCache, text_key
from tests.conftest import Workspace

from .test_lifecycle import cache_state, md_sections

DOCS = {"a.md": md_sections("Alpha", 3), "b.md": md_sections("Beta", 2)}
CALLS: list[int] = []


class RefusingEmbedder(HashEmbedder):
    """Answers every batch with a permanent error, as a provider does on 401 or an oversized input."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        CALLS.append(len(texts))
        raise PermanentEmbeddingError("401 unauthorized")


class RefusingEmbedderResource(FakeEmbedderResource):
    def get(self, cfg: EmbeddingConfig) -> Embedder:
        return RefusingEmbedder(dimension=self.dimension, version=self.version)


def _resources(cfg_path: str, embedder: FakeEmbedderResource) -> dict[str, object]:
    config = TesseraConfigResource(config_path=cfg_path)
    sources = ConfiguredSourceResource()
    return {
        "tessera_config": config,
        "tenant_run": TenantRunResource(config=config, embedder=embedder, sources=sources),
    }


@pytest.mark.scenario("B2")
def test_a_permanent_embedding_fault_is_one_call_and_fails_the_step_without_retries(ws: Workspace) -> None:
    src = ws.tenant("acme", DOCS)
    cfg = ws.config()
    instance = DagsterInstance.ephemeral()
    instance.add_dynamic_partitions("tenants", ["acme"])

    def run(embedder: FakeEmbedderResource) -> Any:
        assets = [*INDEXING_ASSETS, *INDEXING_CHECKS]
        resources = _resources(str(cfg.path), embedder)
        return materialize(
            assets, partition_key="acme", instance=instance, resources=resources, raise_on_error=False
        )

    assert run(FakeEmbedderResource()).success
    version, rows, cached = ws.table("acme").version, ws.rows("acme"), cache_state(ws, "acme")
    (src / "a.md").write_text(md_sections("Alpha v2", 3), encoding="utf-8")
    CALLS.clear()
    result = run(RefusingEmbedderResource())
    assert not result.success
    assert len(CALLS) == 1  # no retry storm: one call, then the step fails
    (failure,) = result.get_step_failure_events()
    assert failure.step_key == "chunk_embeddings"
    # raised as dagster.Failure(allow_retries=False): neither op nor run retries are spent
    user = failure.step_failure_data.user_failure_data
    assert user is not None and (user.description or "").startswith("PermanentEmbeddingError: 401")
    assert ws.table("acme").version == version and ws.rows("acme") == rows  # the previous version
    assert cache_state(ws, "acme") == cached


class BadVectors(HashEmbedder):
    def __init__(self, kind: str) -> None:
        super().__init__()
        self.kind = kind

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        n, d = len(texts), self.identity.dimension
        if self.kind == "nan":
            return np.full((n, d), np.nan, np.float32)
        if self.kind == "wrong-dimension":
            return np.zeros((n, d + 1), np.float32)
        if self.kind == "too-few":
            return np.zeros((max(n - 1, 0), d), np.float32)
        if self.kind == "infinite":
            out = np.ones((n, d), np.float32)
            out[0, 0] = np.inf
            return out
        return np.zeros((0, d), np.float32)  # empty


@pytest.mark.scenario("B3")
@pytest.mark.parametrize("kind", ["nan", "wrong-dimension", "too-few", "infinite", "empty"])
def test_bad_vectors_are_rejected_before_publishing_and_nothing_is_written(ws: Workspace, kind: str) -> None:
    src = ws.tenant("acme", DOCS)
    ws.run("acme", "r1")
    version, rows, cached = ws.table("acme").version, ws.rows("acme"), cache_state(ws, "acme")
    (src / "c.md").write_text(md_sections("Gamma", 2), encoding="utf-8")
    with pytest.raises(EmbeddingError):
        ws.run("acme", "r2", embedder=BadVectors(kind))
    assert ws.table("acme").version == version and ws.rows("acme") == rows
    assert cache_state(ws, "acme") == cached  # no bad vector cached either
    assert ws.run("acme", "r3")["publish"]["committed"] is True


@pytest.mark.scenario("B4")
def test_the_cache_is_per_tenant_and_per_model_with_sha256_keys(ws: Workspace) -> None:
    ws.tenant("acme", DOCS)
    ws.tenant("globex", DOCS)  # the same texts under another tenant
    first = ws.run("acme", "r1")
    other = ws.run("globex", "r1")
    # no sharing across tenants (a documented decision): every text is a miss for globex
    assert other["embed"]["cache_hits"] == 0 and other["embed"]["embedded"] == first["embed"]["unique"]
    a = EmbeddingCache(ws.context("acme").db, "acme", ws.embedder.identity)
    g = EmbeddingCache(ws.context("globex").db, "globex", ws.embedder.identity)
    assert a.name != g.name and ws.embedder.identity.key in a.name
    key = text_key("some chunk text")
    assert len(key) == 64 and int(key, 16) >= 0  # sha256 hex, never SHA-1 (40 hex digits)
    # another dimension is another model: 100 % misses, and its vectors never reach the old table
    wide = HashEmbedder(dimension=96)
    assert wide.identity.key != ws.embedder.identity.key
    out = ws.run("acme", "r2", embedder=wide)
    assert out["embed"]["cache_hits"] == 0 and out["publish"]["table"] != first["publish"]["table"]
    assert {len(r["vector"]) for r in ws.rows("acme")} == {ws.embedder.identity.dimension}
