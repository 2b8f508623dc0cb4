"""Seed 000's findings computed from repetitions: pure functions on known inputs."""

import math
from pathlib import Path

import pytest

from pgcachelab.analysis.cache_split import (
    Repetition,
    best_setting,
    huge_pages_effect,
    index_survives_from,
)
from pgcachelab.errors import UserError
from pgcachelab.spec import exact_size_text, parse_spec

MB = 1024 * 1024


def rep(size_mb, huge_pages, repetition, idx1, seq, idx2):
    return Repetition(size_mb * MB, huge_pages, repetition,
                      {"idx1": [idx1] * 3, "seq": [seq], "idx2": [idx2] * 3})  # fmt: skip


# the seed's shape: small shared_buffers -> idx2 washed out; from 128MB on it survives
SEED_LIKE = [
    rep(size, hp, r, idx1=0.10 * (1.0 if hp == "off" else 0.8), seq=900 - size,
        idx2=(2.0 if size < 128 else 0.105) * (1.0 if hp == "off" else 0.8) + 0.001 * r)
    for size in (1, 16, 64, 128, 512) for hp in ("on", "off") for r in range(3)
]  # fmt: skip


@pytest.mark.parametrize("huge_pages", ["on", "off"])
def test_index_survives_from_the_setting_that_holds_it(huge_pages):
    size, ratio = index_survives_from(SEED_LIKE, huge_pages)
    assert size == 128 * MB
    assert ratio.mean < 1.10
    assert ratio.ci_low is not None and ratio.n == 3


def test_survival_needs_every_larger_setting_too():
    reps = [rep(16, "off", 0, 0.1, 1, 0.1), rep(64, "off", 0, 0.1, 1, 0.5),
            rep(512, "off", 0, 0.1, 1, 0.1)]  # fmt: skip
    assert index_survives_from(reps, "off")[0] == 512 * MB
    washed = [rep(512, "off", 0, 0.1, 1, 0.5)]
    assert index_survives_from(washed, "off") == (None, None)


def test_best_setting_per_phase():
    size, summary = best_setting(SEED_LIKE, "off", "seq")
    assert size == 512 * MB and summary.median == pytest.approx(388)
    size, _ = best_setting(SEED_LIKE, "off", "idx2")
    assert size == 128 * MB


def test_huge_pages_effect_is_a_paired_ratio_with_interval():
    effect = huge_pages_effect(SEED_LIKE, "idx1")
    assert effect.pairs == 15
    assert effect.ratio == pytest.approx(0.8)
    assert effect.significant
    seq = huge_pages_effect(SEED_LIKE, "seq")
    assert seq.ratio == pytest.approx(1.0) and not seq.significant
    assert math.isclose(seq.ci_low, 1.0) and math.isclose(seq.ci_high, 1.0)
    assert huge_pages_effect([rep(1, "off", 0, 1, 1, 1)], "idx1") is None


def test_cache_wash_specs_and_size_ranges():
    spec = parse_spec(
        'workload = "cache-wash"\n[cache_wash]\ntable_size = "64MB"\nlookups = 10\n'
        '[sweep.settings]\nshared_buffers = { from = "128kB", to = "8MB", factor = 4 }',
        Path("x.toml"),
    )
    assert spec.sweep_settings["shared_buffers"] == ["128kB", "512kB", "2MB", "8MB"]
    assert spec.parameters.table_size == 64 * MB and spec.parameters.lookups == 10
    assert spec.parameters.warmup == 100 and spec.parameters.prewarm is True
    assert parse_spec('workload = "cache-wash"', Path("x.toml")).parameters.table_size == 1.0
    assert exact_size_text(1536 * 1024) == "1536kB" and exact_size_text(2**30) == "1GB"
    with pytest.raises(UserError, match="takes no \\[pgbench\\] table"):
        parse_spec('workload = "cache-wash"\n[pgbench]\nclients = 2', Path("x.toml"))
    with pytest.raises(UserError, match="sweep.scale: unknown sweep key for the cache-wash"):
        parse_spec('workload = "cache-wash"\n[sweep]\nscale = [1]', Path("x.toml"))
    with pytest.raises(UserError, match="cache_wash.table_size: invalid value 0"):
        parse_spec('workload = "cache-wash"\n[cache_wash]\ntable_size = 0', Path("x.toml"))


@pytest.mark.parametrize("name", ["cache-split.toml", "cache-split-quick.toml"])
def test_shipped_cache_split_experiments(name):
    path = Path(__file__).parent.parent / "experiments" / name
    spec = parse_spec(path.read_text(), path)
    assert spec.workload == "cache-wash"
    sizes = [
        p.settings["shared_buffers"] for p in spec.points() if p.settings["huge_pages"] == "on"
    ]
    assert sizes[0] != sizes[-1] and len(set(sizes)) == len(sizes)


def test_latencies_pgbench_logged_as_zero_are_counted_and_give_no_ratio():
    """Runs stored before the client timing have pgbench-logged latencies, which read 0 us for
    a reply already waiting (pgbench 14+): an idx1 median of 0 has no idx2/idx1 ratio and no
    huge pages ratio, and must not end the analysis."""
    from pgcachelab.analysis.cache_split import (
        PGBENCH_LOG_TIMING,
        Repetition,
        huge_pages_effect,
        index_survives_from,
        pgbench_logged_zeros,
    )

    def rep(huge_pages, idx1):
        return Repetition(256 * 1024**2, huge_pages, 0,
                          {"idx1": idx1, "seq": [900.0], "idx2": [0.2, 0.3, 0.2]},
                          PGBENCH_LOG_TIMING)  # fmt: skip

    reps = [rep("on", [0.0, 0.0, 0.1]), rep("off", [0.2, 0.2, 0.2])]
    assert pgbench_logged_zeros(reps) == (2, 12)
    assert index_survives_from(reps, "on") == (None, None)
    assert index_survives_from(reps, "off")[0] == 256 * 1024**2
    assert huge_pages_effect(reps, "idx1") is None


def test_cache_wash_warms_up_for_a_time_or_a_count_of_lookups_not_both():
    def parse(body: str):
        return parse_spec(f'workload = "cache-wash"\n[cache_wash]\n{body}', Path("x.toml"))

    by_count = parse("warmup_lookups = 5000\n[sweep]\nlookups = [10, 20]")
    assert by_count.parameters.warmup_lookups == 5000
    assert by_count.parameters.warmup is None  # not the default 100 s as well
    assert {p.workload.warmup_lookups for p in by_count.points()} == {5000}
    assert parse("warmup_lookups = 0").parameters.warmup_lookups == 0
    by_time = parse('warmup = "5s"').parameters
    assert (by_time.warmup, by_time.warmup_lookups) == (5, None)
    assert parse('warmup = "0s"\n[sweep]\nlookups = [10]').points()[0].workload.warmup == 0
    with pytest.raises(UserError, match=r'cache_wash.warmup_lookups: invalid value "many": not'):
        parse('warmup_lookups = "many"')
    with pytest.raises(UserError, match="warmup_lookups: invalid value -1: not an integer >= 0"):
        parse("warmup_lookups = -1")
    with pytest.raises(UserError) as both:
        parse('warmup = "5s"\nwarmup_lookups = 100')
    message = str(both.value).splitlines()[0]
    assert message == "x.toml: cache_wash.warmup_lookups: cannot be given with cache_wash.warmup"


def test_the_mean_of_an_iteration_is_the_seeds_figure():
    """pgbench --report-latencies gave the seed the mean of its 100 lookups per iteration; a
    stalled lookup moves it where the median stays."""
    wash = Repetition(MB, "on", 0, {"idx1": [0.1, 0.1, 0.1, 1.3], "seq": [812.5],
                                    "idx2": [0.2, 0.4]})  # fmt: skip
    assert wash.mean("idx1") == pytest.approx(0.4) and wash.median("idx1") == pytest.approx(0.1)
    assert wash.mean("seq") == wash.median("seq") == 812.5  # the one scan
    assert wash.mean("idx2") == pytest.approx(0.3)
