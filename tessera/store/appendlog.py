"""Append one line to a JSON-lines log, safely shared by threads and processes.

Each line is one ``os.write`` on a descriptor opened with ``O_APPEND`` (mode 0o600, symlinks
refused), so concurrent writers never interleave a line; a looser mode left by someone else is
tightened. Used by the retrieval audit log and the activity journal.
"""

from __future__ import annotations

import os
from pathlib import Path

_FLAGS = os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0)


class ShortWrite(OSError):
    """The kernel wrote only part of the line (a full disk, a quota)."""


def append_line(path: Path, line: bytes) -> None:
    """Write ``line`` (which ends in a newline) at the end of ``path``; OSError on failure."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(path, _FLAGS, 0o600)
    try:
        if os.fstat(fd).st_mode & 0o077:
            os.fchmod(fd, 0o600)
        written = os.write(fd, line)
    finally:
        os.close(fd)
    if written != len(line):
        raise ShortWrite(f"short write ({written} of {len(line)} bytes)")
