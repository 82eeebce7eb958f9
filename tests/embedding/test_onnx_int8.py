"""The int8 backend on the real bundled model: built offline once per session (in a temporary
folder, with every network connection refused), its vectors against the fp32 model's, its
identity and the cache, and the artifact's reuse and hash check."""

from __future__ import annotations

import json
import socket
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from tessera.config import EmbeddingConfig
from tessera.embedding.batching import RetryPolicy
from tessera.embedding.int8_artifact import MANIFEST_FILE, MODEL_FILE
from tessera.embedding.onnx_int8 import OnnxInt8Embedder
from tessera.embedding.sentence import SentenceTransformerEmbedder
from tessera.errors import ModelIdentityError
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache

# builds the int8 model (20-80 s on 2 cores): `make test-slow` and CI run it, `make test` skips it
pytestmark = [pytest.mark.model, pytest.mark.slow]

MODEL = "sentence-transformers/all-MiniLM-L6-v2"
SHA = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"
TEXTS = [
    "To renew a driver license by mail, send form MV-44 with a check to the DMV.",
    "The fox waited by the river until the moon rose over the silent hills.",
    "Veterans can apply for disability compensation online or at a regional office.",
    "def embed(texts):\n    return model.encode(texts, batch_size=32)",
    "Ünïcödé façade — naïve café, 東京 and emoji 🎉 in one line.",
    "word " * 400,  # past max_seq_length: truncated at 256 word pieces, as sentence-transformers does
    "",
    "Short.",
]
MIN_COSINE = 0.97
"""Per text, int8 against fp32. Measured: 0.975 for the empty text (only [CLS] [SEP], the
worst case), 0.982 to 0.994 for the others, 0.985 at least on the bench's texts
(``bench/results/embed_int8.json``, ``cosine_vs_fp32``); the mean must stay above 0.985."""


class _NoNetwork:
    """Refuse every internet connection (unix sockets stay allowed) while active."""

    def __enter__(self) -> list[Any]:
        self.attempts: list[Any] = []
        self._orig = socket.socket.connect

        def connect(sock: socket.socket, address: Any) -> None:
            if sock.family in (socket.AF_INET, socket.AF_INET6):
                self.attempts.append(address)
                raise OSError(f"network access refused in this test: {address}")
            self._orig(sock, address)

        socket.socket.connect = connect  # type: ignore[method-assign]
        return self.attempts

    def __exit__(self, *exc: object) -> None:
        socket.socket.connect = self._orig  # type: ignore[method-assign]


def int8_cfg(root: Path) -> EmbeddingConfig:
    return EmbeddingConfig(model=MODEL, sha256=SHA, batch_size=4, backend="onnx-int8", artifact_dir=root)


@pytest.fixture(scope="session")
def built(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[OnnxInt8Embedder, float]]:
    """The int8 embedder, its artifact built here (offline, no connection) and timed."""
    root = tmp_path_factory.mktemp("int8-models")
    with _NoNetwork() as attempts:
        emb = OnnxInt8Embedder(int8_cfg(root))
        t0 = time.perf_counter()
        emb.embed_documents(["warm up"])
        seconds = time.perf_counter() - t0
    assert attempts == []
    yield emb, seconds


@pytest.fixture(scope="session")
def fp32() -> SentenceTransformerEmbedder:
    return SentenceTransformerEmbedder(EmbeddingConfig(model=MODEL, sha256=SHA, batch_size=4))


def test_vectors_have_the_dimension_are_normalized_and_close_to_fp32(
    built: tuple[OnnxInt8Embedder, float], fp32: SentenceTransformerEmbedder
) -> None:
    emb, _ = built
    got = emb.embed_documents(TEXTS)
    assert got.shape == (len(TEXTS), 384) and got.dtype == np.float32
    assert np.allclose(np.linalg.norm(got, axis=1), 1.0, atol=1e-5)
    cos = (got * fp32.embed_documents(TEXTS)).sum(axis=1)
    assert cos.min() > MIN_COSINE and cos.mean() > 0.985, dict(zip(TEXTS, cos.round(4), strict=True))
    q = emb.embed_query(TEXTS[0])
    assert q.shape == (384,) and abs(float(np.linalg.norm(q)) - 1) < 1e-5
    assert emb.embed_documents([]).shape == (0, 384)
    # Dynamic quantization scales activations per batch, so a text's int8 vector depends a
    # little on its batch (fp32: only float noise). Measured on 96 bench texts, alone vs in
    # batches of 32: cosine 0.984 at least, 0.991 on average.
    assert float(q @ got[0]) > 0.98  # the query alone vs the same text in the batch of 8
    again = emb.embed_documents(TEXTS[::-1])[::-1]  # same batches of 4, other companions
    assert (again * got).sum(axis=1).min() > 0.98
    assert np.array_equal(emb.embed_documents(TEXTS), got)  # the same batch: the same vectors


def test_tokens_are_the_ones_sentence_transformers_feeds_the_model(
    built: tuple[OnnxInt8Embedder, float], fp32: SentenceTransformerEmbedder
) -> None:
    emb, _ = built
    _, tok = emb._load()
    ours = tok.encode_batch(TEXTS)
    theirs = fp32.model.preprocess(TEXTS)
    assert np.array_equal(np.array([e.ids for e in ours]), theirs["input_ids"].numpy())
    assert np.array_equal(np.array([e.attention_mask for e in ours]), theirs["attention_mask"].numpy())
    assert max(sum(e.attention_mask) for e in ours) == 256  # truncated where the torch model truncates


def test_identity_differs_and_the_cache_never_mixes_the_two(
    built: tuple[OnnxInt8Embedder, float], fp32: SentenceTransformerEmbedder, tmp_path: Path
) -> None:
    emb, _ = built
    assert emb.identity.hash != fp32.identity.hash and emb.identity.key != fp32.identity.key
    db = connect(str(tmp_path / "cache"))
    texts = TEXTS[:3]
    fp32_cache = EmbeddingCache(db, "acme", fp32.identity)
    embed_with_cache(fp32, fp32_cache, texts, 4, RetryPolicy())
    int8_cache = EmbeddingCache(db, "acme", emb.identity)
    assert int8_cache.name != fp32_cache.name
    vectors, stats = embed_with_cache(emb, int8_cache, texts, 4, RetryPolicy())
    assert stats.cache_hits == 0 and stats.embedded == len(texts)  # fp32 vectors never served
    again, stats = embed_with_cache(emb, int8_cache, texts, 4, RetryPolicy())
    assert stats.cache_hits == len(texts) and np.array_equal(again, vectors)
    with pytest.raises(ValueError, match="different model identities"):
        embed_with_cache(
            emb, fp32_cache, texts, 4, RetryPolicy()
        )  # an int8 embedder on the fp32 cache is refused


def test_artifact_is_reused_then_rebuilt_when_tampered(built: tuple[OnnxInt8Embedder, float]) -> None:
    emb, seconds = built
    first = emb.artifact
    assert first.built and first.path.name == MODEL_FILE and first.sha256 and first.bytes > 10**6
    manifest = json.loads((first.path.parent / MANIFEST_FILE).read_text("utf-8"))
    assert manifest["sha256"] == first.sha256 and manifest["source_weights_sha256"] == SHA
    print(f"int8 build {seconds:.1f} s, {first.bytes} bytes, probe cosine {first.probe_cosine:.4f}")
    root = first.path.parent.parent
    again = OnnxInt8Embedder(int8_cfg(root))
    t0 = time.perf_counter()
    assert not again.artifact.built and again.artifact.sha256 == first.sha256
    assert time.perf_counter() - t0 < seconds / 2  # verified and loaded, not rebuilt
    # a corrupted (or swapped) file fails the hash check: the next load rebuilds it
    data = bytearray(first.path.read_bytes())
    data[len(data) // 2] ^= 0xFF
    first.path.write_bytes(bytes(data))
    with _NoNetwork() as attempts:
        rebuilt = OnnxInt8Embedder(int8_cfg(root)).artifact
    assert attempts == [] and rebuilt.built and rebuilt.path == first.path
    assert rebuilt.sha256 != "" and json.loads((first.path.parent / MANIFEST_FILE).read_text())["sha256"] == (
        rebuilt.sha256
    )
    assert not any(p.name.startswith((".build-", ".stale-")) for p in root.iterdir())  # no debris


def test_a_weights_mismatch_is_refused_before_anything_is_built(tmp_path: Path) -> None:
    with pytest.raises(ModelIdentityError, match="sha256 mismatch"):
        OnnxInt8Embedder(
            EmbeddingConfig(model=MODEL, sha256="0" * 64, backend="onnx-int8", artifact_dir=tmp_path)
        )
    assert not tmp_path.exists() or not any(tmp_path.iterdir())
