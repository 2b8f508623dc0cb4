"""Seed 000's questions answered from the cache-wash samples, with confidence intervals.

Pure functions. Each repetition of a point gives one median per phase (idx1, seq, idx2), and
one mean, the seed's figure; the repetitions are the sample over which the intervals are
computed. The cache snapshots of a
point ([inspect]) say why idx2 is slow or not: where the index and the table were just before
the scan (after idx1) and just after it (after seq).
"""

import functools
import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.cache_composition import Sample, os_cache_known
from pgcachelab.analysis.summary import (
    Effect,
    Summary,
    best_by_median,
    geometric_interval,
    summarise,
)
from pgcachelab.store.metric_types import MeasurementMetrics, WashData, wash_phase_ms
from pgcachelab.store.run_types import CachedRelation, SnapshotData

PHASES = ("idx1", "seq", "idx2")
SURVIVAL_TOLERANCE = 1.10  # idx2 within 10% of idx1: the index survived the scan
# How a repetition's latencies were taken: on the client (workloads/client_timing.py), or, in
# runs stored before it, from pgbench's per-transaction log, which logs a reply already waiting
# as 0 us (pgbench 14+, processXactStats / pg_time_now_lazy).
CLIENT_TIMING, PGBENCH_LOG_TIMING = "client", "pgbench-log"
# The workload's relations (workloads/cache_wash.py), as snapshots name their main forks.
WASH_RELATIONS = {"index": "random_random_idx", "table": "random"}
SCAN_MOMENTS = ("after idx1", "after seq")  # the snapshots just before and just after the scan


@dataclass(frozen=True)
class Repetition:
    shared_buffers_bytes: int
    huge_pages: str  # "on", "off", "try" or "" when not swept
    repetition: int
    samples_ms: dict[str, list[float]]  # phase -> every latency
    timing: str = CLIENT_TIMING

    def median(self, phase: str) -> float:
        return self._medians_ms[phase]

    def mean(self, phase: str) -> float:
        """The phase's mean latency: the seed's one figure per iteration (pgbench
        --report-latencies averages the 100 lookups; for seq it is the one scan)."""
        return self._means_ms[phase]

    @functools.cached_property
    def _medians_ms(self) -> dict[str, float]:
        # Once per repetition: every table and ratio asks again (issue 24: 190,000 medians of
        # 100 samples for one report of 10,000 repetitions).
        return {phase: statistics.median(samples) for phase, samples in self.samples_ms.items()}

    @functools.cached_property
    def _means_ms(self) -> dict[str, float]:
        return {phase: statistics.fmean(samples) for phase, samples in self.samples_ms.items()}


def phase_samples(metrics: MeasurementMetrics) -> dict[str, list[float]] | None:
    """A cache-wash measurement's lookups, phase -> every latency; None for another workload's
    (or a wash that lacks a phase, which no table could use)."""
    wash = metrics.get("cache_wash")
    if not wash or not all(wash_phase_ms(wash, phase) for phase in PHASES):
        return None
    return {phase: wash_phase_ms(wash, phase) for phase in PHASES}


def point_groups(reps: list[Repetition]) -> dict[tuple[str, int], list[Repetition]]:
    """(huge pages, shared_buffers) -> that point's repetitions, in one pass."""
    groups: dict[tuple[str, int], list[Repetition]] = {}
    for rep in reps:
        groups.setdefault((rep.huge_pages, rep.shared_buffers_bytes), []).append(rep)
    return groups


def survival_ratio(reps: list[Repetition]) -> Summary | None:
    """idx2 / idx1 of the per-repetition medians. A repetition of an old run whose idx1 median
    pgbench logged as 0 (see pgbench_logged_zeros) has no ratio."""
    return summarise(survival_ratios(reps))


def survival_ratios(reps: list[Repetition]) -> list[float]:
    return [r.median("idx2") / r.median("idx1") for r in reps if r.median("idx1") > 0]


def pgbench_logged_zeros(reps: list[Repetition]) -> tuple[int, int]:
    """(lookups logged as 0 us, all lookups) of the repetitions timed by pgbench's log: only
    runs stored before the client timing have them; a phase's median is biased low by them."""
    logged = [
        r.samples_ms[phase]
        for r in reps
        if r.timing == PGBENCH_LOG_TIMING
        for phase in ("idx1", "idx2")
    ]
    # list.count compares in C (0.0 == 0): a generator over 20 million lookups took seconds
    return sum(samples.count(0) for samples in logged), sum(map(len, logged))


@dataclass(frozen=True)
class SurvivalRow:
    """One point's idx2/idx1 ratio over its repetitions, and whether idx2 stays within 10%."""

    huge_pages: str
    shared_buffers_bytes: int
    ratio: Summary | None  # None: no repetition with a ratio
    geometric: Effect | None = None  # the geometric mean ratio with its 95% interval

    @property
    def verdict(self) -> str:
        """By the 95% interval of the geometric mean ratio: "yes" wholly within the tolerance,
        "no" wholly beyond it, else "undecided"; one repetition decides on its value alone."""
        if self.ratio is None or self.geometric is None:
            return "no ratio"
        if self.geometric.ci_low is None or self.geometric.ci_high is None:
            within = self.ratio.median <= SURVIVAL_TOLERANCE
            return ("yes" if within else "no") + " (one repetition)"
        if self.geometric.ci_high <= SURVIVAL_TOLERANCE:
            return "yes"
        if self.geometric.ci_low > SURVIVAL_TOLERANCE:
            return "no"
        return "undecided"


def survival_table(reps: list[Repetition]) -> list[SurvivalRow]:
    """Per huge pages value and shared_buffers (ascending): the idx2/idx1 ratio."""
    return [
        SurvivalRow(
            huge_pages, size, survival_ratio(group), geometric_interval(survival_ratios(group))
        )
        for (huge_pages, size), group in sorted(
            point_groups(reps).items(), key=lambda item: (item[0][0] != "on", *item[0])
        )
    ]


def index_survives_from(
    reps: list[Repetition], huge_pages: str
) -> tuple[int | None, Summary | None]:
    """The smallest shared_buffers from which idx2 stays within 10% of idx1 at every larger
    setting too, judged on the median ratio over repetitions (its interval goes with it)."""
    groups = {sb: g for (hp, sb), g in point_groups(reps).items() if hp == huge_pages}
    answer, answer_ratio = None, None
    for sb in sorted(groups, reverse=True):
        ratio = survival_ratio(groups[sb])
        if ratio is None or ratio.median > SURVIVAL_TOLERANCE:
            break  # no ratio (an old run's idx1 logged as 0) cannot show it survived
        answer, answer_ratio = sb, ratio
    return answer, answer_ratio


def best_setting(reps: list[Repetition], huge_pages: str, phase: str) -> tuple[int, Summary]:
    """The shared_buffers with the lowest median latency of `phase`."""
    groups = {sb: g for (hp, sb), g in point_groups(reps).items() if hp == huge_pages}
    summaries = {
        sb: summary
        for sb, g in groups.items()
        if (summary := summarise([r.median(phase) for r in g])) is not None
    }
    best = best_by_median(summaries, higher_is_better=False)
    summary = summaries[best]
    return best, summary


def huge_pages_effect(reps: list[Repetition], phase: str) -> Effect | None:
    """Latency with huge pages on / off, paired by shared_buffers and repetition; the interval
    is Student's on the log ratios (ratios multiply, they do not add)."""
    by_key = {(r.huge_pages, r.shared_buffers_bytes, r.repetition): r for r in reps}
    logs = []
    for (hp, sb, rep), on in by_key.items():
        off = by_key.get(("off", sb, rep))
        if hp == "on" and off is not None and on.median(phase) > 0 and off.median(phase) > 0:
            logs.append(math.log(on.median(phase) / off.median(phase)))
    return geometric_interval([math.exp(log) for log in logs])


# -- where the index and the table were around the scan ------------------------------------


@dataclass(frozen=True)
class Residency:
    """A relation's bytes in each cache at one moment, medians over the point's repetitions."""

    relation: str  # "index" or "table"
    moment: str  # "after idx1" or "after seq"
    size_bytes: float | None
    shared_buffers_bytes: float
    os_cached_bytes: float | None  # None: the OS cache was not read (see os_cache_note)

    def share(self, cached_bytes: float | None) -> float | None:
        """`cached_bytes` as a fraction of the relation."""
        if cached_bytes is None or not self.size_bytes:
            return None
        return cached_bytes / self.size_bytes

    @property
    def in_neither_bytes(self) -> tuple[float, float] | None:
        """(at least, at most) bytes in neither cache: counts alone do not say how much the
        two caches overlap (see analysis.cache_composition.split)."""
        if self.os_cached_bytes is None or self.size_bytes is None:
            return None
        cached = (self.shared_buffers_bytes, self.os_cached_bytes)
        return max(0.0, self.size_bytes - sum(cached)), max(0.0, self.size_bytes - max(cached))


def _relation(data: SnapshotData, name: str) -> CachedRelation | None:
    """The relation's main fork in a compacted snapshot, whatever the schema it is in."""
    return next((r for r in data["relations"] if r["name"].split(".", 1)[-1] == name), None)


def scan_residency(samples: list[Sample], sizes: WashData | None = None) -> list[Residency]:
    """Index and table, after idx1 then after seq, from one point's snapshots. A relation
    missing from a snapshot had nothing cached worth listing (compact keeps the largest);
    `sizes` (the workload's table_bytes and index_bytes) stands in for its size."""
    stored = {"index": (sizes or {}).get("index_bytes"), "table": (sizes or {}).get("table_bytes")}
    found = []
    for relation, name in WASH_RELATIONS.items():
        for moment in SCAN_MOMENTS:
            at = [s.data for s in samples if s.label == moment and s.data is not None]
            if not at:
                continue
            rows = [(data, _relation(data, name)) for data in at]
            in_buffers = [(r["buffers"] if r else 0) * data["block_size"] for data, r in rows]
            in_os = [
                (r.get("os_cached_bytes") or 0) if r else 0
                for data, r in rows
                if os_cache_known(data)
            ]
            known_sizes = [known for _, r in rows if r and (known := r.get("size_bytes"))]
            size = statistics.median(known_sizes) if known_sizes else stored.get(relation)
            found.append(
                Residency(
                    relation=relation,
                    moment=moment,
                    size_bytes=size,
                    shared_buffers_bytes=statistics.median(in_buffers),
                    os_cached_bytes=statistics.median(in_os) if in_os else None,
                )
            )
    return found
