"""Seed 000's claims (studies/cache_wash/claims.py): each rule on constructed repetitions for
every verdict it can give, then the judges on the fixture store's cache-split run."""

from types import SimpleNamespace

import pytest

from pgcachelab.analysis.cache_split import Repetition, survival_table
from pgcachelab.analysis.cache_split_claims import NOT_REPRODUCED, Judgement
from pgcachelab.analysis.claims import CANNOT, CONTRADICTED, NOISE, REPRODUCED, Figure
from pgcachelab.studies.cache_wash.claims import (
    huge_pages_lookups,
    huge_pages_scan,
    kept_verdict,
    larger_shared_buffers_speeds_scan,
    mapped,
    scan_washes_index,
    shared_buffers_keeps_index,
    washed_verdict,
)
from pgcachelab.studies.cache_wash.study import CacheWash

MB = 2**20
INDEX = 10 * MB
SPREAD = (0.98, 1.02, 0.99, 1.01)  # four rounds, ±2%: a tight interval
WIDE = (0.4, 2.5, 0.6, 1.8)  # four rounds scattered by ×6: no interval decides


def reps(sb_mb, idx1, idx2, seq=100.0, huge_pages="off", scatter=SPREAD, idx1_too=False):
    """One point's repetitions: idx2 and seq (and idx1 if asked) scaled by each round's
    scatter."""
    return [
        Repetition(
            sb_mb * MB,
            huge_pages,
            r,
            {
                "idx1": [idx1 * (factor if idx1_too else 1)] * 3,
                "seq": [seq * factor] * 3,
                "idx2": [idx2 * factor] * 3,
            },
        )
        for r, factor in enumerate(scatter)
    ]


def run_of(repetitions, index_bytes=INDEX):
    """What the adapters read of a run: its cache-wash repetitions and the index's size."""
    measurement = SimpleNamespace(metrics={"cache_wash": {"data": {"index_bytes": index_bytes}}})
    return SimpleNamespace(points=[SimpleNamespace(washes=repetitions, ok=[measurement])])


# -- the scan washes the index out at a small shared_buffers ----------------------------------


def test_idx2_several_times_idx1_below_the_index_is_reproduced():
    verdict = washed_verdict(survival_table(reps(1, 0.1, 0.5) + reps(64, 0.1, 0.1)), INDEX)
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(5, rel=0.02) and verdict.figure.ci_low > 1.1
    assert "idx2/idx1 at 1MB" in verdict.figure.what


def test_idx2_equal_to_idx1_below_the_index_contradicts():
    # the OS cache kept the index through the scan: the whole interval under ×1.1
    verdict = washed_verdict(survival_table(reps(1, 0.1, 0.1)), INDEX)
    assert verdict.outcome == CONTRADICTED and verdict.figure.ci_high < 1.1


def test_scattered_rounds_below_the_index_are_noise():
    verdict = washed_verdict(survival_table(reps(1, 0.1, 0.2, scatter=WIDE)), INDEX)
    assert verdict.outcome == NOISE and "reaches across 1.10" in verdict.reason


def test_without_a_small_shared_buffers_or_an_index_size_it_cannot_be_shown():
    rows = survival_table(reps(64, 0.1, 0.1))
    assert washed_verdict(rows, INDEX).outcome == CANNOT
    assert "no shared_buffers smaller than the 10MB index" in washed_verdict(rows, INDEX).reason
    assert washed_verdict(rows, None).outcome == CANNOT


def test_huge_pages_on_and_off_combine_contradicted_first():
    # washed out with huge pages, kept without: one part contradicts, and the reason says both
    rows = survival_table(reps(1, 0.1, 0.5, huge_pages="on") + reps(1, 0.1, 0.1))
    verdict = washed_verdict(rows, INDEX)
    assert verdict.outcome == CONTRADICTED
    assert "huge_pages=off" in verdict.figure.what and "reproduced: idx2/idx1" in verdict.reason


# -- shared_buffers that holds the index keeps it --------------------------------------------


def test_idx2_near_idx1_once_shared_buffers_holds_the_index_is_reproduced():
    verdict = kept_verdict(survival_table(reps(1, 0.1, 0.5) + reps(64, 0.1, 0.1)), INDEX)
    assert verdict.outcome == REPRODUCED
    assert "at 64MB" in verdict.figure.what and verdict.figure.ci_high <= 1.3


def test_idx2_slow_where_shared_buffers_holds_the_index_contradicts():
    rows = survival_table(reps(32, 0.1, 0.1) + reps(64, 0.1, 0.2))
    verdict = kept_verdict(rows, INDEX)
    assert verdict.outcome == CONTRADICTED
    assert "at 64MB" in verdict.figure.what  # the point that breaks it is the one quoted


def test_scattered_rounds_where_shared_buffers_holds_the_index_are_noise():
    verdict = kept_verdict(survival_table(reps(64, 0.1, 0.12, scatter=WIDE)), INDEX)
    assert verdict.outcome == NOISE


def test_a_cold_idx1_or_no_large_shared_buffers_cannot_show_it():
    # idx1 twice idx2 beyond the noise: idx1 read the index from the disk, the ratio is no test
    cold = kept_verdict(survival_table(reps(64, 0.2, 0.1)), INDEX)
    assert cold.outcome == CANNOT and "did not find the index warm" in cold.reason
    assert cold.figure is not None and cold.figure.value == pytest.approx(0.5, rel=0.02)
    assert kept_verdict(survival_table(reps(1, 0.1, 0.5)), INDEX).outcome == CANNOT


# -- huge pages --------------------------------------------------------------------------------


def both_ways(on_idx, off_idx, on_seq=100.0, off_seq=100.0, scatter=SPREAD):
    on = reps(64, on_idx, on_idx, on_seq, "on", scatter, idx1_too=True)
    return on + reps(64, off_idx, off_idx, off_seq, "off", (1, 1, 1, 1))


def test_faster_lookups_with_huge_pages_are_reproduced():
    verdict = huge_pages_lookups(run_of(both_ways(0.08, 0.12)))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.value == pytest.approx(0.667, rel=0.03)
    assert "on/off at 64MB" in verdict.figure.what


def test_slower_lookups_with_huge_pages_contradict():
    assert huge_pages_lookups(run_of(both_ways(0.14, 0.12))).outcome == CONTRADICTED


def test_no_effect_with_the_seeds_size_outside_the_interval_contradicts():
    # on/off 0.96-1.0: no effect beyond the noise, and the seed's ×0.67 wholly below the
    # interval: the report's "not reproduced" on the far side of the seed's figure
    verdict = huge_pages_lookups(run_of(both_ways(0.118, 0.12)))
    assert verdict.outcome == CONTRADICTED
    assert 0.667 < verdict.figure.ci_low < 1 < verdict.figure.ci_high
    assert "the seed's ×0.67 is below the interval" in verdict.reason


def test_scattered_huge_pages_lookups_are_noise():
    verdict = huge_pages_lookups(run_of(both_ways(0.1, 0.12, scatter=WIDE)))
    assert verdict.outcome == NOISE


def test_huge_pages_never_on_cannot_be_shown():
    for judge in (huge_pages_lookups, huge_pages_scan):
        verdict = judge(run_of(reps(64, 0.1, 0.1)))
        assert verdict.outcome == CANNOT and "no point with huge pages on" in verdict.reason


def test_the_scan_with_huge_pages():
    assert huge_pages_scan(run_of(both_ways(0.1, 0.1, 50, 60))).outcome == REPRODUCED
    assert huge_pages_scan(run_of(both_ways(0.1, 0.1, 70, 60))).outcome == CONTRADICTED
    scattered = huge_pages_scan(run_of(both_ways(0.1, 0.1, 55, 60, scatter=WIDE)))
    assert scattered.outcome == NOISE


# -- a larger shared_buffers speeds the scan ----------------------------------------------------


def test_the_scan_against_shared_buffers():
    faster = larger_shared_buffers_speeds_scan(
        run_of(reps(1, 0.1, 0.1, 100) + reps(64, 0.1, 0.1, 50))
    )
    assert faster.outcome == REPRODUCED
    assert faster.figure.value == pytest.approx(0.5, rel=0.03)
    assert "seq at 64MB / at 1MB" in faster.figure.what
    slower = larger_shared_buffers_speeds_scan(
        run_of(reps(1, 0.1, 0.1, 50) + reps(64, 0.1, 0.1, 100))
    )
    assert slower.outcome == CONTRADICTED
    scattered = larger_shared_buffers_speeds_scan(
        run_of(reps(1, 0.1, 0.1, 100) + reps(64, 0.1, 0.1, 90, scatter=WIDE))
    )
    assert scattered.outcome == NOISE
    one = larger_shared_buffers_speeds_scan(run_of(reps(64, 0.1, 0.1)))
    assert one.outcome == CANNOT and "only one shared_buffers" in one.reason


def test_a_not_reproduced_across_its_margin_is_noise_never_contradicted():
    across = Figure("x", 1.0, 0.5, 2.0, 4)
    judgement = Judgement(NOT_REPRODUCED, "no effect")
    assert mapped(judgement, across, lambda f: f.ci_low > 1).outcome == NOISE
    assert mapped(judgement, across, lambda f: True).outcome == CONTRADICTED


# -- the fixture run ----------------------------------------------------------------------------


@pytest.fixture(scope="module")
def split_run(tiny_runs):
    return tiny_runs["cache-split-tiny"]


def test_cache_split_tiny_gets_what_its_two_rounds_can_show(split_run):
    # huge pages off only, shared_buffers 1MB, 4MB and 16MB around a 2.5MB index, two rounds,
    # no memory limit: idx2/idx1 is ×0.89 (0.18-4.4) at 1MB and ×1.10 (0.03-44) at 4MB, far
    # too wide with two rounds (t = 12.7) to decide either way; the scan at 16MB takes ×0.47
    # (0.26-0.86) of its time at 1MB, the whole interval below 1
    washed = scan_washes_index(split_run)
    assert washed.outcome == NOISE and washed.figure.value == pytest.approx(0.885, abs=0.01)
    kept = shared_buffers_keeps_index(split_run)
    assert kept.outcome == NOISE and "at 4MB" in kept.figure.what
    assert huge_pages_lookups(split_run).outcome == CANNOT
    assert huge_pages_scan(split_run).outcome == CANNOT
    scan = larger_shared_buffers_speeds_scan(split_run)
    assert scan.outcome == REPRODUCED
    assert scan.figure.value == pytest.approx(0.47, abs=0.01) and scan.figure.repetitions == 2


def test_every_cache_wash_claim_is_judged_and_says_its_rule():
    assert len(CacheWash.claims) == 5
    for claim in CacheWash.claims:
        assert claim.figure and claim.rule and claim.article
        assert claim.judge.__module__ == "pgcachelab.studies.cache_wash.claims"


def test_huge_pages_on_at_other_shared_buffers_only_cannot_be_compared():
    verdict = huge_pages_lookups(run_of(reps(64, 0.1, 0.1, huge_pages="on") + reps(32, 0.1, 0.1)))
    assert verdict.outcome == CANNOT and verdict.reason.startswith("no shared_buffers was")
