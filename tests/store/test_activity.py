"""The activity journal: what the CLI commits outside Dagster, read back once, in order.

Attacks: a torn last line, garbage and forged lines (unknown fields, wrong types, an unknown
action, a path as tenant), an overlong line, a journal replaced or truncated behind the
reader's back, a symlink planted at the journal's path, a foreign cursor, and concurrent
writers. Each time the legitimate events are still all read, exactly once.
"""

from __future__ import annotations

import json
import os
import stat
import threading
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tessera.errors import ActivityJournalError
from tessera.store.activity import (
    MAX_LINE,
    ActivityJournal,
    IndexActivity,
    JournalCursor,
    journal_path,
)


def _event(i: int, tenant: str = "acme") -> IndexActivity:
    return IndexActivity("restore", tenant, f"run-{i}", version=i, table="chunks__acme", rows=10 * i)


def _raw(work: Path, data: bytes) -> None:
    path = journal_path(work)
    path.parent.mkdir(parents=True, exist_ok=True)
    with open(path, "ab") as f:
        f.write(data)


def test_events_are_read_once_in_order_and_stamped(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)
    written = [journal.record(_event(i)) for i in range(1, 4)]
    assert all(e.at.endswith("+00:00") for e in written)  # UTC, set at record time
    first = journal.read(JournalCursor())
    assert first.events == tuple(written) and first.malformed == 0 and not first.restarted
    assert journal.read(first.cursor).events == ()  # nothing twice
    later = journal.record(_event(4))
    assert journal.read(first.cursor).events == (later,)
    mode = stat.S_IMODE(os.stat(journal.path).st_mode)
    assert mode == 0o600  # operators' counts are not world-readable


def test_a_missing_journal_reads_as_nothing(tmp_path: Path) -> None:
    read = ActivityJournal(tmp_path).read(JournalCursor(7, 100))
    assert read.events == () and read.cursor == JournalCursor(7, 100)


def test_a_torn_last_line_waits_until_it_is_complete(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)
    journal.record(_event(1))
    line = _event(2).line()
    _raw(tmp_path, line[:20])  # a writer caught mid-line
    read = journal.read(JournalCursor())
    assert [e.version for e in read.events] == [1] and read.malformed == 0
    _raw(tmp_path, line[20:])
    again = journal.read(read.cursor)
    assert [e.version for e in again.events] == [2] and again.malformed == 0


@pytest.mark.parametrize(
    "bad",
    [
        b"not json\n",
        b"[1, 2]\n",
        b'{"action": "restore", "tenant": "acme", "run_id": "r", "extra": 1}\n',
        b'{"action": "restore", "tenant": "acme", "run_id": "r", "version": "7"}\n',
        b'{"action": "restore", "tenant": "acme", "run_id": "r", "inserted": 1.5}\n',
        b'{"action": "restore", "tenant": "acme", "run_id": "r", "version": true}\n',
        b'{"action": "drop-table", "tenant": "acme", "run_id": "r"}\n',
        b'{"action": "restore", "tenant": "../globex", "run_id": "r"}\n',
        b'{"action": "restore", "tenant": ["acme"], "run_id": "r"}\n',
        b'{"action": "restore", "run_id": "r"}\n',
        b"\xff\xfe\n",
    ],
)
def test_lines_that_are_not_events_are_skipped_and_counted(tmp_path: Path, bad: bytes) -> None:
    journal = ActivityJournal(tmp_path)
    journal.record(_event(1))
    _raw(tmp_path, bad)
    journal.record(_event(2))
    read = journal.read(JournalCursor())
    assert [e.version for e in read.events] == [1, 2] and read.malformed == 1


def test_an_overlong_line_is_skipped_whole(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)
    _raw(tmp_path, b"x" * (3 * MAX_LINE) + b"\n")
    journal.record(_event(1))
    read = journal.read(JournalCursor())
    assert [e.version for e in read.events] == [1] and read.malformed == 1
    assert read.cursor.offset == journal.path.stat().st_size


def test_a_replaced_or_truncated_journal_is_read_from_its_start(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)
    for i in range(3):
        journal.record(_event(i))
    cursor = journal.read(JournalCursor()).cursor
    journal.path.rename(journal.path.with_suffix(".old"))  # rotated away: a new file
    journal.record(_event(10))
    read = journal.read(cursor)
    assert read.restarted and [e.version for e in read.events] == [10]
    os.truncate(journal.path, 0)  # emptied in place, then as long again: the tail differs
    journal.record(_event(11))
    again = journal.read(read.cursor)
    assert again.restarted and [e.version for e in again.events] == [11]
    os.truncate(journal.path, 0)  # emptied in place and not written: the offset is past the end
    assert journal.read(again.cursor).restarted


def test_reads_are_bounded_and_resume(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)
    for i in range(5):
        journal.record(_event(i))
    cursor, seen = JournalCursor(), []
    for expected in (2, 2, 1, 0):
        read = journal.read(cursor, limit=2)
        assert len(read.events) == expected
        seen += [e.version for e in read.events]
        cursor = read.cursor
    assert seen == [0, 1, 2, 3, 4]


def test_a_symlink_at_the_journal_path_is_refused(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere.txt"
    target.write_text("keep me\n")
    path = journal_path(tmp_path / "work")
    path.parent.mkdir(parents=True)
    path.symlink_to(target)
    journal = ActivityJournal(tmp_path / "work")
    with pytest.raises(ActivityJournalError, match="activity journal"):
        journal.record(_event(1))
    with pytest.raises(ActivityJournalError):
        journal.read(JournalCursor())
    assert target.read_text() == "keep me\n"  # nothing written through the link


@pytest.mark.parametrize("text", [None, "", "garbage", "1:2", "1:2:3:4", "-1:5:0", "5:-1:0", "a:b:c"])
def test_a_foreign_cursor_reads_from_the_start(tmp_path: Path, text: str | None) -> None:
    journal = ActivityJournal(tmp_path)
    journal.record(_event(1))
    assert [e.version for e in journal.read(JournalCursor.decode(text)).events] == [1]
    cursor = journal.read(JournalCursor()).cursor
    assert JournalCursor.decode(cursor.encode()) == cursor


def test_concurrent_writers_never_interleave(tmp_path: Path) -> None:
    journal = ActivityJournal(tmp_path)

    def write(w: int) -> None:
        for i in range(100):
            journal.record(IndexActivity("run", "acme", f"w{w}-{i}", detail="x" * (w * 300)))

    threads = [threading.Thread(target=write, args=(w,)) for w in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    read = journal.read(JournalCursor(), limit=10_000)
    assert read.malformed == 0 and len(read.events) == 800
    assert len({e.run_id for e in read.events}) == 800


def test_an_event_refuses_an_unknown_action_or_a_bad_tenant() -> None:
    with pytest.raises(ValueError, match="unknown action"):
        IndexActivity("delete", "acme", "r")  # type: ignore[arg-type]
    with pytest.raises(Exception, match="tenant"):
        IndexActivity("run", "../acme", "r")
    assert _event(1).asset == "published_index"
    assert IndexActivity("maintain", "acme", "r").asset == "index_maintenance"


_garbage = st.text(alphabet=st.characters(blacklist_characters="\n\r"), max_size=40).map(
    lambda s: ("x" + s).encode("utf-8", "surrogatepass") + b"\n"
)


@settings(max_examples=60, deadline=None)
@given(st.lists(st.one_of(st.integers(0, 10**6), _garbage), max_size=25), st.integers(1, 7))
def test_any_mix_of_events_and_garbage_yields_every_event_once(
    tmp_path_factory: pytest.TempPathFactory, items: list[int | bytes], limit: int
) -> None:
    work = tmp_path_factory.mktemp("journal")
    journal = ActivityJournal(work)
    for item in items:
        if isinstance(item, int):
            journal.record(_event(item))
        else:
            _raw(work, item)
    cursor, seen, bad = JournalCursor(), [], 0
    while True:
        read = journal.read(cursor, limit=limit)
        seen += [e.version for e in read.events]
        bad += read.malformed
        if read.cursor == cursor:
            break
        cursor = read.cursor
    assert seen == [i for i in items if isinstance(i, int)]
    assert bad == sum(1 for i in items if isinstance(i, bytes))
    assert json.loads(_event(1).line())["version"] == 1
