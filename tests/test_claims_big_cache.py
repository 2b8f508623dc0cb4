"""Seed 004's claims (studies/big_cache/claims.py): each rule on constructed figures for every
verdict it can give, then the judges on the fixture store's real runs."""

import math

import pytest

from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    NOT_MEASURED,
    REPRODUCED,
    SETUP,
    BadFigure,
    Figure,
    not_measured,
)
from pgcachelab.analysis.qualifiers import QUALIFIERS
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.steps import MEMORY, SHARED_BUFFERS, SizePoint, find_steps
from pgcachelab.experiments.reproduce import judge_claim
from pgcachelab.machine.disk_profiles import PRESETS
from pgcachelab.store.records import Measurement, Run, StoredPoint
from pgcachelab.studies.big_cache.claims import (
    DISK_QUALIFIER,
    HOST_DISK,
    NOT_A_SIZE_SWEEP,
    STEP_DRIFT,
    DeviceUse,
    device_iops,
    disk_decides,
    disk_verdict,
    left_memory,
    left_shared_buffers,
    report_washes_caches,
    step_figure,
    step_verdict,
    wash_verdict,
)
from pgcachelab.studies.big_cache.study import BigCache
from pgcachelab.studies.kind import SETUP_KIND
from pgcachelab.workloads.parameters import PgbenchParameters

MB = 2**20
UNSPANNED = not_measured("nothing measured either side")
NEAR_LOW, NEAR_HIGH = QUALIFIERS[DISK_QUALIFIER].band(1)


def around(level: float, spread: float = 0.02, n: int = 6) -> tuple[float, ...]:
    """n repetitions about `level`, ±spread, alternating: a known mean and a known scatter."""
    return tuple(level * (1 + spread * (1 if i % 2 else -1) * (i + 1) / n) for i in range(n))


def finding(levels: dict[float, tuple[float, ...]], shared_mb=16, memory_mb=128):
    points = [SizePoint(f"{mb}MB", mb * MB, tps) for mb, tps in levels.items()]
    return find_steps(points, shared_mb * MB, memory_mb * MB)


# -- a step at shared_buffers and at memory --------------------------------------------------


def test_a_clear_drop_past_shared_buffers_is_reproduced():
    found = finding({10: around(40_000), 12: around(40_000), 40: around(20_000)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(2.0, rel=0.02)
    assert verdict.figure.ci_low > 1.2 and verdict.figure.repetitions == 6
    assert "also clears ×1.2" in verdict.reason
    assert "95% CI" in verdict.text() and "shared_buffers 16MB" in verdict.text()


def test_a_flat_line_across_shared_buffers_contradicts_the_step():
    # tps within 1% either side, tight: no noticeable step (×1.1) can hide in that interval
    found = finding({10: around(40_000, 0.01), 40: around(39_800, 0.01)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == CONTRADICTED
    assert verdict.figure.ci_high < 1.1
    assert '"noticeably"' in verdict.reason


def test_a_noticeable_drop_within_the_machines_drift_is_noise_never_reproduced():
    # ×1.15, tight: noticeable by the article's word (whole interval above ×1.1), but below the
    # ×1.2 that points minutes apart drift here with nothing changed
    found = finding({10: around(46_000, 0.01), 40: around(40_000, 0.01)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert 1.1 < verdict.figure.ci_low < verdict.figure.ci_high < STEP_DRIFT
    assert verdict.outcome == NOISE and "drift" in verdict.reason


def test_equal_repetitions_give_no_interval_and_decide_nothing():
    # every repetition equal either side: a zero-width interval would say nothing of the
    # spread, so the step has none, and the claim is noise
    found = finding({10: (40_000.0,) * 4, 40: (10_000.0,) * 4})
    assert found.steps == []
    figure = step_figure(found, SHARED_BUFFERS)
    assert figure.value == pytest.approx(4) and not figure.has_interval
    assert step_verdict(found, SHARED_BUFFERS, UNSPANNED).outcome == NOISE


def test_a_drop_whose_interval_reaches_below_the_threshold_is_noise():
    # ×1.3 by the means, but repetitions scattered by ±40%: the interval reaches below 1.1
    found = finding({10: around(26_000, 0.4), 40: around(20_000, 0.4)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == NOISE
    assert verdict.figure.ci_low < 1.1 < verdict.figure.ci_high


def test_one_repetition_a_side_is_noise_never_reproduced():
    found = finding({10: (40_000.0,), 40: (10_000.0,)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == NOISE and "1 repetition(s) cannot decide" in verdict.reason


def test_no_size_either_side_of_the_boundary_is_the_verdict_given():
    # every size far past 16MB of shared_buffers (beyond MATCH_FACTOR): no step can be placed;
    # the caller says why (the spec's sizes, or the machine's lack of a memory limit)
    found = finding({100: around(5_000), 200: around(5_000)}, memory_mb=4096)
    assert step_figure(found, SHARED_BUFFERS) is None
    assert step_verdict(found, SHARED_BUFFERS, UNSPANNED) == UNSPANNED
    not_swept = step_verdict(None, MEMORY, UNSPANNED)
    assert not_swept.outcome == NOT_MEASURED and not_swept.reason == NOT_A_SIZE_SWEEP


def test_the_memory_step_is_judged_at_memory_not_at_shared_buffers():
    found = finding(
        {10: around(40_000), 40: around(20_000), 60: around(20_000), 300: around(500)},
        memory_mb=128,
    )
    memory = step_verdict(found, MEMORY, UNSPANNED)
    assert memory.outcome == REPRODUCED
    assert memory.figure.value == pytest.approx(40, rel=0.05)
    assert "the OS cache 128MB" in memory.figure.what
    assert step_verdict(found, SHARED_BUFFERS, UNSPANNED).figure.value == pytest.approx(2, rel=0.02)


def test_no_step_matched_takes_the_neighbours_nearest_the_boundary():
    # a plateau across shared_buffers: the figure is the two points either side of 16MB
    found = finding({8: around(30_000), 24: around(30_300), 48: around(29_700)})
    assert not found.steps
    figure = step_figure(found, SHARED_BUFFERS)
    assert "up to 8MB / from 24MB" in figure.what
    assert figure.value == pytest.approx(30_000 / 30_300, rel=0.01)


# -- the disk decides ---------------------------------------------------------------------------


def test_tps_at_the_device_iops_is_reproduced():
    shares = [0.95, 1.02, 0.98, 1.05, 0.97, 1.01]
    verdict = disk_verdict(shares, "seed-004-vm's 150 IOPS")
    assert verdict.outcome == REPRODUCED
    assert NEAR_LOW < verdict.figure.ci_low < verdict.figure.ci_high < NEAR_HIGH
    assert pytest.approx((1 / math.sqrt(2), math.sqrt(2))) == (NEAR_LOW, NEAR_HIGH)


def test_tps_far_below_what_the_disk_allows_contradicts():
    # the device used a fifth of its IOPS: something else (CPU, clients) decided
    verdict = disk_verdict([0.2, 0.21, 0.19, 0.2], "150 IOPS")
    assert verdict.outcome == CONTRADICTED and verdict.figure.ci_high < NEAR_LOW


def test_tps_above_what_the_disk_allows_contradicts():
    # three times the reads the device can serve: the data came from a cache, not the disk
    assert disk_verdict([3.0, 3.2, 2.9], "150 IOPS").outcome == CONTRADICTED


def test_a_share_scattered_across_the_band_is_noise():
    assert disk_verdict([0.5, 1.9, 1.0, 0.7], "150 IOPS").outcome == NOISE
    assert disk_verdict([1.0], "150 IOPS").outcome == NOISE  # one repetition decides nothing


def test_no_repetition_past_the_os_cache_is_not_measured():
    assert disk_verdict([], "150 IOPS").outcome == NOT_MEASURED


def test_a_repetition_without_device_reads_is_refused_not_dropped():
    # past the OS cache a repetition the disk served nothing of says the disk did not decide
    # it: its share is 0, which no log-ratio interval holds; judging on the other five would
    # pick the repetitions that suit the claim
    use = DeviceUse(tps=900, reads=0, transactions=900, device_iops=150)
    assert use.share == 0
    with pytest.raises(BadFigure, match="repetition 2 of 6"):
        disk_verdict([1.0, use.share, 1.0, 1.02, 0.98, 1.0], "150 IOPS")
    # reads without a transaction: an infinite share, refused too
    with pytest.raises(BadFigure):
        disk_verdict([1.0, DeviceUse(10, 30, 0, 150).share], "150 IOPS")


def test_the_device_iops_is_the_cap_or_what_the_clients_keep_busy():
    vm = PRESETS["seed-004-vm"].record()
    assert device_iops(vm, 4) == 150  # 4 clients at 6.6 ms could ask 600/s: the cap decides
    assert device_iops(vm, 1) == 150  # one client at 6.58 ms: 152/s, still the cap
    nvme = PRESETS["nvme"].record()  # no cap: each client waits 80 µs per read
    assert device_iops(nvme, 4) == pytest.approx(4 / 80e-6)
    # 150 tps at 1.5 reads per transaction is 225 reads/s: 1.5 times the device's 150
    assert DeviceUse(150, 1500, 1000, 150).share == pytest.approx(1.5)


# -- the fixture runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tiny_runs):
    return tiny_runs


def test_big_cache_tiny_reproduces_the_shared_buffers_step(runs):
    # scale 1 (22MB, its tables within 16MB of shared_buffers) against scale 2 and 8: ×1.42
    # (1.28-1.56) over seven repetitions a side, the whole interval above ×1.2
    verdict = left_shared_buffers(runs["big-cache-tiny"])
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(1.415, abs=0.01)
    assert verdict.figure.ci_low == pytest.approx(1.28, abs=0.01)


def test_big_cache_tiny_cannot_leave_memory_without_a_limit(runs):
    # made without root: no memory cgroup, the host's 23.5GB of RAM against 127MB of data,
    # and the host's own disk: neither the memory step nor the disk can show
    data = runs["big-cache-tiny"]
    memory = left_memory(data)
    assert memory.outcome == CANNOT
    assert "without root there is no memory limit" in memory.reason
    assert "23.5GB" in memory.reason and "127MB" in memory.reason
    disk = disk_decides(data)
    assert disk.outcome == CANNOT and "past the OS cache" in disk.reason


def test_a_run_over_rates_has_no_steps_to_judge(runs):
    # offered-load-tiny swept the rate, not the scale: no tps-by-size line
    data = runs["offered-load-tiny"]
    for judge in (left_shared_buffers, left_memory, disk_decides):
        assert judge(data).outcome == NOT_MEASURED and judge(data).reason == NOT_A_SIZE_SWEEP


def test_every_big_cache_claim_is_judged_and_says_its_rule():
    for claim in BigCache.claims:
        assert claim.figure and claim.rule and claim.article and claim.qualifier
        assert claim.judge.__module__ == "pgcachelab.studies.big_cache.claims"


# -- the adapter on a constructed run with the emulated disk --------------------------------------


def emulated_run(levels, memory_limit_mb=128, profile="seed-004-vm", clients=4):
    """A scale sweep under 16MB of shared_buffers: {size in MB: (tps repetitions, device reads
    per transaction)}, each repetition of 1,000 transactions."""
    points = []
    for index, (mb, (tps_values, reads_per_transaction)) in enumerate(levels.items()):
        disk = {"profile": PRESETS[profile].record() if profile else None}
        disk["device"] = {"reads": round(1000 * reads_per_transaction)}
        metrics = {
            "disk": disk,
            "probes": {"database": {"xact_commit": 1000}},
            "pgbench": {"clients": clients},
        }
        measurements = [
            Measurement(index, r, "ok", None, 0.0, 1.0, 1.0, None, tps, 1.0, 0.1, metrics)
            for r, tps in enumerate(tps_values)
        ]
        point = StoredPoint(
            index, f"scale={index + 1}", {"scale": index + 1}, PgbenchParameters(), {}
        )
        points.append(PointResult(point, measurements, None, None, mb * MB, None, 16 * MB))
    target = {"memory_limit_bytes": memory_limit_mb * MB if memory_limit_mb else None}
    run = Run("r", "r", "", "", target, {"memory_total_bytes": 24 * 2**30}, "done", None, None,
              0.0, None, None, "big-cache")  # fmt: skip
    return RunData(run, points)


def test_on_the_emulated_disk_tps_at_its_iops_follows_from_the_setup():
    # 100 tps at 1.5 reads a transaction: 150 reads/s, seed-004-vm's cap, which the lab chose
    # and its FUSE daemon enforces: shown with its figure, never counted as reproduced
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0), 400: (around(100), 1.5)})
    memory = left_memory(data)
    assert memory.outcome == REPRODUCED and memory.figure.value == pytest.approx(200, rel=0.05)
    disk = disk_decides(data)
    assert disk.outcome == SETUP
    assert "the rule alone would say reproduced" in disk.reason
    assert "emulated (seed-004-vm)" in disk.reason and "real storage" in disk.reason
    assert disk.figure.value == pytest.approx(1.0, rel=0.02)
    assert "seed-004-vm's 150 IOPS" in disk.figure.what
    claim = next(c for c in BigCache.claims if c.judge is disk_decides)
    assert claim.class_of(disk) == SETUP_KIND


def test_on_the_emulated_disk_tps_far_under_its_iops_follows_from_the_setup_too():
    # 20 tps at 1.5 reads: 30 reads/s of the 150 the device serves; the rule would contradict
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0), 400: (around(20), 1.5)})
    disk = disk_decides(data)
    assert disk.outcome == SETUP and "would say contradicted" in disk.reason
    assert disk.figure.value == pytest.approx(0.2, rel=0.02)


def test_past_the_os_cache_a_repetition_without_device_reads_is_refused():
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0), 400: (around(100), 1.5)})
    data.points[2].measurements[3].metrics = {
        **data.points[2].measurements[3].metrics,
        "disk": {"profile": PRESETS["seed-004-vm"].record(), "device": {"reads": 0}},
    }
    with pytest.raises(BadFigure, match="repetition 4 of 6"):
        disk_decides(data)
    claim = next(c for c in BigCache.claims if c.judge is disk_decides)
    refused = judge_claim(claim, data)
    assert refused.outcome == NOISE and "refused" in refused.reason


def test_on_the_hosts_disk_the_run_records_too_little_to_judge():
    data = emulated_run({10: (around(40_000), 0), 400: (around(100), 1.5)}, profile=None)
    disk = disk_decides(data)
    assert disk.outcome == NOT_MEASURED and disk.reason == HOST_DISK
    assert "not emulated" in disk.reason and "/proc/diskstats" in disk.reason


def test_with_a_limit_but_no_size_past_it_the_memory_step_is_not_measured():
    # the spec's sizes, not the machine: "not measured by this spec", never "cannot"
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0)}, memory_limit_mb=1024)
    verdict = left_memory(data)
    assert verdict.outcome == NOT_MEASURED
    assert "stays within the server's memory limit of 1GB" in verdict.reason


def test_one_step_is_not_credited_to_both_boundaries():
    # 20MB then 100MB: the one break lies within a factor of 2 of 16MB of shared_buffers and
    # of 64MB of memory; the steps analysis gives it to the nearer (memory), and shared_buffers
    # is not reproduced by the same drop
    found = finding({20: around(40_000), 100: around(1_000)}, memory_mb=64)
    assert step_verdict(found, MEMORY, UNSPANNED).outcome == REPRODUCED
    assert step_verdict(found, SHARED_BUFFERS, UNSPANNED) == UNSPANNED


# -- a big report query washes the site's data out of both caches --------------------------------


def ratio(what: str, value: float, spread: float = 0.1) -> Figure:
    return Figure(what, value, value * (1 - spread), value * (1 + spread), 6)


def test_the_report_washing_both_caches_and_slowing_the_site_is_reproduced():
    verdict = wash_verdict(ratio("slower", 5), ratio("shared_buffers", 3), ratio("OS", 8))
    assert verdict.outcome == REPRODUCED and "every part" in verdict.reason


def test_shared_buffers_kept_by_the_ring_buffer_leaves_the_claim_noise():
    # a scan of a big table reads through a 256 kB ring: shared_buffers keeps the site's pages
    # (×1.0), the OS cache loses them, the site slows: the parts disagree, never reproduced
    verdict = wash_verdict(ratio("slower", 5), ratio("shared_buffers", 1.0, 0.02), ratio("OS", 8))
    assert verdict.outcome == NOISE and "the parts disagree" in verdict.reason
    assert "shared_buffers: contradicted" in verdict.reason


def test_a_site_unharmed_by_the_report_contradicts_it():
    parts = (ratio("slower", 1.0, 0.02), ratio("sb", 1.0, 0.02), ratio("OS", 1.05, 0.02))
    assert wash_verdict(*parts).outcome == CONTRADICTED


def test_a_slowdown_only_noticeable_is_not_the_site_going_down():
    # ×1.3: more than noticeable, less than "greatly" (×1.5): the interval is wholly below it
    verdict = wash_verdict(ratio("slower", 1.3, 0.05), ratio("sb", 3), ratio("OS", 8))
    assert verdict.outcome == NOISE and "the site: contradicted" in verdict.reason


def test_the_wash_is_judged_on_seed_000s_run_not_on_a_size_sweep(runs):
    verdict = report_washes_caches(runs["big-cache-tiny"])
    assert verdict.outcome == NOT_MEASURED and "cache-wash run" in verdict.reason
    assert wash_verdict(None, None, None).outcome == NOT_MEASURED
    # seed 000's run: lookups, a scan of a table larger than memory, lookups again
    washed = report_washes_caches(runs["cache-split-tiny"])
    assert washed.figure is not None, washed.text()
    assert washed.figure.what.startswith("lookups after / before the report")
    assert "huge pages off" in washed.figure.what
    claim = next(c for c in BigCache.claims if c.judge is report_washes_caches)
    assert claim.judged_on == "cache-wash"
