"""What a run's measurements favour, with intervals, and what they cannot tell. Pure functions.

Samples are per-repetition values of one swept value (tps, or a phase's median latency); the
intervals are the 95% intervals of the mean (analysis.summary). Two settings whose intervals
overlap are not told apart: the advice says so rather than crown the one with the luckier mean.
"""

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Generic, TypeVar

from pgcachelab.analysis.summary import Summary, best_by_median, summarise

MIN_REPETITIONS = 3  # fewer give an interval too wide (or none) to rank settings by
V = TypeVar("V")  # a swept value: bytes of shared_buffers, a mode's name...


@dataclass(frozen=True)
class Choice(Generic[V]):
    """The best value of a swept parameter and those the measurements cannot tell from it."""

    best: V
    best_summary: Summary
    indistinguishable: list[V]  # other values whose interval overlaps the best's
    summaries: dict[V, Summary]
    caveats: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Advice:
    topic: str  # the swept parameter the advice is about, e.g. "clients"
    cell: str  # the other swept values the advice holds for, "" when none
    recommendation: str
    evidence: str
    caveats: list[str] = field(default_factory=list)


def overlaps(a: Summary, b: Summary) -> bool:
    """Whether two intervals overlap; a value without an interval overlaps nothing it is not
    equal to only by luck, so it is treated as overlapping (it cannot be told apart)."""
    if a.ci_low is None or b.ci_low is None or a.ci_high is None or b.ci_high is None:
        return True
    return a.ci_low <= b.ci_high and b.ci_low <= a.ci_high


def repetition_caveats(summaries: Mapping[V, Summary]) -> list[str]:
    fewest = min(s.n for s in summaries.values())
    if fewest < 2:
        return [f"only {fewest} repetition for some values: no interval, nothing can be ranked"]
    if fewest < MIN_REPETITIONS:
        return [
            f"only {fewest} repetitions for some values: intervals are wide; use "
            f"repetitions = {MIN_REPETITIONS} or more"
        ]
    return []


def choose(
    samples: dict[V, list[float]], higher_is_better: bool, show: Callable[[V], str] = str
) -> Choice[V] | None:
    """The value with the best median over its repetitions (analysis.summary.best_by_median),
    and those whose interval overlaps its own;
    `show` writes a value for the caveats (e.g. bytes as 32MB)."""
    summarised = {value: summarise(values) for value, values in samples.items()}
    summaries = {value: s for value, s in summarised.items() if s is not None}
    if not summaries:
        return None
    best = best_by_median(summaries, higher_is_better)
    tied = [v for v, s in summaries.items() if v != best and overlaps(s, summaries[best])]
    caveats = repetition_caveats(summaries)
    if len(summaries) == 1:
        caveats.append("only one value was measured: nothing to compare it with")
    elif tied:
        caveats.append(
            f"the intervals of {', '.join(map(show, tied))} overlap the best's: the measurements "
            f"do not tell them apart; repeat more or measure longer"
        )
    return Choice(best, summaries[best], tied, summaries, caveats)


def format_number(value: float) -> str:
    """4,652 for throughput-sized numbers, 3 significant digits below 100."""
    return f"{value:,.0f}" if abs(value) >= 100 else f"{value:.3g}"


def format_interval(summary: Summary, unit: str = "") -> str:
    """'4,652 tps [95% CI 4,100, 5,204] (n=3)'; without an interval the mean and n."""
    mean = format_number(summary.mean)
    if summary.ci_low is None or summary.ci_high is None:
        return f"{mean}{unit} (n={summary.n}, no interval)"
    low, high = format_number(summary.ci_low), format_number(summary.ci_high)
    return f"{mean}{unit} [95% CI {low}, {high}] (n={summary.n})"


# -- wording shared by every study's advice ---------------------------------------------


def ratio_text(ratio: float) -> str:
    """Two decimals below 10, three significant digits above, as the steps are quoted: 0.54,
    1.31, 13.6, 136."""
    return f"{ratio:.2f}" if abs(ratio) < 10 else f"{ratio:.3g}"


def ratio_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "no interval"
    return f"95% CI {ratio_text(low)}–{ratio_text(high)}"


def all_tied(choice: Choice[V]) -> bool:
    """Every other value's interval overlaps the best's: the run singles out nothing."""
    return len(choice.summaries) > 1 and len(choice.indistinguishable) == len(choice.summaries) - 1


def headline(choice: Choice[V], claim: str, unit: str, show: Callable[[V], str] = str) -> str:
    figure = format_interval(choice.best_summary, unit)
    if all_tied(choice):
        return (
            f"no clear difference: {show(choice.best)} has the best median ({figure}), but "
            "every other value's interval overlaps it"
        )
    return f"{claim} ({figure})" + tied_text(choice, show)


def tied_text(choice: Choice[V], show: Callable[[V], str] = str) -> str:
    if not choice.indistinguishable:
        return ""
    return f"; as good within the intervals: {', '.join(show(v) for v in choice.indistinguishable)}"


def others_text(choice: Choice[V], unit: str, show: Callable[[V], str] = str) -> str:
    return "; ".join(
        f"{show(v)}: {format_interval(s, unit)}"
        for v, s in sorted(choice.summaries.items(), key=lambda item: str(item[0]))
        if v != choice.best
    )
