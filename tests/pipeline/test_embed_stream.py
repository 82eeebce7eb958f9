"""One stream of staged texts, cut into adds anywhere, sends the embedder the same batches and
stages the same vectors (the embed step and embedding during chunking share it); an empty
cache is written every flush and at the end, a filled one answers before the embedder."""

from __future__ import annotations

import itertools
import random
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import EmbeddingError
from tessera.pipeline import embed_stream
from tessera.pipeline.embed_stream import EmbedStream
from tessera.pipeline.staging import VectorWriter
from tessera.store.embedding_cache import EmbeddingCache, text_key
from tests.conftest import Workspace

WORDS = ["alpha", "beta", "gamma", "delta", "epsilon", "zeta"]


def _texts(draw_ids: list[int]) -> list[str]:
    return [f"{WORDS[i % 6]} {i % 7} text" for i in draw_ids]


def _stream(
    ws: Workspace, texts: list[str], cuts: list[int], embedder: HashEmbedder, out: Path
) -> EmbedStream:
    stream = EmbedStream(ws.context("acme", embedder=embedder), VectorWriter(out, None, 64))
    start = 0
    for cut in [*sorted(set(cuts)), len(texts)]:
        stream.add(texts[start:cut])
        start = max(start, cut)
    stream.close()
    return stream


def _cut_run(texts: list[str], split: list[int], filled: bool) -> tuple[list[int], np.ndarray, int, bool]:
    with tempfile.TemporaryDirectory() as tmp:
        ws = Workspace(Path(tmp))
        ws.tenant("acme", {"a.md": "# A\n"})
        if filled:  # a cache that already knows every third text
            seed = EmbedStream(ws.context("acme"), VectorWriter(Path(tmp) / "seed.npy", None, 64))
            seed.add(texts[::3])
            seed.close()
        embedder = HashEmbedder()
        stream = _stream(ws, texts, split, embedder, Path(tmp) / "v.npy")
        return embedder.calls, np.load(Path(tmp) / "v.npy"), stream.stats.embedded, stream.empty_cache


@settings(max_examples=30, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    st.lists(st.integers(0, 40), min_size=1, max_size=60),
    st.lists(st.floats(0, 1), min_size=1, max_size=6),
    st.booleans(),
)
def test_a_stream_cut_anywhere_sends_the_same_batches_and_stages_the_same_vectors(
    ids: list[int], where: list[float], filled: bool
) -> None:
    texts = _texts(ids)
    cuts = [round(f * len(texts)) for f in where]
    runs = []
    groups = (embed_stream.EMPTY_CACHE_GROUP, embed_stream.BATCH_ROWS)
    embed_stream.EMPTY_CACHE_GROUP, embed_stream.BATCH_ROWS = 8, 16  # several groups in a short stream
    try:
        runs = [_cut_run(texts, split, filled) for split in ([], cuts)]  # whole, then cut
    finally:
        embed_stream.EMPTY_CACHE_GROUP, embed_stream.BATCH_ROWS = groups
    (calls, vectors, embedded, empty), (calls2, vectors2, embedded2, empty2) = runs
    assert calls == calls2 and embedded == embedded2 and empty == empty2 == (not filled)
    assert vectors.tobytes() == vectors2.tobytes()
    expected = HashEmbedder().embed_documents(texts)
    assert vectors.shape == (len(texts), 64) and np.array_equal(vectors, expected)
    assert all(0 < n <= 4 for n in calls)  # the workspace's embedding.batch_size


def test_an_empty_cache_is_written_every_flush_and_at_the_end(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_stream, "FLUSH_ENTRIES", 5)
    monkeypatch.setattr(embed_stream, "EMPTY_CACHE_GROUP", 4)
    ws.tenant("acme", {"a.md": "# A\n"})
    texts = [f"text number {i}" for i in range(12)] + ["text number 3", "text number 11"]
    embedder = HashEmbedder()
    stream = _stream(ws, texts, [3, 9], embedder, tmp_path / "v.npy")
    assert stream.empty_cache and sum(embedder.calls) == 13  # "text number 3" was written: again
    assert (stream.stats.texts, stream.stats.unique, stream.stats.embedded) == (14, 13, 13)
    assert stream.stats.cache_hits == 0  # the repeat of 11 is a repeat, not a hit
    cache = EmbeddingCache(ws.context("acme").db, "acme", embedder.identity)
    assert cache.count() == 13  # 5 + 5 + 3: the repeat of 3 once more, the repeat of 11 not
    assert set(cache.get(text_key(t) for t in texts)) == {text_key(t) for t in texts}
    assert np.array_equal(np.load(tmp_path / "v.npy"), HashEmbedder().embed_documents(texts))


def test_a_filled_cache_answers_before_the_embedder(ws: Workspace, tmp_path: Path) -> None:
    ws.tenant("acme", {"a.md": "# A\n"})
    old = [f"old {i}" for i in range(10)]
    _stream(ws, old, [], HashEmbedder(), tmp_path / "seed.npy")
    embedder = HashEmbedder()
    texts = [*old[:6], "new 1", "new 2", *old[6:]]
    stream = _stream(ws, texts, [1, 7], embedder, tmp_path / "v.npy")
    assert not stream.empty_cache
    assert sum(embedder.calls) == 2 and stream.stats.cache_hits == 10  # only the new texts embedded
    assert np.array_equal(np.load(tmp_path / "v.npy"), HashEmbedder().embed_documents(texts))


def test_a_writer_of_unknown_length_stages_what_it_was_given(tmp_path: Path) -> None:
    w = VectorWriter(tmp_path / "v.npy", None, 3)
    w.write(np.ones((2, 3)))
    w.write(np.zeros((0, 3)))
    w.write(np.full((1, 3), 2.0))
    w.close()
    assert np.load(tmp_path / "v.npy").tolist() == [[1, 1, 1], [1, 1, 1], [2, 2, 2]]
    big = VectorWriter(tmp_path / "big.npy", None, 4096)
    big.filled = 10**12 - 1  # the header is rewritten in place whatever the count
    big.close()
    assert (tmp_path / "big.npy").stat().st_size == 128
    bad = VectorWriter(tmp_path / "bad.npy", None, 3)
    with pytest.raises(Exception, match="do not fit"):
        bad.write(np.ones((2, 4)))
    assert not list(tmp_path.glob(".bad*")) and not (tmp_path / "bad.npy").exists()


class _Recording(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.batches: list[list[str]] = []

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.batches.append(list(texts))
        return super().embed_documents(texts)


def test_a_first_build_sorts_a_group_of_many_batches_by_length(ws: Workspace, tmp_path: Path) -> None:
    """Padding: a group's texts reach the model longest first across all its batches, not
    only within one batch (groups of one batch each padded to whatever came along)."""
    ws.tenant("acme", {"a.md": "# A\n"})
    rng = random.Random(7)
    texts = [" ".join(f"w{rng.randrange(999)}" for _ in range(rng.randrange(1, 60))) for _ in range(300)]
    embedder = _Recording()
    _stream(ws, texts, [10, 20, 130], embedder, tmp_path / "v.npy")
    lengths = [[len(t) for t in b] for b in embedder.batches]
    assert len(lengths) == 75  # 300 texts, batches of 4, one group
    assert all(min(a) >= max(b) for a, b in itertools.pairwise(lengths))
    assert np.array_equal(np.load(tmp_path / "v.npy"), HashEmbedder().embed_documents(texts))


class _FailsOnText(HashEmbedder):
    def __init__(self, bad: str) -> None:
        super().__init__()
        self.bad = bad

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if self.bad in texts:
            raise RuntimeError("model crashed")
        return super().embed_documents(texts)


def test_a_failed_group_leaves_the_groups_before_it_cached(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_stream, "EMPTY_CACHE_GROUP", 8)  # groups of 8, written every 4,096
    ws.tenant("acme", {"a.md": "# A\n"})
    texts = [f"text number {i}" for i in range(30)]
    embedder = _FailsOnText("text number 20")
    with pytest.raises(EmbeddingError, match="model crashed"):
        _stream(ws, texts, [], embedder, tmp_path / "v.npy")
    cache = EmbeddingCache(ws.context("acme").db, "acme", embedder.identity)
    assert set(cache.get(text_key(t) for t in texts)) == {text_key(t) for t in texts[:16]}
    retry = HashEmbedder()  # the run again embeds only what was not cached
    _stream(ws, texts, [], retry, tmp_path / "v.npy")
    assert sum(retry.calls) == 14
    assert np.array_equal(np.load(tmp_path / "v.npy"), HashEmbedder().embed_documents(texts))
