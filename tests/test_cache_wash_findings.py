"""Seed 000's findings from the client timing and the snapshots around the scan. Pure.

run.json (tests/data/cache-wash/capture.py) is a real tiny run: a 128 MB table on an emulated
112 MB machine, shared_buffers 1MB (the scan washes the index out of the OS cache) and 32MB
(shared_buffers keeps the index), two repetitions each, with snapshots after idx1 and after seq.
"""

import json
import math
from pathlib import Path

import pytest

from pgcachelab.analysis.cache_composition import Sample
from pgcachelab.analysis.cache_split import (
    PGBENCH_LOG_TIMING,
    Repetition,
    pgbench_logged_zeros,
    scan_residency,
    survival_table,
)
from pgcachelab.workloads.client_timing import TimedLoop, cross_check
from pgcachelab.workloads.outcome import MeasurementError

RUN = json.loads((Path(__file__).parent / "data" / "cache-wash" / "run.json").read_text())
MB = 2**20


def _samples(point_index: int) -> list[Sample]:
    return [
        Sample(s["point_index"], s["repetition"], s["seconds"], s["label"], s["data"])
        for s in RUN["samples"]
        if s["point_index"] == point_index
    ]


def _sizes() -> dict:
    return RUN["measurements"][0]["cache_wash"]["data"]


def _by_key(point_index: int) -> dict:
    return {(r.relation, r.moment): r for r in scan_residency(_samples(point_index), _sizes())}


def test_the_scan_washes_the_index_out_of_the_os_cache_with_small_shared_buffers():
    at = _by_key(0)  # shared_buffers = 1MB
    before, after = at[("index", "after idx1")], at[("index", "after seq")]
    assert before.size_bytes == _sizes()["index_bytes"]
    assert before.share(before.os_cached_bytes) == pytest.approx(1.0, abs=0.05)
    assert before.share(before.shared_buffers_bytes) < 0.1  # 1MB cannot hold a 13 MB index
    assert after.share(after.os_cached_bytes) < 0.05
    low, high = after.in_neither_bytes
    assert low / after.size_bytes > 0.9 and high >= low


def test_shared_buffers_that_hold_the_index_keep_it_through_the_scan():
    at = _by_key(1)  # shared_buffers = 32MB
    for moment in ("after idx1", "after seq"):
        index = at[("index", moment)]
        assert index.share(index.shared_buffers_bytes) == pytest.approx(1.0)
    assert at[("index", "after seq")].in_neither_bytes == (0.0, 0.0)
    table = at[("table", "after seq")]
    assert table.size_bytes == _sizes()["table_bytes"]
    assert 0 < table.shared_buffers_bytes < 32 * MB


def test_residency_without_os_cache_or_without_snapshots():
    blind = [
        Sample(s.point_index, s.repetition, s.seconds, s.label,
               {**s.data, "relations": [{**r, "os_cached_bytes": None}
                                        for r in s.data["relations"]]})
        for s in _samples(0)
    ]  # fmt: skip
    index = {(r.relation, r.moment): r for r in scan_residency(blind)}[("index", "after seq")]
    assert index.os_cached_bytes is None and index.in_neither_bytes is None
    only_before = [s for s in _samples(0) if s.label == "before"]
    assert scan_residency(only_before) == []


def test_the_captured_run_timed_every_lookup_above_zero_within_the_cross_check():
    for measured in RUN["measurements"]:
        wash = measured["cache_wash"]
        assert wash["timing"] == "client"
        for phase in ("idx1", "seq", "idx2"):
            assert min(wash[f"{phase}_ms"]) > 0
            check = wash["cross_check"][phase]
            assert check["samples"] == len(wash[f"{phase}_ms"])
            assert math.isclose(check["samples_sum_ms"], sum(wash[f"{phase}_ms"]), rel_tol=1e-9)
            assert check["samples_sum_ms"] <= check["wall_ms"] and check["within_tolerance"]


def test_cross_check_rejects_what_a_monotonic_clock_cannot_give():
    check = cross_check(TimedLoop([50_000, 70_000, 60_000], 200_000), "idx1")
    assert check["loop_overhead_ms"] == pytest.approx(0.02)
    assert check["loop_overhead_share"] == pytest.approx(0.1) and check["within_tolerance"]
    assert check["median_to_wall_per_sample"] == pytest.approx(0.06 / (0.2 / 3))
    assert not cross_check(TimedLoop([50_000], 100_000), "seq")["within_tolerance"]
    with pytest.raises(MeasurementError, match="idx2: a sample of 0 ns"):
        cross_check(TimedLoop([50_000, 0], 100_000), "idx2")
    with pytest.raises(MeasurementError, match="more than the loop's"):
        cross_check(TimedLoop([50_000, 60_000], 100_000), "idx1")
    with pytest.raises(MeasurementError, match="no statement"):
        cross_check(TimedLoop([], 100), "idx1")


def rep(size_mb, ratio, repetition, huge_pages="off", timing="client", idx1=None):
    idx1 = idx1 or [0.1] * 3
    return Repetition(size_mb * MB, huge_pages, repetition,
                      {"idx1": idx1, "seq": [500.0], "idx2": [0.1 * ratio] * 3},
                      timing)  # fmt: skip


def test_survival_table_gives_each_point_its_ratio_interval_and_verdict():
    reps = [
        *(rep(1, r, i) for i, r in enumerate((2.0, 2.2, 2.1))),  # washed out
        *(rep(8, r, i) for i, r in enumerate((0.9, 1.4, 1.0))),  # interval straddles 1.10
        *(rep(64, r, i) for i, r in enumerate((1.0, 1.02, 0.98))),  # survives
        rep(64, 1.0, 0, "on"),
    ]
    rows = survival_table(reps)
    assert [(r.huge_pages, r.shared_buffers_bytes // MB) for r in rows] == [
        ("on", 64), ("off", 1), ("off", 8), ("off", 64)
    ]  # fmt: skip
    assert [r.verdict for r in rows] == ["yes (one repetition)", "no", "undecided", "yes"]
    washed = rows[1].ratio
    assert washed.median == pytest.approx(2.1) and washed.n == 3
    assert washed.ci_low > 1.10 and washed.median_low == pytest.approx(2.0)
    # the interval of a ratio is geometric: the mean of the logs, never below 0
    geometric = rows[1].geometric
    assert geometric.ratio == pytest.approx((2.0 * 2.2 * 2.1) ** (1 / 3))
    assert 1.10 < geometric.ci_low < geometric.ratio < geometric.ci_high


def test_only_lookups_pgbench_logged_as_zero_are_counted():
    old = rep(1, 1.0, 0, timing=PGBENCH_LOG_TIMING, idx1=[0.0, 0.0, 0.1])
    assert pgbench_logged_zeros([old, rep(1, 1.0, 1)]) == (2, 6)
    assert pgbench_logged_zeros([rep(1, 1.0, 1)]) == (0, 0)
    assert survival_table([old])[0].verdict == "no ratio"  # its idx1 median is 0


def test_the_report_shows_the_new_findings(tiny_reports):
    """The fixture store's cache-wash run predates the client timing: its pgbench-logged zero
    is still said, and its snapshots give the table around the scan."""
    page = tiny_reports["cache-split-tiny"].index.read_text()
    for text in (
        "<h3>idx2 against idx1, per point</h3>",
        "idx2/idx1 geometric mean (95% CI)",
        "(index 2.45MB",
        "<h3>Huge pages effect per phase</h3>",
        "Huge pages effect: not measured, this run has only huge_pages=off",
        "Why idx2 is slow or not",
        "<h4>The index (random_random_idx)</h4>",
        "after: in the OS cache",
        "1 of their 240 lookups were logged as 0 us",
    ):
        assert text in page, text
