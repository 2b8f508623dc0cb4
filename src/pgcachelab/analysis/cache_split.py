"""Seed 000's questions answered from the cache-wash samples, with confidence intervals.

Pure functions. Each repetition of a point gives one median per phase (idx1, seq, idx2); the
repetitions are the sample over which the intervals are computed.
"""

import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.summary import Summary, best_by_median, summarise, t95

PHASES = ("idx1", "seq", "idx2")
SURVIVAL_TOLERANCE = 1.10  # idx2 within 10% of idx1: the index survived the scan


@dataclass(frozen=True)
class Repetition:
    shared_buffers_bytes: int
    huge_pages: str  # "on", "off", "try" or "" when not swept
    repetition: int
    samples_ms: dict[str, list[float]]  # phase -> every latency

    def median(self, phase: str) -> float:
        return statistics.median(self.samples_ms[phase])


def _groups(reps: list[Repetition]) -> dict[tuple[str, int], list[Repetition]]:
    groups: dict[tuple[str, int], list[Repetition]] = {}
    for rep in reps:
        groups.setdefault((rep.huge_pages, rep.shared_buffers_bytes), []).append(rep)
    return groups


def survival_ratio(reps: list[Repetition]) -> Summary | None:
    """idx2 / idx1 of the per-repetition medians; a repetition whose idx1 median is 0 (see
    zero_latencies) has no ratio."""
    return summarise([r.median("idx2") / r.median("idx1") for r in reps if r.median("idx1") > 0])


def zero_latencies(reps: list[Repetition], phase: str) -> tuple[int, int]:
    """(latencies logged as 0 us, all latencies) of a phase. pgbench (14+) takes a
    transaction's end time lazily: when the reply is already there as it looks, the end time is
    its start time and the log says 0 (processXactStats, pg_time_now_lazy). Fast cached lookups
    are the ones hit, so a phase's median is biased low, down to 0."""
    values = [v for r in reps for v in r.samples_ms[phase]]
    return sum(1 for v in values if v == 0), len(values)


def index_survives_from(
    reps: list[Repetition], huge_pages: str
) -> tuple[int | None, Summary | None]:
    """The smallest shared_buffers from which idx2 stays within 10% of idx1 at every larger
    setting too, judged on the median ratio over repetitions (its interval goes with it)."""
    groups = {sb: g for (hp, sb), g in _groups(reps).items() if hp == huge_pages}
    answer, answer_ratio = None, None
    for sb in sorted(groups, reverse=True):
        ratio = survival_ratio(groups[sb])
        if ratio is None or ratio.median > SURVIVAL_TOLERANCE:
            break  # no ratio (idx1 logged as 0) cannot show the index survived
        answer, answer_ratio = sb, ratio
    return answer, answer_ratio


def best_setting(reps: list[Repetition], huge_pages: str, phase: str) -> tuple[int, Summary]:
    """The shared_buffers with the lowest median latency of `phase`."""
    groups = {sb: g for (hp, sb), g in _groups(reps).items() if hp == huge_pages}
    summaries = {sb: summarise([r.median(phase) for r in g]) for sb, g in groups.items()}
    best = best_by_median(summaries, higher_is_better=False)
    return best, summaries[best]


@dataclass(frozen=True)
class Effect:
    ratio: float  # geometric mean of on/off
    ci_low: float | None
    ci_high: float | None
    pairs: int

    @property
    def significant(self) -> bool:
        return self.ci_low is not None and (self.ci_high < 1 or self.ci_low > 1)


def huge_pages_effect(reps: list[Repetition], phase: str) -> Effect | None:
    """Latency with huge pages on / off, paired by shared_buffers and repetition; the interval
    is Student's on the log ratios (ratios multiply, they do not add)."""
    by_key = {(r.huge_pages, r.shared_buffers_bytes, r.repetition): r for r in reps}
    logs = []
    for (hp, sb, rep), on in by_key.items():
        off = by_key.get(("off", sb, rep))
        if hp == "on" and off is not None and on.median(phase) > 0 and off.median(phase) > 0:
            logs.append(math.log(on.median(phase) / off.median(phase)))
    if not logs:
        return None
    mean = statistics.fmean(logs)
    if len(logs) < 2:
        return Effect(math.exp(mean), None, None, len(logs))
    half = t95(len(logs) - 1) * statistics.stdev(logs) / math.sqrt(len(logs))
    return Effect(math.exp(mean), math.exp(mean - half), math.exp(mean + half), len(logs))
