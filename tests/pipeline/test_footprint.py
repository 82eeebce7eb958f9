"""A step's memory footprint: reported with its summary, logged, and true to what it held."""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import textwrap
from typing import Any

import pytest

from tessera.pipeline import footprint
from tessera.pipeline.progress import LOGGER
from tests.conftest import Workspace

DOCS = {
    "guide.md": "# Guide\n\n" + "Install the agent, then start it. " * 40,
    "notes.md": "# Notes\n\nShort.\n",
}
STEPS = ("listing", "parse", "chunk", "embed", "publish", "verify")


def test_the_summary_comes_back_whole_with_the_footprint_beside_it(caplog: pytest.LogCaptureFixture) -> None:
    own = {"documents": 3, "failures": {"failed": 0}}
    with caplog.at_level(logging.DEBUG, logger=LOGGER):
        out = footprint.measured("acme", "parse", lambda: own)
    assert out is not own and own == {"documents": 3, "failures": {"failed": 0}}  # not written into
    assert {k: v for k, v in out.items() if k != "memory"} == own
    memory = out["memory"]
    assert set(memory) == {"peak_rss_mb", "raised_peak_mb", "rss_mb"}
    assert memory["peak_rss_mb"] > 0 and memory["raised_peak_mb"] >= 0
    assert memory["rss_mb"] is not None and memory["rss_mb"] <= memory["peak_rss_mb"] + 1
    lines = [r.getMessage() for r in caplog.records if r.name == LOGGER]
    assert lines and lines[-1].startswith("acme parse: peak RSS ") and "MB resident at its end" in lines[-1]


def test_a_step_that_fails_reports_nothing_and_its_error_goes_up() -> None:
    def broken() -> dict[str, Any]:
        raise ValueError("bad input")

    with pytest.raises(ValueError, match="bad input"):
        footprint.measured("acme", "chunk", broken)


PROBE = textwrap.dedent(
    """
    import json
    from tessera.pipeline.footprint import measured

    def holds():
        block = b"x" * (96 << 20)  # written, so resident
        return {"held": len(block)}

    first = measured("acme", "holds", holds)["memory"]
    second = measured("acme", "idle", lambda: {})["memory"]
    print(json.dumps([first, second]))
    """
)


def test_the_step_that_held_memory_raised_the_peak_and_the_next_one_did_not() -> None:
    """In a fresh process (a long test session's own peak would hide the step): a step that
    holds 96 MB raises the peak by about that much; the next step, holding nothing, raises it
    by nearly nothing, reports the same peak and a resident size well under it (the block was
    handed back). A footprint that took the resident size for the peak, or the peak for the
    rise, fails one of these."""
    done = subprocess.run([sys.executable, "-c", PROBE], capture_output=True, text=True, check=True)
    first, second = json.loads(done.stdout.strip().splitlines()[-1])
    assert first["raised_peak_mb"] >= 80
    assert second["raised_peak_mb"] < 8
    assert second["peak_rss_mb"] >= first["peak_rss_mb"]
    assert second["rss_mb"] < second["peak_rss_mb"] - 64


def test_without_proc_the_resident_size_is_unknown_not_made_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(footprint, "STATUS", footprint.Path("/nonexistent/status"))
    out = footprint.measured("acme", "embed", lambda: {"embedded": 1})
    assert out["memory"]["rss_mb"] is None and out["memory"]["peak_rss_mb"] > 0  # getrusage's


def test_a_run_reports_every_steps_footprint(ws: Workspace) -> None:
    ws.tenant("acme", DOCS)
    out = ws.run("acme", "fp")
    for step in STEPS:
        memory = out[step]["memory"]
        assert memory["peak_rss_mb"] > 0 and memory["raised_peak_mb"] >= 0, step
    peaks = [out[step]["memory"]["peak_rss_mb"] for step in STEPS]
    assert peaks == sorted(peaks)  # one process: its high-water mark never falls
    assert out["publish"]["committed"] and out["verify"]["problems"] == 0
    assert out["chunk"]["chunks"] == len(ws.rows("acme"))  # the steps' own summaries are intact
    report = json.loads((ws.context("acme", "fp").workspace / "publish.json").read_text())
    assert "memory" not in report  # what a re-executed publish returns is the step's own record


def _m(peak: float, raised: float) -> dict[str, Any]:
    return {"peak_rss_mb": peak, "raised_peak_mb": raised, "rss_mb": None}


def test_the_step_that_set_the_peak_is_the_first_to_reach_it() -> None:
    run = {"list": _m(210, 60), "chunk": _m(300, 90), "publish": _m(582, 282), "verify": _m(582.4, 0.4)}
    assert footprint.peak_step(run) == ("publish", 582.4)  # verify's 0.4 MB is the kernel's noise
    run["verify"] = _m(600, 18)
    assert footprint.peak_step(run) == ("verify", 600)  # a real rise after it moves the answer
    assert footprint.peak_step({"chunk": _m(300, 90)}) == ("chunk", 300)


def test_no_step_is_named_when_none_raised_the_peak() -> None:
    """A second tenant in the same process, after a larger one: its steps raised nothing."""
    assert footprint.peak_step({"list": _m(900, 0), "publish": _m(900, 0)}) is None
    assert footprint.peak_step({}) is None
