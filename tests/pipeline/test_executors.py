"""Parse and chunk through every executor: the same staged rows (ids, texts, offsets,
vectors) whichever runs them, work really done in other processes, and a failing document
quarantined the same way inside a worker."""

from __future__ import annotations

import itertools
import os
from dataclasses import dataclass
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.config_execution import ExecutionConfig, parse_execution
from tessera.errors import ConfigError
from tessera.pipeline.executors import (
    SMALLEST,
    TAPER,
    InlineExecutor,
    ProcessExecutor,
    batches,
    document_batches,
    executor_for,
)
from tests.conftest import Workspace

CODE = "def main():\n    return 42\n\n\nclass Runner:\n    def go(self):\n        return main()\n"
DOCS: dict[str, str | bytes] = {
    **{
        f"guide/{i:02d}.md": f"# Guide {i}\n\n## Setup\n\nStep {i} installs the agent on host {i}.\n\n"
        + f"Paragraph of prose about topic {i}. " * 30
        + f"\n\n| key | value |\n|---|---|\n| a | {i} |\n"
        for i in range(24)
    },
    "code/tool.py": CODE,
    "broken.md": b"\x00\x01\x02binary\xff\xfe" * 50,  # quarantined as invalid_content in a worker too
}
COLUMNS = ("id", "doc_id", "text", "embedding_text", "byte_start", "byte_end", "flags", "dup_group", "vector")


def _snapshot(ws: Workspace) -> list[tuple[Any, ...]]:
    return [tuple(r[c] for c in COLUMNS) for r in ws.rows("acme")]


def _pid(_x: int) -> int:
    return os.getpid()


def test_process_pool_runs_in_other_processes_in_order() -> None:
    pids = list(ProcessExecutor(2).map(_pid, list(range(8))))
    assert len(pids) == 8 and os.getpid() not in pids
    assert list(ProcessExecutor(2).map(abs, [-3, 1, -2])) == [3, 1, 2]  # input order kept
    assert batches(list(range(5)), 2) == [[0, 1], [2, 3], [4]]


def test_small_steps_stay_inline_and_config_is_validated() -> None:
    cfg = parse_execution({"executor": "process", "workers": 2, "min_documents": 10})
    assert isinstance(executor_for(cfg, 9), InlineExecutor)
    assert isinstance(executor_for(cfg, 10), ProcessExecutor)
    assert executor_for(ExecutionConfig(executor="inline", min_documents=0), 10**6).name == "inline"
    with pytest.raises(ConfigError, match=r"execution\.executor"):
        parse_execution({"executor": "threads"})
    with pytest.raises(ConfigError, match=r"execution\.workers"):
        parse_execution({"workers": -1})
    with pytest.raises(ConfigError, match=r"execution\.parallel"):
        parse_execution({"parallel": True})


@dataclass(frozen=True)
class _Doc:
    name: int
    size: int


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 5000), max_size=40),
    st.integers(1, 8),
    st.sampled_from([0, 1, 700, 2000, 6000]),
)
def test_document_batches_cut_by_count_and_bytes(sizes: list[int], most: int, budget: int) -> None:
    docs = [_Doc(i, n) for i, n in enumerate(sizes)]
    cfg = ExecutionConfig(batch_documents=most, batch_bytes=budget)
    tasks = document_batches(docs, cfg)
    assert [d for t in tasks for d in t] == docs  # every document once, in input order
    assert all(t and len(t) <= most for t in tasks)
    for task in tasks:  # over the budget only as a task of one document
        assert not budget or sum(d.size for d in task) <= budget or len(task) == 1
    for task, after in itertools.pairwise(tasks):  # a task ends only where it must
        assert len(task) == most or (budget and sum(d.size for d in task) + after[0].size > budget)
    if not budget:
        assert tasks == batches(docs, most)


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.integers(0, 5000), max_size=120),
    st.integers(1, 64),
    st.sampled_from([0, 1, 700, 2000, 6000, 131072]),
    st.integers(2, 8),
)
def test_tasks_shrink_to_their_share_of_what_is_left(
    sizes: list[int], most: int, budget: int, workers: int
) -> None:
    docs = [_Doc(i, n) for i, n in enumerate(sizes)]
    cfg = ExecutionConfig(batch_documents=most, batch_bytes=budget)
    tasks = document_batches(docs, cfg, workers)
    assert [d for t in tasks for d in t] == docs  # every document once, in input order
    assert all(t and len(t) <= most for t in tasks)
    share = TAPER * workers
    left_docs, left_bytes = len(docs), sum(sizes)
    for i, task in enumerate(tasks):
        held = sum(d.size for d in task)
        if budget:  # never over the budget, nor over its share of the bytes left (but one document)
            cap = min(budget, max(-(-budget // SMALLEST), -(-left_bytes // share)))
            assert held <= cap or len(task) == 1
            later = tasks[i + 1][0].size if i + 1 < len(tasks) else None
            # and never cut smaller than it must be: the next document would not fit, or the count is full
            assert later is None or len(task) == most or held + later > cap
        else:
            cap = min(most, max(-(-most // SMALLEST), -(-left_docs // share)))
            assert len(task) <= cap and (i + 1 == len(tasks) or len(task) == cap)
        left_docs, left_bytes = left_docs - len(task), left_bytes - held


def test_a_pooled_step_ends_on_small_tasks_not_a_whole_one() -> None:
    docs = [_Doc(i, 2400 + (i * 37) % 800) for i in range(2000)]  # about 3 KB each, as the bench's corpus
    cfg = ExecutionConfig()
    whole, tapered = document_batches(docs, cfg), document_batches(docs, cfg, workers=2)
    budget = cfg.batch_bytes
    assert [d for t in tapered for d in t] == docs
    assert all(sum(d.size for d in t) > budget - 3200 for t in whole[:-1])  # one worker: whole tasks
    assert all(sum(d.size for d in t) <= budget // SMALLEST for t in tapered[-4:])  # two: small last ones
    assert tapered[: len(tapered) - 16] == whole[: len(tapered) - 16]  # whole tasks until the tail
    assert len(whole) < len(tapered) <= len(whole) + 14  # a dozen more tasks, about 3 ms each


def test_a_bad_batch_budget_names_its_key() -> None:
    assert parse_execution({"batch_bytes": 0}).batch_bytes == 0
    for bad in (-1, "1k", True, 1.5):
        with pytest.raises(ConfigError, match=r"execution\.batch_bytes"):
            parse_execution({"batch_bytes": bad})


def test_process_pool_stages_the_same_rows_as_inline(ws: Workspace) -> None:
    ws.tenant("acme", DOCS)
    first = ws.run("acme", "inline")
    inline = _snapshot(ws)
    assert len({r[1] for r in inline}) == 25  # every good document published, the binary one not

    ws2 = Workspace(ws.root / "second")
    ws2.tenant("acme", DOCS)
    ws2.execution = {
        "executor": "process", "workers": 2, "min_documents": 0, "batch_documents": 5, "batch_bytes": 16384
    }  # fmt: skip
    summary = ws2.run("acme", "pool")
    assert _snapshot(ws2) == inline
    # 26 documents of about 1.1 KB, 5 a task: 6 tasks on one worker; on two the last ones shrink
    assert summary["parse"]["tasks"] > 6 and summary["chunk"]["tasks"] > 5
    assert first["parse"]["tasks"] == first["chunk"]["tasks"] == 1
    assert summary["parse"]["executor"] == "process" and summary["parse"]["workers"] == 2
    assert summary["chunk"]["executor"] == "process" and first["chunk"]["executor"] == "inline"
    assert summary["parse"]["quarantined"] == first["parse"]["quarantined"] == 1
    same = ("chunks", "flags", "exact_duplicates", "text_tokens", "indexed_tokens", "config_hash")
    assert {k: summary["chunk"][k] for k in same} == {k: first["chunk"][k] for k in same}


def _die(x: int) -> int:
    if x == 2:
        os._exit(3)  # a worker killed mid-task (out of memory, a native crash)
    return x


def test_a_dead_worker_fails_the_step_and_the_next_step_gets_a_fresh_pool() -> None:
    from concurrent.futures.process import BrokenProcessPool

    ex = ProcessExecutor(2)
    with pytest.raises(BrokenProcessPool):
        list(ex.map(_die, [1, 2, 3]))
    assert list(ex.map(_die, [1, 3, 4])) == [1, 3, 4]


def _mark(item: tuple[str, int]) -> int:
    folder, i = item
    with open(os.path.join(folder, f"{i:04d}"), "w") as f:
        f.write("started")
    return i


def test_a_slow_consumer_keeps_a_bounded_number_of_batches_in_flight(tmp_path: Any) -> None:
    """``ProcessPoolExecutor.map`` would run every batch at once and keep every result until
    the step consumed it; the executor keeps at most IN_FLIGHT_PER_WORKER per worker ahead."""
    import time

    from tessera.pipeline.executors import IN_FLIGHT_PER_WORKER

    ex = ProcessExecutor(2)
    window = IN_FLIGHT_PER_WORKER * ex.workers
    items = [(str(tmp_path), i) for i in range(40)]
    got = []
    for n, result in enumerate(ex.map(_mark, items), start=1):
        got.append(result)
        time.sleep(0.02)  # the consumer is slower than the workers
        started = len(os.listdir(tmp_path))
        assert started <= n + window, (n, started)
    assert got == list(range(40))  # every item, in input order
    stopped = ex.map(_mark, [(str(tmp_path / "x"), i) for i in range(40)])
    (tmp_path / "x").mkdir()
    next(stopped)
    stopped.close()  # a consumer that stops early leaves nothing queued behind it
    time.sleep(0.5)
    assert len(os.listdir(tmp_path / "x")) <= 1 + window


def test_warm_starts_the_pool_a_process_step_will_use_and_nothing_else() -> None:
    """The listing warms the pool once it knows how many documents will be parsed, so the
    workers start while it writes; a step that will run inline starts nothing."""
    import time
    from concurrent.futures import wait

    from tessera.pipeline import executors

    workers = 3  # a pool no other test uses
    cfg = parse_execution(
        {"executor": "process", "workers": workers, "min_documents": 10, "batch_documents": 4}
    )
    inline = ExecutionConfig(executor="inline", min_documents=0)
    executors._POOLS.pop(workers, None)
    try:
        for quiet, n in ((cfg, 9), (cfg, 4), (inline, 10**6)):  # below min_documents, one batch, inline
            executors.warm(quiet, n)
            assert workers not in executors._POOLS, (quiet, n)
        pool = executors._pool(workers)
        submit = pool.submit

        def slow_submit(fn: Any, *args: Any) -> Any:
            """A busy machine: each warming submit lags until its task could have returned
            and freed its worker, so a pool starts a process on a submit only if the
            warming tasks hold their workers (CI started two of three)."""
            f = submit(fn, *args)
            wait([f], timeout=1.5)
            time.sleep(0.2)  # the pool counts a worker idle just after its result is set
            return f

        pool.submit = slow_submit  # type: ignore[method-assign]
        executors.warm(cfg, 10)
        assert executors._POOLS[workers] is pool
        deadline = time.monotonic() + 60
        while len(pool._processes or {}) < workers:  # started in the background, not waited for
            assert time.monotonic() < deadline, f"the warmed pool started {len(pool._processes)}"
            time.sleep(0.05)
        del pool.submit
        started = set(pool._processes)
        pids = set(ProcessExecutor(workers).map(_pid, list(range(12))))
        assert pids <= started and os.getpid() not in pids  # the step ran on the warmed workers
    finally:
        pool = executors._POOLS.pop(workers, None)
        if pool is not None:
            pool.shutdown(wait=True)


def test_a_warming_task_waits_for_its_gate_and_not_forever(tmp_path: Any) -> None:
    import threading
    import time

    from tessera.pipeline import executors

    gate = str(tmp_path / "go")
    got: list[int] = []
    t = threading.Thread(target=lambda: got.append(executors._ready(gate)))
    t.start()
    time.sleep(0.3)
    assert not got  # held while the gate is shut
    open(gate, "x").close()
    t.join(timeout=5)
    assert got == [os.getpid()]
    executors.READY_HOLD_S, hold = 0.2, executors.READY_HOLD_S
    try:  # a gate that never opens (the submitting thread died) holds a worker a bounded time
        t0 = time.monotonic()
        assert executors._ready(str(tmp_path / "never")) == os.getpid()
        assert time.monotonic() - t0 < 2
    finally:
        executors.READY_HOLD_S = hold


_UNUSED_BY_WORKERS = ("yaml", "pyarrow.compute", "lancedb", "pydantic", "tessera.pipeline.marks")
"""Modules the step's own process uses and a worker never does: the forkserver imports the
workers' modules once before any of them can start (0.19-0.23 s, 36 ms less without the
first two of these), and a task that imported one would pay it in every worker."""


def test_the_workers_preload_leaves_out_what_they_never_use() -> None:
    import ast
    import subprocess
    import sys

    def loaded(modules: str) -> list[str]:
        code = (
            f"import importlib, sys\nfor m in {modules}: importlib.import_module(m)\n"
            f"print([m for m in {_UNUSED_BY_WORKERS!r} if m in sys.modules])"
        )
        out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
        return list(ast.literal_eval(out.stdout))

    from tessera.pipeline.executors import PRELOAD

    assert loaded(repr(PRELOAD)) == []
    # the step's process imports them: the check can fail
    step = loaded("['tessera.pipeline.marks', 'tessera.config']")
    assert {"pyarrow.compute", "tessera.pipeline.marks"} <= set(step)


def test_parse_and_chunk_tasks_import_none_of_them_in_a_worker(ws: Workspace) -> None:
    """Workers of a pool of their own (3: no other test's tasks ran there) run a real parse
    and chunk step, then say what they imported."""
    from tessera.pipeline.executors import _pool

    ws.tenant("acme", DOCS)
    ws.execution = {"executor": "process", "workers": 3, "min_documents": 0, "batch_documents": 2}
    summary = ws.run("acme", "pool-3")
    assert summary["parse"]["workers"] == 3 and summary["chunk"]["executor"] == "process"
    ask = f"[m for m in {_UNUSED_BY_WORKERS!r} if m in __import__('sys').modules]"
    answers = [f.result() for f in [_pool(3).submit(eval, ask) for _ in range(12)]]
    assert answers == [[]] * 12
