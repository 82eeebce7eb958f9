"""The activity journal: index changes made outside Dagster, so that Dagster can show them.

``tessera run``, ``retry``, ``restore``, ``model rollback``, ``maintain`` and ``tenant purge``
change a tenant's index without a Dagster run. Once its change is committed, each appends one
:class:`IndexActivity` line to ``{store.work_dir}/events/index_activity.jsonl`` (one
``O_APPEND`` write, :mod:`tessera.store.appendlog`). Dagster's ``cli_activity_sensor`` reads
the lines it has not seen yet (:meth:`ActivityJournal.read`, from a :class:`JournalCursor`)
and reports each one as a runless materialization of the tenant's partition, so the UI shows
the live version after a CLI restore as it does after a job. Runs that Dagster launches write
nothing here: Dagster already records them.

The journal holds identifiers and counts only, never document text. A line is consumed only
once it is complete (a writer's torn line waits), a malformed line is counted and skipped, and
a journal that was replaced or truncated is read again from its start.
"""

from __future__ import annotations

import json
import os
import zlib
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import BinaryIO, Literal, get_args

from pydantic import ConfigDict, TypeAdapter, ValidationError, with_config

from tessera.config import validate_tenant_id
from tessera.errors import ActivityJournalError, TesseraError
from tessera.store.appendlog import append_line

Action = Literal["run", "retry", "restore", "rollback", "maintain", "purge"]
ACTIONS: tuple[str, ...] = get_args(Action)
MAINTENANCE_ASSET = "index_maintenance"
INDEX_ASSET = "published_index"
READ_LIMIT = 1000
"""Events one :meth:`ActivityJournal.read` returns at most; the rest wait for the next read."""
MAX_LINE = 64 * 1024
"""A longer line is not an event this module wrote: it is skipped as malformed."""
TAIL = 64


def journal_path(work_dir: Path) -> Path:
    return Path(work_dir) / "events" / "index_activity.jsonl"


@with_config(ConfigDict(strict=True, extra="forbid"))
@dataclass(frozen=True)
class IndexActivity:
    """One committed change to a tenant's index, made outside Dagster."""

    action: Action
    tenant: str
    run_id: str
    version: int | None = None
    """The table version the change made live (None: no table, or the version did not move)."""
    table: str = ""
    rows: int | None = None
    """Rows of the table after the change, when the command knows them."""
    inserted: int = 0
    updated: int = 0
    deleted: int = 0
    docs_changed: int = 0
    docs_removed: int = 0
    detail: str = ""
    surface: str = "cli"
    at: str = ""
    """UTC time in ISO 8601, set by :meth:`ActivityJournal.record` when empty."""

    def __post_init__(self) -> None:
        if self.action not in ACTIONS:
            raise ValueError(f"unknown action {self.action!r} (one of {', '.join(ACTIONS)})")
        validate_tenant_id(self.tenant)

    @property
    def asset(self) -> str:
        """The Dagster asset the change belongs to (by name; the core knows no Dagster)."""
        return MAINTENANCE_ASSET if self.action == "maintain" else INDEX_ASSET

    def line(self) -> bytes:
        return (json.dumps(asdict(self), sort_keys=True, separators=(",", ":")) + "\n").encode("utf-8")


_LINE = TypeAdapter(IndexActivity)
"""Parses one journal line: strict JSON types, no unknown field (``with_config`` above)."""


@dataclass(frozen=True)
class JournalCursor:
    """Where a reader stopped: the journal file's identity, the byte offset after the last line
    it consumed, and a checksum of the bytes just before that offset (so a journal truncated
    and written again past the old offset is noticed too)."""

    inode: int = 0
    offset: int = 0
    tail: int = 0

    def encode(self) -> str:
        return f"{self.inode}:{self.offset}:{self.tail}"

    @staticmethod
    def decode(text: str | None) -> JournalCursor:
        """The cursor ``encode`` wrote; an empty or foreign one reads from the start."""
        try:
            inode, offset, tail = (int(x) for x in (text or "").split(":"))
        except ValueError:
            return JournalCursor()
        return JournalCursor(inode, offset, tail) if min(inode, offset, tail) >= 0 else JournalCursor()


def _tail(f: BinaryIO, offset: int) -> int:
    """crc32 of the (up to) :data:`TAIL` bytes before ``offset``."""
    start = max(0, offset - TAIL)
    f.seek(start)
    return zlib.crc32(f.read(offset - start))


@dataclass(frozen=True)
class JournalRead:
    events: tuple[IndexActivity, ...]
    cursor: JournalCursor
    malformed: int = 0
    """Lines skipped because they are not events (counted, never fatal)."""
    restarted: bool = False
    """The journal was replaced or truncated since the cursor: read again from its start."""


class ActivityJournal:
    """Appends and reads ``{work_dir}/events/index_activity.jsonl``."""

    def __init__(self, work_dir: Path) -> None:
        self.path = journal_path(work_dir)

    def record(self, event: IndexActivity) -> IndexActivity:
        """Append the event (timestamped now when it has no time); ActivityJournalError if the
        line cannot be written. The change itself is already committed either way."""
        if not event.at:
            stamped = {**asdict(event), "at": datetime.now(UTC).isoformat(timespec="milliseconds")}
            event = IndexActivity(**stamped)
        try:
            append_line(self.path, event.line())
        except OSError as e:
            reason = e.strerror or str(e) or type(e).__name__
            raise ActivityJournalError(f"cannot append to the activity journal {self.path}: {reason}") from e
        return event

    def read(self, cursor: JournalCursor, limit: int = READ_LIMIT) -> JournalRead:
        """The complete lines after ``cursor``, at most ``limit`` events, and the new cursor."""
        try:
            fd = os.open(self.path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_CLOEXEC", 0))
        except FileNotFoundError:
            return JournalRead((), cursor)
        except OSError as e:
            raise ActivityJournalError(f"cannot read the activity journal {self.path}: {e.strerror}") from e
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            restarted = (
                cursor.inode != st.st_ino
                or cursor.offset > st.st_size
                or _tail(f, cursor.offset) != cursor.tail
            )
            offset = 0 if restarted else cursor.offset
            f.seek(offset)
            events: list[IndexActivity] = []
            malformed = 0
            while len(events) < limit:
                line = f.readline(MAX_LINE + 1)
                if not line.endswith(b"\n"):
                    rest = f.readline() if len(line) > MAX_LINE else b""
                    if not rest.endswith(b"\n"):
                        break  # the end, or a line still being written: it waits
                    malformed += 1  # an overlong line: not ours, skipped whole
                    offset += len(line) + len(rest)
                    continue
                offset += len(line)
                try:
                    events.append(_LINE.validate_json(line))
                except (ValidationError, TesseraError):  # a bad tenant id is a ConfigError
                    malformed += 1
            done = JournalCursor(st.st_ino, offset, _tail(f, offset))
        restarted = restarted and cursor != JournalCursor()
        return JournalRead(tuple(events), done, malformed, restarted)
