"""Progress lines: bounded in number, with counts, totals and rates, for every step of a run."""

from __future__ import annotations

import logging
import re
import tempfile
from typing import Any

import pytest

from tessera.embedding.batching import RetryPolicy
from tessera.embedding.fake import HashEmbedder
from tessera.pipeline.progress import LOGGER, Progress
from tessera.store.db import connect
from tessera.store.embedding_cache import EmbeddingCache, embed_with_cache


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_lines_are_rate_limited_and_the_last_one_sums_up(caplog: pytest.LogCaptureFixture) -> None:
    clock = Clock()
    caplog.set_level(logging.INFO, logger=LOGGER)
    p = Progress("acme", "parse", "documents", total=100, every=2.0, clock=clock)
    clock.now = 101.0
    for _ in range(50):  # 50 batches within the first 2 s: no line yet
        p.add(1)
    assert caplog.messages == []
    clock.now = 102.5
    p.add(10)
    assert caplog.messages == ["acme parse: 60/100 documents, 24.0 documents/s"]
    for _ in range(40):  # 5 s more in steps of 1/8 s: two more lines, not forty
        clock.now += 0.125
        p.add(1)
    assert len(caplog.messages) == 3
    p.finish("3 from the parse cache")
    last = "acme parse: 100 documents in 7.5 s (13.3 documents/s); 3 from the parse cache"
    assert caplog.messages[-1] == last


def test_a_step_without_work_or_time_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger=LOGGER)
    Progress("acme", "chunk", "chunks", clock=lambda: 5.0).finish("ignored")
    quick = Progress("acme", "embed", "texts", clock=lambda: 5.0)
    quick.add(3)
    quick.finish()
    assert caplog.messages == ["acme chunk: nothing to do", "acme embed: 3 texts in 0.0 s (- texts/s)"]


def test_embedding_progress_counts_every_text_once() -> None:
    emb = HashEmbedder(dimension=16)
    cache = EmbeddingCache(connect(tempfile.mkdtemp()), "acme", emb.identity)
    seen: list[int] = []
    texts = [f"text {i % 7}" for i in range(20)]  # repeats within the call
    embed_with_cache(emb, cache, texts, 3, RetryPolicy(), progress=seen.append)
    assert sum(seen) == len(texts) and max(seen) <= 13  # the repeats, then batches of at most 3
    seen.clear()
    embed_with_cache(emb, cache, [*texts, "new one"], 3, RetryPolicy(), progress=seen.append)
    assert seen == [20, 1]  # the cache answered 20, one batch embedded the new text


def test_a_run_reports_every_step(ws: Any, caplog: pytest.LogCaptureFixture) -> None:
    ws.tenant("acme", {f"d{i}.md": f"# D{i}\n\nSome text about item {i}.\n" for i in range(5)})
    caplog.set_level(logging.INFO, logger=LOGGER)
    ws.run("acme", "r1")
    lines = [m for m in caplog.messages if m.startswith("acme ")]
    stages = [re.match(r"acme (\w+):", m).group(1) for m in lines]  # type: ignore[union-attr]
    assert stages == ["list", "parse", "chunk", "embed", "publish"]
    assert "5 documents (5 changed" in lines[0] and "5 documents in" in lines[1]
    assert re.search(r"embed: \d+ texts in [\d.]+ s \([\d.]+ texts/s\); 0 from the embedding cache", lines[3])
    assert "publish: version" in lines[4]
    caplog.clear()
    ws.run("acme", "r2")  # a no-op says so
    assert "acme parse: nothing to do" in caplog.messages
    assert any("nothing changed" in m for m in caplog.messages)


def test_tessera_run_prints_progress_on_stderr_and_keeps_stdout_json(ws: Any, capsys: Any) -> None:
    import json

    from tessera.cli import main

    ws.tenant("acme", {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text.\n"})
    args = ["--config", str(ws.config().path), "--fake-embedder", "run", "--tenant", "acme", "--json"]
    assert main([*args, "--progress"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)["ok"] is True  # stdout is still exactly one JSON line
    assert "  acme list: 2 documents" in err and "  acme publish: version" in err
    assert main([*args, "--no-progress"]) == 0
    assert "acme list" not in capsys.readouterr().err
