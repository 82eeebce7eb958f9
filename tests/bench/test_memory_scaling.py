"""The memory benchmark's summary of repeated runs (``bench.memory_scaling``)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.memory_scaling import ratios, summarize


def run(docs: int, full_mb: float, noop_mb: float = 100.0, seconds: float = 10.0) -> dict[str, Any]:
    phase = {"seconds": seconds, "chunks": docs * 4}
    return {
        "documents": docs,
        "full": {**phase, "peak_rss_mb": full_mb},
        "noop": {**phase, "peak_rss_mb": noop_mb, "seconds": seconds / 10},
    }


def test_one_repeat_is_the_single_pair_it_always_was() -> None:
    got = ratios([run(10, 400.0)], [run(100, 592.0)])
    assert got["peak_rss_ratio"] == 1.48
    assert got["peak_rss_ratio_per_repeat"] == [1.48]
    assert got["meets_target"] and got["meets_target_every_repeat"]


def test_the_ratio_is_of_the_medians_and_every_pair_is_reported() -> None:
    small = [run(10, 400.0), run(10, 380.0), run(10, 420.0)]
    large = [run(100, 620.0), run(100, 570.0), run(100, 590.0)]
    got = ratios(small, large)
    assert got["peak_rss_ratio"] == round(590.0 / 400.0, 2)  # medians, not the mean or one pair
    assert got["peak_rss_ratio_per_repeat"] == [1.55, 1.5, 1.405]
    assert got["meets_target"]
    assert not got["meets_target_every_repeat"]  # the spread shows the pair over the line


def test_a_median_over_the_target_fails_however_good_one_pair_is() -> None:
    got = ratios([run(10, 400.0), run(10, 400.0)], [run(100, 640.0), run(100, 560.0)])
    assert got["peak_rss_ratio"] == 1.5  # (640 + 560) / 2 / 400: at the line, still met
    got = ratios([run(10, 400.0)] * 3, [run(100, 640.0), run(100, 620.0), run(100, 560.0)])
    assert got["peak_rss_ratio"] == 1.55
    assert not got["meets_target"]


def test_a_missing_large_run_is_an_error_not_a_shorter_list() -> None:
    with pytest.raises(ValueError):
        ratios([run(10, 400.0)] * 2, [run(100, 600.0)])


def test_summary_keeps_every_peak_and_the_median_phase() -> None:
    got = summarize([run(10, 400.0, 200.0, 30.0), run(10, 380.0, 220.0, 34.0), run(10, 430.0, 210.0, 32.0)])
    assert got["documents"] == 10
    assert got["full_peak_rss_mb_all"] == [400.0, 380.0, 430.0]
    assert got["full"]["peak_rss_mb"] == 400.0
    assert got["full"]["seconds"] == 32.0
    assert got["noop"]["peak_rss_mb"] == 210.0
