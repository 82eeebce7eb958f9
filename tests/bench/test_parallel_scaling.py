"""The parallel benchmark's machine ceiling (``bench.parallel_scaling.host_ceiling``)."""

from __future__ import annotations

from typing import Any

import pytest

from bench.parallel_scaling import host_ceiling


def run(parse: float, chunk: float, total: float) -> dict[str, Any]:
    return {"seconds": {"parse": parse, "chunk": chunk}, "total": total}


def test_two_runs_at_the_speed_of_one_make_a_ceiling_of_two() -> None:
    alone = [run(2.0, 6.0, 10.0)]
    assert host_ceiling(alone, [[run(2.0, 6.0, 10.0), run(2.0, 6.0, 10.0)]])["parse_chunk"] == 2.0


def test_the_slower_of_the_pair_sets_the_ceiling_and_each_measure_has_its_own() -> None:
    alone = [run(2.0, 6.0, 10.0)]
    pair = [run(2.0, 6.0, 11.0), run(2.5, 7.5, 12.5)]  # parse + chunk 8 alone, 10 at most together
    got = host_ceiling(alone, [pair])
    assert got["parse_chunk"] == 1.6
    assert got["total"] == 1.6
    assert got["pair_totals"] == [[11.0, 12.5]]


def test_the_median_is_over_repeats_and_each_repeat_pairs_with_its_own_inline_run() -> None:
    alone = [run(0, 8.0, 8.0), run(0, 16.0, 16.0), run(0, 8.0, 8.0)]
    pairs = [[run(0, 8.0, 8.0)] * 2, [run(0, 8.0, 8.0)] * 2, [run(0, 10.0, 10.0)] * 2]
    got = host_ceiling(alone, pairs)
    assert got["parse_chunk_per_repeat"] == [2.0, 4.0, 1.6]
    assert got["parse_chunk"] == 2.0


def test_a_missing_pair_is_an_error_not_a_shorter_median() -> None:
    with pytest.raises(ValueError):
        host_ceiling([run(0, 8.0, 8.0)] * 2, [[run(0, 8.0, 8.0)] * 2])


def test_the_whole_run_bound_keeps_the_serial_steps_serial() -> None:
    """8 s of parse + chunk at the ceiling of 2.0 and 2 s of everything else: 10 / (2 + 4)."""
    from bench.parallel_scaling import amdahl_bound

    assert amdahl_bound(run(2.0, 6.0, 10.0), 2.0) == 1.67
    assert amdahl_bound(run(2.0, 8.0, 10.0), 2.0) == 2.0  # nothing serial: the ceiling itself
    assert amdahl_bound(run(0.0, 0.0, 10.0), 2.0) == 1.0  # nothing parallel: no speed-up
    got = host_ceiling([run(2.0, 6.0, 10.0)], [[run(2.0, 6.0, 10.0), run(2.5, 7.5, 12.5)]])
    assert got["whole_run_bound_per_repeat"] == [amdahl_bound(run(2.0, 6.0, 10.0), 1.6)] == [1.43]
    assert got["whole_run_bound"] == 1.43
