"""Seed 004's claims (studies/big_cache/claims.py): each rule on constructed figures for every
verdict it can give, then the judges on the fixture store's real runs."""

import pytest

from pgcachelab.analysis.claims import CANNOT, CONTRADICTED, NOISE, REPRODUCED
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.steps import MEMORY, SHARED_BUFFERS, SizePoint, find_steps
from pgcachelab.machine.disk_profiles import PRESETS
from pgcachelab.store.records import Measurement, Run, StoredPoint
from pgcachelab.studies.big_cache.claims import (
    DISK_BAND,
    NOT_A_SIZE_SWEEP,
    DeviceUse,
    device_iops,
    disk_decides,
    disk_verdict,
    left_memory,
    left_shared_buffers,
    step_figure,
    step_verdict,
)
from pgcachelab.studies.big_cache.study import BigCache

MB = 2**20
UNSPANNED = "nothing measured either side"


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
    assert "95% CI" in verdict.text() and "shared_buffers 16MB" in verdict.text()


def test_a_flat_line_across_shared_buffers_contradicts_the_step():
    # tps within 1% either side, tight: no step of 20% can hide in that interval
    found = finding({10: around(40_000, 0.01), 40: around(39_800, 0.01)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == CONTRADICTED
    assert verdict.figure.ci_high < 1.2


def test_a_drop_whose_interval_reaches_below_the_threshold_is_noise():
    # ×1.3 by the means, but repetitions scattered by ±40%: the interval reaches below 1.2
    found = finding({10: around(26_000, 0.4), 40: around(20_000, 0.4)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == NOISE
    assert verdict.figure.ci_low < 1.2 < verdict.figure.ci_high


def test_one_repetition_a_side_is_noise_never_reproduced():
    found = finding({10: (40_000.0,), 40: (10_000.0,)})
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == NOISE and "one repetition" in verdict.reason


def test_no_size_either_side_of_the_boundary_cannot_be_shown():
    # every size far past 16MB of shared_buffers (beyond MATCH_FACTOR): no step can be placed
    found = finding({100: around(5_000), 200: around(5_000)}, memory_mb=4096)
    assert step_figure(found, SHARED_BUFFERS) is None
    verdict = step_verdict(found, SHARED_BUFFERS, UNSPANNED)
    assert verdict.outcome == CANNOT and verdict.reason == UNSPANNED
    assert step_verdict(None, MEMORY, UNSPANNED).reason == NOT_A_SIZE_SWEEP


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
    assert 1 / DISK_BAND < verdict.figure.ci_low < verdict.figure.ci_high < DISK_BAND


def test_tps_far_below_what_the_disk_allows_contradicts():
    # the device used a fifth of its IOPS: something else (CPU, clients) decided
    verdict = disk_verdict([0.2, 0.21, 0.19, 0.2], "150 IOPS")
    assert verdict.outcome == CONTRADICTED and verdict.figure.ci_high < 1 / DISK_BAND


def test_tps_above_what_the_disk_allows_contradicts():
    # three times the reads the device can serve: the data came from a cache, not the disk
    assert disk_verdict([3.0, 3.2, 2.9], "150 IOPS").outcome == CONTRADICTED


def test_a_share_scattered_across_the_band_is_noise():
    assert disk_verdict([0.5, 1.9, 1.0, 0.7], "150 IOPS").outcome == NOISE
    assert disk_verdict([1.0], "150 IOPS").outcome == NOISE  # one repetition decides nothing


def test_no_device_reads_cannot_be_shown():
    assert disk_verdict([], "150 IOPS").outcome == CANNOT


def test_the_device_iops_is_the_cap_or_what_the_clients_keep_busy():
    vm = PRESETS["seed-004-vm"].record()
    assert device_iops(vm, 4) == 150  # 4 clients at 6.6 ms could ask 600/s: the cap decides
    assert device_iops(vm, 1) == 150  # one client at 6.58 ms: 152/s, still the cap
    nvme = PRESETS["nvme"].record()  # no cap: each client waits 80 µs per read
    assert device_iops(nvme, 4) == pytest.approx(4 / 80e-6)
    # 150 tps at 1.5 reads per transaction is 225 reads/s: 1.5 times the device's 150
    assert DeviceUse(150, 1.5, 150).share == pytest.approx(1.5)


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
        assert judge(data).outcome == CANNOT and judge(data).reason == NOT_A_SIZE_SWEEP


def test_every_big_cache_claim_is_judged_and_says_its_rule():
    for claim in BigCache.claims:
        assert claim.figure and claim.rule and claim.article
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
        point = StoredPoint(index, f"scale={index + 1}", {"scale": index + 1}, {}, {})
        points.append(PointResult(point, measurements, None, None, mb * MB, None, 16 * MB))
    target = {"memory_limit_bytes": memory_limit_mb * MB if memory_limit_mb else None}
    run = Run("r", "r", "", "", target, {"memory_total_bytes": 24 * 2**30}, "done", None, None,
              0.0, None, None)  # fmt: skip
    return RunData(run, points)


def test_past_the_memory_step_tps_at_the_device_iops_is_reproduced():
    # 100 tps at 1.5 reads a transaction: 150 reads/s, seed-004-vm's cap
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0), 400: (around(100), 1.5)})
    memory = left_memory(data)
    assert memory.outcome == REPRODUCED and memory.figure.value == pytest.approx(200, rel=0.05)
    disk = disk_decides(data)
    assert disk.outcome == REPRODUCED
    assert disk.figure.value == pytest.approx(1.0, rel=0.02)
    assert "seed-004-vm's 150 IOPS" in disk.figure.what


def test_past_the_memory_step_tps_far_under_the_device_iops_contradicts():
    # 20 tps at 1.5 reads: 30 reads/s of the 150 the device serves: not the disk's limit
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0), 400: (around(20), 1.5)})
    disk = disk_decides(data)
    assert disk.outcome == CONTRADICTED and disk.figure.value == pytest.approx(0.2, rel=0.02)


def test_the_hosts_disk_cannot_show_the_iops():
    data = emulated_run({10: (around(40_000), 0), 400: (around(100), 1.5)}, profile=None)
    disk = disk_decides(data)
    assert disk.outcome == CANNOT and "not emulated" in disk.reason


def test_with_a_limit_but_no_size_past_it_the_memory_step_cannot_be_shown():
    data = emulated_run({10: (around(40_000), 0), 60: (around(20_000), 0)}, memory_limit_mb=1024)
    verdict = left_memory(data)
    assert verdict.outcome == CANNOT
    assert "stays within the server's memory limit of 1GB" in verdict.reason


def test_one_step_is_not_credited_to_both_boundaries():
    # 20MB then 100MB: the one break lies within a factor of 2 of 16MB of shared_buffers and
    # of 64MB of memory; the steps analysis gives it to the nearer (memory), and shared_buffers
    # is not reproduced by the same drop
    found = finding({20: around(40_000), 100: around(1_000)}, memory_mb=64)
    assert step_verdict(found, MEMORY, UNSPANNED).outcome == REPRODUCED
    assert step_verdict(found, SHARED_BUFFERS, UNSPANNED).outcome == CANNOT
