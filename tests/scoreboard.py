"""The reliability scoreboard: a pytest plugin that reports, per scenario, whether it holds.

Tests name what they cover with ``@pytest.mark.scenario("A6", "safety-deletion")``. The
scenarios are the 37 of ``../shared/RELIABILITY.md`` (A1-A10, B1-B4, C1-C8, D1-D5, E1-E6,
F1-F4) plus the safety classes of the safety-contract issue. A scenario holds when at least
one test covers it and every test that covers it passed; a scenario without a test, or with a
failed or skipped test, does not. ``make reliability`` loads this plugin
(``-p tests.scoreboard --require-all-scenarios``) and ends with ``N/M scenarios hold`` and
the ids that do not; it fails unless all hold.
``make test`` loads it too and prints the same board, without failing on it.

Under pytest-xdist the items are collected in the workers, so each item carries its scenarios
in ``user_properties``; the board is built from the reports, which reach the controller.
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

import pytest

RELIABILITY = (
    [f"A{i}" for i in range(1, 11)]
    + [f"B{i}" for i in range(1, 5)]
    + [f"C{i}" for i in range(1, 9)]
    + [f"D{i}" for i in range(1, 6)]
    + [f"E{i}" for i in range(1, 7)]
    + [f"F{i}" for i in range(1, 5)]
)
SAFETY = [
    "safety-confinement",
    "safety-policy",
    "safety-deletion",
    "safety-ordering",
    "safety-restore",
    "safety-revocation",
    "safety-untrusted",
]
KNOWN = RELIABILITY + SAFETY

_covers: dict[str, list[str]] = defaultdict(list)  # scenario -> test node ids
_outcome: dict[str, str] = {}  # test node id -> passed | failed | skipped


def _worker(config: Any) -> bool:
    return hasattr(config, "workerinput")


def pytest_collection_modifyitems(config: Any, items: list[pytest.Item]) -> None:
    for item in items:
        for mark in item.iter_markers("scenario"):
            for sid in mark.args:
                if sid not in KNOWN:
                    raise pytest.UsageError(f"{item.nodeid}: unknown scenario {sid!r}; known: {KNOWN}")
                item.user_properties.append(("scenario", sid))
                if not _worker(config):
                    _covers[sid].append(item.nodeid)


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    for name, sid in report.user_properties:  # from a worker: the controller collected nothing
        if name == "scenario" and isinstance(sid, str) and report.nodeid not in _covers[sid]:
            _covers[sid].append(report.nodeid)
    if report.failed:
        _outcome[report.nodeid] = "failed"
    elif report.skipped and _outcome.get(report.nodeid) != "failed":
        _outcome[report.nodeid] = "skipped"
    elif report.when == "call" and report.passed:
        _outcome.setdefault(report.nodeid, "passed")


def status(sid: str) -> str:
    tests = _covers.get(sid, [])
    if not tests:
        return "no test"
    outcomes = {_outcome.get(t, "not run") for t in tests}
    return "holds" if outcomes == {"passed"} else "/".join(sorted(outcomes - {"passed"}))


def pytest_terminal_summary(terminalreporter: Any, exitstatus: int, config: Any) -> None:
    if _worker(config):
        return
    write = terminalreporter.write_line
    terminalreporter.section("reliability scoreboard")
    for group, ids in (("RELIABILITY.md", RELIABILITY), ("safety classes", SAFETY)):
        held = [sid for sid in ids if status(sid) == "holds"]
        write(f"{group}: {len(held)}/{len(ids)} scenarios hold")
        for sid in ids:
            if status(sid) != "holds":
                write(f"  {sid}: {status(sid)}")
    failing = [sid for sid in KNOWN if status(sid) != "holds"]
    write(
        f"{len(KNOWN) - len(failing)}/{len(KNOWN)} scenarios hold"
        + (f"; failing: {failing}" if failing else "")
    )


def pytest_addoption(parser: Any) -> None:
    parser.addoption("--require-all-scenarios", action="store_true", help="fail unless every scenario holds")


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    strict = session.config.getoption("--require-all-scenarios") and not _worker(session.config)
    if strict and any(status(sid) != "holds" for sid in KNOWN):
        session.exitstatus = pytest.ExitCode.TESTS_FAILED
