"""Typed errors at the boundaries: option values checked, every failure one typed error.

The HTTP API (``tessera.api``) classifies unexpected exceptions with :func:`typed` too. On
the command line, a failing command prints ``tessera: <ErrorType>: <message>`` on stderr,
never a traceback, and exits with one of:

* 0: success;
* 1: a Tessera error (``ConfigError``, ``SourceError``, ``PublishError``, ``StoreUnavailable``,
  ...; a run of several tenants exits 1 when any of them failed), including an unexpected
  exception, reported as ``InternalError`` with its type and where it was raised, never its
  message (it might carry document text); ``TESSERA_TRACEBACK=1`` prints the traceback too;
* 2: bad usage: an unknown, missing or malformed option or value (``InvalidArgument``, which
  names the parameter: ``--k``, ``--as-of``, ``citation``), argparse's own errors included;
* 130: interrupted.

A chunk that does not exist or that the caller may not read prints ``tessera: not found``, the
same line either way.
"""

from __future__ import annotations

import argparse
import os
import re
import sys
import traceback
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import NoReturn

from tessera.errors import (
    ConfigError,
    InternalError,
    InvalidArgument,
    PublishError,
    StoreUnavailable,
    TesseraError,
)

EXIT_OK, EXIT_ERROR, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130
_STORE_PACKAGES = ("lance", "lancedb", "pyarrow")
_RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,127}")
_CHUNK_ID = re.compile(r"[0-9a-f]{64}")


class Parser(argparse.ArgumentParser):
    """argparse, but a usage error raises ``InvalidArgument`` (exit 2, one error line) instead
    of exiting; sub-parsers are made with the same class."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        m = re.match(r"argument ([^:]+): (.*)", message, re.S)
        raise InvalidArgument(m[1], m[2]) if m else InvalidArgument(self.prog, message)


def _message(e: InvalidArgument) -> str:
    """The message without its ``key: `` prefix (argparse adds ``argument --x:`` itself)."""
    text = str(e)
    return text[len(e.key) + 2 :] if text.startswith(f"{e.key}: ") else text


def int_option(low: int, high: int | None = None) -> Callable[[str], int]:
    """An argparse ``type``: an integer in ``[low, high]``."""

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None
        if value < low or (high is not None and value > high):
            bound = f"in [{low}, {high}]" if high is not None else f"at least {low}"
            raise argparse.ArgumentTypeError(f"must be {bound}, got {value}")
        return value

    return parse


def time_option(text: str) -> datetime:
    """An argparse ``type``: an ISO-8601 date or time; UTC when it names no offset."""
    try:
        dt = datetime.fromisoformat(text.strip().replace("Z", "+00:00"))
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"expected an ISO-8601 date or time such as 2025-06-01 or 2025-06-01T09:30:00Z, got {text!r}"
        ) from None
    return dt if dt.tzinfo else dt.replace(tzinfo=UTC)


def expand_option(text: str) -> str:
    """An argparse ``type``: ``parent`` or ``neighbors:N`` (see ``parse_expand``)."""
    from tessera.search.options import parse_expand

    try:
        parse_expand(text)
    except InvalidArgument as e:
        raise argparse.ArgumentTypeError(_message(e)) from None
    return text


def run_id_option(text: str) -> str:
    """An argparse ``type``: a run id names a workspace folder and a tag, so it is plain."""
    if not _RUN_ID.fullmatch(text):
        raise argparse.ArgumentTypeError(
            f"expected 1-128 letters, digits, '.', '-' or '_', starting with a letter or digit, got {text!r}"
        )
    return text


def folder_option(text: str) -> Path:
    """An argparse ``type``: an existing folder."""
    if not Path(text).is_dir():
        raise argparse.ArgumentTypeError(f"{text!r} is not a folder")
    return Path(text)


def chunk_id(text: str, key: str = "chunk_id") -> str:
    if not isinstance(text, str) or not _CHUNK_ID.fullmatch(text):
        shown = repr(text) if len(repr(text)) <= 80 else repr(text)[:77] + "..."
        raise InvalidArgument(key, f"expected a chunk id of 64 hex digits, got {shown}")
    return text


def check_listen(host: str, port: int) -> None:
    """``ConfigError`` naming ``--host`` or ``--port`` unless a server can listen there now."""
    import socket

    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except OSError as e:
        raise ConfigError("--host", f"cannot resolve {host!r}: {e.strerror or e}") from e
    family, kind, proto, _, address = infos[0]
    with socket.socket(family, kind, proto) as s:
        s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            s.bind(address)
        except OSError as e:
            raise ConfigError("--port", f"cannot listen on {host}:{port}: {e.strerror or e}") from e


def _frames(e: BaseException) -> list[traceback.FrameSummary]:
    return list(traceback.extract_tb(e.__traceback__))


def _origin(tb: TracebackType | None) -> str:
    """The top-level package of the innermost Python frame (``lancedb``, ``tessera``, ...)."""
    name = ""
    while tb is not None:
        name = str(tb.tb_frame.f_globals.get("__name__", ""))
        tb = tb.tb_next
    return name.split(".", 1)[0]


def _where(e: BaseException) -> str:
    """``path:line (function)`` of the innermost frame inside this package, else the innermost."""
    frames = _frames(e)
    ours = [f for f in frames if f"{os.sep}tessera{os.sep}" in f.filename]
    if not (ours or frames):
        return "an unknown place"
    frame = (ours or frames)[-1]
    path = frame.filename
    if f"{os.sep}tessera{os.sep}" in path:
        path = "tessera" + path.rsplit(f"{os.sep}tessera", 1)[1]
    return f"{path}:{frame.lineno} ({frame.name})"


def _os_detail(e: OSError) -> str:
    what = e.strerror or type(e).__name__
    return f"{e.filename}: {what}" if e.filename else what


def _under(path: object, roots: tuple[str, ...]) -> bool:
    if not isinstance(path, str | os.PathLike):
        return False
    text = os.path.abspath(os.fspath(path))
    return any(r and (text == r or text.startswith(r.rstrip(os.sep) + os.sep)) for r in roots)


def typed(e: BaseException, store_uri: str | None = None, work_dir: Path | None = None) -> TesseraError:
    """The typed error to report for ``e``: itself when it is a Tessera error; an OSError on a
    path of the store or the work dir, or a store library's I/O failure, ``StoreUnavailable``;
    anything else ``InternalError``, named by type and place. Only system-made text (errno
    strings, paths) is ever quoted from a foreign exception."""
    if isinstance(e, TesseraError):
        return e
    where, origin = _where(e), _origin(e.__traceback__)
    roots = tuple(os.path.abspath(p) for p in (store_uri, work_dir) if p and "://" not in str(p))
    if isinstance(e, OSError) and _under(e.filename, roots):
        return StoreUnavailable(f"cannot read or write {_os_detail(e)}")
    if origin in _STORE_PACKAGES and isinstance(e, RuntimeError | OSError):
        first = re.split(r", /\S*\.cargo/", str(e).splitlines()[0])[0][:240] if str(e) else ""
        io = any(s in first for s in ("LanceError(IO)", "Not found:", "No such file", "Permission denied"))
        store = store_uri or "(store.uri)"
        if io:
            return StoreUnavailable(
                f"the store {store} could not be read ({type(e).__name__} in {origin} at {where}: "
                f"{first}); its tables may be damaged"
            )
        return StoreUnavailable(  # not I/O: a refused operation, not a sign of damage
            f"the store {store} refused an operation ({type(e).__name__} in {origin} at {where}); "
            "TESSERA_TRACEBACK=1 prints the library's message"
        )
    if isinstance(e, OSError):
        return InternalError(f"unexpected OSError at {where}: {_os_detail(e)}")
    return InternalError(
        f"unexpected {type(e).__name__} at {where}; this is a bug (TESSERA_TRACEBACK=1 prints the traceback)"
    )


def disk_error(e: OSError, work_dir: Path, before: int | None, after: int | None) -> PublishError:
    """A run stopped by a full disk or an unwritable work dir: ``PublishError`` naming the path
    and saying whether the tenant's live version moved (it does not before the publish)."""
    path = e.filename or work_dir
    state = (
        f"nothing was published (version {before} stays current)"
        if before == after
        else f"the live version moved from {before} to {after} before the failure"
    )
    return PublishError(f"cannot write {path}: {e.strerror or type(e).__name__}; {state}")


def error_line(e: TesseraError) -> str:
    return f"tessera: {type(e).__name__}: {e}"


def exit_code(e: TesseraError) -> int:
    return EXIT_USAGE if isinstance(e, InvalidArgument) else EXIT_ERROR


def report(e: BaseException, store_uri: str | None = None, work_dir: Path | None = None) -> int:
    """Print the error line for ``e`` (and the traceback with ``TESSERA_TRACEBACK=1``)."""
    err = typed(e, store_uri, work_dir)
    print(error_line(err), file=sys.stderr)
    if os.environ.get("TESSERA_TRACEBACK") == "1":
        traceback.print_exception(e, file=sys.stderr)
    return exit_code(err)
