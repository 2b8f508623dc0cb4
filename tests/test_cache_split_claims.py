"""The figures that decide seed 000's claims (studies/cache_wash/figures.py), on constructed
repetitions. Pure.

The intervals quoted were checked by hand: three repetitions whose idx2/idx1 ratios are 4, 5
and 6.25 have logs evenly spaced by ln 1.25, so their geometric mean is 5 and Student's 95%
interval (t = 4.303 at 2 degrees of freedom) is 5 × exp(±4.303 × ln 1.25 / √3) = 2.87..8.70.
"""

import math

import pytest

from pgcachelab.analysis.cache_split import Repetition
from pgcachelab.analysis.claims import BadFigure
from pgcachelab.studies.cache_wash.figures import (
    SEED_WARMUP_PER_INDEX_PAGE,
    PrewarmRepetition,
    both_ways,
    modes,
    nearest_quarter,
    on_off_figure,
    phase_across_sizes,
    prewarm_figure,
    survival_figure,
    warmup_per_index_page,
    whole_test_across_sizes,
    whole_test_ms,
)

MB = 2**20
GB = 2**30
WASHED = (4.0, 5.0, 6.25)  # idx2/idx1 per repetition: geometric mean 5, 95% CI 2.87..8.70


def rep(size_mb, huge_pages, repetition, idx1=0.1, idx2=0.1, seq=900.0):
    return Repetition(size_mb * MB, huge_pages, repetition,
                      {"idx1": [idx1] * 3, "seq": [seq], "idx2": [idx2] * 3})  # fmt: skip


def test_idx2_over_idx1_is_the_geometric_mean_of_the_repetitions_ratios():
    reps = [rep(1, "on", r, 0.1, 0.1 * ratio) for r, ratio in enumerate(WASHED)]
    figure = survival_figure(reps, "on", 1 * MB)
    assert figure.what == "idx2/idx1 at 1MB, huge_pages=on"
    assert figure.value == pytest.approx(5)
    assert (figure.ci_low, figure.ci_high) == (pytest.approx(2.87, abs=0.01),
                                               pytest.approx(8.70, abs=0.01))  # fmt: skip
    assert figure.repetitions == 3


def test_an_idx1_of_zero_is_refused():
    reps = [rep(1, "off", 0, 0.1, 0.5), rep(1, "off", 1, 0.0, 0.5)]
    with pytest.raises(BadFigure, match="repetition 2 of 2"):
        survival_figure(reps, "off", 1 * MB)


def test_a_phase_across_sizes_is_a_ratio_of_geometric_means():
    reps = [rep(1, "off", r, seq=s) for r, s in enumerate((900, 1000, 1100))]
    reps += [rep(768, "off", r, seq=s) for r, s in enumerate((400, 500, 600))]
    figure = phase_across_sizes(reps, "off", "seq", 1 * MB, 768 * MB)
    assert figure.what == "seq at 1MB / at 768MB, huge_pages=off"
    expected = (900 * 1000 * 1100) ** (1 / 3) / (400 * 500 * 600) ** (1 / 3)
    assert figure.value == pytest.approx(expected)
    assert figure.ci_low < expected < figure.ci_high and figure.repetitions == 3
    assert phase_across_sizes(reps, "on", "seq", 1 * MB, 768 * MB) is None


def test_a_scan_of_zero_is_refused():
    reps = [rep(1, "off", 0, seq=0.0), rep(768, "off", 0)]
    with pytest.raises(BadFigure, match="not a positive time"):
        phase_across_sizes(reps, "off", "seq", 1 * MB, 768 * MB)


def test_the_whole_test_adds_every_lookup_and_the_scan():
    assert whole_test_ms(rep(1, "off", 0, idx1=0.1, idx2=0.5, seq=900)) == pytest.approx(901.8)
    reps = [rep(size, "on", r, seq=s * (1 + r / 100)) for size, s in ((256, 800), (768, 400))
            for r in range(3)]  # fmt: skip
    figure = whole_test_across_sizes(reps, "on", 256 * MB, 768 * MB)
    assert figure.value == pytest.approx(800.6 / 400.6, rel=1e-3)


def test_on_off_pairs_by_size_and_repetition_and_skips_the_unpaired():
    reps = [rep(768, "on", r, seq=s) for r, s in enumerate((500, 520, 480))]
    reps += [rep(768, "off", r, seq=s) for r, s in enumerate((600, 600))]  # round 3 lost
    reps += [rep(1, "on", 0, seq=5), rep(1, "off", 0, seq=1)]  # another size: not asked for
    figure = on_off_figure(reps, "seq", [768 * MB], "off", "seq off/on")
    assert figure.repetitions == 2
    assert figure.value == pytest.approx(math.sqrt(600 / 500 * 600 / 520))
    assert on_off_figure(reps, "seq", [256 * MB], "on", "none") is None


def test_modes_put_huge_pages_on_first_and_both_ways_are_the_shared_sizes():
    reps = [rep(1, "off", 0), rep(768, "on", 0), rep(768, "off", 0), rep(8, "on", 0)]
    assert modes(reps) == ["on", "off"]
    assert both_ways(reps) == [768 * MB]


def test_a_quarter_of_ram_is_the_nearest_size_within_root_two():
    sizes = [1 * MB, 256 * MB, 768 * MB]
    assert nearest_quarter(sizes, GB) == 256 * MB
    assert nearest_quarter([1 * MB, 340 * MB], GB) == 340 * MB  # ×1.33 of 256MB
    assert nearest_quarter(sizes, 16 * GB) is None  # 4GB: nothing near it
    assert nearest_quarter(sizes, None) is None


def test_the_warmup_per_index_page_and_the_seeds():
    assert pytest.approx(5) == SEED_WARMUP_PER_INDEX_PAGE
    assert warmup_per_index_page(100_000, 155 * MB) == pytest.approx(5.04, abs=0.01)
    assert warmup_per_index_page(5_000, 155 * MB) == pytest.approx(0.25, abs=0.01)
    assert warmup_per_index_page(None, 155 * MB) is None


def test_idx0_over_idx1_at_one_point():
    found = [PrewarmRepetition("off", 768 * MB, r, [0.1 * f, 0.2, 0.1 * f], [0.1] * 3)
             for r, f in enumerate((1.4, 1.5, 1.6))]  # fmt: skip
    figure = prewarm_figure(found, "off", 768 * MB)
    assert figure.what == "idx0/idx1 at 768MB, huge_pages=off"
    assert figure.value == pytest.approx((1.4 * 1.5 * 1.6) ** (1 / 3))  # the medians
