"""Run B against run A, point by point (`pgcachelab compare`). Pure functions.

Points are matched by their parameters: the values of every key either run sweeps, looked up
in each point's workload, server settings or swept values. Fixed parameters that differ between
matched points are context differences, shown before the numbers.

Per matched point:
- the ratio B/A of the geometric means of tps, with a 95% Welch interval on log tps
  (analysis/versions.py): throughput is skewed and changes multiply, so logs suit it, and the
  two runs' spreads need not be equal. The change is significant when the interval excludes 1;
- the ratio of the medians, as a plain reading of the same data;
- the Mann-Whitney U test (two-sided; exact without ties, normal approximation with ties or
  large samples): a rank test that assumes no distribution at all, as a second opinion. With
  few repetitions it cannot reach 0.05 at all (3 against 3: p >= 0.1); its floor is reported.
"""

import math
import statistics
from collections.abc import Mapping
from dataclasses import dataclass, field
from functools import cache

from pgcachelab.analysis.hosts import HOST_ENVIRONMENT_KEYS, classes_text, host_class
from pgcachelab.analysis.versions import differing_settings, welch_log_ratio
from pgcachelab.clusters.guc import canonical_shown_value, canonical_value
from pgcachelab.errors import UserError
from pgcachelab.store.records import Swept
from pgcachelab.store.run_types import RunEnvironment, RunTarget

# The values of the matched keys of a point: (key, its value made hashable) pairs
ParameterKey = tuple[tuple[str, object], ...]

ALPHA = 0.05


# -- the Mann-Whitney U test -------------------------------------------------------------------


@dataclass(frozen=True)
class RankTest:
    u: float  # pairs (a, b) with b > a, ties counted one half
    p_value: float  # two-sided
    method: str  # "exact" or "normal approximation"
    smallest_p: float  # the smallest two-sided p these sample sizes allow (exact test)


@cache
def _u_counts(n_a: int, n_b: int) -> tuple[int, ...]:
    """How many of the C(n_a + n_b, n_a) orderings without ties give each U = 0 .. n_a * n_b.

    The largest value either ends the ordering (from sample b, adding n_a to U) or not:
    counts(n_a, n_b)[u] = counts(n_a, n_b - 1)[u - n_a] + counts(n_a - 1, n_b)[u].
    """
    if n_a == 0 or n_b == 0:
        return (1,)
    from_b = _u_counts(n_a, n_b - 1)
    from_a = _u_counts(n_a - 1, n_b)
    counts = [0] * (n_a * n_b + 1)
    for u, count in enumerate(from_b):
        counts[u + n_a] += count
    for u, count in enumerate(from_a):
        counts[u] += count
    return tuple(counts)


def exact_u_p_value(u: float, n_a: int, n_b: int) -> float:
    """Two-sided exact p of U (no ties): twice the smaller tail, at most 1."""
    counts = _u_counts(n_a, n_b)
    total = sum(counts)
    u_int = round(u)
    lower = sum(counts[: u_int + 1]) / total
    upper = sum(counts[u_int:]) / total
    return min(1.0, 2 * min(lower, upper))


def mann_whitney_u(a: list[float], b: list[float], exact_limit: int = 30) -> RankTest:
    """Mann-Whitney U of b against a; exact when there are no ties and both n <= exact_limit."""
    n_a, n_b = len(a), len(b)
    if n_a == 0 or n_b == 0:
        raise ValueError("both samples need values")
    u = u_statistic(a, b)
    smallest_p = min(1.0, 2 / math.comb(n_a + n_b, n_a))
    values = [*a, *b]
    ties = len(set(values)) < len(values)
    if not ties and n_a <= exact_limit and n_b <= exact_limit:
        return RankTest(u, exact_u_p_value(u, n_a, n_b), "exact", smallest_p)
    return RankTest(u, _normal_u_p_value(u, a, b), "normal approximation", smallest_p)


def u_statistic(a: list[float], b: list[float]) -> float:
    """U of b against a: the pairs (x from a, y from b) with y > x, ties counting half.

    From the rank sum of b in the pooled sample (tied values share their mean rank), in
    O(n log n): counting every pair was n_a x n_b, minutes for points of thousands of
    repetitions (issue 24). Ranks and U are multiples of 1/2, exact in floats.
    """
    pooled = sorted([(value, 0) for value in a] + [(value, 1) for value in b])
    rank_sum_b = 0.0
    start = 0
    while start < len(pooled):
        end = start
        while end + 1 < len(pooled) and pooled[end + 1][0] == pooled[start][0]:
            end += 1
        mean_rank = (start + end) / 2 + 1  # ranks start + 1 .. end + 1
        rank_sum_b += mean_rank * sum(side for _, side in pooled[start : end + 1])
        start = end + 1
    return rank_sum_b - len(b) * (len(b) + 1) / 2


def _normal_u_p_value(u: float, a: list[float], b: list[float]) -> float:
    """Two-sided p from the normal approximation, with the tie and continuity corrections."""
    n_a, n_b = len(a), len(b)
    n = n_a + n_b
    tie_term = sum(t**3 - t for t in _tie_sizes([*a, *b]))
    variance = n_a * n_b / 12 * ((n + 1) - tie_term / (n * (n - 1)))
    if variance <= 0:  # every value equal: no evidence of any difference
        return 1.0
    z = max(0.0, abs(u - n_a * n_b / 2) - 0.5) / math.sqrt(variance)
    return min(1.0, math.erfc(z / math.sqrt(2)))


def _tie_sizes(values: list[float]) -> list[int]:
    counts: dict[float, int] = {}
    for value in values:
        counts[value] = counts.get(value, 0) + 1
    return [count for count in counts.values() if count > 1]


# -- matching points ------------------------------------------------------------------------


@dataclass(frozen=True)
class PointSide:
    """One run's point as compare sees it."""

    label: str
    swept: dict[str, Swept]
    workload: dict[str, object]  # the point's parameters as stored (their record())
    settings: dict[str, str]  # the spec's server settings for the point
    tps: list[float]  # of the repetitions that succeeded
    # name -> pg_settings value, as text
    server_settings: dict[str, str] = field(default_factory=dict)
    # set by the server itself (default, override)
    derived_settings: frozenset[str] = frozenset()
    p99_ms: list[float] = field(default_factory=list)  # each repetition's, from pgbench's log


@dataclass(frozen=True)
class Matching:
    keys: list[str]  # the parameters points are matched on
    pairs: list[tuple[ParameterKey, PointSide, PointSide]]  # (key values, A's point, B's point)
    only_a: list[tuple[ParameterKey, PointSide]]
    only_b: list[tuple[ParameterKey, PointSide]]


def parameter_value(point: PointSide, key: str) -> object:
    """A parameter's value as run: the workload's (resolved), else the settings', else swept."""
    sources: tuple[Mapping[str, object], ...] = (point.workload, point.settings, point.swept)
    for source in sources:
        if key in source:
            return source[key]
    return None


def match_points(points_a: list[PointSide], points_b: list[PointSide]) -> Matching:
    """Pairs of points with equal values of every key either run sweeps, in A's order.

    Values are equal in canonical units ("32MB" matches "32768kB"); labels keep A's spelling.
    """
    keys: list[str] = []
    for point in [*points_a, *points_b]:
        keys += [key for key in point.swept if key not in keys]

    def key_of(point: PointSide) -> ParameterKey:
        return tuple((key, _hashable(parameter_value(point, key))) for key in keys)

    def match_of(point: PointSide) -> ParameterKey:
        return tuple((name, _canonical(value)) for name, value in key_of(point))

    waiting_b: dict[ParameterKey, list[PointSide]] = {}
    for point in points_b:
        waiting_b.setdefault(match_of(point), []).append(point)
    pairs: list[tuple[ParameterKey, PointSide, PointSide]] = []
    only_a: list[tuple[ParameterKey, PointSide]] = []
    for point in points_a:
        match = match_of(point)
        if waiting_b.get(match):
            pairs.append((key_of(point), point, waiting_b[match].pop(0)))
        else:
            only_a.append((key_of(point), point))
    only_b = [(key_of(p), p) for p in points_b if any(p is q for q in waiting_b[match_of(p)])]
    return Matching(keys, pairs, only_a, only_b)


def _canonical(value: object) -> object:
    """A parameter's value as compared: spec texts with a memory or time unit in base units."""
    return canonical_value(value) if isinstance(value, str) else value


def _hashable(value: object) -> object:
    if isinstance(value, list):
        return tuple(_hashable(v) for v in value)
    if isinstance(value, dict):
        return tuple(sorted((k, _hashable(v)) for k, v in value.items()))
    return value


def key_label(key: ParameterKey) -> str:
    return ", ".join(f"{name}={value}" for name, value in key) or "single point"


# -- per point ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class PointComparison:
    key: ParameterKey
    n_a: int
    n_b: int
    median_a: float | None
    median_b: float | None
    ratio: float | None  # geometric mean of B / geometric mean of A
    ci_low: float | None  # 95% Welch interval on log tps; None with fewer than 2 each
    ci_high: float | None
    median_ratio: float | None
    rank_test: RankTest | None
    lower_is_better: bool = False  # a latency: B/A below 1 is B faster

    @property
    def label(self) -> str:
        return key_label(self.key)

    @property
    def significant(self) -> bool:
        # a zero-width interval (equal repetitions) says nothing of the spread (issue 46)
        if self.ci_low is None or self.ci_high is None or self.ci_low >= self.ci_high:
            return False
        return self.ci_low > 1 or self.ci_high < 1

    @property
    def verdict(self) -> str:
        if self.ratio is None:
            return "no data"
        if self.ci_low is None:
            return "too few repetitions"
        if not self.significant:
            return "no significant difference"
        return "B faster" if (self.ratio > 1) != self.lower_is_better else "B SLOWER"


def compare_point(
    key: ParameterKey, tps_a: list[float], tps_b: list[float], lower_is_better: bool = False
) -> PointComparison:
    """B against A on one figure per repetition: tps, or a latency (`lower_is_better`)."""
    a = [v for v in tps_a if v is not None and v > 0]
    b = [v for v in tps_b if v is not None and v > 0]
    if not a or not b:
        median_a = statistics.median(a) if a else None
        median_b = statistics.median(b) if b else None
        return PointComparison(
            key, len(a), len(b), median_a, median_b, None, None, None, None, None, lower_is_better
        )
    median_a, median_b = statistics.median(a), statistics.median(b)
    ratio, low, high = welch_log_ratio(a, b)
    return PointComparison(
        key,
        len(a),
        len(b),
        median_a,
        median_b,
        ratio,
        low,
        high,
        median_b / median_a,
        mann_whitney_u(a, b),
        lower_is_better,
    )


# -- context -------------------------------------------------------------------------------------


@dataclass(frozen=True)
class RunSide:
    run_id: str
    name: str
    status: str
    environment: RunEnvironment
    target: RunTarget
    points: list[PointSide]
    load_average: float | None = None  # median 1-minute load average after its measurements
    workload: str | None = None  # pgbench, tpcc, cache-wash; None when the spec is unreadable
    # The classes of the hosts whose agents measured a queued run (issue 21); () for a run
    # measured on the host its environment describes.
    host_classes: tuple[str, ...] = ()

    @property
    def measured_on(self) -> tuple[str, ...]:
        return self.host_classes or (host_class(self.environment),)


@dataclass(frozen=True)
class ContextDifference:
    what: str
    a: str
    b: str
    serious: bool  # True: it can explain a difference in tps by itself


# (environment key, how to say it, serious)
_ENVIRONMENT = [
    ("server_version", "server version", True),
    ("server_source", "server binaries", True),
    ("pgbench_version", "pgbench version", True),
    ("cpu_model", "CPU", True),
    ("cores", "cores", True),
    ("memory_total_bytes", "machine memory (bytes)", True),
    ("hostname", "host", True),
    ("kernel", "kernel", False),
    ("lab_version", "pgcachelab version", False),
    ("git_commit", "pgcachelab commit", False),
]


def context_differences(a: RunSide, b: RunSide, matching: Matching) -> list[ContextDifference]:
    """What differs between the runs besides the matched parameters, serious ones first."""
    found = []
    if a.name != b.name:
        # Not serious by itself: the same experiment renamed, or a spec copied to change one
        # setting, compare fine; what differs in their parameters is listed on its own line.
        found.append(ContextDifference("experiment", a.name, b.name, serious=False))
    fleet = bool(a.host_classes or b.host_classes)
    mixed = max(len(a.measured_on), len(b.measured_on)) > 1  # each point blends hosts
    if fleet and (a.measured_on != b.measured_on or mixed):
        classes = classes_text(a.measured_on), classes_text(b.measured_on)
        found.append(ContextDifference("host classes", *classes, serious=True))
    for key, what, serious in _ENVIRONMENT:
        if fleet and key in HOST_ENVIRONMENT_KEYS:
            continue  # a queued run's environment is the queueing host's: the classes tell
        value_a, value_b = a.environment.get(key), b.environment.get(key)
        if value_a != value_b:
            found.append(ContextDifference(what, _text(value_a), _text(value_b), serious))
    limit_a, limit_b = a.target.get("memory_limit_bytes"), b.target.get("memory_limit_bytes")
    if limit_a != limit_b:
        found.append(
            ContextDifference("memory limit (bytes)", _text(limit_a), _text(limit_b), True)
        )
    if a.target.get("kind") != b.target.get("kind"):
        found.append(
            ContextDifference(
                "server kind", _text(a.target.get("kind")), _text(b.target.get("kind")), True
            )
        )
    load = load_difference(a.load_average, b.load_average, a.environment.get("cores"))
    if load is not None:
        found.append(load)
    for side, run in (("A", a), ("B", b)):
        if run.status != "done":
            found.append(ContextDifference(f"run {side} status", *_status(side, run), True))
    parameters = _parameter_differences(matching)
    spec_settings = {d.what.removeprefix("setting ") for d in parameters}
    found += parameters
    found += _setting_differences(matching, skip=spec_settings)
    return sorted(found, key=lambda d: not d.serious)


def load_difference(
    load_a: float | None, load_b: float | None, cores: int | None
) -> ContextDifference | None:
    """The machine's load, when it differs by a core or more or exceeded the cores.

    A busy shared machine moves tps by tens of percent between runs made one after the other;
    the intervals of each run cannot see that, so it has to be said next to them.
    """
    if load_a is None or load_b is None:
        return None
    busy = cores is not None and max(load_a, load_b) > cores
    if abs(load_a - load_b) < 1.0 and not busy:
        return None
    what = "machine load (median 1-minute load average after the measurements"
    what += f"; {cores} cores)" if cores else ")"
    return ContextDifference(what, f"{load_a:.1f}", f"{load_b:.1f}", serious=True)


def _status(side: str, run: RunSide) -> tuple[str, str]:
    return (run.status, "done") if side == "A" else ("done", run.status)


def _parameter_differences(matching: Matching) -> list[ContextDifference]:
    """Fixed workload parameters and spec settings that differ between matched points."""
    values: dict[str, set[tuple[str, str]]] = {}
    for _, point_a, point_b in matching.pairs:
        for kind, source_a, source_b in (
            ("workload", point_a.workload, point_b.workload),
            ("setting", point_a.settings, point_b.settings),
        ):
            for name in sorted(set(source_a) | set(source_b)):
                if name in matching.keys or name == "version":
                    continue
                value_a, value_b = source_a.get(name), source_b.get(name)
                if _canonical(value_a) != _canonical(value_b):
                    values.setdefault(f"{kind} {name}", set()).add((_text(value_a), _text(value_b)))
    return [
        ContextDifference(what, *_joined(pairs), serious=True)
        for what, pairs in sorted(values.items())
    ]


def _setting_differences(matching: Matching, skip: set[str]) -> list[ContextDifference]:
    """Server settings (pg_settings as recorded) that differ between matched points, but for
    those the matching or the spec settings already account for.

    A setting the server chose itself in both runs (wal_buffers, shared_memory_size... follow
    shared_buffers) is listed as a consequence, not as a cause.
    """
    values: dict[str, set[tuple[str, str]]] = {}
    chosen_by_server: dict[str, bool] = {}
    for _, point_a, point_b in matching.pairs:
        if not point_a.server_settings or not point_b.server_settings:
            continue
        both = {"A": point_a.server_settings, "B": point_b.server_settings}
        derived_in_both = point_a.derived_settings & point_b.derived_settings
        for name, by_run in differing_settings(both, canonical_shown_value).items():
            if name in matching.keys or name in skip:
                continue
            values.setdefault(name, set()).add((by_run["A"], by_run["B"]))
            chosen_by_server[name] = chosen_by_server.get(name, True) and name in derived_in_both
    found = []
    for name, pairs in sorted(values.items()):
        if chosen_by_server[name]:
            what = f"server setting {name} (chosen by the server from other settings)"
            found.append(ContextDifference(what, *_joined(pairs), serious=False))
        else:
            found.append(ContextDifference(f"server setting {name}", *_joined(pairs), True))
    return found


def _joined(pairs: set[tuple[str, str]]) -> tuple[str, str]:
    ordered = sorted(pairs)
    return " | ".join(dict.fromkeys(a for a, _ in ordered)), " | ".join(
        dict.fromkeys(b for _, b in ordered)
    )


def _text(value: object) -> str:
    return "–" if value is None else str(value)


# -- the whole comparison ------------------------------------------------------------------


@dataclass(frozen=True)
class Comparison:
    a: RunSide
    b: RunSide
    keys: list[str]
    context: list[ContextDifference]
    points: list[PointComparison]
    only_a: list[str]  # labels of points only run A has
    only_b: list[str]
    # p99 latency per matched point (B/A: below 1 is better), for points with pgbench logs
    p99: list[PointComparison] = field(default_factory=list)

    @property
    def significant(self) -> list[PointComparison]:
        return [p for p in self.points if p.significant]


def check_comparable(a: RunSide, b: RunSide) -> None:
    """Runs of different workloads are refused: their figures count different things (pgbench
    script transactions, TPC-C transactions of five kinds, cache-wash's lookups, whose figure is
    a latency), so a ratio between them means nothing, and matching their points on shared
    keys (clients, shared_buffers) would pair them as if it did."""
    if a.workload and b.workload and a.workload != b.workload:
        raise UserError(
            f"compare: run A ({a.run_id}) is a {a.workload} run and run B ({b.run_id}) a "
            f"{b.workload} run: their figures measure different work, no point can match",
            "compare two runs of the same workload",
        )


def compare_runs(a: RunSide, b: RunSide) -> Comparison:
    check_comparable(a, b)
    matching = match_points(a.points, b.points)
    points = [compare_point(key, pa.tps, pb.tps) for key, pa, pb in matching.pairs]
    return Comparison(
        a=a,
        b=b,
        keys=matching.keys,
        context=context_differences(a, b, matching),
        points=points,
        only_a=[key_label(key) for key, _ in matching.only_a],
        only_b=[key_label(key) for key, _ in matching.only_b],
        p99=[
            compare_point(key, pa.p99_ms, pb.p99_ms, lower_is_better=True)
            for key, pa, pb in matching.pairs
            if pa.p99_ms and pb.p99_ms
        ],
    )
