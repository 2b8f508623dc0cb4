"""A published claim judged on this machine: the verdicts and the rules every verdict keeps.

Honesty, in code:
- A Figure is a finite value inside its own finite, ordered 95% interval; anything else is
  refused when it is made (BadFigure), never judged.
- "reproduced" and "contradicted" need a decisive figure: an interval of non-zero width and at
  least two repetitions behind it. Two equal repetitions give a zero-width interval, which says
  nothing of the spread and never decides.
- A verdict that decides is made only by the rule functions here (at_least, at_most, within,
  combine): Verdict refuses a deciding outcome built anywhere else.
- An interval that reaches across the rule's threshold is "not shown beyond the noise".
- "cannot be shown here" is kept for what this machine cannot do (no root, no such binary);
  what the spec chose not to measure is "not measured by this spec"; a figure that follows
  from the lab's own setup (a pacer's limit, the emulated disk's IOPS) is "follows from the
  setup": shown with its figure, never counted as reproduced.
Pure: the studies' claims call these on their figures.
"""

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, field

from pgcachelab.analysis.statistics import t95
from pgcachelab.analysis.summary import summarise

REPRODUCED = "reproduced"
CONTRADICTED = "contradicted"
NOISE = "not shown beyond the noise"
CANNOT = "cannot be shown here"
NOT_MEASURED = "not measured by this spec"
SETUP = "follows from the setup"
OUTCOMES = (REPRODUCED, CONTRADICTED, NOISE, CANNOT, NOT_MEASURED, SETUP)
DECIDING = (REPRODUCED, CONTRADICTED)

# Two repetitions give an interval at all; one never decides a claim.
MIN_REPETITIONS = 2
# Rounding: a value printed and read back, or computed by exp(log(x)), may sit a hair outside
# an interval computed the same way.
_RELATIVE_SLACK = 1e-9


class BadFigure(ValueError):
    """A figure that cannot be judged: a value or bound that is not a finite number, an
    inverted interval, a value outside its own interval, a ratio at or below 0."""


def _finite(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and math.isfinite(value)


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

    def __post_init__(self) -> None:
        if not _finite(self.value):
            raise BadFigure(f"{self.what}: the value {self.value!r} is not a finite number")
        if (self.ci_low is None) != (self.ci_high is None):
            raise BadFigure(
                f"{self.what}: half an interval ({self.ci_low!r}, {self.ci_high!r}): both "
                "bounds or neither"
            )
        if self.ci_low is not None and self.ci_high is not None:
            if not (_finite(self.ci_low) and _finite(self.ci_high)):
                raise BadFigure(
                    f"{self.what}: the interval ({self.ci_low!r}, {self.ci_high!r}) is not "
                    "two finite numbers"
                )
            if self.ci_low > self.ci_high:
                raise BadFigure(
                    f"{self.what}: the interval ({self.ci_low!r}, {self.ci_high!r}) is inverted"
                )
            slack = _RELATIVE_SLACK * max(abs(self.ci_low), abs(self.ci_high), 1e-300)
            if not self.ci_low - slack <= self.value <= self.ci_high + slack:
                raise BadFigure(
                    f"{self.what}: the value {self.value!r} lies outside its own interval "
                    f"({self.ci_low!r}, {self.ci_high!r})"
                )
        if isinstance(self.repetitions, bool) or not isinstance(self.repetitions, int):
            raise BadFigure(f"{self.what}: repetitions {self.repetitions!r} is not a count")
        if self.repetitions < 0:
            raise BadFigure(f"{self.what}: repetitions {self.repetitions} is below 0")

    @property
    def has_interval(self) -> bool:
        return self.ci_low is not None and self.ci_high is not None

    @property
    def zero_width(self) -> bool:
        return self.has_interval and self.ci_low == self.ci_high

    @property
    def decisive(self) -> bool:
        """An interval of non-zero width from at least MIN_REPETITIONS repetitions."""
        return self.has_interval and not self.zero_width and self.repetitions >= MIN_REPETITIONS

    def undecided_because(self) -> str:
        """Why the figure cannot decide ("" when it can)."""
        if self.repetitions < MIN_REPETITIONS:
            return f"{self.repetitions} repetition(s) cannot decide (at least {MIN_REPETITIONS})"
        if not self.has_interval:
            return "no interval to judge by"
        if self.zero_width:
            return (
                "its interval has zero width (the repetitions were equal): it says nothing of "
                "the spread, and decides nothing"
            )
        return ""

    def text(self) -> str:
        interval = (
            f"95% CI {_number(self.ci_low)}–{_number(self.ci_high)}"
            if self.has_interval
            else "no interval"
        )
        value = _with_unit(self.value, self.unit)
        return f"{self.what} {value} ({interval}, n={self.repetitions})"


# Only the rule functions below hold this: a deciding Verdict made anywhere else is refused.
_BY_RULE = object()


@dataclass(frozen=True)
class Verdict:
    outcome: str
    reason: str  # the rule applied, or why it cannot be shown
    figure: Figure | None = None
    rule_token: object = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.outcome not in OUTCOMES:
            raise ValueError(f"unknown verdict {self.outcome!r}")
        if self.outcome in DECIDING:
            if self.figure is None or not self.figure.decisive:
                why = self.figure.undecided_because() if self.figure else "no figure"
                raise ValueError(
                    f"{self.outcome!r} needs a figure with its 95% interval (of non-zero "
                    f"width) and at least {MIN_REPETITIONS} repetitions: {why}"
                )
            if self.rule_token is not _BY_RULE:
                raise ValueError(
                    f"{self.outcome!r} is made only by a rule (at_least, at_most, within, "
                    "combine), never built directly"
                )

    def text(self) -> str:
        figure = f"{self.figure.text()}: " if self.figure else ""
        return f"{self.outcome}: {figure}{self.reason}"


def _decided(outcome: str, reason: str, figure: Figure) -> Verdict:
    return Verdict(outcome, reason, figure, _BY_RULE)


def cannot(reason: str, figure: Figure | None = None) -> Verdict:
    """What this machine cannot measure (no root, no such binary, no such device)."""
    return Verdict(CANNOT, reason, figure)


def not_measured(reason: str, figure: Figure | None = None) -> Verdict:
    """What the spec chose not to measure (the full spec or another spec does)."""
    return Verdict(NOT_MEASURED, reason, figure)


def noise(reason: str, figure: Figure | None = None) -> Verdict:
    return Verdict(NOISE, reason, figure)


def follows_from_setup(verdict: Verdict, why: str) -> Verdict:
    """The verdict of a figure the lab's own setup decides (a rate limit it set, the emulated
    disk's IOPS): shown with its figure and what the rule would say, never counted."""
    said = f"the rule alone would say {verdict.outcome}: {verdict.reason}"
    return Verdict(SETUP, f"{why}; {said}", verdict.figure)


def with_reason(verdict: Verdict, more: str) -> Verdict:
    """The same verdict with `more` said after its reason."""
    return Verdict(verdict.outcome, f"{verdict.reason}; {more}", verdict.figure, verdict.rule_token)


def weakened(verdict: Verdict, why: str) -> Verdict:
    """A deciding verdict made "not shown beyond the noise" for `why` (an untrustworthy control,
    a worst case past the threshold); others unchanged but for the reason."""
    if verdict.outcome in DECIDING:
        return Verdict(NOISE, f"{verdict.reason}; but {why}", verdict.figure)
    return with_reason(verdict, why)


def _undecided(figure: Figure, rule: str) -> Verdict | None:
    why = figure.undecided_because()
    return noise(f"{rule}; {why}", figure) if why else None


def at_least(figure: Figure, threshold: float, rule: str) -> Verdict:
    """The claim holds when the figure is at least `threshold`: reproduced when the whole
    interval is at or above it, contradicted when the whole interval is below it, noise when
    the interval reaches across (or there is no interval to judge by)."""
    if undecided := _undecided(figure, rule):
        return undecided
    assert figure.ci_low is not None and figure.ci_high is not None
    if figure.ci_low >= threshold:
        return _decided(REPRODUCED, rule, figure)
    if figure.ci_high < threshold:
        return _decided(CONTRADICTED, rule, figure)
    return noise(f"{rule}; the interval reaches across {_number(threshold)}", figure)


def at_most(figure: Figure, threshold: float, rule: str) -> Verdict:
    """The claim holds when the figure is at most `threshold` (the mirror of at_least)."""
    if undecided := _undecided(figure, rule):
        return undecided
    assert figure.ci_low is not None and figure.ci_high is not None
    if figure.ci_high <= threshold:
        return _decided(REPRODUCED, rule, figure)
    if figure.ci_low > threshold:
        return _decided(CONTRADICTED, rule, figure)
    return noise(f"{rule}; the interval reaches across {_number(threshold)}", figure)


def within(figure: Figure, low: float, high: float, rule: str) -> Verdict:
    """The claim holds when the figure lies between `low` and `high` (a ratio ≈ 1 within a
    stated margin): reproduced when the whole interval is inside, contradicted when it lies
    wholly above `high` or wholly below `low`, noise when it reaches across either bound."""
    if low > high:
        raise ValueError(f"within: the band ({low}, {high}) is inverted")
    if undecided := _undecided(figure, rule):
        return undecided
    lower, upper = figure.ci_low, figure.ci_high
    assert lower is not None and upper is not None
    if low <= lower and upper <= high:
        return _decided(REPRODUCED, rule, figure)
    if lower > high or upper < low:
        return _decided(CONTRADICTED, rule, figure)
    edge = high if upper > high else low
    return noise(f"{rule}; the interval reaches across {_number(edge)}", figure)


def combine(parts: Sequence[tuple[str, Verdict]], empty: str = "no part was measured") -> Verdict:
    """One verdict for a claim with parts (huge pages on and off, idx1 and idx2, each lighter
    mode): reproduced only when every part is, contradicted only when every part is; every
    part "cannot be shown here" (or every part not measured) stays so, and parts that were
    all unmeasured, some by the machine, cannot be shown; anything else is "not shown beyond
    the noise". The reason lists every part's verdict; the figure is the first
    part's that has one, the weakest for the claim when the parts disagree."""
    if not parts:
        return cannot(empty)
    if len(parts) == 1:
        return parts[0][1]
    outcomes = {verdict.outcome for _, verdict in parts}
    listed = "; ".join(f"{name or 'all'}: {verdict.text()}" for name, verdict in parts)
    if len(outcomes) == 1:
        (outcome,) = outcomes
        figure = parts[0][1].figure
        reason = f"every part {outcome}: {listed}"
        if outcome in DECIDING:
            assert figure is not None
            return _decided(outcome, reason, figure)
        return Verdict(outcome, reason, figure)
    if outcomes <= {CANNOT, NOT_MEASURED}:
        # nothing measured: a part this machine cannot show keeps the whole from being shown
        return cannot(f"no part was measured: {listed}")
    # the figure of a part that keeps the claim from being reproduced
    order = (NOISE, CONTRADICTED, CANNOT, NOT_MEASURED, SETUP, REPRODUCED)
    weakest = min(parts, key=lambda part: order.index(part[1].outcome))[1]
    return noise(f"the parts disagree: {listed}", weakest.figure)


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


def ratio_figure(what: str, ratios: Sequence[float], unit: str = "×") -> Figure | None:
    """The geometric mean of per-repetition ratios with Student's 95% interval on their logs
    (ratios multiply: an interval on their arithmetic mean can even go below 0); None without
    any ratio. A ratio at or below 0, NaN or infinite is refused (BadFigure) with the
    repetition it came from: dropping it would judge the claim on the repetitions that suit it."""
    for index, ratio in enumerate(ratios):
        if not _finite(ratio) or ratio <= 0:
            raise BadFigure(
                f"{what}: repetition {index + 1} of {len(ratios)} gave the ratio {ratio!r}, "
                "which is not a positive finite number (a failed or empty measurement?)"
            )
    if not ratios:
        return None
    logs = [math.log(ratio) for ratio in ratios]
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Figure(what, math.exp(mean), repetitions=1, unit=unit)
    half = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Figure(
        what, math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs), unit
    )


def mean_figure(what: str, values: Sequence[float], unit: str) -> Figure | None:
    """The arithmetic mean of per-repetition values with Student's 95% interval; None without
    any value. A value that is not finite is refused (BadFigure)."""
    for index, value in enumerate(values):
        if not _finite(value):
            raise BadFigure(
                f"{what}: repetition {index + 1} of {len(values)} gave {value!r}, not a finite "
                "number"
            )
    summary = summarise(values)
    if summary is None:
        return None
    return Figure(what, summary.mean, summary.ci_low, summary.ci_high, summary.n, unit)
