"""The listing pauses the cyclic collector and always gives it back as it found it."""

from __future__ import annotations

import gc

import pytest

from tessera.pipeline.alloc import collector_paused


def test_the_collector_is_off_inside_and_restored_after_an_error_and_when_nested() -> None:
    assert gc.isenabled()
    with pytest.raises(RuntimeError), collector_paused():
        assert not gc.isenabled()
        with collector_paused():
            assert not gc.isenabled()
        assert not gc.isenabled()  # the inner pause leaves the outer one in force
        raise RuntimeError("a listing failed")
    assert gc.isenabled()


def test_a_caller_that_turned_the_collector_off_keeps_it_off() -> None:
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()
    finally:
        gc.enable()


def test_a_listing_runs_with_the_collector_paused(ws: object, monkeypatch: pytest.MonkeyPatch) -> None:
    from tessera.pipeline import listing
    from tests.conftest import Workspace

    assert isinstance(ws, Workspace)
    ws.tenant("acme", {"a.md": "# A\n\nalpha.\n"})
    seen: list[bool] = []
    real = listing._enumerate

    def spy(rc: object) -> object:
        seen.append(gc.isenabled())
        return real(rc)  # type: ignore[arg-type]

    monkeypatch.setattr(listing, "_enumerate", spy)
    summary = listing.list_step(ws.context("acme"))
    assert seen == [False] and gc.isenabled() and summary["changed"] == 1
