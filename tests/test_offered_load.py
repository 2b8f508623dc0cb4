"""Latency against offered load (pgbench -R sweeps): the knee and the finding's line."""

from pgcachelab.analysis.latency import point_percentiles
from pgcachelab.analysis.offered_load import LoadStep, finding, knee
from pgcachelab.analysis.step_resources import point_resources, step_explanation


def step(offered, achieved, p99, lag=None) -> LoadStep:
    return LoadStep(offered, achieved, p99 / 3, p99, p99 * 2, lag, False)


def test_the_knee_is_the_first_rate_the_server_falls_behind():
    steps = [step(1000, 998, 0.5), step(4000, 3990, 0.8), step(8000, 6100, 40.0, lag=35.0)]
    assert knee(steps) == 2
    assert knee(list(reversed(steps))) == 2  # by offered rate, whatever the order given
    line = finding(steps)
    assert line.startswith("p99 stays under 0.8 ms up to 4,000 tps offered;")
    assert "at 8,000 tps offered the server achieved only 6,100 (76%)" in line
    assert line.endswith("and p99 was 40 ms, schedule lag p99 35 ms: the knee")


def test_where_p99_leaves_the_flat_part_before_the_server_falls_behind():
    steps = [step(1000, 1000, 0.4), step(8000, 7990, 0.7), step(16000, 15900, 2.0),
             step(36000, 35900, 12.5)]  # fmt: skip
    assert finding(steps) == (
        "p99 stays under 0.7 ms up to 8,000 tps offered, then rises to 12.5 ms at 36,000 tps"
        " (the server kept up with every rate offered: offer more for the knee)"
    )


def test_a_few_percent_short_of_the_rate_still_keeps_up():
    # pgbench's Poisson schedule makes a short run's achieved rate wander around the offered
    assert knee([step(1000, 960, 0.5), step(2000, 1920, 0.6)]) is None
    assert finding([step(1000, 960, 0.5), step(2000, 1920, 0.6)]) == (
        "p99 stays under 0.6 ms up to 2,000 tps offered (the server kept up with every rate"
        " offered: offer more for the knee)"
    )


def test_a_short_runs_poisson_noise_is_not_a_knee():
    # captured: 500 tps offered for 2 s, pgbench completed 945 (474 tps): 1,000 +- 32 scheduled
    short = LoadStep(500, 474.7, 0.23, 1.7, 3.4, 1.0, False, completed=945, measured_s=2.0)
    assert short.keeps_up and knee([short]) is None
    # the same shortfall over a minute is far outside the schedule's noise: behind
    long = LoadStep(500, 474.7, 0.23, 1.7, 3.4, 1.0, False, completed=28_482, measured_s=60.0)
    assert not long.keeps_up
    # without the counts (a run stored before they were) only the ratio is left to judge by
    assert not step(500, 474.7, 1.7).keeps_up
    far_behind = LoadStep(1e6, 59_419, 0.5, 900, 1500, 890, False, completed=118_525, measured_s=2)
    assert not far_behind.keeps_up


def test_behind_from_the_first_rate_says_to_offer_less():
    assert "fell behind already at the lowest rate offered, 50,000 tps" in finding(
        [step(50_000, 20_000, 9.0)]
    )
    assert finding([]) is None


def test_a_points_percentiles_are_the_medians_of_its_repetitions():
    reps = [
        {"p50_ms": 1.0, "p95_ms": 2, "p99_ms": 3.0, "p999_ms": 4, "logged": 10,
         "sampling_rate": 1.0, "zeros_share": 0.0, "lag": {"p99_ms": 0.5}},
        {"p50_ms": 2.0, "p95_ms": 3, "p99_ms": 9.0, "p999_ms": 5, "logged": 20,
         "sampling_rate": 0.5, "zeros_share": 0.2, "biased_low": True, "skipped": 3},
        {"p50_ms": 3.0, "p95_ms": 4, "p99_ms": 5.0, "p999_ms": 6, "logged": 30,
         "sampling_rate": 1.0, "zeros_share": 0.0, "lag": {"p99_ms": 1.5}},
        None,  # a repetition stored before the logs, or of another workload
    ]  # fmt: skip
    figures = point_percentiles(reps)
    assert figures.median_ms == {"p50": 2.0, "p95": 3, "p99": 5.0, "p999": 5}
    assert (figures.repetitions, figures.logged, figures.sampling_rate) == (3, 60, 0.5)
    assert figures.biased_low and figures.zeros_share == 0.2 and figures.skipped == 3
    assert figures.lag_p99_ms == 1.0
    assert point_percentiles([None, {}]) is None


def test_a_step_is_explained_by_what_the_machine_did_either_side():
    before = point_resources(
        [
            {"cpu_user_pct": 70.0, "cpu_system_pct": 25.0, "cpu_iowait_pct": 2.0,
             "device_reads_per_s": 12.0, "device_writes_per_s": 0.0, "device_wait_ms": 0.4},
            {"cpu_user_pct": 72.0, "cpu_system_pct": 24.0, "cpu_iowait_pct": 1.0,
             "device_reads_per_s": 10.0, "device_writes_per_s": 0.0, "device_wait_ms": 0.5},
            None,
        ]
    )  # fmt: skip
    after = point_resources(
        [{"cpu_user_pct": 12.0, "cpu_system_pct": 8.0, "cpu_iowait_pct": 93.0,
          "device_reads_per_s": 160.0, "device_writes_per_s": 0.0, "device_wait_ms": 6.1}]
    )  # fmt: skip
    assert before["cpu_busy_pct"] == 95.5 and before["device_reads_per_s"] == 11.0
    assert step_explanation(before, after) == (
        "CPU busy 96% → 20%, iowait 2% → 93%, device reads 11 → 160/s at 6.1 ms"
    )
    assert step_explanation(None, after) is None
    assert point_resources([None, {}]) is None
