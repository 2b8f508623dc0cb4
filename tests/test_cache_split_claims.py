"""Seed 000's three findings judged on constructed repetitions: every branch of every verdict.

The intervals quoted were checked by hand: three repetitions whose idx2/idx1 ratios are 4, 5
and 6.25 have logs evenly spaced by ln 1.25, so their geometric mean is 5 and Student's 95%
interval (t = 4.303 at 2 degrees of freedom) is 5 × exp(±4.303 × ln 1.25 / √3) = 2.87..8.70.
"""

import pytest

from pgcachelab.analysis.cache_split import Repetition
from pgcachelab.analysis.cache_split_claims import (
    HUGE_PAGES_WIN,
    INDEX_KEPT,
    NOT_REPRODUCED,
    NOT_SHOWN,
    REPRODUCED,
    SEQ_SPEEDS_UP,
    huge_pages_verdict,
    index_kept_verdict,
    seed_verdicts,
    seq_scan_verdict,
)

MB = 2**20
INDEX_BYTES = 155 * MB
WASHED = (4.0, 5.0, 6.25)  # idx2/idx1 per repetition: geometric mean 5, 95% CI 2.87..8.70
KEPT = (0.98, 1.0, 1.02)
UNDECIDED = (0.9, 1.4, 1.0)  # its interval reaches across 1.10


def rep(size_mb, huge_pages, repetition, idx1, idx2, seq=900.0):
    return Repetition(size_mb * MB, huge_pages, repetition,
                      {"idx1": [idx1] * 3, "seq": [seq], "idx2": [idx2] * 3})  # fmt: skip


def survival(ratios_by_size: dict, huge_pages="off") -> list[Repetition]:
    """Repetitions whose idx2/idx1 ratio is given per shared_buffers (MB) and repetition."""
    return [
        rep(size, huge_pages, r, 0.1, 0.1 * ratio)
        for size, ratios in ratios_by_size.items()
        for r, ratio in enumerate(ratios)
    ]


def only(verdict):
    [judgement] = verdict.judgements
    return judgement


# -- 1. the index through the scan ----------------------------------------------------------


def test_washed_out_small_and_kept_once_shared_buffers_holds_the_index_is_reproduced():
    verdict = index_kept_verdict(survival({1: WASHED, 16: WASHED, 256: KEPT}), INDEX_BYTES)
    assert verdict.claim == INDEX_KEPT and verdict.outcome == REPRODUCED
    judgement = only(verdict)
    assert judgement.scope == "huge_pages=off"
    assert judgement.evidence == (
        "idx2/idx1 ×5.00 (95% CI 2.87–8.70) at 1MB; ×1.00 (95% CI 0.95–1.05) at 256MB, which "
        "holds the 155MB index"
    )


def test_an_index_the_os_cache_kept_too_is_not_reproduced():
    judgement = only(index_kept_verdict(survival({1: KEPT, 256: KEPT}), INDEX_BYTES))
    assert judgement.outcome == NOT_REPRODUCED
    assert judgement.evidence.endswith(": the OS cache kept the index through the scan too")


def test_shared_buffers_that_hold_the_index_but_lose_it_is_not_reproduced():
    reps = survival({1: WASHED, 256: KEPT, 512: WASHED})
    judgement = only(index_kept_verdict(reps, INDEX_BYTES))
    assert judgement.outcome == NOT_REPRODUCED
    assert "×5.00 (95% CI 2.87–8.70) at 512MB, which holds the 155MB index" in judgement.evidence
    assert judgement.evidence.endswith(": shared_buffers did not keep the index")


@pytest.mark.parametrize(
    ("ratios", "why"),
    [
        ({256: KEPT, 512: KEPT}, "no shared_buffers smaller than the 155MB index was measured"),
        ({1: WASHED, 16: WASHED}, "no shared_buffers larger than the 155MB index was measured"),
    ],
)
def test_a_run_on_one_side_of_the_index_size_cannot_show_it(ratios, why):
    judgement = only(index_kept_verdict(survival(ratios), INDEX_BYTES))
    assert (judgement.outcome, judgement.evidence) == (NOT_SHOWN, why)


def test_idx2_within_30_percent_where_shared_buffers_holds_the_index_counts_as_kept():
    # (1.05, 1.1, 1.15): geometric 1.10, 95% CI 0.98..1.23 (scipy): within 30%, not 10%
    kept = only(index_kept_verdict(survival({1: WASHED, 256: (1.05, 1.1, 1.15)}), INDEX_BYTES))
    assert kept.outcome == REPRODUCED
    assert "×1.10 (95% CI 0.98–1.23) at 256MB" in kept.evidence


def test_an_idx1_slower_than_idx2_where_the_index_is_held_shows_nothing():
    """idx1 itself was cold (its lookups went to disk): a ratio below 1 is not survival."""
    cold = only(index_kept_verdict(survival({1: WASHED, 256: (0.3, 0.4, 0.5)}), INDEX_BYTES))
    assert cold.outcome == NOT_SHOWN
    assert cold.evidence.endswith(
        "idx1 was slower than idx2 beyond the noise there, so idx1 did not find the index warm "
        "and the ratio says nothing of the scan"
    )


def test_intervals_too_wide_or_missing_cannot_show_it():
    wide = only(index_kept_verdict(survival({1: WASHED, 256: UNDECIDED}), INDEX_BYTES))
    assert wide.outcome == NOT_SHOWN
    assert wide.evidence.endswith(
        "a 95% interval reaches across the margin (idx2 beyond 10% of idx1 where the index is "
        "washed out, within 30% where shared_buffers holds it)"
    )
    once = only(index_kept_verdict(survival({1: WASHED[:1], 256: KEPT[:1]}), INDEX_BYTES))
    assert once.outcome == NOT_SHOWN
    assert "×4.00 (one repetition: no interval) at 1MB" in once.evidence
    assert once.evidence.endswith(
        "a point has one repetition or no ratio, and no interval to judge by"
    )
    unsized = only(index_kept_verdict(survival({1: WASHED, 256: KEPT}), None))
    assert unsized.outcome == NOT_SHOWN and "stored no index size" in unsized.evidence


def test_each_huge_pages_value_is_judged_on_its_own():
    reps = survival({1: WASHED, 256: KEPT}, "on") + survival({1: KEPT, 256: KEPT}, "off")
    verdict = index_kept_verdict(reps, INDEX_BYTES)
    assert [(j.scope, j.outcome) for j in verdict.judgements] == [
        ("huge_pages=on", REPRODUCED), ("huge_pages=off", NOT_REPRODUCED)
    ]  # fmt: skip
    assert verdict.outcome == "mixed"


# -- 2. huge pages at large shared_buffers ---------------------------------------------------


def on_off(on_over_off_by_size: dict, noise=(1.0, 1.02, 0.98)) -> list[Repetition]:
    """Pairs of repetitions whose lookups take on_over_off × the off time with huge pages."""
    reps = []
    for size, factor in on_over_off_by_size.items():
        for r, wobble in enumerate(noise):
            off = 0.12 * (1 + 0.05 * r)
            reps.append(rep(size, "off", r, off, off))
            reps.append(rep(size, "on", r, off * factor * wobble, off * factor * wobble))
    return reps


def test_faster_with_huge_pages_at_the_largest_shared_buffers_is_reproduced():
    # slower at 1MB, as the seed saw for most of its chart: only the largest setting counts
    verdict = huge_pages_verdict(on_off({1: 1.3, 1024: 0.7}))
    assert verdict.claim == HUGE_PAGES_WIN and verdict.outcome == REPRODUCED
    assert [j.scope for j in verdict.judgements] == ["idx1", "idx2"]
    # logs of 0.7 × (1, 1.02, 0.98): sd 0.0200, half width 4.303 × 0.0200 / √3 = 0.0497
    assert verdict.judgements[0].evidence == (
        "on/off ×0.70 (95% CI 0.67–0.74) at 1GB, the largest measured both ways: faster with "
        "huge pages"
    )


def test_huge_pages_within_the_noise_or_slower_are_not_reproduced():
    # an interval that still holds the seed's effect (×0.67) shows neither way
    noisy = huge_pages_verdict(on_off({1024: 1.0}, noise=(0.8, 1.0, 1.25)))
    assert noisy.outcome == NOT_SHOWN
    assert noisy.judgements[0].evidence.endswith(
        ": no effect beyond the noise on this machine, nor one as large as the seed's"
    )
    # one that excludes it: the seed's effect is not there
    none = huge_pages_verdict(on_off({1024: 1.0}, noise=(0.95, 1.0, 1.05)))
    assert none.outcome == NOT_REPRODUCED
    assert none.judgements[0].evidence.endswith(
        ": no effect beyond the noise on this machine; the seed's ×0.67 is below the interval"
    )
    slower = huge_pages_verdict(on_off({1024: 1.3}))
    assert slower.outcome == NOT_REPRODUCED
    assert slower.judgements[1].evidence.endswith(": slower with huge pages")


def test_huge_pages_without_an_on_off_pair_cannot_be_shown():
    judgement = only(huge_pages_verdict(survival({1: KEPT, 256: KEPT})))
    assert judgement.outcome == NOT_SHOWN
    assert judgement.evidence == "no shared_buffers was measured with huge pages both on and off"
    apart = [rep(256, "on", 0, 0.1, 0.1), rep(512, "off", 0, 0.1, 0.1)]
    assert huge_pages_verdict(apart).outcome == NOT_SHOWN
    # on and off at one setting, but no repetition measured both ways
    unpaired = [rep(256, "on", 0, 0.1, 0.1), rep(256, "off", 1, 0.1, 0.1)]
    idx1, idx2 = huge_pages_verdict(unpaired).judgements
    assert idx1.outcome == idx2.outcome == NOT_SHOWN
    assert (
        idx1.evidence == "at 256MB no repetition was measured both on and off with a lookup above 0"
    )
    one_pair = huge_pages_verdict(on_off({256: 0.8}, noise=(1.0,)))
    assert one_pair.outcome == NOT_SHOWN
    assert one_pair.judgements[0].evidence.endswith(": one pair gives no interval")


# -- 3. the scan against shared_buffers ------------------------------------------------------


def scans(seq_ms_by_size: dict, huge_pages="off") -> list[Repetition]:
    return [
        rep(size, huge_pages, r, 0.1, 0.1, seq)
        for size, times in seq_ms_by_size.items()
        for r, seq in enumerate(times)
    ]


def test_a_faster_scan_at_the_largest_shared_buffers_is_reproduced():
    verdict = seq_scan_verdict(scans({1: [900, 950, 1000], 64: [700], 512: [400, 410, 420]}))
    assert verdict.claim == SEQ_SPEEDS_UP and verdict.outcome == REPRODUCED
    evidence = only(verdict).evidence
    assert evidence.startswith("seq ×0.43 (95% CI ") and evidence.endswith(
        " at 512MB against 1MB: faster"
    )


def test_a_scan_no_faster_or_slower_is_not_reproduced():
    same = only(seq_scan_verdict(scans({1: [900, 1000, 800], 512: [950, 850, 1000]})))
    assert same.outcome == NOT_REPRODUCED
    assert same.evidence.endswith(": no effect beyond the noise on this machine")
    slower = only(seq_scan_verdict(scans({1: [400, 410, 420], 512: [900, 950, 1000]})))
    assert (slower.outcome, slower.evidence.endswith(": slower")) == (NOT_REPRODUCED, True)


def test_a_scan_at_one_setting_or_once_a_side_cannot_show_it():
    single = only(seq_scan_verdict(scans({512: [400, 410]})))
    assert (single.outcome, single.evidence) == (NOT_SHOWN, "only one shared_buffers was measured")
    once = only(seq_scan_verdict(scans({1: [900], 512: [400]})))
    assert once.outcome == NOT_SHOWN
    assert once.evidence == (
        "seq ×0.44 at 512MB against 1MB: one repetition a side gives no interval"
    )


def test_the_seeds_findings_come_in_its_order():
    verdicts = seed_verdicts(survival({1: WASHED, 256: KEPT}), INDEX_BYTES)
    assert [v.claim for v in verdicts] == [INDEX_KEPT, HUGE_PAGES_WIN, SEQ_SPEEDS_UP]
