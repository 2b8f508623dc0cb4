"""Seed 003's overhead test: what polling shared_buffers once a second costs. Pure functions.

Points differ by `inspect_method` (none = the baseline) and shared_buffers. The tps sag of a
method is paired by repetition: with interleaved order, repetition r of every method ran in the
same round, close in time, so the round's drift cancels in tps(method, r) / tps(none, r). The
sag is 1 minus the geometric mean of those ratios, with Student's 95% interval on their logs:
ratios multiply, and one stalled baseline window (a ratio of 666 with 250 clients on 2 cores)
threw an arithmetic mean to a sag of -7,390% where the geometric mean stays near the others.

Separate runs still differ by more than the 1% the issue asks about on a shared machine, so a
spec can also alternate within each run (`[inspect] alternate`): windows of a few seconds,
polled and not polled in turn, and pgbench's per-second progress (with Unix timestamps) cut
along them. Each pair of neighbouring windows gives tps(polled) / tps(not polled) a few seconds
apart, in the same pgbench run; the sag is 1 minus their geometric mean. The baseline ("none")
points get the same windows and never poll: their "sag" is the method's noise floor (an A/A test).
"""

from dataclasses import dataclass

from pgcachelab.analysis.summary import Summary, geometric_interval, summarise
from pgcachelab.store.metric_types import MeasurementMetrics

BASELINE = "none"


@dataclass(frozen=True)
class Sag:
    method: str
    ratios: Summary  # tps(method) / tps(baseline), per round (or window pair)
    sag_percent: float  # 1 minus the ratios' geometric mean, in percent
    sag_ci_percent: tuple[float, float] | None  # 95%: from the interval on the ratios' logs
    # Every ratio as measured, a 0 among them: the claims judge these (analysis/claims.py
    # refuses a 0 rather than leave it out, as the geometric mean above must)
    values: tuple[float, ...] = ()


def paired_sag(baseline: dict[int, float], measured: dict[int, float], method: str) -> Sag | None:
    """The sag of `measured` against `baseline`, both keyed by repetition (round)."""
    rounds = sorted(set(baseline) & set(measured))
    return sag_of_ratios([measured[r] / baseline[r] for r in rounds if baseline[r]], method)


def sag_of_ratios(values: list[float], method: str) -> Sag | None:
    """1 minus the geometric mean of tps ratios (polled / not polled), with Student's 95%
    interval on their logs. A ratio of 0 (a window without a transaction) has no log and is left
    out; the ratios' summary keeps it, so n still counts it."""
    ratios = summarise(values)
    effect = geometric_interval(values)
    if ratios is None or effect is None:
        return None
    interval = None
    if effect.ci_low is not None and effect.ci_high is not None:
        interval = ((1 - effect.ci_high) * 100, (1 - effect.ci_low) * 100)
    return Sag(method, ratios, (1 - effect.ratio) * 100, interval, tuple(values))


@dataclass(frozen=True)
class Windows:
    """Alternating windows of one measurement: polled, not polled, ... (or the reverse)."""

    start: float  # Unix time of the first window's start
    length_s: float
    first_polled: bool
    # "abba": polled, not, not, polled, polled, ... so that the pairs (0, 1), (2, 3), ... take
    # turns at which comes first, and a steady rise or fall of tps within the run cancels in the
    # mean of their ratios. "abab" (polled, not, polled, ...; runs stored before "abba") puts
    # the polled window first in every pair, and such a trend biases every pair the same way.
    pattern: str = "abab"

    def index(self, at: float) -> int:
        return int((at - self.start) // self.length_s)

    def polled(self, index: int) -> bool:
        first_in_pair = index % 2 == 0
        if self.pattern == "abba":
            pair_starts_polled = (index // 2) % 2 == 0
            return (first_in_pair == pair_starts_polled) == self.first_polled
        return first_in_pair == self.first_polled

    def end(self, index: int) -> float:
        return self.start + (index + 1) * self.length_s


def window_tps(
    progress: list[tuple[float, float]], windows: Windows, interval_s: float = 1.0
) -> dict[int, float]:
    """Mean tps per window index, from (Unix timestamp, tps) progress samples, each covering
    the `interval_s` before its timestamp. A sample that straddles two windows is left out."""
    per_window: dict[int, list[float]] = {}
    for timestamp, tps in progress:
        first, last = windows.index(timestamp - interval_s), windows.index(timestamp - 1e-6)
        if first == last and first >= 0:
            per_window.setdefault(first, []).append(tps)
    return {index: sum(values) / len(values) for index, values in per_window.items()}


def alternation_ratios(progress: list[tuple[float, float]], windows: Windows) -> list[float]:
    """tps(polled window) / tps(its not-polled neighbour), one per pair of windows (0 and 1,
    2 and 3, ...) where both have a whole progress sample."""
    means = window_tps(progress, windows)
    ratios = []
    for first in range(0, max(means, default=-1) + 1, 2):
        pair = (first, first + 1)
        if not all(index in means and means[index] > 0 for index in pair):
            continue
        polled, bare = pair if windows.polled(first) else pair[::-1]
        ratios.append(means[polled] / means[bare])
    return ratios


def measurement_window_ratios(metrics: MeasurementMetrics) -> list[float]:
    """alternation_ratios of one stored measurement (its windows and pgbench progress)."""
    windows = metrics.get("inspect_windows")
    progress = (metrics.get("pgbench") or {}).get("progress") or []
    if not windows or not progress:
        return []
    samples = [(sample["elapsed_s"], sample["tps"]) for sample in progress]
    return alternation_ratios(samples, Windows(**windows))


def covered_windows(
    progress: list[tuple[float, float]], windows: Windows, poll_starts: list[float]
) -> tuple[int, int]:
    """(polled windows in which a poll started, polled windows with a whole progress sample).
    A read longer than what is left of its window is skipped by the sampler (it would slow the
    unpolled neighbour): a slow mode may poll in few of its windows, and its sag then says
    little of polling with it."""
    measured = window_tps(progress, windows)
    started = {windows.index(at) for at in poll_starts}
    polled = [index for index in measured if windows.polled(index)]
    return sum(index in started for index in polled), len(polled)


def sag_above(larger: Sag, smaller: Sag) -> bool | None:
    """Whether `larger` sags more than `smaller` beyond the noise: their 95% intervals apart.
    None when either has no interval (a single ratio)."""
    return interval_above(larger.sag_ci_percent, smaller.sag_ci_percent)


def interval_above(
    larger: tuple[float | None, float | None] | None,
    smaller: tuple[float | None, float | None] | None,
) -> bool | None:
    """Whether the (low, high) interval `larger` lies wholly above `smaller`; None without
    both."""
    if larger is None or smaller is None:
        return None
    (low, high), (other_low, other_high) = larger, smaller
    if low is None or high is None or other_low is None or other_high is None:
        return None
    return low > other_high
