"""Seed 003's claims (studies/inspect_overhead/claims.py): each rule on constructed sags and
trial errors for every verdict it can give, then the judges on the fixture store's runs."""

import math
import statistics

import pytest

from pgcachelab.analysis.claims import CANNOT, CONTRADICTED, NOISE, REPRODUCED
from pgcachelab.analysis.inspect_accuracy import TrialError
from pgcachelab.analysis.inspect_overhead import sag_of_ratios
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.statistics import t95
from pgcachelab.store.records import Measurement, Run, StoredPoint
from pgcachelab.studies.inspect_overhead.claims import (
    consistent_read_sags,
    consistent_sag_verdict,
    fast_error,
    fast_error_verdict,
    lighter_modes_sag_less,
    lighter_verdict,
    sag_difference,
    sag_figure,
)
from pgcachelab.studies.inspect_overhead.study import InspectOverhead

MACHINE = "this one 2 cores"


def sag(*ratios, method="extension/snapshot"):
    return sag_of_ratios(list(ratios), method)


def figure(*ratios):
    return sag_figure("tps sag", sag(*ratios))


# -- the consistent read sags tps ---------------------------------------------------------------


def test_a_sag_well_beyond_one_percent_is_reproduced():
    verdict = consistent_sag_verdict(figure(0.90, 0.91, 0.89, 0.90), "-", MACHINE)
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(10, abs=0.01) and verdict.figure.unit == "%"
    assert verdict.figure.ci_low > 1 and "95% CI" in verdict.text()
    assert MACHINE not in verdict.reason  # a sag shown needs no excuse


def test_tps_unmoved_by_the_consistent_read_contradicts():
    verdict = consistent_sag_verdict(figure(1.0, 1.001, 0.999, 1.0), "-", MACHINE)
    assert verdict.outcome == CONTRADICTED and verdict.figure.ci_high < 1
    assert MACHINE in verdict.reason  # the seed's 144 CPUs beside this machine's


def test_a_sag_scattered_across_one_percent_is_noise():
    verdict = consistent_sag_verdict(figure(0.7, 1.2, 0.9, 1.1), "-", MACHINE)
    assert verdict.outcome == NOISE
    assert consistent_sag_verdict(figure(0.5), "-").outcome == NOISE  # one ratio: no interval


def test_no_consistent_read_cannot_be_shown():
    verdict = consistent_sag_verdict(None, "no snapshot mode measured")
    assert verdict.outcome == CANNOT and verdict.reason == "no snapshot mode measured"


# -- the lighter modes sag less -----------------------------------------------------------------


def test_the_difference_of_sags_is_welchs():
    consistent, light = sag(0.90, 0.92, 0.88), sag(0.99, 0.98, 1.0, 0.97, method="fast")
    found = sag_difference("d", consistent, light)
    a, b = [0.90, 0.92, 0.88], [0.99, 0.98, 1.0, 0.97]
    assert found.value == pytest.approx((statistics.fmean(b) - statistics.fmean(a)) * 100)
    va, vb = statistics.variance(a) / 3, statistics.variance(b) / 4
    df = (va + vb) ** 2 / (va**2 / 2 + vb**2 / 3)
    half = t95(df) * math.sqrt(va + vb) * 100
    assert found.ci_low == pytest.approx(found.value - half)
    assert found.repetitions == 3 and found.unit == "points"


def differences(consistent, **lighter):
    return {
        mode: sag_difference(mode, consistent, sag(*ratios, method=mode)) if ratios else None
        for mode, ratios in lighter.items()
    }


def test_lighter_modes_that_sag_less_are_reproduced():
    consistent = sag(0.90, 0.91, 0.89, 0.90)
    found = differences(
        consistent, semiconsistent=(0.96, 0.97, 0.95, 0.96), nonconsistent=(0.99, 1.0, 0.99, 1.0)
    )
    verdict = lighter_verdict(found, "-")
    assert verdict.outcome == REPRODUCED and verdict.figure.ci_low > 0


def test_a_lighter_mode_that_sags_more_contradicts():
    consistent = sag(0.98, 0.99, 0.98, 0.99)
    found = differences(
        consistent, semiconsistent=(0.80, 0.81, 0.79, 0.80), nonconsistent=(0.99, 1.0, 0.99, 1.0)
    )
    verdict = lighter_verdict(found, "-")
    assert verdict.outcome == CONTRADICTED and verdict.figure.what == "semiconsistent"
    assert "nonconsistent:" in verdict.reason  # the other mode's verdict is said too


def test_lighter_modes_within_the_noise_are_noise():
    consistent = sag(0.7, 1.2, 0.9, 1.1)
    verdict = lighter_verdict(differences(consistent, nonconsistent=(0.9, 1.1, 1.0, 0.95)), "-")
    assert verdict.outcome == NOISE


def test_one_lighter_mode_measured_decides_and_the_other_is_named():
    consistent = sag(0.90, 0.91, 0.89, 0.90)
    found = differences(consistent, semiconsistent=(), nonconsistent=(0.99, 1.0, 0.99, 1.0))
    verdict = lighter_verdict(found, "-")
    assert verdict.outcome == REPRODUCED and "semiconsistent: not measured" in verdict.reason


def test_no_lighter_mode_measured_cannot_be_shown():
    verdict = lighter_verdict({"semiconsistent": None, "nonconsistent": None}, "none beside it")
    assert verdict.outcome == CANNOT and verdict.reason == "none beside it"


# -- fast's error against the seed's 3% -----------------------------------------------------------


def errors(*shares_percent):
    """Trials of fast on 10,000 buffers, misplacing the given percentages."""
    return [TrialError("fast", 10_000, share * 100, 0, None, 0.0, ()) for share in shares_percent]


def test_fast_well_under_three_percent_is_reproduced():
    verdict = fast_error_verdict(errors(0.4, 0.5, 0.6, 0.5, 0.5))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(0.5) and verdict.figure.ci_high < 3
    assert "worst trial 0.60%" in verdict.reason


def test_fast_well_over_three_percent_contradicts():
    assert fast_error_verdict(errors(5, 5.2, 4.9, 5.1)).outcome == CONTRADICTED


def test_fast_scattered_across_three_percent_is_noise():
    assert fast_error_verdict(errors(0.5, 2.9, 0.4, 2.8)).outcome == NOISE
    assert fast_error_verdict(errors(0.5)).outcome == NOISE  # one trial: no interval


def test_a_worst_trial_over_three_percent_keeps_it_from_reproduced():
    # the mean's interval is well under 3%, but the seed's figure is its maximum
    verdict = fast_error_verdict(errors(*[0.1] * 9, 3.2))
    assert verdict.figure.ci_high < 3
    assert verdict.outcome == NOISE and "worst trial misplaced 3.20%" in verdict.reason


def test_no_trials_cannot_be_shown():
    verdict = fast_error_verdict([])
    assert verdict.outcome == CANNOT and "accuracy_pairs" in verdict.reason


# -- the fixture runs ---------------------------------------------------------------------------


@pytest.fixture(scope="module")
def runs(tiny_runs):
    return tiny_runs


def test_inspect_overhead_tiny_measured_none_of_the_seeds_modes(runs):
    # PostgreSQL 18, methods none, pg_buffercache and pg_buffercache_summary(): since 10
    # pg_buffercache takes no partition lock, so no consistent read, no lighter mode beside
    # one, and no accuracy trials
    data = runs["inspect-overhead-tiny"]
    sags = consistent_read_sags(data)
    assert sags.outcome == CANNOT and "no read that takes every buffer-mapping" in sags.reason
    assert "pg_buffercache_summary()" in sags.reason
    assert lighter_modes_sag_less(data).outcome == CANNOT
    assert fast_error(data).outcome == CANNOT


def test_inspect_history_tiny_has_a_consistent_read_on_9_6_but_no_interval_to_decide(runs):
    # pg_buffercache on 9.6 is the seed's consistent read (every partition lock); one
    # repetition of alternating windows gives two window pairs, sag -11.7% (the geometric mean
    # of their ratios) with an interval from -1,879% to +94%: far across 1%
    data = runs["inspect-history-tiny"]
    verdict = consistent_read_sags(data)
    assert verdict.outcome == NOISE
    assert "pg_buffercache on PostgreSQL 9.6" in verdict.figure.what
    assert verdict.figure.value == pytest.approx(-11.66, abs=0.01)
    assert "144 CPUs" in verdict.reason and "2 cores" in verdict.reason
    lighter = lighter_modes_sag_less(data)
    assert lighter.outcome == CANNOT and "semiconsistent or fast" in lighter.reason
    assert fast_error(data).outcome == CANNOT


def test_every_inspect_claim_is_judged_and_says_its_rule():
    for claim in InspectOverhead.claims:
        assert claim.figure and claim.rule and claim.article
        assert claim.judge.__module__ == "pgcachelab.studies.inspect_overhead.claims"


# -- the adapters on a constructed run ----------------------------------------------------------


def overhead_run(methods: dict[str, tuple[float, ...]], version_num=180000):
    """One shared_buffers, each method's tps per round (paired by round with "none")."""
    points, settings = [], {}
    for index, (method, tps_values) in enumerate(methods.items()):
        swept = {"inspect_method": method, "shared_buffers": "128MB"}
        measurements = [
            Measurement(index, r, "ok", None, 0.0, 1.0, 1.0, None, tps, 1.0, 0.1, {})
            for r, tps in enumerate(tps_values)
        ]
        point = StoredPoint(index, method, swept, {"inspect_method": method}, {})
        points.append(PointResult(point, measurements, None, None, None, None, 128 * 2**20))
        settings[index] = {"server_version_num": {"normalised": float(version_num)}}
    run = Run("r", "r", "", "", {}, {"cores": 2}, "done", None, None, 0.0, None, None)
    return RunData(run, points, settings)


BASE = (1000.0, 1010.0, 990.0, 1005.0)


def times(*factors):
    return tuple(t * f for t, f in zip(BASE, factors, strict=True))


def test_the_snapshot_mode_is_the_seeds_consistent_read():
    data = overhead_run(
        {
            "none": BASE,
            "extension/snapshot": times(0.9, 0.91, 0.89, 0.9),
            "extension/semiconsistent": times(0.97, 0.96, 0.97, 0.98),
            "extension/fast": times(1.0, 0.99, 1.0, 0.995),
        }
    )
    sags = consistent_read_sags(data)
    assert sags.outcome == REPRODUCED and "pg_cachelab snapshot" in sags.figure.what
    assert sags.figure.value == pytest.approx(10, abs=0.01) and sags.figure.repetitions == 4
    lighter = lighter_modes_sag_less(data)
    assert lighter.outcome == REPRODUCED and "nonconsistent:" in lighter.reason


def test_pg_buffercache_is_the_consistent_read_only_before_postgresql_10():
    methods = {"none": BASE, "pg_buffercache": times(0.9, 0.91, 0.89, 0.9)}
    assert consistent_read_sags(overhead_run(methods, 90624)).outcome == REPRODUCED
    modern = consistent_read_sags(overhead_run(methods, 180000))
    assert modern.outcome == CANNOT and "since 10 pg_buffercache takes none" in modern.reason
    # the lab's own consistent mode reads as pg_buffercache 10+ does: no partition lock
    consistent = {"none": BASE, "extension/consistent": times(0.9, 0.91, 0.89, 0.9)}
    assert consistent_read_sags(overhead_run(consistent)).outcome == CANNOT


def test_a_consistent_read_without_a_baseline_has_no_sag():
    verdict = consistent_read_sags(overhead_run({"extension/snapshot": BASE}))
    assert verdict.outcome == CANNOT and "no baseline" in verdict.reason
