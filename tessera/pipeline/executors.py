"""Executors: run one function over a step's batches, in input order.

``inline`` calls it in the step's process; ``process`` uses a local pool of worker
processes forked from a ``forkserver`` that imported the step code once (not forked from the
step's process, which holds threads of LanceDB, tokenizers and torch; not ``spawn``ed, which
re-imports everything in every worker, about 1.5 s each on 2 cores). The pool is kept for
the life of the process, so later steps and runs reuse its warm workers;
``ray`` submits Ray tasks to a local cluster it starts or to ``execution.ray_address``. The
function and its batches must be picklable: workers rebuild what they need (a tokenizer, a
blob store client) from small frozen task descriptions and read and write the run's staged
artifacts themselves, so no document body travels through the parent.

As with any ``spawn`` or ``forkserver`` pool, workers import the main module: a script that
runs a tenant itself needs the ``if __name__ == "__main__":`` guard (the CLI, Dagster and
notebooks need nothing), and every worker pays for the main module's imports before its first
task. The ``tessera`` command's entry point is therefore :mod:`tessera.__main__`, which imports
the CLI only when it runs (with ``tessera.cli:main`` each worker imported the whole CLI:
+72 MB a worker, and the parse step of 2,000 documents 3.2-3.5 s instead of 2.0-2.4 s). A
Dagster step's main module is Dagster's command (about 1 s of imports a worker).

A step falls back to ``inline`` for fewer than ``execution.min_documents`` documents, where a
worker start costs more than it saves. Results always come back in input order, so every
executor stages identical rows.
"""

from __future__ import annotations

import logging
import multiprocessing
import os
import tempfile
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from itertools import islice
from typing import Any, Protocol, TypeVar

from tessera.config_execution import ExecutionConfig
from tessera.errors import ConfigError

log = logging.getLogger(__name__)
A = TypeVar("A")
B = TypeVar("B")


class Executor(Protocol):
    name: str
    workers: int

    def map(self, fn: Callable[[A], B], items: Sequence[A]) -> Iterator[B]:
        """``fn`` of each item, yielded in input order as they complete (a step consumes
        them as a stream, so it never holds every batch's result at once)."""
        ...

    def pooled(self, tasks: int) -> bool:
        """Whether ``tasks`` tasks run outside the calling process."""
        ...


class InlineExecutor:
    name = "inline"
    workers = 1

    def pooled(self, tasks: int) -> bool:
        return False

    def map(self, fn: Callable[[A], B], items: Sequence[A]) -> Iterator[B]:
        return (fn(x) for x in items)


PRELOAD = ["tessera.pipeline.work"]
IN_FLIGHT_PER_WORKER = 2
"""Batches submitted ahead per worker. ``Executor.map`` keeps at most this many per worker
queued or finished-but-unconsumed, so a consumer slower than the workers (the step's own
process writing and deduplicating) holds a bounded number of results, not every batch's
(``ProcessPoolExecutor.map`` submits every item at once and keeps each finished result)."""
_POOLS: dict[int, ProcessPoolExecutor] = {}


def _pool(workers: int) -> ProcessPoolExecutor:
    pool = _POOLS.get(workers)
    if pool is None:
        ctx = multiprocessing.get_context("forkserver")
        ctx.set_forkserver_preload(PRELOAD)
        pool = _POOLS[workers] = ProcessPoolExecutor(max_workers=workers, mp_context=ctx)
    return pool


class ProcessExecutor:
    """A local process pool of ``workers`` processes, shared by the steps of this process."""

    name = "process"

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def pooled(self, tasks: int) -> bool:
        """Whether ``tasks`` tasks go to the pool (one task, or one worker, runs here)."""
        return tasks > 1 and self.workers > 1

    def map(self, fn: Callable[[A], B], items: Sequence[A]) -> Iterator[B]:
        if not self.pooled(len(items)):
            yield from (fn(x) for x in items)
            return
        pool = _pool(self.workers)
        pending: deque[Future[B]] = deque()
        todo = iter(items)
        try:
            for x in islice(todo, IN_FLIGHT_PER_WORKER * self.workers):
                pending.append(pool.submit(fn, x))
            while pending:
                result = pending.popleft().result()
                for x in islice(todo, 1):  # one finished, one more in flight
                    pending.append(pool.submit(fn, x))
                yield result
        except BrokenProcessPool:  # a worker died (killed, out of memory): the next step starts afresh
            _POOLS.pop(self.workers, None)
            raise
        finally:  # a consumer that stops early (an error downstream) leaves nothing queued
            for f in pending:
                f.cancel()


class RayExecutor:
    """Ray tasks; a local cluster is started once per process (``num_cpus=workers``) and
    reused by later steps, an address joins an existing one."""

    name = "ray"

    def __init__(self, workers: int, address: str) -> None:
        self.workers, self.address = workers, address

    def pooled(self, tasks: int) -> bool:
        return tasks > 0

    def _ray(self) -> Any:
        try:
            import ray
        except ImportError as e:
            raise ConfigError("execution.executor", "ray is not installed (pip install 'ray')") from e
        if not ray.is_initialized():
            os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # nothing leaves the machine
            if self.address:
                ray.init(address=self.address, log_to_driver=False)
            else:
                ray.init(num_cpus=self.workers, include_dashboard=False, log_to_driver=False)
        return ray

    def map(self, fn: Callable[[A], B], items: Sequence[A]) -> Iterator[B]:
        if not items:
            return
        ray = self._ray()
        task = ray.remote(fn)
        todo = iter(items)
        refs = deque(task.remote(x) for x in islice(todo, IN_FLIGHT_PER_WORKER * self.workers))
        while refs:
            result: B = ray.get(refs.popleft())
            refs.extend(task.remote(x) for x in islice(todo, 1))
            yield result


def worker_count(cfg: ExecutionConfig) -> int:
    return cfg.workers or max(1, os.cpu_count() or 1)


def executor_for(cfg: ExecutionConfig, documents: int) -> Executor:
    """The executor for a step over ``documents`` documents."""
    if cfg.executor == "inline" or documents < cfg.min_documents:
        return InlineExecutor()
    if cfg.executor == "process":
        return ProcessExecutor(worker_count(cfg))
    if cfg.executor == "ray":
        return RayExecutor(worker_count(cfg), cfg.ray_address)
    raise ConfigError("execution.executor", f"unknown executor {cfg.executor!r}")


READY_HOLD_S = 10.0
"""How long a warming task waits for its gate before it returns anyway."""


def _ready(gate: str) -> int:
    """A warming task: it holds its worker until every warming task has been submitted.

    ``ProcessPoolExecutor`` starts a process on a submit only while no worker is idle, so a
    task that returned at once could free its worker before the next submit, and the pool
    would start fewer workers than asked (seen in CI: two of three). The gate is a file the
    submitting thread creates after its last submit."""
    deadline = time.monotonic() + READY_HOLD_S
    while not os.path.exists(gate) and time.monotonic() < deadline:
        time.sleep(0.002)
    return os.getpid()


def warm(cfg: ExecutionConfig, documents: int) -> None:
    """Start the worker pool that a step over ``documents`` documents will use, without
    waiting for it: the listing calls this once it knows how many documents the run will
    parse, so the workers start (a forkserver, its imports, a fork per worker) while it stores
    the changed bytes and writes the listing, instead of at the start of the parse step.
    Nothing happens for a step that will run inline. Not sooner, and the parse step waits for
    the pool instead of running tasks itself: on 2 cores the forkserver's imports take the CPU
    either would use (measured in the README's *The process pool is the standard library's*)."""
    ex = executor_for(cfg, documents)
    if isinstance(ex, ProcessExecutor) and ex.pooled(-(-documents // cfg.batch_documents)):  # fewest tasks
        pool = _pool(ex.workers)  # the pool's first submit starts its processes and waits for them:
        threading.Thread(target=_submit_ready, args=(pool, ex.workers), daemon=True).start()  # not here


def _submit_ready(pool: ProcessPoolExecutor, workers: int) -> None:
    with tempfile.TemporaryDirectory(prefix="tessera-warm-") as folder:
        gate = os.path.join(folder, "go")
        try:
            try:
                futures = [pool.submit(_ready, gate) for _ in range(workers)]
            finally:
                open(gate, "x").close()  # an empty file is the whole signal
            wait(futures)  # the folder goes once no task looks at it
        except (BrokenProcessPool, RuntimeError) as e:  # the step's own submit meets it again
            log.warning("worker pool did not start ahead of the parse step: %s", e)


def batches(items: Sequence[A], size: int) -> list[list[A]]:
    return [list(items[i : i + size]) for i in range(0, len(items), size)]


class Sized(Protocol):
    @property
    def size(self) -> int: ...


S = TypeVar("S", bound=Sized)


TAPER = 2
"""Where a step runs on ``workers`` workers, a task takes at most 1/(TAPER x workers) of the
work still to cut (bytes, or documents where ``execution.batch_bytes`` is 0)."""
SMALLEST = 16
"""... but never less than 1/SMALLEST of a whole task (a task's own cost, about 3 ms, bounds
how small the last ones are worth cutting)."""


def document_batches(docs: Sequence[S], cfg: ExecutionConfig, workers: int = 1) -> list[list[S]]:
    """A step's tasks: consecutive documents, at most ``execution.batch_documents`` of them
    and, where ``execution.batch_bytes`` is set, at most that many source bytes (a larger
    document is a task of its own), in input order.

    A task costs about 3 ms besides its documents, in its worker and the step's process (the
    result's pickling, the pool's queues; 625 chunk tasks of 16 documents took a
    10,000-document chunk step 0.7 s longer on 2 workers than 209 tasks of 48, medians of 6
    alternated runs), and a step waits at most about one task's time for its last worker.
    Bytes bound a task's time better than a count: forty 3 KB Markdown files fill a budget of
    128 KiB, and a 5 MB PDF is a task of its own.

    With more than one worker the last tasks shrink (guided self-scheduling): each takes at
    most its share, 1/(:data:`TAPER` x ``workers``), of what is left, and no less than
    1/:data:`SMALLEST` of a whole task, so the step's last worker finishes about a small
    task, not a whole one, after the others. Whole tasks stay whole until then: the 2,000
    documents of ``bench.parallel_scaling`` (2.5 KB each) on 2 workers are 35 tasks of 52 and
    15 of 45 down to 1, against 38 of 52 and one of 24. Between the two workers' last tasks'
    ends, in six 2-worker runs of that corpus alternated with the code before: parse
    0.000-0.003 s against 0.005-0.090 s (median 0.028), chunk 0.003-0.010 s against
    0.073-0.267 s (median 0.093); the step waits for the later one."""
    out: list[list[S]] = []
    current: list[S] = []
    held = 0
    left_docs, left_bytes = len(docs), sum(d.size for d in docs)  # still to cut
    most, budget = _caps(cfg, workers, left_docs, left_bytes)
    for doc in docs:
        over = 0 < budget < held + doc.size
        if current and (len(current) >= most or over):
            out.append(current)
            left_docs, left_bytes = left_docs - len(current), left_bytes - held
            current, held = [], 0
            most, budget = _caps(cfg, workers, left_docs, left_bytes)
        current.append(doc)
        held += doc.size
    if current:
        out.append(current)
    return out


def _caps(cfg: ExecutionConfig, workers: int, left_docs: int, left_bytes: int) -> tuple[int, int]:
    """The next task's most documents and bytes, given the documents and bytes left to cut."""
    most, budget = cfg.batch_documents, cfg.batch_bytes
    if workers <= 1:
        return most, budget
    share = TAPER * workers
    if budget:  # bytes bound a task's time better than a count: they taper
        return most, min(budget, max(-(-budget // SMALLEST), -(-left_bytes // share)))
    return min(most, max(-(-most // SMALLEST), -(-left_docs // share))), budget
