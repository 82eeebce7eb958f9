"""The listing reads the live manifest on a thread while the source is enumerated: whichever
fails, the run fails typed and nothing is written; when neither fails the plan is the one a
serial read makes."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from tessera.errors import SourceError, StoreDamaged
from tessera.pipeline.listing import diff, list_step
from tessera.store.index import TenantIndex


def _tenant(ws: Any) -> Any:
    src = ws.tenant("acme", {"a.md": "# A\n\nAlpha text.\n", "b.md": "# B\n\nBeta text.\n"})
    ws.run("acme", "r0")
    (src / "a.md").write_text("# A\n\nAlpha, changed.\n", encoding="utf-8")
    (src / "b.md").unlink()
    return src


def test_the_manifest_read_on_a_thread_gives_the_serial_plan(
    ws: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    _tenant(ws)
    threads: list[str] = []
    real = TenantIndex.planned_state

    def spy(self: TenantIndex) -> Any:
        threads.append(threading.current_thread().name)
        return real(self)

    monkeypatch.setattr(TenantIndex, "planned_state", spy)
    d = diff(ws.context("acme", "threaded"))
    assert threads and threads[0].startswith("tessera-manifest")
    live, key = real(ws.context("acme", "serial").index)
    assert (d.changed, d.removed, d.live_documents) == (["a.md"], ["b.md"], len(live))
    assert d.planned_at == key() != ""


def test_a_failed_manifest_read_fails_the_listing_typed(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _tenant(ws)

    def damaged(self: TenantIndex) -> Any:
        raise StoreDamaged(self.name, "reading it failed: planted")

    monkeypatch.setattr(TenantIndex, "planned_state", damaged)
    rc = ws.context("acme", "damaged")
    with pytest.raises(StoreDamaged, match="planted"):
        list_step(rc)
    assert not (rc.workspace / "listing.json").exists()


def test_a_failed_listing_wins_over_a_slow_or_failing_read(ws: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    _tenant(ws)
    release = threading.Event()

    def slow_and_damaged(self: TenantIndex) -> Any:
        release.wait(10)
        raise StoreDamaged(self.name, "reading it failed: planted")

    rc = ws.context("acme", "outage")
    assert rc.connector is not None

    def outage() -> Any:
        release.set()
        raise OSError("the source went away")

    monkeypatch.setattr(TenantIndex, "planned_state", slow_and_damaged)
    monkeypatch.setattr(rc.connector, "list", outage)
    version = ws.table("acme").version
    with pytest.raises(SourceError, match="went away"):
        list_step(rc)
    assert not (rc.workspace / "listing.json").exists() and ws.table("acme").version == version
