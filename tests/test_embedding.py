"""Batching, retry, vector validation, the cache, and the real model (marked ``model``)."""

from __future__ import annotations

import numpy as np
import pytest

from tessera.config import EmbeddingConfig
from tessera.embedding.batching import EmbedStats, RetryPolicy, embed_batches
from tessera.embedding.fake import HashEmbedder
from tessera.embedding.model_files import verified_weights_hash
from tessera.errors import EmbeddingError, ModelIdentityError, PermanentEmbeddingError
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache, text_key

from .conftest import MODEL_SHA


class Flaky(HashEmbedder):
    """Fails the first ``fail_times`` calls whose batch contains ``poison``."""

    def __init__(self, poison: str, fail_times: int, exc: type[Exception] = RuntimeError) -> None:
        super().__init__()
        self.poison, self.fail_times, self.exc = poison, fail_times, exc
        self.batches: list[list[str]] = []

    def embed_documents(self, texts):  # type: ignore[no-untyped-def]
        self.batches.append(list(texts))
        if self.poison in texts and self.fail_times > 0:
            self.fail_times -= 1
            raise self.exc("503 overloaded")
        return super().embed_documents(texts)


def _texts(n: int) -> list[str]:
    return [f"text number {i} " + "x" * (i % 7) for i in range(n)]


@pytest.mark.scenario("B1")
def test_transient_failure_retries_only_the_failed_batch() -> None:
    texts = _texts(10)
    emb = Flaky(poison=texts[5], fail_times=2)
    stats = EmbedStats()
    delays: list[float] = []
    out = embed_batches(emb, texts, 3, RetryPolicy(max_retries=3, backoff_seconds=0.1), stats, delays.append)
    assert stats.retries == 2 and len(delays) == 2 and delays[1] > delays[0] * 0.5
    poisoned = [b for b in emb.batches if texts[5] in b]
    assert len(poisoned) == 3  # two failures, one success
    others = [b for b in emb.batches if texts[5] not in b]
    assert sorted(t for b in others for t in b) == sorted(t for t in texts if t not in poisoned[0])
    assert np.allclose(out, HashEmbedder().embed_documents(texts))


@pytest.mark.scenario("B1", "B2")
def test_retries_are_bounded_and_permanent_errors_are_not_retried() -> None:
    texts = _texts(4)
    emb = Flaky(poison=texts[0], fail_times=100)
    with pytest.raises(EmbeddingError, match="after 3 attempts"):
        embed_batches(emb, texts, 2, RetryPolicy(max_retries=2), EmbedStats(), lambda _s: None)
    assert len([b for b in emb.batches if texts[0] in b]) == 3
    perm = Flaky(poison=texts[0], fail_times=100, exc=PermanentEmbeddingError)
    with pytest.raises(PermanentEmbeddingError):
        embed_batches(perm, texts, 2, RetryPolicy(max_retries=5), EmbedStats(), lambda _s: None)
    assert len([b for b in perm.batches if texts[0] in b]) == 1  # no retry storm


@pytest.mark.parametrize(
    "bad",
    [
        lambda n, d: np.full((n, d), np.nan, np.float32),
        lambda n, d: np.zeros((n, d + 1), np.float32),
        lambda n, d: np.zeros((max(n - 1, 0), d), np.float32),
        lambda n, d: [],
    ],
    ids=["nan", "wrong-dimension", "too-few", "empty"],
)
@pytest.mark.scenario("B3")
def test_bad_vectors_are_rejected(bad) -> None:  # type: ignore[no-untyped-def]
    class Bad(HashEmbedder):
        def embed_documents(self, texts):  # type: ignore[no-untyped-def]
            return bad(len(texts), self.identity.dimension)

    with pytest.raises(EmbeddingError):
        embed_batches(Bad(), _texts(3), 8, RetryPolicy(max_retries=0), EmbedStats(), lambda _s: None)


@pytest.mark.scenario("B4")
def test_cache_reuses_vectors_and_is_keyed_by_model(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = connect(str(tmp_path / "db"))
    emb = HashEmbedder()
    cache = EmbeddingCache(db, "acme", emb.identity)
    texts = _texts(6) + _texts(2)  # two duplicates inside the batch
    v1, s1 = embed_with_cache(emb, cache, texts, 4, RetryPolicy())
    assert (s1.unique, s1.cache_hits, s1.embedded) == (6, 0, 6)
    assert cache.count() == 6
    calls = len(emb.calls)
    v2, s2 = embed_with_cache(emb, cache, texts, 4, RetryPolicy())
    assert (s2.cache_hits, s2.embedded) == (6, 0) and len(emb.calls) == calls
    assert np.array_equal(v1, v2)
    other = HashEmbedder(version="2")
    other_cache = EmbeddingCache(db, "acme", other.identity)
    assert other_cache.name != cache.name and other.identity.key != emb.identity.key
    _, s3 = embed_with_cache(other, other_cache, texts, 4, RetryPolicy())
    assert s3.cache_hits == 0 and s3.embedded == 6
    with pytest.raises(ValueError, match="identities"):
        embed_with_cache(other, cache, texts, 4, RetryPolicy())
    assert text_key("a") != text_key("a ")


def test_failed_embedding_leaves_cache_untouched(tmp_path) -> None:  # type: ignore[no-untyped-def]
    db = connect(str(tmp_path / "db"))
    texts = _texts(8)
    emb = Flaky(poison=texts[7], fail_times=100)
    cache = EmbeddingCache(db, "acme", emb.identity)
    with pytest.raises(EmbeddingError):
        embed_with_cache(emb, cache, texts, 2, RetryPolicy(max_retries=1), sleep=lambda _s: None)
    assert cache.count() == 0


def test_weights_hash_is_verified(tmp_path) -> None:  # type: ignore[no-untyped-def]
    cfg = EmbeddingConfig(model="m", sha256=MODEL_SHA)
    assert verified_weights_hash(cfg) == MODEL_SHA
    with pytest.raises(ModelIdentityError, match="mismatch"):
        verified_weights_hash(EmbeddingConfig(model="m", sha256="0" * 64))


@pytest.mark.model
def test_real_model_offline_matches_raw_encode(model_path) -> None:  # type: ignore[no-untyped-def]
    from sentence_transformers import SentenceTransformer

    from tessera.embedding.sentence import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(
        EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2", sha256=MODEL_SHA, batch_size=8)
    )
    assert emb.identity.dimension == 384 and emb.identity.max_seq_length == 256
    texts = ["On-call engineers acknowledge pages within five minutes.", "Customs forms for EU shipments."]
    ours = emb.embed_documents(texts)
    raw = SentenceTransformer(str(model_path), device="cpu").encode(texts, normalize_embeddings=True)
    assert np.allclose(ours, raw, atol=1e-5)
    q = emb.embed_query("who answers pages?")
    assert q.shape == (384,) and abs(float(np.linalg.norm(q)) - 1.0) < 1e-4
    assert float(ours[0] @ q) > float(ours[1] @ q)


def test_max_tokens_above_model_limit_is_refused(ws) -> None:  # type: ignore[no-untyped-def]
    from tessera.errors import ConfigError

    ws.tenant("acme", {"a.md": "# A\n\ntext\n"})
    ws.chunking = {"max_tokens": 512, "target_tokens": 200, "overlap_tokens": 16}
    with pytest.raises(ConfigError, match="max_seq_length"):
        ws.context("acme")


def test_identity_comes_from_configs_and_weights_load_lazily() -> None:
    from tessera.embedding.sentence import SentenceTransformerEmbedder

    emb = SentenceTransformerEmbedder(
        EmbeddingConfig(model="sentence-transformers/all-MiniLM-L6-v2", sha256=MODEL_SHA)
    )
    assert (emb.identity.dimension, emb.identity.max_seq_length) == (384, 256)
    assert emb._model is None  # nothing embedded yet: torch weights not loaded


def test_a_writer_between_lookup_and_write_never_stores_a_key_twice(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """Entries are appended only at the version their lookup read; a commit by another writer
    in between (here: the same text embedded by a second run) makes the write merge on the key."""
    db = connect(str(tmp_path / "db"))
    emb = HashEmbedder()
    seed = EmbeddingCache(db, "acme", emb.identity)
    seed.put({text_key("seed"): np.ones(emb.identity.dimension, np.float32)})
    first = EmbeddingCache(db, "acme", emb.identity)
    assert first.get([text_key("a"), text_key("b")]) == {}  # both misses at this version
    other = EmbeddingCache(db, "acme", emb.identity)
    other.get([text_key("a")])
    other.put({text_key("a"): np.full(emb.identity.dimension, 2.0, np.float32)})
    first.put({k: np.full(emb.identity.dimension, 3.0, np.float32) for k in (text_key("a"), text_key("b"))})
    assert first.count() == 3  # seed, a (once: the other run's), b
    got = EmbeddingCache(db, "acme", emb.identity).get([text_key("a"), text_key("b")])
    assert float(got[text_key("a")][0]) == 2.0 and float(got[text_key("b")][0]) == 3.0
    # no writer in between: appended, and looked up as written
    again = EmbeddingCache(db, "acme", emb.identity)
    assert again.get([text_key("c")]) == {}
    again.put({text_key("c"): np.full(emb.identity.dimension, 4.0, np.float32)})
    assert again.count() == 4 and float(again.get([text_key("c")])[text_key("c")][0]) == 4.0


def test_lookups_query_only_the_keys_the_cache_holds(tmp_path, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    """A lookup finds the present keys in one pass over the key column and fetches only those
    with ``key IN (...)``: a first build's misses plan no such query (it kept memory that grew
    with the cache), and a mixed lookup returns exactly the present keys' vectors."""
    import tessera.store.embedding_cache as ec

    monkeypatch.setattr(ec, "_SCAN_BATCH", 7)  # several batches of the key column
    monkeypatch.setattr(ec, "_LOOKUP_BATCH", 3)
    wheres: list[str] = []
    real_open = ec.open_table

    class Spy:
        def __init__(self, table) -> None:  # type: ignore[no-untyped-def]
            self._table = table

        def __getattr__(self, name: str):  # type: ignore[no-untyped-def]
            return getattr(self._table, name)

        def search(self):  # type: ignore[no-untyped-def]
            query = self._table.search()
            where = query.where

            def spied(expr, *args, **kwargs):  # type: ignore[no-untyped-def]
                wheres.append(expr)
                return where(expr, *args, **kwargs)

            query.where = spied
            return query

    def spied_open(db, name):  # type: ignore[no-untyped-def]
        table = real_open(db, name)
        return None if table is None else Spy(table)

    monkeypatch.setattr(ec, "open_table", spied_open)
    db = connect(str(tmp_path / "db"))
    emb = HashEmbedder()
    dim = emb.identity.dimension
    cache = EmbeddingCache(db, "acme", emb.identity)
    held = {text_key(f"held {i}"): np.full(dim, float(i), np.float32) for i in range(30)}
    cache.put(held)
    misses = [text_key(f"new {i}") for i in range(20)]
    assert cache.get(misses) == {} and wheres == []
    present = sorted(held)[:10]
    got = cache.get(present + misses)
    assert sorted(got) == present
    assert all(np.array_equal(got[k], held[k]) for k in present)
    assert len(wheres) == 4 and not any(m in w for m in misses for w in wheres)
    assert cache.get(sorted(held))[sorted(held)[-1]].shape == (dim,)  # every batch of the pass is read
