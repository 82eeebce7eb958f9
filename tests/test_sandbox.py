"""The parse sandbox: one reused worker process, typed failures, restart after them, no orphans.

A dummy parser registered here for its own content type does what the raw bytes say.
"""

from __future__ import annotations

import ctypes
import os
import signal
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import pytest

from tessera.errors import DocumentError
from tessera.offsets import OffsetMapBuilder
from tessera.parsing import sandbox
from tessera.parsing.base import SandboxLimits, register_parser
from tessera.parsing.dispatch import parse_document
from tessera.parsing.sandbox import run_sandboxed
from tessera.types import ParsedDocument, SourceDocument, sha256_hex

CONTENT_TYPE = "application/x-tessera-sandbox-test"
LIMITS = SandboxLimits(wall_seconds=5, memory_mb=256)


class DummyParser:
    name = "dummy"
    version = "dummy/1"
    content_types: tuple[str, ...] = (CONTENT_TYPE,)
    sandbox = LIMITS

    def parse(self, doc: SourceDocument, raw: bytes) -> ParsedDocument:
        action = raw.decode()
        if action == "sleep":
            time.sleep(60)
        elif action == "segv":
            ctypes.string_at(0)  # null pointer read: SIGSEGV
        elif action == "abort":
            os.abort()
        elif action == "sigkill":
            os.kill(os.getpid(), signal.SIGKILL)
        elif action == "exit":
            os._exit(3)
        elif action == "oom":
            _hog = bytearray(1 << 30)  # 1 GiB > the 256 MB limit
        elif action == "document_error":
            raise DocumentError(doc.doc_id, "custom_reason", "the parser said no")
        elif action == "raise":
            raise ValueError("parser bug")
        text = f"pid {os.getpid()} parsed {doc.doc_id}"
        b = OffsetMapBuilder()
        b.verbatim(text, 0)
        return ParsedDocument(doc.doc_id, text, (), b.build()[1], self.name, self.version, ("note",))


register_parser(CONTENT_TYPE, DummyParser)


def src(raw: bytes, doc_id: str = "d1") -> SourceDocument:
    return SourceDocument("acme", doc_id, f"mem://{doc_id}", sha256_hex(raw), CONTENT_TYPE, (), ("staff",))


def run(action: str, doc_id: str = "d1", limits: SandboxLimits = LIMITS) -> ParsedDocument:
    return run_sandboxed(src(action.encode(), doc_id), action.encode(), limits)


def worker_of(p: ParsedDocument) -> int:
    return int(p.text.split()[1])


def fails(action: str, limits: SandboxLimits = LIMITS) -> DocumentError:
    with pytest.raises(DocumentError) as e:
        run(action, limits=limits)
    assert e.value.doc_id == "d1"
    return e.value


def test_results_come_back_and_the_worker_is_reused() -> None:
    a, b = run("ok", "a"), run("ok", "b")
    assert a.text.endswith("parsed a") and b.text.endswith("parsed b") and a.warnings == ("note",)
    assert worker_of(a) == worker_of(b) == sandbox.worker_pid() != os.getpid()


def test_parse_document_runs_parsers_with_limits_in_the_sandbox() -> None:
    p = parse_document(src(b"ok"), b"ok")
    assert worker_of(p) == sandbox.worker_pid() != os.getpid()


@pytest.mark.scenario("E3")
def test_timeout_kills_the_worker_and_the_next_document_gets_a_new_one() -> None:
    before = worker_of(run("ok"))
    t0 = time.monotonic()
    e = fails("sleep", SandboxLimits(wall_seconds=1, memory_mb=256))
    assert e.reason == "timeout" and time.monotonic() - t0 < 5
    assert not _alive(before)
    assert worker_of(run("ok")) != before


@pytest.mark.parametrize("action", ["segv", "abort", "exit"])
@pytest.mark.scenario("E3")
def test_a_crashing_parser_is_a_crash_and_the_worker_restarts(action: str) -> None:
    before = worker_of(run("ok"))
    e = fails(action)
    assert e.reason == "crash"
    assert ("SIGSEGV" if action == "segv" else "SIGABRT" if action == "abort" else "code 3") in str(e)
    assert worker_of(run("ok")) != before


@pytest.mark.scenario("E3")
def test_memory_error_is_out_of_memory() -> None:
    before = worker_of(run("ok"))
    e = fails("oom")
    assert e.reason == "out_of_memory" and "256 MB" in str(e)
    assert worker_of(run("ok")) != before  # a worker that ran out of memory is replaced


@pytest.mark.scenario("E3")
def test_a_killed_worker_is_out_of_memory() -> None:
    assert fails("sigkill").reason == "out_of_memory"
    assert run("ok").text.startswith("pid ")


def test_document_errors_pass_through_with_their_reason() -> None:
    before = worker_of(run("ok"))
    e = fails("document_error")
    assert e.reason == "custom_reason" and str(e) == "d1: custom_reason: the parser said no"
    e = fails("raise")
    assert e.reason == "parse_error" and "ValueError: parser bug" in str(e)
    assert worker_of(run("ok")) == before  # ordinary failures keep the worker


@pytest.mark.scenario("E3")
def test_a_worker_that_died_between_documents_is_replaced() -> None:
    pid = worker_of(run("ok"))
    os.kill(pid, signal.SIGKILL)
    _wait_gone(pid)
    assert worker_of(run("ok")) != pid


def test_shutdown_stops_the_worker() -> None:
    pid = worker_of(run("ok"))
    sandbox.shutdown()
    assert not _alive(pid) and sandbox.worker_pid() is None


@pytest.mark.scenario("E3")
def test_the_worker_never_outlives_its_parent(tmp_path: Path) -> None:
    script = tmp_path / "parent.py"
    script.write_text(
        textwrap.dedent(
            f"""
            import sys, time
            sys.path.insert(0, {str(Path(__file__).resolve().parent.parent)!r})
            from tests.test_sandbox import run
            print(run("ok").text.split()[1], flush=True)
            run("sleep")  # the parent is killed while the worker parses
            """
        )
    )
    parent = subprocess.Popen([sys.executable, str(script)], stdout=subprocess.PIPE, text=True)
    assert parent.stdout is not None
    pid = int(parent.stdout.readline())
    assert _alive(pid)
    time.sleep(0.3)
    parent.kill()
    parent.wait()
    _wait_gone(pid, 5.0)


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/status", encoding="ascii") as f:
            return "zombie" not in f.read()
    except FileNotFoundError:
        return False


def _wait_gone(pid: int, seconds: float = 5.0) -> None:
    deadline = time.monotonic() + seconds
    while _alive(pid):
        assert time.monotonic() < deadline, f"worker {pid} still alive"
        time.sleep(0.05)
