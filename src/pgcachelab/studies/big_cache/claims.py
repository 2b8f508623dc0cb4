"""Seed 004's three findings judged on a run over data sizes: a step where the data leaves
shared_buffers, a second where it leaves the OS cache, and past it the disk's IOPS decide.

Pure rules over the analysed figures (a StepFinding from analysis/steps.py, each repetition's
share of the device's IOPS) that tests feed directly, and thin adapters from RunData that the
study's claims call. The steps are the report's own (analysis/run_steps.py): the figure quoted
is the step the report's steps section shows at that boundary, and the verdict is stricter than
the section's "significant" (the whole interval at or above ×1.2, not the ratio alone), so a
step reproduced here is always one the report shows.
"""

import math
from dataclasses import dataclass

from pgcachelab.analysis.claims import (
    Figure,
    Verdict,
    at_least,
    cannot,
    ratio_figure,
    within,
)
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.run_steps import run_steps
from pgcachelab.analysis.steps import (
    MATCH_FACTOR,
    MEMORY,
    MIN_STEP_RATIO,
    SHARED_BUFFERS,
    Segment,
    StepFinding,
)
from pgcachelab.analysis.versions import welch_from_moments
from pgcachelab.units import format_bytes

# A step is a drop of at least 20% with its whole 95% interval at or above it: the steps
# analysis's own threshold (analysis/steps.py: points minutes apart on a shared 2-core machine
# drift 5-15% with nothing changed, so a smaller drop is not a step anyone could show here).
STEP_RATIO = MIN_STEP_RATIO
# Past the OS cache, tps ≈ the device's IOPS / its reads per transaction, within a factor of
# 1.5 either way: the seed knows its disk only as "100-200 random IOPS", 150 ± a third, and a
# database just past memory still finds some of its pages in the OS cache.
DISK_BAND = 1.5

BOUNDARY_WORDS = {SHARED_BUFFERS: "shared_buffers", MEMORY: "the OS cache"}
NOT_A_SIZE_SWEEP = (
    "the run did not sweep the data size (scale) alone under one shared_buffers: there is no "
    "tps-by-size line to find steps in"
)


# -- the pure rules ---------------------------------------------------------------------------


def step_figure(finding: StepFinding, boundary: str) -> Figure | None:
    """tps before / after the break at the boundary: the step the steps analysis matched to
    it, else the break between plateaus nearest it, else between the measured sizes nearest
    it (within MATCH_FACTOR); None when the run measured nothing either side of it."""
    found = next((b for b in finding.boundaries if b.name == boundary), None)
    if found is None or not found.spanned:
        return None
    size = found.size_bytes
    if found.step is not None:
        pair = (found.step.before, found.step.after)
    else:
        # a step the other boundary took is not this one's too (sparse sizes can put one
        # break within MATCH_FACTOR of both)
        taken = {
            (b.step.last_size_before, b.step.first_size_after) for b in finding.boundaries if b.step
        }
        plateaus = zip(finding.segments, finding.segments[1:], strict=False)
        near = [(a, b) for a, b in plateaus if _near(a, b, size)]
        if not near:  # the boundary lies inside a plateau: its neighbouring points, alone
            points = [p for s in finding.segments for p in s.points]
            singles = zip(points, points[1:], strict=False)
            near = [(Segment((a,)), Segment((b,))) for a, b in singles]
            near = [(a, b) for a, b in near if _near(a, b, size)]
        near = [(a, b) for a, b in near if (a.largest_bytes, b.smallest_bytes) not in taken]
        if not near:
            return None
        pair = min(near, key=lambda ab: abs(math.log(_midpoint(*ab) / size)))
    before, after = pair
    ratio, low, high = welch_from_moments(after.log_moments, before.log_moments)
    what = (
        f"tps up to {format_bytes(before.largest_bytes)} / from "
        f"{format_bytes(after.smallest_bytes)} of data "
        f"({BOUNDARY_WORDS[boundary]} {format_bytes(size)})"
    )
    repetitions = min(len(before.values), len(after.values))
    return Figure(what, ratio, low, high, repetitions)


def _near(before: Segment, after: Segment, size: float) -> bool:
    return before.largest_bytes / MATCH_FACTOR <= size <= after.smallest_bytes * MATCH_FACTOR


def _midpoint(before: Segment, after: Segment) -> float:
    return math.sqrt(before.largest_bytes * after.smallest_bytes)


def step_verdict(finding: StepFinding | None, boundary: str, unspanned: str) -> Verdict:
    """A step at the boundary: tps before/after it at least STEP_RATIO by its whole 95%
    interval. `unspanned`: why the run could not measure sizes either side of it."""
    if finding is None:
        return cannot(NOT_A_SIZE_SWEEP)
    figure = step_figure(finding, boundary)
    if figure is None:
        return cannot(unspanned)
    rule = f"a step: tps drops at least ×{STEP_RATIO:g} past {BOUNDARY_WORDS[boundary]}"
    return at_least(figure, STEP_RATIO, rule)


def disk_verdict(shares: list[float], iops_text: str) -> Verdict:
    """Past the OS cache the disk decides: each repetition's tps × device reads per
    transaction / the device's IOPS, ≈ 1 within DISK_BAND by its 95% interval."""
    figure = ratio_figure(f"tps × reads per transaction / {iops_text}", shares)
    if figure is None:
        return cannot("no repetition past the OS cache recorded its device reads")
    rule = (
        f"the disk decides: tps within ×{DISK_BAND:g} of the device's IOPS / its reads per "
        "transaction"
    )
    return within(figure, 1 / DISK_BAND, DISK_BAND, rule)


# -- from a run ---------------------------------------------------------------------------------


def left_shared_buffers(data: RunData) -> Verdict:
    finding = run_steps(data)
    shared = {r.shared_buffers_bytes for r in data.points if r.shared_buffers_bytes}
    size = format_bytes(shared.pop()) if len(shared) == 1 else "shared_buffers"
    why = f"no database was measured both within and beyond shared_buffers ({size})"
    return step_verdict(finding, SHARED_BUFFERS, why)


def left_memory(data: RunData) -> Verdict:
    return step_verdict(run_steps(data), MEMORY, _memory_unspanned(data))


def _memory_unspanned(data: RunData) -> str:
    """Why no measured size lies past the OS cache."""
    memory = data.memory_available_bytes
    sizes = [r.database_size_bytes for r in data.points if r.database_size_bytes]
    if not memory or not sizes:
        return "the run recorded neither the memory available to the server nor data sizes"
    largest = format_bytes(max(sizes))
    if data.memory_limit_bytes is None:
        return (
            "without root there is no memory limit (the emulated machine's cgroup needs root), "
            f"so the OS cache is the host's RAM, {format_bytes(memory)}, and the largest "
            f"database measured, {largest}, fits in it: the data cannot outgrow the OS cache "
            "here (the seed's VM had 590 MB)"
        )
    return (
        f"the largest database measured, {largest}, stays within the server's memory limit "
        f"of {format_bytes(memory)}: no size past the OS cache was measured"
    )


@dataclass(frozen=True)
class DeviceUse:
    """One repetition past the OS cache: its tps, the emulated device's reads per transaction,
    and the reads per second the device can serve those clients."""

    tps: float
    reads_per_transaction: float
    device_iops: float

    @property
    def share(self) -> float:
        return self.tps * self.reads_per_transaction / self.device_iops


def device_iops(profile: dict, clients: int) -> float:
    """What the emulated device serves: its IOPS cap, or fewer when the clients, each waiting
    for its own read, cannot keep it busy (clients / the time of one read)."""
    per_read_s = profile["read_latency_s"] + (
        8192 / profile["bandwidth_bytes_s"] if profile.get("bandwidth_bytes_s") else 0
    )
    by_clients = clients / per_read_s if per_read_s > 0 else math.inf
    return min(by_clients, profile["iops"]) if profile.get("iops") else by_clients


def disk_decides(data: RunData) -> Verdict:
    finding = run_steps(data)
    if finding is None:
        return cannot(NOT_A_SIZE_SWEEP)
    past = _past_memory_labels(finding, data.memory_available_bytes)
    if not past:
        return cannot(f"no database was measured past the OS cache: {_memory_unspanned(data)}")
    uses, profiles = [], set()
    for result in data.points:
        if result.point.label not in past:
            continue
        for m in result.ok:
            disk = m.metrics.get("disk") or {}
            profile = disk.get("profile")
            reads = (disk.get("device") or {}).get("reads")
            transactions = ((m.metrics.get("probes") or {}).get("database") or {}).get(
                "xact_commit"
            )
            clients = (m.metrics.get("pgbench") or {}).get("clients")
            if not profile or not reads or not transactions or not clients or not m.tps:
                continue
            profiles.add(profile["name"])
            uses.append(DeviceUse(m.tps, reads / transactions, device_iops(profile, clients)))
    if not profiles:
        return cannot(
            "the disk was the host's, not emulated (an emulated disk needs root): the lab "
            "knows neither its IOPS nor its reads, and a host SSD is not the seed's 100-200 IOPS"
        )
    iops = sorted({round(u.device_iops) for u in uses})
    iops_text = f"{', '.join(sorted(profiles))}'s {'/'.join(map(str, iops))} IOPS"
    return disk_verdict([u.share for u in uses], iops_text)


def _past_memory_labels(finding: StepFinding, memory_bytes: float | None) -> set[str]:
    """The points past the step out of the OS cache; without one, those over twice the memory
    (MATCH_FACTOR: wholly past it, whatever the server's own memory takes)."""
    memory_step = next((s for s in finding.steps if s.boundary == MEMORY), None)
    if memory_step is not None:
        start = memory_step.first_size_after
        return {p.label for s in finding.segments for p in s.points if p.size_bytes >= start}
    if not memory_bytes:
        return set()
    return {
        p.label
        for s in finding.segments
        for p in s.points
        if p.size_bytes > memory_bytes * MATCH_FACTOR
    }
