"""Query vectors remembered (``tessera.embedding.query_memo``): a text asked again is not
embedded again, and what comes back is always what the model gives for that text: another
text's vector never, a caller's changes to a vector never, a failed embedding never."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.embedding.query_memo import QueryMemo, remember_queries


class Counting(HashEmbedder):
    def __init__(self, fail: Sequence[str] = ()) -> None:
        super().__init__(32)
        self.queries: list[str] = []
        self.fail = list(fail)
        self.lock = threading.Lock()

    def embed_query(self, text: str) -> Vectors:
        with self.lock:
            self.queries.append(text)
            if text in self.fail:
                self.fail.remove(text)
                raise RuntimeError(f"the model failed on {text!r}")
        return super().embed_query(text)


def truth(text: str) -> bytes:
    return HashEmbedder(32).embed_query(text).tobytes()


def test_a_text_asked_again_is_embedded_once_and_others_each_time() -> None:
    inner = Counting()
    memo = QueryMemo(inner)
    assert memo.identity == inner.identity
    for text in ["page the on-call", "dispatch", "page the on-call", "page the on-call", "dispatch"]:
        assert memo.embed_query(text).tobytes() == truth(text)
    assert inner.queries == ["page the on-call", "dispatch"]
    assert memo.embed_query("Page the on-call").tobytes() == truth("Page the on-call")  # exact text
    assert inner.queries[-1] == "Page the on-call"
    docs = memo.embed_documents(["page the on-call"])  # documents are never remembered
    assert docs.shape == (1, 32) and inner.calls[-1] == 1
    memo.embed_documents(["page the on-call"])
    assert inner.calls[-2:] == [1, 1]


def test_a_caller_changing_its_vector_changes_nothing_another_caller_gets() -> None:
    memo = QueryMemo(Counting())
    first = memo.embed_query("q")
    first[:] = 7.0  # the vector of the miss
    second = memo.embed_query("q")
    assert second.tobytes() == truth("q")
    second[:] = -3.0  # the vector of a hit
    assert memo.embed_query("q").tobytes() == truth("q")


def test_the_least_recently_used_text_goes_first() -> None:
    inner = Counting()
    memo = QueryMemo(inner, keep=2)
    memo.embed_query("a")
    memo.embed_query("b")
    memo.embed_query("a")  # a is now the most recent
    memo.embed_query("c")  # b goes
    assert len(memo) == 2
    inner.queries.clear()
    for text in ["a", "c", "b"]:
        assert memo.embed_query(text).tobytes() == truth(text)
    assert inner.queries == ["b"]


def test_a_failed_embedding_is_not_remembered() -> None:
    inner = Counting(fail=["q"])
    memo = QueryMemo(inner)
    with pytest.raises(RuntimeError, match="failed"):
        memo.embed_query("q")
    assert len(memo) == 0
    assert memo.embed_query("q").tobytes() == truth("q")
    assert inner.queries == ["q", "q"]


def test_threads_get_each_their_own_texts_vector() -> None:
    inner = Counting()
    memo = QueryMemo(inner, keep=3)  # fewer than the texts: hits, misses and evictions interleave
    texts = [f"question {i % 5}" for i in range(200)]
    got: dict[int, bytes] = {}

    def ask(i: int) -> None:
        got[i] = memo.embed_query(texts[i]).tobytes()

    threads = [threading.Thread(target=lambda s=s: [ask(i) for i in range(s, 200, 8)]) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == truth(texts[i]) for i in range(200))
    assert len(memo) <= 3


def test_a_memo_is_not_wrapped_again_and_keeps_at_least_one() -> None:
    memo = remember_queries(Counting())
    assert remember_queries(memo) is memo
    with pytest.raises(ValueError, match="keep"):
        QueryMemo(Counting(), keep=0)
    assert np.isfinite(memo.embed_query("x")).all()
