"""Seed 002's claims (studies/tpcc/claims.py): each rung's and each finding's rule on
constructed steps for every verdict it can give, and the study's judges on the fixture store's
tiny ladder. Pure: StepSamples and figures are built here, no server starts."""

import dataclasses
import math

import pytest

from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    NOT_MEASURED,
    REPRODUCED,
    SETUP,
)
from pgcachelab.analysis.qualifiers import QUALIFIERS
from pgcachelab.analysis.run_data import RunData
from pgcachelab.studies.tpcc.claims import (
    BINDS_SHARE,
    IO,
    LIFTED,
    MEMORY,
    OS,
    RAISE_AGAIN,
    RAISE_TENFOLD,
    RUNGS,
    fixed_count_steps,
    fully_tuned,
    judge_best_cpu,
    judge_binds,
    judge_disk_at_limit,
    judge_fixed_count,
    judge_per_core,
    judge_rung,
    judge_warehouse_size,
    rung_steps,
)
from pgcachelab.studies.tpcc.step_results import StepSamples
from pgcachelab.studies.tpcc.study import Tpcc

IO_CHANGES = {"synchronous_commit": "off", "checkpoint_timeout": "30min", "autovacuum": "off"}
MEMORY_CHANGES = {"shared_buffers": "1GB", "work_mem": "10MB"}
MIB = 2**20


def step(name, tpmc, rate=None, limited=0, failures=(), **settings) -> StepSamples:
    return StepSamples(
        name=name,
        tpmc=list(tpmc),
        settings={"tpcc.rate_tpm": str(rate or "off"), **settings},
        rate_limited=limited,
        failures=list(failures),
        rate_tpm=rate,
    )


def around(value: float, spread: float = 0.01) -> list[float]:
    """Three repetitions within ±spread of value."""
    return [value * (1 - spread), value, value * (1 + spread)]


def with_(samples: StepSamples, **changes) -> StepSamples:
    fields = {**samples.__dict__, **changes}
    return StepSamples(**fields)


def quick_ladder(io_gain: float = 1.6, os_tpmc=None, os_failures=()) -> list[StepSamples]:
    """experiments/tpcc-ladder-quick.toml's steps (issue 46: the lift before io and memory),
    cumulative settings as the store has them."""
    io = dict(IO_CHANGES)
    memory = {**io, **MEMORY_CHANGES}
    huge = {**memory, "huge_pages": "on"}
    base = 10_000
    return [
        step("rate-300", around(120), 300, 3),
        step("rate-3000", around(1_300), 3000, 3),
        step("rate-50000", around(base), 50000, 0),
        step("rate-500000", around(base * 1.02), 500000, 0),
        step("io", around(base * io_gain), 500000, 0, **io),
        step("memory", around(base * io_gain * 1.4), 500000, 0, **memory),
        step("huge-pages", around(base * io_gain * 1.4), 500000, 0, **huge),
        step("os", os_tpmc or around(base * io_gain * 1.5), 500000, 0, list(os_failures), **huge),
        with_(step("transactions-100", around(base * 2.2), 500000, 0, **huge), transactions=100),
    ]


def old_ladder() -> list[StepSamples]:
    """The quick spec before issue 46 (io and memory under 50,000, then the lift), as runs
    stored then have it."""
    io = dict(IO_CHANGES)
    memory = {**io, **MEMORY_CHANGES}
    huge = {**memory, "huge_pages": "on"}
    return [
        step("rate-300", around(120), 300, 3),
        step("rate-3000", around(1_300), 3000, 3),
        step("rate-50000", around(10_000), 50000, 0),
        step("io", around(16_000), 50000, 0, **io),
        step("memory", around(22_000), 50000, 3, **memory),
        step("rate-500000", around(90_000), 500000, 0, **memory),
        step("limit-removed", around(90_000), None, 0, **memory),
        step("huge-pages", around(92_000), None, 0, **huge),
        step("os", around(97_000), None, 0, **huge),
    ]


def test_rungs_found_with_the_lift_before_io_and_memory():
    found = rung_steps(quick_ladder(), frozenset({"os"}))
    assert found == {
        "binds": (0, 0),
        "raise": (0, 1),
        "raise-again": (1, 2),
        "io": (3, 4),
        "memory": (4, 5),
        "lifted": (2, 3),  # 500,000 against 50,000 at the defaults
        "os": (5, 7),  # huge pages and host settings together; transactions-100 is not OS
    }


def test_rungs_found_in_a_run_stored_with_the_articles_order():
    assert rung_steps(old_ladder(), frozenset({"os"})) == {
        "binds": (0, 0),
        "raise": (0, 1),
        "raise-again": (1, 2),
        "io": (2, 3),
        "memory": (3, 4),
        "lifted": (4, 5),
        "os": (6, 8),
    }


def test_each_rung_judged_by_about_the_articles_ratio():
    assert [round(r.ratio, 2) for r in RUNGS[1:]] == [11.97, 7.62, 1.56, 1.43, 7.98, 1.07]
    low, high = QUALIFIERS["about"].band(IO.ratio)
    assert (low, high) == pytest.approx((IO.ratio**0.5, IO.ratio**1.5))
    assert '"about"' in IO.rule and "1.25" in IO.rule and "1.95" in IO.rule


def test_io_rung_each_verdict():
    assert judge_rung(IO, quick_ladder(1.6)).outcome == REPRODUCED
    # faster, but by a tenth where the article gained half: not the article's step
    smaller = judge_rung(IO, quick_ladder(1.1))
    assert smaller.outcome == CONTRADICTED
    assert smaller.figure is not None and smaller.figure.ci_low > 1
    # five times: far more than "about" half again (×1.25-×1.94) says
    assert judge_rung(IO, quick_ladder(5.0)).outcome == CONTRADICTED
    assert judge_rung(IO, quick_ladder(0.7)).outcome == CONTRADICTED  # slower
    noisy = quick_ladder()
    noisy[4] = step("io", [9_000, 26_000, 15_000], 500000, 0, **IO_CHANGES)
    assert judge_rung(IO, noisy).outcome == NOISE


def test_memory_rung_each_verdict():
    assert judge_rung(MEMORY, quick_ladder()).outcome == REPRODUCED  # ×1.4 in ×1.20-×1.71
    ladder = quick_ladder()
    ladder[5] = with_(ladder[5], tpmc=around(16_000 * 1.02))
    assert judge_rung(MEMORY, ladder).outcome == CONTRADICTED
    ladder[5] = with_(ladder[5], tpmc=[12_000, 30_000, 20_000])
    assert judge_rung(MEMORY, ladder).outcome == NOISE


def test_a_rung_under_a_limit_the_step_before_already_reaches_is_not_measured():
    # issue 37's run: io did all the 50,000 tpm limit allowed (3 of 3), and memory, under the
    # same limit, read x1.02: the limit's figure, not the settings'. A choice of the spec (it
    # kept the limit), never "cannot be shown here"
    ladder = old_ladder()
    ladder[3] = step("io", around(49_800), 50000, 3, **IO_CHANGES)
    ladder[4] = step("memory", around(49_900), 50000, 3, **IO_CHANGES, **MEMORY_CHANGES)
    verdict = judge_rung(MEMORY, ladder)
    assert verdict.outcome == NOT_MEASURED
    assert verdict.reason.startswith("the 50,000 tpm limit already binds at step io (3 of 3 ")
    assert "the spec kept a limit the memory step cannot rise under" in verdict.reason
    # one repetition of three at the limit is not the limit deciding: judged on its figure
    ladder[3] = step("io", around(40_000), 50000, 1, **IO_CHANGES)
    ladder[4] = step("memory", around(40_000 * 1.4), 50000, 0, **IO_CHANGES, **MEMORY_CHANGES)
    assert judge_rung(MEMORY, ladder).outcome == REPRODUCED


def test_a_rung_never_reproduced_from_one_repetition():
    ladder = quick_ladder()
    ladder[4] = step("io", [16_000], 500000, 0, **IO_CHANGES)
    verdict = judge_rung(IO, ladder)
    assert verdict.outcome == NOISE and "repetition" in verdict.reason


def test_io_and_memory_in_one_step_are_not_measured_apart():
    ladder = [
        step("rate-300", around(120), 300, 3),
        step("tuned", around(2_000), 300, 0, **IO_CHANGES, **MEMORY_CHANGES),
    ]
    for rung in (IO, MEMORY):
        verdict = judge_rung(rung, ladder)
        assert verdict.outcome == NOT_MEASURED
        assert "step tuned changes IO and memory settings together" in verdict.reason


@pytest.mark.parametrize(
    "rung, after", [(RAISE_TENFOLD, "rate-3000"), (RAISE_AGAIN, "rate-50000"),
                    (LIFTED, "rate-500000")],
)  # fmt: skip
def test_the_limit_rungs_follow_from_the_setup_whatever_the_rule_says(rung, after):
    # pgbench's pacer decides them: the ratio of two limits, or of the server over a limit
    def changed(tpmc):
        return [with_(s, tpmc=tpmc) if s.name == after else s for s in quick_ladder()]

    before = {"rate-3000": 120, "rate-50000": 1_300, "rate-500000": 10_000}[after]
    said = set()
    for ladder in (quick_ladder(), changed(around(before / 2)), changed([before / 3, before * 9])):
        verdict = judge_rung(rung, ladder, cores=2)
        assert verdict.outcome == SETUP
        assert verdict.figure is not None and verdict.figure.what.startswith("tpmC ")
        assert "the rule alone would say" in verdict.reason
        said.add(verdict.reason.split("the rule alone would say ")[1].split(":")[0])
    assert len(said) >= 2  # the rule's own verdict is shown, and it varies with the figure


def test_raise_and_lift_say_why_they_follow_from_the_setup():
    raise_ = judge_rung(RAISE_TENFOLD, quick_ladder())
    assert "ratio of the limits" in raise_.reason
    assert "the rule alone would say reproduced" in raise_.reason  # ×10.8 in ×3.46-×41.4
    lifted = judge_rung(LIFTED, quick_ladder(), cores=2)
    assert "step rate-50000 did not reach its 50,000 tpm limit" in lifted.reason
    assert "this machine has 2" in lifted.reason
    # in the article's order the lift follows a step at its limit: a ratio over that limit
    lifted = judge_rung(LIFTED, old_ladder())
    assert "step memory reached its 50,000 tpm limit" in lifted.reason
    only_limited = [step("rate-300", around(120), 300, 3), step("io", around(200), 300, 3)]
    assert judge_rung(RAISE_TENFOLD, only_limited).outcome == NOT_MEASURED


def test_binds_follows_from_the_setup_with_its_figure():
    for shares, rule_says in (
        ([0.95, 0.97, 0.96], REPRODUCED),
        ([0.30, 0.31, 0.29], CONTRADICTED),  # the server could not even do 300 tpm
        ([0.6, 1.0], NOISE),
        ([0.97], NOISE),  # one repetition never decides
    ):
        verdict = judge_binds(shares, "rate-300", 300)
        assert verdict.outcome == SETUP
        assert f"the rule alone would say {rule_says}" in verdict.reason
    verdict = judge_binds([0.95, 0.97, 0.96], "rate-300", 300)
    assert "95% CI" in verdict.text() and f"{BINDS_SHARE * 100:.3g}" in verdict.reason
    assert judge_binds([], "rate-300", 300).outcome == CANNOT


def test_os_rung_each_verdict():
    os_steps = frozenset({"os"})  # the [ladder.host] step, known from the spec
    assert judge_rung(OS, quick_ladder(), os_steps).outcome == REPRODUCED  # ×1.07 in ×1.03-×1.10
    # huge pages and the host settings gained nothing against memory (22,400)
    assert judge_rung(OS, quick_ladder(os_tpmc=around(22_400)), os_steps).outcome == CONTRADICTED
    assert judge_rung(OS, quick_ladder(os_tpmc=[20_000, 30_000]), os_steps).outcome == NOISE
    failed = quick_ladder()
    failed[6] = with_(failed[6], tpmc=[], failures=["huge pages need root"])
    failed[7] = with_(failed[7], tpmc=[], failures=["host settings need root"])
    verdict = judge_rung(OS, failed, os_steps)
    assert verdict.outcome == CANNOT and "huge pages need root" in verdict.reason  # the machine
    # a spec without OS steps chose not to measure them: no word of root
    verdict = judge_rung(OS, quick_ladder()[:-3])
    assert verdict.outcome == NOT_MEASURED and "root" not in verdict.reason.split("(")[0]


# The findings besides the rungs.


def with_cpu(samples: StepSamples, busy, idle, iowait=None, disk="cloud-network-ssd"):
    return with_(
        samples,
        cpu_busy_pct=list(busy),
        cpu_idle_pct=list(idle),
        cpu_iowait_pct=list(iowait or [0.5] * len(busy)),
        emulated_disk=disk,
    )


def at_50000(busy, idle, iowait=None, disk="cloud-network-ssd", limited=0) -> list[StepSamples]:
    ladder = quick_ladder()
    ladder[2] = with_cpu(with_(ladder[2], rate_limited=limited), busy, idle, iowait, disk)
    return ladder


def test_disk_at_the_50000_limit_each_verdict():
    # the emulated disk: FUSE waits are idle time; the CPU waits about twice what it works
    held = judge_disk_at_limit(at_50000([30, 32, 31], [66, 64, 65]))
    assert held.outcome == REPRODUCED
    assert "emulated disk (cloud-network-ssd)" in held.reason and "iowait 0.5%" in held.reason
    assert held.figure is not None and held.figure.what.startswith("CPU (iowait + idle) / busy")
    busy = judge_disk_at_limit(at_50000([90, 92, 91], [8, 6, 7]))
    assert busy.outcome == CONTRADICTED  # the CPU works: not held back by its disk
    wide = judge_disk_at_limit(at_50000([30, 70, 50], [68, 28, 48]))
    assert wide.outcome == NOISE
    # on real storage only iowait is the disk's
    real = judge_disk_at_limit(at_50000([30, 31, 29], [60, 60, 60], [8, 9, 7], disk=None))
    assert real.outcome == CONTRADICTED and real.figure.what.startswith("CPU iowait / busy")
    assert judge_disk_at_limit(at_50000([20, 21, 19], [5, 5, 5], [70, 72, 71], None)).outcome == (
        REPRODUCED
    )


def test_disk_at_the_50000_limit_not_measured_where_the_limit_decides():
    verdict = judge_disk_at_limit(at_50000([30, 32, 31], [66, 64, 65], limited=3))
    assert verdict.outcome == NOT_MEASURED and "the limit the spec chose" in verdict.reason
    verdict = judge_disk_at_limit(quick_ladder())  # a run from before the resource sampler
    assert verdict.outcome == NOT_MEASURED and "recorded no CPU shares" in verdict.reason
    partial = at_50000([30, 32, 31], [66, 64, 65])
    partial[2] = with_(partial[2], cpu_idle_pct=[])  # a summary without its idle share
    assert judge_disk_at_limit(partial).outcome == NOT_MEASURED
    verdict = judge_disk_at_limit(quick_ladder()[:2])
    assert verdict.outcome == NOT_MEASURED and "50,000" in verdict.reason
    # a repetition where the machine did no work at all cannot be a ratio: refused, not dropped
    verdict = judge_disk_at_limit(at_50000([30, 0, 31], [66, 99, 65]))
    assert verdict.outcome == NOISE and "repetition 2 of 3" in verdict.reason


def best_at(busy, faster_fixed_count=True) -> list[StepSamples]:
    ladder = [with_cpu(s, [50, 50, 50], [40, 40, 40]) for s in quick_ladder()]
    ladder[7] = with_cpu(ladder[7], busy, [100 - b for b in busy])  # os: the fastest timed step
    if not faster_fixed_count:
        ladder[8] = with_(ladder[8], tpmc=around(1_000))
    return ladder


def test_the_best_point_has_the_cpu_85_to_95_busy_each_verdict():
    good = judge_best_cpu(best_at([88, 90, 91]))
    assert good.outcome == REPRODUCED
    assert good.figure is not None and "at os, the fastest step" in good.figure.what
    assert "rate-300 50%" in good.reason  # every step's CPU beside it
    assert judge_best_cpu(best_at([99.0, 99.5, 98.8])).outcome == CONTRADICTED
    assert judge_best_cpu(best_at([60, 62, 61])).outcome == CONTRADICTED
    assert judge_best_cpu(best_at([80, 95, 99])).outcome == NOISE
    assert judge_best_cpu(quick_ladder()).outcome == NOT_MEASURED  # no CPU shares recorded


def test_the_fixed_count_step_is_never_the_best_or_the_fully_tuned_one():
    ladder = best_at([88, 90, 91])  # transactions-100 has the highest tpmC: not a timed run
    assert judge_best_cpu(ladder).figure.what.startswith("CPU busy at os")
    tuned = fully_tuned(ladder)
    assert tuned is not None and tuned.name == "os"
    capped = old_ladder()[:5]  # memory at its 50,000 limit: not free of it
    assert fully_tuned(capped).name == "io"


def test_tpmc_a_core_near_10000_each_verdict():
    ladder = quick_ladder()
    ladder[7] = with_(ladder[7], tpmc=around(20_000))
    near = judge_per_core(ladder, cores=2)
    assert near.outcome == REPRODUCED  # 10,000 a core in 7,071-14,142
    assert near.figure is not None and near.figure.unit == "tpmC a core"
    assert "os (2 cores)" in near.figure.what
    ladder[7] = with_(ladder[7], tpmc=around(114_000))
    assert judge_per_core(ladder, cores=2).outcome == CONTRADICTED  # 57,000 a core
    ladder[7] = with_(ladder[7], tpmc=[8_000, 40_000, 20_000])
    assert judge_per_core(ladder, cores=2).outcome == NOISE
    assert judge_per_core(ladder, cores=None).outcome == NOT_MEASURED


def sized(first_round_mib: list[float], later_mib: float = 2_000, warehouses=4):
    """The quick ladder with a size after each measurement, interleaved: round r runs every
    step in order; the first round's first sizes are given, the rest have grown."""
    ladder = quick_ladder()
    sizes = {i: later_mib for i in range(len(ladder))}
    sizes.update(enumerate(first_round_mib))
    return [
        with_(
            s,
            database_bytes=[(sizes[i] if r == 0 else later_mib) * MIB for r in range(3)],
            started_at=[r * 100.0 + i for r in range(3)],
            warehouses=warehouses,
        )
        for i, s in enumerate(ladder)
    ]


def test_a_warehouse_near_100_mb_each_verdict():
    # 4 warehouses: rate-300, rate-3000 and rate-50000 of the first round see the data as
    # loaded (a few thousand transactions); rate-500000 and the rest grow it by tens of MB
    verdict = judge_warehouse_size(sized([410, 410.5, 412]))
    assert verdict.outcome == REPRODUCED
    assert verdict.figure is not None and verdict.figure.unit == "MB"
    assert "as loaded (4 warehouses, the first 3 measurements)" in verdict.figure.what
    assert verdict.figure.value == pytest.approx((410 + 410.5 + 412) / 3 / 4)  # not 500, grown
    assert judge_warehouse_size(sized([1_600, 1_610, 1_620])).outcome == CONTRADICTED
    assert judge_warehouse_size(sized([150, 600, 1_500])).outcome == NOISE
    assert judge_warehouse_size(quick_ladder()).outcome == NOT_MEASURED
    # no measurement at or below 50,000 before the first free step: no size as loaded
    unlimited = [with_(s, rate_tpm=None) for s in sized([410, 411, 412])]
    verdict = judge_warehouse_size(unlimited)
    assert verdict.outcome == NOT_MEASURED and "no size as loaded" in verdict.reason
    # one measurement as loaded cannot decide
    one = sized([410])
    one[1] = with_(one[1], rate_tpm=None)
    assert judge_warehouse_size(one).outcome == NOISE


def test_a_fixed_count_run_about_the_timed_run_each_verdict():
    ladder = quick_ladder()
    ladder[8] = with_(ladder[8], tpmc=[t * 0.98 for t in ladder[7].tpmc])
    same = judge_fixed_count(ladder)
    assert same.outcome == REPRODUCED
    assert same.figure.what == "tpmC transactions-100/os"
    assert "100 transactions per terminal" in same.reason and "6,400" in same.reason
    ladder[8] = with_(ladder[8], tpmc=[t * 0.5 for t in ladder[7].tpmc])
    assert judge_fixed_count(ladder).outcome == CONTRADICTED
    ladder[8] = with_(ladder[8], tpmc=[10_000, 40_000, 24_000])
    assert judge_fixed_count(ladder).outcome == NOISE
    assert judge_fixed_count(quick_ladder()[:-1]).outcome == NOT_MEASURED
    failed = quick_ladder()
    failed[8] = with_(failed[8], tpmc=[], failures=["pgbench: -t failed"])
    assert judge_fixed_count(failed).outcome == CANNOT


def test_a_fixed_count_step_that_changes_more_is_not_the_articles_comparison():
    ladder = quick_ladder()
    ladder[8] = with_(ladder[8], settings={**ladder[8].settings, "fsync": "off"})
    assert fixed_count_steps(ladder) is None
    ladder = quick_ladder()
    ladder[8] = with_(ladder[8], rate_tpm=50000.0)
    assert fixed_count_steps(ladder) is None


@pytest.fixture(scope="module")
def tiny_ladder(tiny_runs) -> RunData:
    return tiny_runs["tpcc-ladder-tiny"]


def test_the_tiny_ladders_verdicts(tiny_ladder):
    verdicts = {claim.words: claim.judge(tiny_ladder) for claim in Tpcc.claims}
    outcomes = [v.outcome for v in verdicts.values()]
    # tests/data/report-runs/tpcc-ladder.toml: rate-limited (300) → limit-removed (off) → io
    # (synchronous_commit off with shared_buffers), two 3 s repetitions per step.
    assert outcomes == [
        SETUP,  # binds: 260 and 240 of 300 tpm; the pacer's figure
        NOT_MEASURED,  # raise: the tiny ladder lifts the limit outright, it never raises it
        NOT_MEASURED,  # raise again: likewise
        NOT_MEASURED,  # io: its io step changes memory too
        NOT_MEASURED,  # memory: likewise
        SETUP,  # lifted: ×500 against a limit
        NOT_MEASURED,  # os: no huge pages or host step in the tiny ladder
        NOT_MEASURED,  # the disk at 50,000: no such step
        NOT_MEASURED,  # the best point's CPU: the fixture run recorded no CPU shares
        NOISE,  # tpmC a core: two short repetitions, 3,827-30,383 a core
        NOISE,  # a warehouse's size: one measurement at 300 tpm before the limit went
        NOT_MEASURED,  # no fixed-count step
    ]
    for verdict in verdicts.values():
        if verdict.outcome in (NOISE, SETUP):
            assert "95% CI" in verdict.text() or "n=" in verdict.text()


def test_every_claim_has_its_figure_rule_qualifier_and_judge():
    setup = {RAISE_TENFOLD.words, RAISE_AGAIN.words, LIFTED.words}
    for claim in Tpcc.claims:
        assert claim.figure and claim.rule and claim.article and claim.words
        assert claim.judge.__name__ != "_not_judged"
        assert claim.qualifier in QUALIFIERS
        if claim.words in setup or "limitTxnsPerMin = 300" in claim.words:
            assert claim.kind == "setup"
        else:
            assert claim.kind == "finding"
    assert len(Tpcc.claims) == 12


def test_figures_are_finite_in_every_constructed_verdict():
    verdicts = [judge_rung(rung, quick_ladder(), frozenset({"os"}), 2) for rung in RUNGS[1:]]
    verdicts += [judge_disk_at_limit(at_50000([30, 32, 31], [66, 64, 65]))]
    for verdict in verdicts:
        assert verdict.figure is not None and math.isfinite(verdict.figure.value)


def test_a_stored_spec_that_no_longer_validates_leaves_the_ladder_without_its_words(
    tiny_ladder,
):
    """A run stored by an older lab whose spec keys have changed since: its steps, verdicts
    and advice are read from its points as ever, only the steps' descriptions (the spec's)
    are left out (spec/load.py stored_spec)."""
    from pgcachelab.studies.tpcc.claims import os_step_names
    from pgcachelab.studies.tpcc.ladder import ladder_advice, step_samples

    described = {s.name: s.description for s in step_samples(tiny_ladder)}
    assert described["rate-limited"] == "BenchmarkSQL's default limit"
    older = dataclasses.replace(
        tiny_ladder.run, spec_text="key_of_an_older_lab = 1\n" + tiny_ladder.run.spec_text
    )
    data = RunData(older, tiny_ladder.points, tiny_ladder.server_settings, tiny_ladder.schedule)
    steps = step_samples(data)
    assert [s.name for s in steps] == list(described) and not any(s.description for s in steps)
    assert os_step_names(data) == frozenset()
    assert [c.judge(data).outcome for c in Tpcc.claims] == [
        c.judge(tiny_ladder).outcome for c in Tpcc.claims
    ]
    assert [a.recommendation for a in ladder_advice(data)] == [
        a.recommendation for a in ladder_advice(tiny_ladder)
    ]
