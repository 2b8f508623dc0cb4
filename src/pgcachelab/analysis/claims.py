"""A published claim judged on this machine: the four verdicts and the rules every verdict keeps.

Honesty, in code: "reproduced" and "contradicted" need the deciding figure's 95% interval and at
least two repetitions behind it (Verdict refuses otherwise); an interval that reaches across the
rule's threshold is "not shown beyond the noise"; what this machine or run cannot measure is
"cannot be shown here", with the reason. Pure: the studies' claims call these on their figures.
"""

import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.statistics import t95

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
NOISE = "not shown beyond the noise"
CANNOT = "cannot be shown here"
OUTCOMES = (REPRODUCED, CONTRADICTED, NOISE, CANNOT)

# Two repetitions give an interval at all; one never decides a claim.
MIN_REPETITIONS = 2


@dataclass(frozen=True)
class Figure:
    """The figure that decides a claim: its value, its 95% interval, how many repetitions (or
    paired samples) stand behind it, and how to write it ("idx2/idx1 at 1MB")."""

    what: str
    value: float
    ci_low: float | None = None
    ci_high: float | None = None
    repetitions: int = 0
    unit: str = "×"  # "×" for ratios, "%" for shares, or a unit after the number ("tps")

    @property
    def decisive(self) -> bool:
        return (
            self.ci_low is not None
            and self.ci_high is not None
            and self.repetitions >= MIN_REPETITIONS
        )

    def text(self) -> str:
        interval = (
            f"95% CI {_number(self.ci_low)}–{_number(self.ci_high)}"
            if self.ci_low is not None and self.ci_high is not None
            else "no interval"
        )
        value = _with_unit(self.value, self.unit)
        return f"{self.what} {value} ({interval}, n={self.repetitions})"


@dataclass(frozen=True)
class Verdict:
    outcome: str
    reason: str  # the rule applied, or why it cannot be shown
    figure: Figure | None = None

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown verdict {self.outcome!r}")
        if self.outcome in (REPRODUCED, CONTRADICTED) and not (
            self.figure is not None and self.figure.decisive
        ):
            raise ValueError(
                f"{self.outcome!r} needs a figure with its 95% interval and at least "
                f"{MIN_REPETITIONS} repetitions: {self.figure}"
            )

    def text(self) -> str:
        figure = f"{self.figure.text()}: " if self.figure else ""
        return f"{self.outcome}: {figure}{self.reason}"


def cannot(reason: str, figure: Figure | None = None) -> Verdict:
    return Verdict(CANNOT, reason, figure)


def at_least(figure: Figure, threshold: float, rule: str) -> Verdict:
    """The claim holds when the figure is at least `threshold`: reproduced when the whole
    interval is at or above it, contradicted when the whole interval is below it, noise when
    the interval reaches across (or there is no interval to judge by)."""
    low, high = _interval(figure)
    if low is None or high is None:
        return Verdict(NOISE, f"{rule}; one repetition or no interval cannot decide", figure)
    if low >= threshold:
        return Verdict(REPRODUCED, rule, figure)
    if high < threshold:
        return Verdict(CONTRADICTED, rule, figure)
    return Verdict(NOISE, f"{rule}; the interval reaches across {_number(threshold)}", figure)


def at_most(figure: Figure, threshold: float, rule: str) -> Verdict:
    """The claim holds when the figure is at most `threshold` (the mirror of at_least)."""
    low, high = _interval(figure)
    if low is None or high is None:
        return Verdict(NOISE, f"{rule}; one repetition or no interval cannot decide", figure)
    if high <= threshold:
        return Verdict(REPRODUCED, rule, figure)
    if low > threshold:
        return Verdict(CONTRADICTED, rule, figure)
    return Verdict(NOISE, f"{rule}; the interval reaches across {_number(threshold)}", figure)


def _interval(figure: Figure) -> tuple[float | None, float | None]:
    """The figure's bounds when they may decide, else (None, None)."""
    return (figure.ci_low, figure.ci_high) if figure.decisive else (None, None)


def _number(value: float | None) -> str:
    if value is None:
        return "?"
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return f"{value:.2f}" if abs(value) < 10 else f"{value:.3g}"


def _with_unit(value: float, unit: str) -> str:
    if unit == "×":
        return f"×{_number(value)}"
    if unit == "%":
        return f"{_number(value)}%"
    return f"{_number(value)} {unit}"


def within(figure: Figure, low: float, high: float, rule: str) -> Verdict:
    """The claim holds when the figure lies between `low` and `high` (a ratio ≈ 1 within a
    stated margin): reproduced when the whole interval is inside, contradicted when it lies
    wholly above `high` or wholly below `low`, noise when it reaches across either bound."""
    lower, upper = _interval(figure)
    if lower is None or upper is None:
        return Verdict(NOISE, f"{rule}; one repetition or no interval cannot decide", figure)
    if low <= lower and upper <= high:
        return Verdict(REPRODUCED, rule, figure)
    if lower > high or upper < low:
        return Verdict(CONTRADICTED, rule, figure)
    edge = high if upper > high else low
    return Verdict(NOISE, f"{rule}; the interval reaches across {_number(edge)}", figure)


def ratio_figure(what: str, ratios: list[float], unit: str = "×") -> Figure | None:
    """The geometric mean of per-repetition ratios with Student's 95% interval on their logs
    (ratios multiply: an interval on their arithmetic mean can even go below 0); None without
    a ratio above 0."""
    logs = [math.log(ratio) for ratio in ratios if ratio > 0]
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Figure(what, math.exp(mean), repetitions=1, unit=unit)
    half = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Figure(
        what, math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs), unit
    )
