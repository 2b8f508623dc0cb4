"""Seed 004's steps, found from the data: where tps drops as the database grows. Pure.

The seed's picture is plateaus separated by drops: tps is flat while the data fits a cache and
falls when it outgrows it. So the model is piecewise constant in log tps over the points in
size order, and the steps are its breaks. It is fitted by bottom-up merging: every point starts
as its own segment, and the two neighbouring segments least distinguishable from one another
are merged, again and again, until every remaining break is a step: a drop (tps lower past it)
of at least MIN_STEP_RATIO whose 95% Welch interval on log tps, over the repetitions of the two
segments, excludes 1. The answer is the same as the best split of a least-squares segmentation
whenever the steps are clear, and when they are not the test that decides is the one the report
prints, so a step shown is a step tested.

Why not a library (ruptures' Pelt or Dynp): a sweep has 5 to 20 points, where an exhaustive or
greedy segmentation is a few lines, while the part that matters here, whether a break is a real
step with an interval from the repetitions, is not what such a library provides: its penalty
would still have to be tuned against this machine's noise. Why the intervals come from the
repetitions of whole segments: a plateau's points share one level, so pooling them gives the
step the most evidence, and the spread between the points of a plateau (drift between points on
a shared machine) widens its interval instead of being ignored.

Each step is matched with the boundary it lies at, within a factor of 2 (MATCH_FACTOR):
shared_buffers, the memory available to the server (the emulated machine's limit, or the
host's RAM); steps past the memory step are the disk's (less of the data cached at each size).
"""

import functools
import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.versions import LogMoments, log_moments, welch_from_moments

# A step must be a drop of at least 20%. Points measured minutes apart on a shared 2-core machine
# differ by 5-15% with nothing changed (the flat quick run of issue 17: 66.8k..80.0k tps over
# data sizes that all fit in memory), more than their back-to-back repetitions spread: an
# interval from the repetitions alone would call such drift a step.
MIN_STEP_RATIO = 1.2
# A step matches a boundary that lies within this factor of the sizes either side of it.
MATCH_FACTOR = 2.0

SHARED_BUFFERS, MEMORY, DISK = "shared_buffers", "memory", "disk"


@dataclass(frozen=True)
class SizePoint:
    label: str
    size_bytes: float  # the database's size, measured
    tps: tuple[float, ...]  # every repetition


@dataclass(frozen=True)
class Segment:
    """Neighbouring points, in size order, that share one level of tps (a plateau)."""

    points: tuple[SizePoint, ...]

    @property
    def smallest_bytes(self) -> float:
        return self.points[0].size_bytes

    @property
    def largest_bytes(self) -> float:
        return self.points[-1].size_bytes

    @property
    def values(self) -> list[float]:
        return [v for p in self.points for v in p.tps]

    @property
    def geometric_mean_tps(self) -> float:
        return math.exp(statistics.fmean(math.log(v) for v in self.values))

    @functools.cached_property
    def log_moments(self) -> LogMoments:
        # once per segment: merging compares each with its neighbours again and again, and
        # the exact variance of thousands of repetitions is not free (issue 24)
        return log_moments(self.values)


@dataclass(frozen=True)
class Step:
    before: Segment  # the plateau on the smaller sizes
    after: Segment
    ratio: float  # geometric mean tps before / after: 2.0 means half the tps past the step
    ci_low: float | None  # the ratio's 95% Welch interval; None with one repetition a side
    ci_high: float | None
    boundary: str | None = None  # SHARED_BUFFERS, MEMORY, DISK, or None when none matches
    boundary_bytes: float | None = None

    @property
    def last_size_before(self) -> float:
        return self.before.largest_bytes

    @property
    def first_size_after(self) -> float:
        return self.after.smallest_bytes

    @property
    def location_bytes(self) -> float:
        """Where the step is: the geometric midpoint of the sizes either side of it."""
        return math.sqrt(self.last_size_before * self.first_size_after)

    @property
    def significant(self) -> bool:
        return self.ci_low is not None and self.ci_low > 1 and self.ratio >= MIN_STEP_RATIO


@dataclass(frozen=True)
class Boundary:
    """A size at which seed 004 expects a step, and what the run showed there."""

    name: str  # SHARED_BUFFERS or MEMORY
    size_bytes: float
    # whether the run measured databases on both sides of it, within MATCH_FACTOR: a database's
    # size includes ~7MB of catalog that pgbench -S never reads, so scale 1 (22MB) still sits
    # within a 20MB shared_buffers
    spanned: bool
    step: Step | None  # the step that matched it


@dataclass(frozen=True)
class StepFinding:
    segments: list[Segment]
    steps: list[Step]  # significant drops only, in size order
    boundaries: list[Boundary]
    smallest_bytes: float
    largest_bytes: float


def step_ratio(before: Segment, after: Segment) -> tuple[float, float | None, float | None]:
    """tps before / after (2.0: half the tps past the break) with its 95% Welch interval on log
    tps; no interval with one repetition a side, nor when every repetition on both sides was
    equal: a zero-width interval says nothing of the spread (issue 46) and is never a step."""
    # welch_from_moments(x, y) is y / x: here before / after
    ratio, low, high = welch_from_moments(after.log_moments, before.log_moments)
    if low is not None and low == high:
        return ratio, None, None
    return ratio, low, high


def _break_score(before: Segment, after: Segment) -> float:
    """How clearly the break between two neighbours is a step: >= 1 when it is one (both its
    interval excludes 1 and it is at least MIN_STEP_RATIO); <= 0 for a rise."""
    ratio, low, _ = step_ratio(before, after)
    drop = math.log(ratio)
    if low is None:
        return min(drop, 0.0)  # one repetition a side, or equal ones: never a step
    half_width = drop - math.log(low)
    by_interval = math.inf if half_width <= 0 else drop / half_width  # rounding only
    return min(by_interval, drop / math.log(MIN_STEP_RATIO))


def segment(points: list[SizePoint]) -> list[Segment]:
    """Plateaus: neighbouring points merged, least distinguishable first, while any break
    between them is not a step."""
    segments = [Segment((p,)) for p in sorted(points, key=lambda p: p.size_bytes) if p.tps]
    while len(segments) > 1:
        scores = [_break_score(a, b) for a, b in zip(segments, segments[1:], strict=False)]
        weakest = min(range(len(scores)), key=scores.__getitem__)
        if scores[weakest] >= 1:
            break
        merged = Segment(segments[weakest].points + segments[weakest + 1].points)
        segments[weakest : weakest + 2] = [merged]
    return segments


def _matches(step: Step, size_bytes: float) -> bool:
    return (
        step.last_size_before / MATCH_FACTOR <= size_bytes <= step.first_size_after * MATCH_FACTOR
    )


def _distance(step: Step, size_bytes: float) -> float:
    return abs(math.log(step.location_bytes / size_bytes))


def match_boundaries(
    steps: list[Step], boundaries: dict[str, float]
) -> tuple[list[Step], dict[int, str]]:
    """Each boundary takes the largest step within MATCH_FACTOR of it (a step, its nearest
    boundary); unmatched steps past the memory step, or past memory, are the disk's. Returns
    the steps with their boundary, and which step (by index) each boundary took."""
    claims: dict[str, list[int]] = {}
    for index, step in enumerate(steps):
        near = [name for name, size in boundaries.items() if _matches(step, size)]
        if near:
            nearest = min(near, key=lambda name: _distance(step, boundaries[name]))
            claims.setdefault(nearest, []).append(index)
    owner = {max(indexes, key=lambda i: steps[i].ratio): name for name, indexes in claims.items()}
    memory_step = next((i for i, name in owner.items() if name == MEMORY), None)
    memory_bytes = boundaries.get(MEMORY)
    matched = []
    for index, step in enumerate(steps):
        name = owner.get(index)
        past_memory = (memory_step is not None and index > memory_step) or (
            memory_bytes is not None and step.last_size_before >= memory_bytes
        )
        if name is None and past_memory:
            name = DISK
        known = boundaries.get(name) if name is not None else None
        size = memory_bytes if name == DISK else known
        matched.append(
            Step(step.before, step.after, step.ratio, step.ci_low, step.ci_high, name, size)
        )
    return matched, owner


def find_steps(
    points: list[SizePoint], shared_buffers_bytes: float | None, memory_bytes: float | None
) -> StepFinding | None:
    """The steps in tps over database size and the boundaries they match; None with fewer
    than two measured points."""
    measured = sorted((p for p in points if p.tps), key=lambda p: p.size_bytes)
    if len(measured) < 2:
        return None
    segments = segment(measured)
    breaks = []
    for before, after in zip(segments, segments[1:], strict=False):
        breaks.append(Step(before, after, *step_ratio(before, after)))
    significant = [step for step in breaks if step.significant]
    given = {SHARED_BUFFERS: shared_buffers_bytes, MEMORY: memory_bytes}
    expected = {name: size for name, size in given.items() if size}
    steps, owner = match_boundaries(significant, expected)
    smallest, largest = measured[0].size_bytes, measured[-1].size_bytes
    by_name = {name: steps[index] for index, name in owner.items()}
    boundaries = [
        Boundary(
            name,
            size,
            smallest < size * MATCH_FACTOR and largest > size / MATCH_FACTOR,
            by_name.get(name),
        )
        for name, size in expected.items()
    ]
    return StepFinding(segments, steps, boundaries, smallest, largest)
