"""The four verdicts and their honesty rules (analysis/claims.py): a claim is reproduced or
contradicted only by a figure with its 95% interval and two repetitions or more."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    NOT_MEASURED,
    REPRODUCED,
    SETUP,
    BadFigure,
    Figure,
    Verdict,
    at_least,
    at_most,
    cannot,
    combine,
    follows_from_setup,
    not_measured,
    ratio_figure,
    weakened,
    with_reason,
    within,
)


def ratio(value, low, high, n=5) -> Figure:
    return Figure("idx2/idx1", value, low, high, n)


@pytest.mark.parametrize(
    ("figure", "outcome"),
    [
        (ratio(5.2, 4.1, 6.6), REPRODUCED),  # the whole interval at or above 2
        (ratio(2.0, 2.0, 2.4), REPRODUCED),  # the threshold itself counts
        (ratio(1.1, 0.9, 1.3), CONTRADICTED),  # the whole interval below
        (ratio(2.1, 1.7, 2.6), NOISE),  # across the threshold
        (ratio(5.2, None, None, 1), NOISE),  # one repetition: no interval, no verdict
        (ratio(5.2, 4.1, 6.6, 1), NOISE),  # an interval from one repetition decides nothing
    ],
)
def test_at_least(figure, outcome):
    verdict = at_least(figure, 2.0, "idx2/idx1 ≥ 2")
    assert verdict.outcome == outcome
    assert verdict.figure is figure and verdict.reason.startswith("idx2/idx1 ≥ 2")


@pytest.mark.parametrize(
    ("figure", "outcome"),
    [
        (ratio(1.05, 0.98, 1.2), REPRODUCED),
        (ratio(1.6, 1.4, 1.9), CONTRADICTED),
        (ratio(1.2, 1.1, 1.4), NOISE),
    ],
)
def test_at_most(figure, outcome):
    assert at_most(figure, 1.3, "idx2 within 30% of idx1").outcome == outcome


@pytest.mark.parametrize("outcome", [REPRODUCED, CONTRADICTED])
def test_a_decisive_verdict_needs_an_interval_two_repetitions_and_a_rule(outcome):
    with pytest.raises(ValueError, match="95% interval"):
        Verdict(outcome, "rule", ratio(5.0, None, None, 5))
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        Verdict(outcome, "rule", ratio(5.0, 4.0, 6.0, 1))
    with pytest.raises(ValueError):
        Verdict(outcome, "rule", None)
    # a deciding verdict is made by a rule, never built directly (issue 46: cache-wash's
    # mapping built REPRODUCED itself)
    with pytest.raises(ValueError, match="made only by a rule"):
        Verdict(outcome, "rule", ratio(5.0, 4.0, 6.0, 2))
    figure = ratio(5.0, 4.0, 6.0, 2)
    made = at_least(figure, 2.0, "r") if outcome == REPRODUCED else at_most(figure, 2.0, "r")
    assert made.outcome == outcome


def test_unknown_outcomes_are_refused_and_cannot_says_why():
    with pytest.raises(ValueError, match="unknown verdict"):
        Verdict("maybe", "rule")
    verdict = cannot("needs root for the memory cgroup")
    assert verdict.outcome == CANNOT and verdict.figure is None
    assert verdict.text() == "cannot be shown here: needs root for the memory cgroup"


def test_figures_write_their_interval_and_repetitions():
    assert ratio(5.234, 4.1, 6.6).text() == "idx2/idx1 ×5.23 (95% CI 4.10–6.60, n=5)"
    assert Figure("tpmC", 12345.6, None, None, 1, "tpmC").text() == (
        "tpmC 12,346 tpmC (no interval, n=1)"
    )
    assert Figure("error", 1.5, 1.0, 2.0, 3, "%").text() == "error 1.50% (95% CI 1.00–2.00, n=3)"


# -- issue 46: the holes, with the exact inputs it tried ------------------------------------


@pytest.mark.parametrize(
    ("low", "high", "value", "why"),
    [
        (math.nan, 0.9, 0.5, "not two finite numbers"),  # half-NaN: was reproduced by at_most
        (0.5, math.nan, 0.7, "not two finite numbers"),
        (None, 0.9, 0.5, "half an interval"),
        (5.0, 0.5, 1.0, "inverted"),  # an inverted interval was reproduced
        (0.5, 0.9, 5.0, "outside its own interval"),  # a value outside it, likewise
        (0.5, math.inf, 0.7, "not two finite numbers"),
    ],
)
def test_a_figure_refuses_what_cannot_be_judged(low, high, value, why):
    with pytest.raises(BadFigure, match=why):
        Figure("idx2/idx1", value, low, high, 5)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_a_figure_refuses_a_value_that_is_not_a_number(value):
    with pytest.raises(BadFigure, match="not a finite number"):
        Figure("tps", value, repetitions=3)


def test_a_zero_width_interval_never_decides():
    # two equal repetitions: "100% (95% CI 100–100, n=2)" was reproduced
    figure = Figure("share", 100.0, 100.0, 100.0, 2, "%")
    assert not figure.decisive and "zero width" in figure.undecided_because()
    for verdict in (
        at_least(figure, 50.0, "r"),
        at_most(figure, 150.0, "r"),
        within(figure, 50.0, 150.0, "r"),
    ):
        assert verdict.outcome == NOISE and "zero width" in verdict.reason
    assert ratio_figure("x", [2.0, 2.0]).decisive is False


def test_ratio_figure_refuses_bad_ratios_instead_of_dropping_them():
    # [0, 0, 5, 5] was "×5.00 (CI 5.00–5.00, n=2)", reproduced
    with pytest.raises(BadFigure, match="repetition 1 of 4 gave the ratio 0"):
        ratio_figure("tps after/before", [0, 0, 5, 5])
    for bad in (-1.0, math.nan, math.inf):  # an infinite ratio crashed it
        with pytest.raises(BadFigure, match="not a positive finite number"):
            ratio_figure("r", [2.0, bad, 3.0])
    assert ratio_figure("r", []) is None
    assert ratio_figure("r", [2.0]).decisive is False


def test_combine_reproduces_or_contradicts_only_when_every_part_does():
    yes = at_least(ratio(5.0, 4.0, 6.0), 2.0, "r")
    no = at_least(ratio(1.1, 0.9, 1.3), 2.0, "r")
    across = at_least(ratio(2.1, 1.7, 2.6), 2.0, "r")
    gone = cannot("needs root")
    assert combine([("on", yes), ("off", yes)]).outcome == REPRODUCED
    assert combine([("on", no), ("off", no)]).outcome == CONTRADICTED
    # either side alone no longer carries the claim
    mixed = combine([("on", yes), ("off", no)])
    assert mixed.outcome == NOISE
    assert "on: reproduced" in mixed.reason and "off: contradicted" in mixed.reason
    assert combine([("on", yes), ("off", across)]).outcome == NOISE
    assert combine([("on", yes), ("off", gone)]).outcome == NOISE
    assert combine([("on", gone), ("off", gone)]).outcome == CANNOT
    assert combine([("only", yes)]) is yes
    assert combine([]).outcome == CANNOT


def test_setup_and_not_measured_are_never_counted():
    verdict = at_least(ratio(10.0, 9.0, 11.0), 3.0, "raise ×10")
    setup = follows_from_setup(verdict, "the ratio of two limits the spec chose")
    assert setup.outcome == SETUP and setup.figure is verdict.figure
    assert "the rule alone would say reproduced" in setup.reason
    assert not_measured("the quick spec skips 10 and 11").outcome == NOT_MEASURED


def test_weakened_turns_a_decision_into_noise_and_keeps_the_rest():
    verdict = at_least(ratio(5.0, 4.0, 6.0), 2.0, "r")
    assert weakened(verdict, "the A/A control failed").outcome == NOISE
    assert with_reason(verdict, "more").outcome == REPRODUCED
    assert weakened(cannot("root"), "x").outcome == CANNOT


# -- properties over random figures --------------------------------------------------------

finite = st.floats(min_value=-1e6, max_value=1e6, allow_nan=False, allow_infinity=False)
anything = st.one_of(finite, st.just(math.nan), st.just(math.inf), st.just(-math.inf))


@st.composite
def figures(draw):
    """A figure the constructor accepts, or None when the random numbers make a bad one."""
    value, low, high = draw(anything), draw(anything), draw(anything)
    n = draw(st.integers(min_value=0, max_value=50))
    try:
        return Figure("f", value, low, high, n)
    except BadFigure:
        return None


@given(figures(), finite, finite)
def test_every_rule_decides_only_on_a_whole_interval(figure, a, b):
    if figure is None:
        return
    low, high = min(a, b), max(a, b)
    for verdict, holds, breaks in (
        (at_least(figure, low, "r"), lambda f: f.ci_low >= low, lambda f: f.ci_high < low),
        (at_most(figure, high, "r"), lambda f: f.ci_high <= high, lambda f: f.ci_low > high),
        (
            within(figure, low, high, "r"),
            lambda f: low <= f.ci_low and f.ci_high <= high,
            lambda f: f.ci_low > high or f.ci_high < low,
        ),
    ):
        if verdict.outcome in (REPRODUCED, CONTRADICTED):
            assert figure.decisive
            assert figure.ci_low < figure.ci_high and figure.repetitions >= 2
            assert math.isfinite(figure.ci_low) and math.isfinite(figure.ci_high)
            assert figure.ci_low <= figure.value <= figure.ci_high
        if verdict.outcome == REPRODUCED:
            assert holds(figure)
        elif verdict.outcome == CONTRADICTED:
            assert breaks(figure)
        else:
            assert verdict.outcome == NOISE
            assert not figure.decisive or not (holds(figure) or breaks(figure))


@given(anything, anything, anything, st.integers(min_value=-3, max_value=50))
def test_a_figure_that_is_made_is_finite_ordered_and_inside(value, low, high, n):
    try:
        figure = Figure("f", value, low, high, n)
    except BadFigure:
        return
    assert math.isfinite(figure.value) and figure.repetitions >= 0
    assert figure.ci_low is not None and figure.ci_high is not None
    assert figure.ci_low <= figure.value <= figure.ci_high


@given(st.lists(st.one_of(st.floats(allow_nan=True), st.just(0.0)), max_size=12))
def test_ratio_figure_judges_all_ratios_or_refuses(ratios):
    try:
        figure = ratio_figure("r", ratios)
    except BadFigure:
        assert any(not math.isfinite(r) or r <= 0 for r in ratios)
        return
    except OverflowError:  # exp of a huge mean log: the float range, not a judged figure
        return
    if figure is None:
        assert ratios == []
    else:
        assert figure.repetitions == len(ratios)


outcome = st.sampled_from([REPRODUCED, CONTRADICTED, NOISE, CANNOT, NOT_MEASURED])


def _verdict_of(kind: str) -> Verdict:
    figure = ratio(5.0, 4.0, 6.0)
    return {
        REPRODUCED: at_least(figure, 2.0, "r"),
        CONTRADICTED: at_least(figure, 7.0, "r"),
        NOISE: at_least(figure, 5.0, "r"),
        CANNOT: cannot("root"),
        NOT_MEASURED: not_measured("spec"),
    }[kind]


@given(st.lists(outcome, min_size=1, max_size=6))
def test_combine_is_one_rule_for_every_claim(kinds):
    parts = [(f"p{i}", _verdict_of(kind)) for i, kind in enumerate(kinds)]
    combined = combine(parts).outcome
    if len(set(kinds)) == 1:
        assert combined == kinds[0]
    elif set(kinds) <= {CANNOT, NOT_MEASURED}:
        assert combined == CANNOT
    else:
        assert combined == NOISE
