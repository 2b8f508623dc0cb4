"""Seed 000's claims (studies/cache_wash/claims.py, issue 46): every rule fed figures through
constructed repetitions, each hole of the old rules closed, each new claim reproduced,
contradicted and noise, then the judges on the fixture store's cache-split run. Pure."""

import inspect

import pytest

from pgcachelab.analysis.cache_split import Repetition
from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    NOT_MEASURED,
    REPRODUCED,
    BadFigure,
)
from pgcachelab.analysis.qualifiers import QUALIFIERS
from pgcachelab.studies.cache_wash import claims
from pgcachelab.studies.cache_wash.claims import (
    WashRun,
    huge_pages_lookups_verdict,
    kept_verdict,
    lookups_without_huge_pages_verdict,
    prewarm_verdict,
    quarter_verdict,
    scan_huge_pages_large_verdict,
    scan_huge_pages_most_verdict,
    scan_speeds_up_verdict,
    washed_verdict,
)
from pgcachelab.studies.cache_wash.figures import PrewarmRepetition
from pgcachelab.studies.cache_wash.study import CacheWash

MB = 2**20
GB = 2**30
INDEX = 155 * MB  # 19,840 pages, as cache-split-quick's
SEED_LOOKUPS = 100_000  # ~5 per index page: the seed's proportion
SPREAD = (0.98, 1.02, 0.99, 1.01)  # four rounds, ±2%: a tight interval
WIDE = (0.4, 2.5, 0.6, 1.8)  # four rounds scattered by ×6: no interval decides
EQUAL = (1.0, 1.0, 1.0, 1.0)


def point(sb_mb, hp="off", idx1=0.1, idx2=0.1, seq=100.0, scatter=SPREAD, scattered=("idx2",)):
    """One point's repetitions; the `scattered` phases scaled by each round's factor."""
    base = {"idx1": idx1, "seq": seq, "idx2": idx2}
    return [
        Repetition(
            sb_mb * MB,
            hp,
            r,
            {
                phase: [value * (factor if phase in scattered else 1)]
                * (1 if phase == "seq" else 3)
                for phase, value in base.items()
            },
        )
        for r, factor in enumerate(scatter)
    ]


def run(reps, warmup=SEED_LOOKUPS, ram=GB, prewarm=()):
    return WashRun(reps, INDEX, warmup, ram, tuple(prewarm))


# -- the wash-out: one combine, "noticeably", at the seed's warm-up ---------------------------


def washed(ratio_on, ratio_off, scatter=SPREAD, warmup=SEED_LOOKUPS):
    reps = point(1, "on", idx2=0.1 * ratio_on, scatter=scatter)
    reps += point(1, "off", idx2=0.1 * ratio_off, scatter=scatter)
    return washed_verdict(run(reps, warmup))


def test_the_scan_washing_the_index_out_both_ways_is_reproduced_at_the_seeds_warmup():
    verdict = washed(5, 4)
    assert verdict.outcome == REPRODUCED
    assert "idx2/idx1 at 1MB, huge_pages=on" in verdict.figure.what
    assert "5 lookups per index page (100,000 on 19,840 pages)" in verdict.reason
    assert "the seed's proportion, which decides" in verdict.reason


def test_one_huge_pages_side_reproduced_no_longer_reproduces_the_claim():
    # the old combine: reproduced when either side was (issue 46's hole)
    verdict = washed(5, 1.0)
    assert verdict.outcome == NOISE
    assert "the parts disagree" in verdict.reason
    assert "huge_pages=on: reproduced" in verdict.reason
    assert "huge_pages=off: contradicted" in verdict.reason


def test_idx2_equal_to_idx1_both_ways_contradicts():
    assert washed(1.0, 1.0).outcome == CONTRADICTED


def test_a_wash_out_below_noticeable_is_not_reproduced():
    # ×1.05 (1.03-1.07): the old ×1.1 too, now the table's "noticeably" by name
    assert washed(1.05, 1.05).outcome == CONTRADICTED


def test_scattered_rounds_are_noise():
    assert washed(2, 2, scatter=WIDE).outcome == NOISE


def test_the_wash_out_after_a_light_warmup_never_decides():
    # 5,000 lookups, a quarter of a lookup per page (the old quick spec): noise, and why
    verdict = washed(5, 5, warmup=5_000)
    assert verdict.outcome == NOISE
    assert "the warm-up was 0.25 lookups per index page" in verdict.reason
    assert "only the seed's proportion decides" in verdict.reason
    assert washed(5, 5, warmup=None).outcome == NOISE  # a run that did not record it


def test_no_small_shared_buffers_is_not_measured_never_cannot():
    verdict = washed_verdict(run(point(256) + point(768)))
    assert verdict.outcome == NOT_MEASURED
    assert "no shared_buffers smaller than the 155MB index" in verdict.reason
    assert washed_verdict(WashRun(point(1))).outcome == NOT_MEASURED  # no index size


# -- the index kept: "similar" (the table's "same") at every size ----------------------------


def kept(*ratios_by_size, hp="off", scatter=SPREAD):
    reps = []
    for size, ratio in zip((256, 768), ratios_by_size, strict=False):
        reps += point(size, hp, idx2=0.1 * ratio, scatter=scatter)
    return kept_verdict(run(point(1, hp, idx2=0.5) + reps))


def test_idx2_the_same_as_idx1_at_every_size_holding_the_index_is_reproduced():
    assert kept(1.0, 1.02).outcome == REPRODUCED


def test_idx2_20_percent_slower_is_no_longer_kept():
    # the old margin ×1.3 called ×1.2 (1.15-1.25) kept; "similar" is within ×1.1
    verdict = kept(1.2)
    assert verdict.outcome == CONTRADICTED
    assert '"same" = the 95% interval within 0.909–1.1' in verdict.reason


def test_one_size_kept_and_one_not_is_noise():
    verdict = kept(1.0, 1.5)
    assert verdict.outcome == NOISE and "768MB: contradicted" in verdict.reason


def test_a_cold_idx1_says_nothing_of_the_scan():
    verdict = kept(0.5)
    assert verdict.outcome == NOISE and "idx1 did not find the index warm" in verdict.reason


def test_scattered_kept_is_noise():
    assert kept(1.0, scatter=WIDE).outcome == NOISE


# -- idx1 with huge pages: "slightly" -------------------------------------------------------


def lookups(hp, small_ms, large_ms, scatter=SPREAD):
    reps = point(1, hp, idx1=small_ms, scatter=scatter, scattered=("idx1",))
    reps += point(768, hp, idx1=large_ms, scatter=scatter, scattered=("idx1",))
    return run(reps)


def test_huge_pages_lookups_slightly_faster_at_the_largest_is_reproduced():
    verdict = huge_pages_lookups_verdict(lookups("on", 0.11, 0.1))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.what == "idx1 at 1MB / at 768MB, huge_pages=on"
    assert '"slightly" = the 95% interval within 1–1.25' in verdict.reason


def test_a_win_beyond_slight_contradicts_slightly():
    # the old rule (on/off below 1) took any win; the seed's word is "slightly"
    assert huge_pages_lookups_verdict(lookups("on", 0.16, 0.1)).outcome == CONTRADICTED
    assert huge_pages_lookups_verdict(lookups("on", 0.08, 0.1)).outcome == CONTRADICTED


def test_scattered_huge_pages_lookups_are_noise():
    assert huge_pages_lookups_verdict(lookups("on", 0.11, 0.1, WIDE)).outcome == NOISE


def test_huge_pages_never_on_is_not_measured():
    verdict = huge_pages_lookups_verdict(lookups("off", 0.11, 0.1))
    assert verdict.outcome == NOT_MEASURED and "no point with huge pages on" in verdict.reason


# -- new: without huge pages the lookups slow as shared_buffers grows ----------------------


def test_lookups_slower_at_the_largest_without_huge_pages_is_reproduced():
    verdict = lookups_without_huge_pages_verdict(lookups("off", 0.1, 0.12))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.what == "idx1 at 768MB / at 1MB, huge_pages=off"


def test_lookups_faster_at_the_largest_without_huge_pages_contradicts():
    assert lookups_without_huge_pages_verdict(lookups("off", 0.12, 0.1)).outcome == CONTRADICTED


def test_scattered_lookups_without_huge_pages_are_noise():
    assert lookups_without_huge_pages_verdict(lookups("off", 0.1, 0.12, WIDE)).outcome == NOISE


def test_no_huge_pages_off_is_not_measured():
    verdict = lookups_without_huge_pages_verdict(lookups("on", 0.1, 0.12))
    assert verdict.outcome == NOT_MEASURED


# -- the scan with huge pages: slower over most of the chart, a noticeable win at the largest -


def scans(on_ms_by_size, off_ms_by_size, scatter=SPREAD):
    reps = []
    # the rounds scatter the other way with huge pages off: paired ratios keep a spread
    for hp, by_size, rounds in (
        ("on", on_ms_by_size, scatter),
        ("off", off_ms_by_size, scatter[::-1]),
    ):
        for size, ms in by_size.items():
            reps += point(size, hp, seq=ms, scatter=rounds, scattered=("seq",))
    return run(reps)


def test_huge_pages_slowing_the_scan_below_the_largest_is_reproduced():
    verdict = scan_huge_pages_most_verdict(
        scans({1: 1100, 256: 1000, 768: 500}, {1: 1000, 256: 900, 768: 600})
    )
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.what == "seq on/off at 1MB, 256MB, paired"
    assert verdict.figure.repetitions == 8  # two sizes, four rounds


def test_huge_pages_speeding_the_scan_below_the_largest_contradicts():
    verdict = scan_huge_pages_most_verdict(scans({1: 900, 256: 800}, {1: 1000, 256: 900}))
    assert verdict.outcome == CONTRADICTED


def test_huge_pages_slower_at_one_size_and_faster_at_another_is_noise():
    verdict = scan_huge_pages_most_verdict(
        scans({1: 1200, 8: 700, 768: 500}, {1: 1000, 8: 900, 768: 600})
    )
    assert verdict.outcome == NOISE


def test_most_of_the_chart_needs_two_sizes_both_ways():
    verdict = scan_huge_pages_most_verdict(scans({768: 500}, {768: 600, 1: 900}))
    assert verdict.outcome == NOT_MEASURED


def test_a_noticeable_huge_pages_win_on_the_scan_at_the_largest_is_reproduced():
    verdict = scan_huge_pages_large_verdict(scans({1: 1100, 768: 500}, {1: 1000, 768: 600}))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure.what == "seq off/on at 768MB, the largest measured both ways"


def test_a_win_below_noticeable_at_the_largest_contradicts():
    # the old rule (on/off at most 1) called ×1.03 a win; the seed's word is "noticeable"
    verdict = scan_huge_pages_large_verdict(scans({768: 970}, {768: 1000}))
    assert verdict.outcome == CONTRADICTED


def test_a_scattered_scan_at_the_largest_is_noise():
    verdict = scan_huge_pages_large_verdict(scans({768: 500}, {768: 600}, WIDE))
    assert verdict.outcome == NOISE


# -- the scan against shared_buffers: "noticeably", both sides --------------------------------


def test_a_noticeably_faster_scan_both_ways_is_reproduced():
    verdict = scan_speeds_up_verdict(scans({1: 900, 768: 400}, {1: 900, 768: 450}))
    assert verdict.outcome == REPRODUCED


def test_a_scan_faster_by_less_than_noticeable_is_no_longer_reproduced():
    # ×1.05: the old rule ("below 1") reproduced it
    verdict = scan_speeds_up_verdict(scans({1: 1050, 768: 1000}, {1: 1050, 768: 1000}))
    assert verdict.outcome == CONTRADICTED


def test_a_scan_faster_one_way_only_is_noise():
    verdict = scan_speeds_up_verdict(scans({1: 900, 768: 400}, {1: 900, 768: 900}))
    assert verdict.outcome == NOISE and "the parts disagree" in verdict.reason


# -- new: its own cache noticeably better than a quarter of RAM -----------------------------


def quarter(at_quarter_ms, at_largest_ms, ram=GB, scatter=SPREAD):
    reps = []
    for hp in ("on", "off"):
        reps += point(1, hp, seq=1500, scatter=scatter, scattered=("seq",))
        reps += point(256, hp, seq=at_quarter_ms, scatter=scatter, scattered=("seq",))
        reps += point(768, hp, seq=at_largest_ms, scatter=scatter, scattered=("seq",))
    return quarter_verdict(run(reps, ram=ram))


def test_the_test_noticeably_faster_than_at_a_quarter_of_ram_is_reproduced():
    verdict = quarter(900, 500)
    assert verdict.outcome == REPRODUCED
    assert "idx1 + seq + idx2 at 256MB / at 768MB" in verdict.figure.what


def test_no_better_than_a_quarter_of_ram_contradicts():
    assert quarter(900, 900).outcome == CONTRADICTED


def test_a_scattered_quarter_is_noise():
    assert quarter(900, 500, scatter=WIDE).outcome == NOISE


def test_no_size_near_a_quarter_of_ram_is_not_measured():
    # 16 GB: a quarter is 4GB, and 256MB is far from it
    verdict = quarter(900, 500, ram=16 * GB)
    assert verdict.outcome == NOT_MEASURED and "quarter of the 16GB RAM" in verdict.reason
    assert quarter_verdict(WashRun(point(256) + point(768))).outcome == NOT_MEASURED


# -- new: pg_prewarm fills the cache but does not warm it -----------------------------------


def prewarmed(idx0_ms, scatter=SPREAD, blocks=19_840):
    found = [
        PrewarmRepetition(hp, size * MB, r, [idx0_ms * factor] * 3, [0.1] * 3, blocks)
        for hp in ("on", "off")
        for size in (1, 768)
        for r, factor in enumerate(scatter)
    ]
    return prewarm_verdict(run([], prewarm=found))


def test_lookups_slower_right_after_pg_prewarm_is_reproduced_and_says_what_it_filled():
    verdict = prewarmed(0.15)
    assert verdict.outcome == REPRODUCED
    assert "idx0/idx1 at 768MB, huge_pages=on" in verdict.figure.what
    assert "pg_prewarm read 19,840–19,840 blocks of the 19,840-page index" in verdict.reason


def test_lookups_as_fast_right_after_pg_prewarm_contradicts():
    assert prewarmed(0.08).outcome == CONTRADICTED


def test_scattered_lookups_after_pg_prewarm_are_noise():
    assert prewarmed(0.15, scatter=WIDE).outcome == NOISE


def test_a_run_without_idx0_is_not_measured():
    verdict = prewarm_verdict(run(point(1)))
    assert verdict.outcome == NOT_MEASURED and "idx0" in verdict.reason


# -- the holes: no verdict built by hand, bad figures refused --------------------------------


def test_no_claim_builds_a_deciding_verdict_by_hand():
    source = inspect.getsource(claims)
    assert "Verdict(" not in source and "mapped" not in source
    assert "cannot(" not in source  # a spec's choice is "not measured", never "cannot"


def test_an_idx1_of_zero_is_refused_not_dropped():
    reps = point(1, idx2=0.5) + point(1, idx1=0.0)[:1]
    with pytest.raises(BadFigure, match="not a positive finite number"):
        washed_verdict(run(reps))


def test_two_equal_repetitions_never_decide():
    verdict = washed(5, 5, scatter=EQUAL)
    assert verdict.outcome == NOISE and "zero width" in verdict.reason


def test_nothing_measured_is_never_cannot():
    empty = WashRun([])
    for judge in (
        washed_verdict,
        kept_verdict,
        huge_pages_lookups_verdict,
        lookups_without_huge_pages_verdict,
        scan_huge_pages_large_verdict,
        scan_huge_pages_most_verdict,
        scan_speeds_up_verdict,
        quarter_verdict,
        prewarm_verdict,
    ):
        assert judge(empty).outcome == NOT_MEASURED, judge.__name__


def test_every_claim_names_its_word_the_articles_figure_and_its_rule():
    assert len(CacheWash.claims) == 9
    for claim in CacheWash.claims:
        assert claim.figure and claim.rule and claim.article, claim.words
        assert claim.qualifier in QUALIFIERS
        assert f'"{claim.qualifier}" = the 95% interval' in claim.rule
        assert claim.judge.__module__ == "pgcachelab.studies.cache_wash.claims"


# -- the judges on the fixture store's run ---------------------------------------------------


@pytest.fixture(scope="module")
def split_run(tiny_runs):
    return tiny_runs["cache-split-tiny"]


def test_cache_split_tiny_gets_what_its_two_rounds_can_show(split_run):
    # huge pages off only, shared_buffers 1MB, 4MB and 16MB around a 2.5MB index, two rounds,
    # no memory limit, stored before issue 46 (no warm-up count, no idx0): idx2/idx1 ×0.89
    # (0.18-4.4) at 1MB cannot decide, nor could it at an unknown warm-up; the scan at 16MB
    # takes ×0.47 (0.26-0.86) of its time at 1MB: 1/0.47 = ×2.1 (1.2-3.9), noticeably faster
    by_words = {claim.judge.__name__: claim.judge(split_run) for claim in CacheWash.claims}
    washed = by_words["scan_washes_index"]
    assert washed.outcome == NOISE and washed.figure.value == pytest.approx(0.885, abs=0.01)
    assert "did not record its warm-up's lookups" in washed.reason
    assert by_words["shared_buffers_keeps_index"].outcome == NOISE
    scan = by_words["larger_shared_buffers_speeds_scan"]
    assert scan.outcome == REPRODUCED
    assert scan.figure.value == pytest.approx(1 / 0.47, rel=0.02) and scan.figure.repetitions == 2
    for name in ("huge_pages_lookups", "huge_pages_scan_large", "huge_pages_slow_scan"):
        assert by_words[name].outcome == NOT_MEASURED, name
    assert by_words["prewarm_does_not_warm"].outcome == NOT_MEASURED
    assert all(verdict.outcome != CANNOT for verdict in by_words.values())
