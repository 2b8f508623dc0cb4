"""The four verdicts and their honesty rules (analysis/claims.py): a claim is reproduced or
contradicted only by a figure with its 95% interval and two repetitions or more."""

import pytest

from pgcachelab.analysis.claims import (
    CANNOT,
    CONTRADICTED,
    NOISE,
    REPRODUCED,
    Figure,
    Verdict,
    at_least,
    at_most,
    cannot,
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
def test_a_decisive_verdict_needs_an_interval_and_two_repetitions(outcome):
    with pytest.raises(ValueError, match="95% interval"):
        Verdict(outcome, "rule", ratio(5.0, None, None, 5))
    with pytest.raises(ValueError, match="at least 2 repetitions"):
        Verdict(outcome, "rule", ratio(5.0, 4.0, 6.0, 1))
    with pytest.raises(ValueError):
        Verdict(outcome, "rule", None)
    assert Verdict(outcome, "rule", ratio(5.0, 4.0, 6.0, 2)).outcome == outcome


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
