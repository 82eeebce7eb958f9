"""Parsers in a child process with a wall-time and memory limit (native code can crash or hang).

One long-lived worker interpreter (started with ``subprocess``: it shares no state with the
parent's threads or open documents, and unlike a ``multiprocessing`` spawn it does not
re-import the parent's ``__main__``) serves parse requests one at a time over a pipe and is reused
across documents; starting a fresh interpreter per document would cost seconds. The worker is
killed and restarted lazily after a timeout, a crash or running out of memory, and recycled
after :data:`RECYCLE_JOBS` documents or once its RSS passes :data:`RECYCLE_RSS_MB`.

* Request: pickled ``(doc JSON, raw bytes, pickled parser or None, memory_mb)``; the parser
  instance itself is sent when it pickles (so a parser registered at run time, e.g. in a
  test, works), else the child looks it up by content type.
* Memory: ``RLIMIT_AS`` is set to the worker's current address space plus ``memory_mb`` for
  the duration of a request (the interpreter and its libraries already map several hundred
  MB of address space before any parsing).
* Reply: first ``("started",)`` as soon as the request is read (a worker that died between
  documents is then restarted and the document resent, not blamed), then ``parsed_to_json``
  as JSON bytes, or a typed failure.

Failures become :class:`DocumentError` reasons: ``timeout`` (no reply within
``wall_seconds``; the worker is killed), ``crash`` (the worker died: a signal such as SIGSEGV,
or an exit), ``out_of_memory`` (``MemoryError`` or an allocation failure in the child, or
the worker was SIGKILLed, as the kernel's OOM killer does), ``parse_error`` (another
exception in the parser); a ``DocumentError`` raised by the parser keeps its reason.

The worker never outlives the parent: it is stopped at exit (``atexit``), reads EOF when the
parent's end of the pipe closes, and a watchdog thread exits it when its parent process is
gone (e.g. the parent was SIGKILLed mid-parse).
"""

from __future__ import annotations

import atexit
import contextlib
import importlib
import json
import os
import pickle
import resource
import signal
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection, wait
from typing import Any

from tessera.errors import DocumentError
from tessera.parsing.base import SandboxLimits, get_parser
from tessera.serde import doc_from_json, doc_to_json, parsed_from_json, parsed_to_json
from tessera.types import ParsedDocument, SourceDocument

STARTUP_SECONDS = 120.0
ACK_SECONDS = 30.0
RECYCLE_JOBS = 500
RECYCLE_RSS_MB = 1536
_MB = 1 << 20


# -- child side --------------------------------------------------------------------------


def _status_kb(field: str) -> int:
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith(field):
                    return int(line.split()[1])
    except OSError:
        pass
    return 0


def _watch_parent(parent_pid: int) -> None:
    def loop() -> None:
        while True:
            if os.getppid() != parent_pid:
                os._exit(0)
            time.sleep(0.5)

    threading.Thread(target=loop, name="parent-watchdog", daemon=True).start()


def _handle(request: tuple[Any, ...]) -> tuple[tuple[Any, ...], bool]:
    """The reply for one request and whether the worker should exit after sending it."""
    doc_json, raw, payload, memory_mb = request
    soft, hard = resource.getrlimit(resource.RLIMIT_AS)
    limit = _status_kb("VmSize:") * 1024 + int(memory_mb) * _MB
    if hard != resource.RLIM_INFINITY:
        limit = min(limit, hard)
    try:
        resource.setrlimit(resource.RLIMIT_AS, (limit, hard))
        doc = doc_from_json(doc_json)
        parser = pickle.loads(payload) if payload is not None else get_parser(doc.content_type)
        body = json.dumps(parsed_to_json(parser.parse(doc, raw))).encode("utf-8")
        return ("ok", body, _status_kb("VmRSS:") // 1024), False
    except DocumentError as e:
        return ("document_error", e.reason, str(e)), False
    except MemoryError as e:
        return ("out_of_memory", f"MemoryError: {e}"), True
    except Exception as e:
        text = f"{type(e).__name__}: {e}"
        if any(s in text.lower() for s in ("out of memory", "malloc", "cannot allocate")):
            return ("out_of_memory", text[:500]), True
        return ("parse_error", text[:500]), False
    finally:
        with contextlib.suppress(ValueError, OSError):
            resource.setrlimit(resource.RLIMIT_AS, (soft, hard))


def _serve(conn_in: Connection, conn_out: Connection, parent_pid: int, preload: list[str]) -> None:
    """The worker's main loop: one request at a time until EOF or a ``None`` request."""
    _watch_parent(parent_pid)
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # Ctrl-C is the parent's to handle
    for module in preload:
        with contextlib.suppress(Exception):
            importlib.import_module(module)
    conn_out.send_bytes(pickle.dumps(("ready", os.getpid())))
    while True:
        try:
            data = conn_in.recv_bytes()
        except (EOFError, OSError):
            return
        request = pickle.loads(data)
        if request is None:
            return
        try:
            conn_out.send_bytes(pickle.dumps(("started",)))
        except (OSError, ValueError):
            return
        reply, stop = _handle(request)
        try:
            conn_out.send_bytes(pickle.dumps(reply))
        except (OSError, ValueError):
            return
        if stop:
            return


def _main() -> None:
    """Entry point of the worker interpreter: ``argv = [fd_in, fd_out, parent_pid, json preload]``."""
    fd_in, fd_out, parent_pid = (int(a) for a in sys.argv[1:4])
    preload = json.loads(sys.argv[4])
    _serve(Connection(fd_in, writable=False), Connection(fd_out, readable=False), parent_pid, preload)


_BOOT = (
    "import json, sys; sys.path[:0] = json.loads(sys.argv.pop(1)); "
    "from tessera.parsing.sandbox import _main; _main()"
)


# -- parent side -------------------------------------------------------------------------


class _Worker:
    """A worker interpreter started with ``subprocess`` (not ``multiprocessing``: a spawn
    context would re-import the parent's ``__main__``, which breaks unguarded scripts)."""

    def __init__(self, preload: tuple[str, ...]) -> None:
        to_child, child_in = os.pipe()[::-1]
        child_out, from_child = os.pipe()[::-1]
        path = [p for p in sys.path if p]
        try:
            self.proc = subprocess.Popen(
                [
                    sys.executable,
                    "-c",
                    _BOOT,
                    json.dumps(path),
                    str(child_in),
                    str(child_out),
                    str(os.getpid()),
                    json.dumps(list(preload)),
                ],
                pass_fds=(child_in, child_out),
                stdin=subprocess.DEVNULL,
                close_fds=True,
            )
        finally:
            os.close(child_in)
            os.close(child_out)
        self.send = Connection(to_child, readable=False)
        self.conn = Connection(from_child, writable=False)
        self.owner = os.getpid()
        self.jobs = 0
        reply = self.receive(STARTUP_SECONDS)
        if not reply or reply[0] != "ready":
            self.kill()
            raise RuntimeError(f"parse sandbox worker did not start: {reply!r}")
        self.pid = int(reply[1])

    def alive(self) -> bool:
        return self.proc.poll() is None

    def receive(self, timeout: float) -> tuple[Any, ...] | None:
        """The next reply; ``("died", returncode)`` if the worker died; None on timeout."""
        if not wait([self.conn], timeout=timeout):
            return None
        try:
            reply: tuple[Any, ...] = pickle.loads(self.conn.recv_bytes())
            return reply
        except (EOFError, OSError):
            pass
        try:
            code: int | None = self.proc.wait(5)
        except subprocess.TimeoutExpired:
            code = None
        return ("died", code)

    def kill(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(5)
        self.send.close()
        self.conn.close()

    def stop(self) -> None:
        with contextlib.suppress(OSError, ValueError):
            self.send.send_bytes(pickle.dumps(None))
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(2)
        self.kill()


_LOCK = threading.Lock()
_STATE: dict[str, _Worker] = {}


def _current(preload: tuple[str, ...]) -> _Worker:
    worker = _STATE.get("worker")
    if worker is not None and worker.owner != os.getpid():
        worker = None  # inherited through fork: that worker belongs to our parent
    if worker is not None and not worker.alive():
        worker.kill()
        worker = None
    if worker is None:
        worker = _Worker(preload)
        _STATE["worker"] = worker
    return worker


def _discard(kill: bool = True) -> None:
    worker = _STATE.pop("worker", None)
    if worker is not None and worker.owner == os.getpid():
        if kill:
            worker.kill()
        else:
            worker.stop()


def shutdown() -> None:
    """Stop the worker (registered with ``atexit``; also useful in tests)."""
    with _LOCK:
        _discard(kill=False)


atexit.register(shutdown)


def worker_pid() -> int | None:
    """The live worker's pid, if any (for tests and diagnostics)."""
    worker = _STATE.get("worker")
    return worker.pid if worker is not None and worker.alive() else None


def _payload(content_type: str) -> tuple[bytes | None, tuple[str, ...]]:
    parser = get_parser(content_type)
    module = type(parser).__module__
    preload = ("tessera.serde", module) if module != "__main__" else ("tessera.serde",)
    try:
        return pickle.dumps(parser), preload
    except Exception:
        return None, preload


def _died(doc_id: str, exitcode: int | None) -> DocumentError:
    if exitcode is not None and exitcode < 0:
        sig = -exitcode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = str(sig)
        if sig == signal.SIGKILL:
            return DocumentError(
                doc_id, "out_of_memory", f"parser process killed ({name}), likely out of memory"
            )
        return DocumentError(doc_id, "crash", f"parser process died of signal {name}")
    return DocumentError(doc_id, "crash", f"parser process exited with code {exitcode}")


def _message(e_text: str, doc_id: str, reason: str) -> str:
    prefix = f"{doc_id}: {reason}: "
    return e_text[len(prefix) :] if e_text.startswith(prefix) else e_text


def _submit(request: bytes, preload: tuple[str, ...]) -> _Worker | None:
    """Hand ``request`` to the worker; None if it died (or hung) before taking it.

    The worker acknowledges a request as soon as it has read it, so a worker that died
    between documents (or is still being torn down) is never blamed on the next document.
    """
    worker = _current(preload)
    try:
        worker.send.send_bytes(request)
    except OSError:
        return None
    ack = worker.receive(ACK_SECONDS)
    return worker if ack is not None and ack[0] == "started" else None


def run_sandboxed(doc: SourceDocument, raw: bytes, limits: SandboxLimits) -> ParsedDocument:
    """Parse ``raw`` with the parser for ``doc.content_type`` in the sandbox worker."""
    payload, preload = _payload(doc.content_type)
    request = pickle.dumps((doc_to_json(doc), raw, payload, limits.memory_mb))
    with _LOCK:
        worker = _submit(request, preload)
        if worker is None:  # a dead worker, then a fresh one, did not take the document
            _discard()
            worker = _submit(request, preload)
            if worker is None:
                _discard()
                raise DocumentError(doc.doc_id, "crash", "the parse worker did not accept the document")
        worker.jobs += 1
        reply = worker.receive(limits.wall_seconds)
        if reply is None:
            _discard()
            raise DocumentError(doc.doc_id, "timeout", f"parsing took longer than {limits.wall_seconds:g}s")
        kind = reply[0]
        if kind == "died":
            _discard()
            raise _died(doc.doc_id, reply[1])
        if kind == "out_of_memory":
            _discard()
            raise DocumentError(doc.doc_id, "out_of_memory", f"{reply[1]} (limit {limits.memory_mb} MB)")
        if kind == "document_error":
            raise DocumentError(doc.doc_id, reply[1], _message(reply[2], doc.doc_id, reply[1]))
        if kind == "parse_error":
            raise DocumentError(doc.doc_id, "parse_error", reply[1])
        body, rss_mb = reply[1], reply[2]
        if worker.jobs >= RECYCLE_JOBS or rss_mb > RECYCLE_RSS_MB:
            _discard(kill=False)
    result: ParsedDocument = parsed_from_json(json.loads(body))
    return result
