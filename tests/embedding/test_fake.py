"""The hash embedder: its vectors are those of adding each word's ±1 one at a time."""

from __future__ import annotations

import hashlib
import re

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.embedding import fake
from tessera.embedding.fake import HashEmbedder


def reference(text: str, dim: int) -> np.ndarray:
    """The embedder as first written: one word at a time, then normalized."""
    v = np.zeros(dim, dtype=np.float32)
    for w in re.findall(r"\w+", text.lower()):
        h = int.from_bytes(hashlib.blake2b(w.encode(), digest_size=8).digest(), "little")
        v[h % dim] += 1.0 if (h >> 32) & 1 else -1.0
    norm = float(np.linalg.norm(v))
    if norm == 0.0:
        v[0] = 1.0
        return v
    return v / norm


WORDS = st.sampled_from(["alpha", "beta", "Gamma", "δέλτα", "x1", "the", "THE", "", "  ", "--", "日本語"])
TEXTS = st.lists(WORDS, max_size=60).map(" ".join) | st.text(max_size=200)


@settings(max_examples=150, deadline=None)
@given(st.lists(TEXTS, max_size=8), st.sampled_from([8, 64, 384]))
def test_batch_vectors_equal_the_word_at_a_time_vectors_bit_for_bit(texts: list[str], dim: int) -> None:
    e = HashEmbedder(dimension=dim)
    got = e.embed_documents(texts)
    assert got.dtype == np.float32 and got.shape == (len(texts), dim)
    for row, text in zip(got, texts, strict=True):
        assert row.tobytes() == reference(text, dim).tobytes()
    if texts:
        assert e.embed_query(texts[0]).tobytes() == reference(texts[0], dim).tobytes()


def test_an_empty_text_and_a_text_whose_words_cancel_get_the_first_axis() -> None:
    e = HashEmbedder(dimension=64)
    cancel = next(
        f"{a} {b}"
        for a in (f"w{i}" for i in range(200))
        for b in (f"v{j}" for j in range(200))
        if e._code(a) == -e._code(b)
    )
    v = e.embed_documents(["", cancel, "word"])
    assert v[0].tolist() == v[1].tolist() == [1.0] + [0.0] * 63
    assert abs(float(np.linalg.norm(v[2])) - 1.0) < 1e-6


def test_the_word_memo_is_bounded_and_starting_over_changes_nothing(monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setattr(fake, "_KEEP_WORDS", 5)
    e = HashEmbedder(dimension=16)
    texts = [" ".join(f"w{i}" for i in range(k, k + 9)) for k in range(12)]
    got = e.embed_documents(texts)
    assert len(e._codes) <= 5
    assert [r.tobytes() for r in got] == [reference(t, 16).tobytes() for t in texts]
    assert e.calls == [12]


def test_no_texts_give_an_empty_matrix_of_the_dimension() -> None:
    assert HashEmbedder(dimension=32).embed_documents([]).shape == (0, 32)
