"""Query vectors remembered (``tessera.embedding.query_memo``): a text asked again by the same
owner is not embedded again, and what comes back is always what the model gives for that text:
another text's vector never, a caller's changes to a vector never, a failed embedding never.
Owners never share a remembered vector (a hit is faster than a miss: a shared one would tell
one caller what another asked), and a call without an owner is never remembered."""

from __future__ import annotations

import threading
from collections.abc import Sequence

import numpy as np
import pytest

from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.embedding.query_memo import QueryMemo, for_owner, remember_queries


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
    memo = QueryMemo(inner).scoped("alice")
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
    memo = QueryMemo(Counting()).scoped("alice")
    first = memo.embed_query("q")
    first[:] = 7.0  # the vector of the miss
    second = memo.embed_query("q")
    assert second.tobytes() == truth("q")
    second[:] = -3.0  # the vector of a hit
    assert memo.embed_query("q").tobytes() == truth("q")


def test_the_least_recently_used_text_goes_first() -> None:
    inner = Counting()
    whole = QueryMemo(inner, keep=2)
    memo = whole.scoped("alice")
    memo.embed_query("a")
    memo.embed_query("b")
    memo.embed_query("a")  # a is now the most recent
    memo.embed_query("c")  # b goes
    assert len(whole) == 2
    inner.queries.clear()
    for text in ["a", "c", "b"]:
        assert memo.embed_query(text).tobytes() == truth(text)
    assert inner.queries == ["b"]


def test_a_failed_embedding_is_not_remembered() -> None:
    inner = Counting(fail=["q"])
    whole = QueryMemo(inner)
    memo = whole.scoped("alice")
    with pytest.raises(RuntimeError, match="failed"):
        memo.embed_query("q")
    assert len(whole) == 0
    assert memo.embed_query("q").tobytes() == truth("q")
    assert inner.queries == ["q", "q"]


def test_threads_get_each_their_own_texts_vector() -> None:
    inner = Counting()
    whole = QueryMemo(inner, keep=3)  # fewer than the texts: hits, misses and evictions interleave
    texts = [f"question {i % 5}" for i in range(200)]
    got: dict[int, bytes] = {}

    def ask(i: int) -> None:
        got[i] = whole.scoped(f"owner {i % 3}").embed_query(texts[i]).tobytes()

    threads = [threading.Thread(target=lambda s=s: [ask(i) for i in range(s, 200, 8)]) for s in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(got[i] == truth(texts[i]) for i in range(200))
    assert len(whole) <= 3


def test_owners_never_share_a_vector_and_a_call_without_one_is_never_remembered() -> None:
    inner = Counting()
    whole = QueryMemo(inner)
    for owner in ["alice", "bob", "alice", "bob", '["acme", "alice"]', '["globex", "alice"]']:
        assert whole.scoped(owner).embed_query("layoffs in Q3?").tobytes() == truth("layoffs in Q3?")
    assert len(inner.queries) == 4  # once per owner
    inner.queries.clear()
    for _ in range(3):
        assert whole.embed_query("layoffs in Q3?").tobytes() == truth("layoffs in Q3?")
    assert inner.queries == ["layoffs in Q3?"] * 3 and len(whole) == 4


def test_a_memo_is_not_wrapped_again_and_keeps_at_least_one() -> None:
    memo = remember_queries(Counting())
    assert remember_queries(memo) is memo
    assert isinstance(memo, QueryMemo)
    plain = Counting()
    assert for_owner(plain, "alice") is plain  # no memo: nothing to scope
    assert for_owner(memo, "alice").identity == memo.identity
    with pytest.raises(ValueError, match="keep"):
        QueryMemo(Counting(), keep=0)
    assert np.isfinite(for_owner(memo, "alice").embed_query("x")).all()
