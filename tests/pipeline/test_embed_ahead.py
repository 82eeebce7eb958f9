"""Embedding during the chunk step: the same table as without it; vectors kept only when they
belong to the staged chunks (another file, model or row count is embedded again); an error on
the thread or a failed chunk step leaves nothing behind; a slow embedder holds the queue."""

from __future__ import annotations

import json
import logging
import shutil
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow.parquet as pq
import pytest

from tessera.config_execution import parse_execution
from tessera.embedding.base import Vectors
from tessera.embedding.fake import HashEmbedder
from tessera.errors import ConfigError
from tessera.pipeline import embed_ahead, embed_stream
from tessera.pipeline.embed_ahead import EmbedAhead
from tessera.pipeline.run import chunk_step, embed_step, list_step, parse_step
from tessera.pipeline.staging import CHUNKS, EMBEDDED_AHEAD, VECTORS, ChunkWriter, read_batches
from tests.conftest import Workspace
from tests.pipeline.test_executors import COLUMNS, DOCS

POOL = {"executor": "process", "workers": 2, "min_documents": 0, "batch_documents": 5}


def _snapshot(ws: Workspace) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]


def _pooled(root: Path, **execution: Any) -> Workspace:
    ws = Workspace(root)
    ws.tenant("acme", DOCS)
    ws.execution = {**POOL, **execution}
    return ws


def _leftovers(ws: Workspace) -> list[Path]:
    return [p for p in (ws.root / "work").rglob("*") if "ahead" in p.name]


def test_embedding_during_chunking_publishes_what_the_embed_step_would(ws: Workspace) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "inline")
    inline = _snapshot(ws)
    off = _pooled(ws.root / "off", embed_during_chunk=False)
    off_summary = off.run("acme", "off")
    on = _pooled(ws.root / "on")
    summary = on.run("acme", "on")
    assert _snapshot(off) == _snapshot(on) == inline
    assert summary["chunk"]["embedded_during_chunk"] is True and summary["embed"]["during_chunk"] is True
    assert "embedded_during_chunk" not in off_summary["chunk"]
    assert off_summary["embed"]["during_chunk"] is False
    counts = ("texts", "unique", "cache_hits", "embedded", "batches")
    assert {k: summary["embed"][k] for k in counts} == {k: off_summary["embed"][k] for k in counts}


def _chunked(ws: Workspace, embedder: HashEmbedder | None = None) -> Any:
    rc = ws.context("acme", embedder=embedder or ws.embedder)
    list_step(rc)
    parse_step(rc)
    chunk_step(rc)
    return rc


def _texts(rc: Any) -> list[str]:
    batches = read_batches(rc.workspace / CHUNKS, ["embedding_text"])
    return [str(t) for b in batches for t in b.column(0).to_pylist()]


def test_vectors_that_do_not_belong_to_the_staged_chunks_are_embedded_again(tmp_path: Path) -> None:
    ws = _pooled(tmp_path)
    rc = _chunked(ws)
    assert (rc.workspace / EMBEDDED_AHEAD).exists()
    kept = tmp_path / "kept"
    shutil.copytree(rc.workspace, kept)

    def restore() -> None:
        shutil.rmtree(rc.workspace)
        shutil.copytree(kept, rc.workspace)

    def other_file() -> None:  # one staged text changed after the step: another chunks.parquet
        table = pq.read_table(rc.workspace / CHUNKS)
        texts = table.column("embedding_text").to_pylist()
        texts[3] = texts[3] + " changed"
        i = table.schema.get_field_index("embedding_text")
        pq.write_table(table.set_column(i, table.schema.field(i), [texts]), rc.workspace / CHUNKS)

    def other_model() -> None:
        stamp = json.loads((rc.workspace / EMBEDDED_AHEAD).read_text())
        (rc.workspace / EMBEDDED_AHEAD).write_text(json.dumps({**stamp, "model": "another-model"}))

    def fewer_vectors() -> None:
        np.save(rc.workspace / VECTORS, np.load(rc.workspace / VECTORS)[:-1])

    def no_vectors() -> None:
        (rc.workspace / VECTORS).unlink()

    for tamper in (other_file, other_model, fewer_vectors, no_vectors):
        restore()
        tamper()
        embedder = HashEmbedder()
        summary = embed_step(ws.context("acme", embedder=embedder))
        assert summary["during_chunk"] is False, tamper.__name__
        assert summary["texts"] == len(_texts(rc)) and not (rc.workspace / EMBEDDED_AHEAD).exists()
        assert sum(embedder.calls) == (1 if tamper is other_file else 0)  # the rest from the cache
        assert np.array_equal(np.load(rc.workspace / VECTORS), HashEmbedder().embed_documents(_texts(rc)))
    restore()  # untouched: kept, and the embedder is not asked for anything
    embedder = HashEmbedder()
    assert embed_step(ws.context("acme", embedder=embedder))["during_chunk"] is True
    assert embedder.calls == []
    assert np.array_equal(np.load(rc.workspace / VECTORS), HashEmbedder().embed_documents(_texts(rc)))


class _FailsOnTheThread(HashEmbedder):
    """Raises whenever it is called from the chunk step's embedding thread."""

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        if threading.current_thread().name == "tessera-embed-ahead":
            raise RuntimeError("device lost")
        return super().embed_documents(texts)


def test_an_error_on_the_thread_leaves_the_embed_step_to_embed(
    ws: Workspace, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "inline")
    pooled = _pooled(tmp_path / "pooled")
    with caplog.at_level(logging.WARNING, logger="tessera.pipeline.embed_ahead"):
        summary = pooled.run("acme", "r", embedder=_FailsOnTheThread())
    assert summary["chunk"]["embedded_during_chunk"] is False and summary["embed"]["during_chunk"] is False
    assert "device lost" in caplog.text
    assert _snapshot(pooled) == _snapshot(ws) and not _leftovers(pooled)


def test_a_failed_chunk_step_stops_the_thread_and_leaves_no_vectors(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    ws = _pooled(tmp_path)
    rc = ws.context("acme")
    list_step(rc)
    parse_step(rc)
    write, calls = ChunkWriter.write, []

    def fail_third(self: ChunkWriter, batch: Any) -> None:
        calls.append(1)
        if len(calls) == 3:
            raise OSError("disk full")
        write(self, batch)

    monkeypatch.setattr(ChunkWriter, "write", fail_third)
    with pytest.raises(OSError, match="disk full"):
        chunk_step(rc)
    assert not any(t.name == "tessera-embed-ahead" for t in threading.enumerate())
    assert not _leftovers(ws) and not (rc.workspace / VECTORS).exists()
    monkeypatch.setattr(ChunkWriter, "write", write)
    assert chunk_step(rc)["embedded_during_chunk"] is True  # the step run again embeds again
    assert embed_step(rc)["during_chunk"] is True


class _Gated(HashEmbedder):
    def __init__(self) -> None:
        super().__init__()
        self.gate = threading.Event()

    def embed_documents(self, texts: Sequence[str]) -> Vectors:
        self.gate.wait(10)
        return super().embed_documents(texts)


def test_a_slow_embedder_holds_the_chunk_step_back_instead_of_queueing_texts(
    ws: Workspace, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(embed_ahead, "QUEUED_BATCHES", 2)
    monkeypatch.setattr(embed_stream, "EMPTY_CACHE_GROUP", 4)  # the first add is a group
    ws.tenant("acme", {"a.md": "# A\n"})
    embedder = _Gated()
    rc = ws.context("acme", embedder=embedder)
    rc.workspace.mkdir(parents=True, exist_ok=True)
    ahead = EmbedAhead(rc)
    ahead.add([f"text {i}" for i in range(4)])  # taken by the thread, which waits on the gate
    time.sleep(0.2)
    ahead.add(["a"])
    ahead.add(["b"])  # the queue is full now
    blocked = threading.Thread(target=ahead.add, args=(["c"],))
    blocked.start()
    blocked.join(0.3)
    assert blocked.is_alive()  # the step waits instead of piling up texts
    embedder.gate.set()
    blocked.join(5)
    assert not blocked.is_alive()
    ahead.abandon()
    assert not list(rc.workspace.glob("*ahead*"))


def test_the_switch_is_validated() -> None:
    assert parse_execution({"embed_during_chunk": False}).embed_during_chunk is False
    assert parse_execution({}).embed_during_chunk is True
    for bad in ("yes", 1, None):
        with pytest.raises(ConfigError, match=r"execution\.embed_during_chunk"):
            parse_execution({"embed_during_chunk": bad})


def test_a_thread_that_cannot_start_leaves_the_embed_step_to_embed(
    ws: Workspace, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture
) -> None:
    ws.tenant("acme", DOCS)
    ws.run("acme", "inline")
    pooled = _pooled(tmp_path / "pooled")

    def unreadable(*_a: Any, **_k: Any) -> None:  # the cache's first read fails as the thread starts
        raise OSError("store unreachable")

    monkeypatch.setattr(embed_ahead, "EmbedStream", unreadable)
    with caplog.at_level(logging.WARNING, logger="tessera.pipeline.embed_ahead"):
        summary = pooled.run("acme", "r")
    assert "embedded_during_chunk" not in summary["chunk"] and summary["embed"]["during_chunk"] is False
    assert "store unreachable" in caplog.text and _snapshot(pooled) == _snapshot(ws)
    assert not _leftovers(pooled)
