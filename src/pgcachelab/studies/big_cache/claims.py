"""Seed 004's findings judged on a run over data sizes: a step where the data leaves
shared_buffers, a second where it leaves the OS cache, past it the disk's IOPS decide, and a big
report query washes the site's data out of both caches.

Pure rules over the analysed figures (a StepFinding from analysis/steps.py, each repetition's
share of the device's IOPS) that tests feed directly, and thin adapters from RunData that the
study's claims call. The steps are the report's own (analysis/run_steps.py): the figure quoted
is the step the report's steps section shows at that boundary.

The seed's words (translated from the Russian): "a dip is visible around scale factor 5, and
the next dip around scale factor 45. In fact, two clear steps: falling out of shared buffers and
out of the disk cache" ("Виден провал ... две явные ступеньки"). "Visible" and "clear", no size:
the qualifier table's "noticeably" (×1.1). A step reproduced here must also clear this machine's
drift between points (MIN_STEP_RATIO, ×1.2: analysis/steps.py), as the article's steps cleared
its chart's noise ("the data came out not very pretty, but on the whole understandable"): a
smaller one is "not shown beyond the noise", never reproduced.
"""

import dataclasses
import math
from dataclasses import dataclass

from pgcachelab.analysis.cache_composition import Sample
from pgcachelab.analysis.cache_split import SCAN_MOMENTS, scan_residency
from pgcachelab.analysis.claims import (
    REPRODUCED,
    Figure,
    Verdict,
    cannot,
    combine,
    follows_from_setup,
    not_measured,
    ratio_figure,
    weakened,
    with_reason,
)
from pgcachelab.analysis.qualifiers import judge
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.run_steps import run_steps
from pgcachelab.analysis.steps import (
    MATCH_FACTOR,
    MEMORY,
    MIN_STEP_RATIO,
    SHARED_BUFFERS,
    Segment,
    StepFinding,
    step_ratio,
)
from pgcachelab.store.metric_types import DiskProfileRecord
from pgcachelab.studies.cache_wash.figures import survival_figure
from pgcachelab.studies.cache_wash.repetitions import repetitions
from pgcachelab.units import format_bytes, shared_buffers_bytes

# "Clear steps" (явные ступеньки), "a dip is visible" (виден провал): analysis/qualifiers.py's
# "noticeably, visibly, clearly".
STEP_QUALIFIER = "noticeably"
# What a step must clear on this machine besides the word: points minutes apart drift 5-15%
# with nothing changed (analysis/steps.py), more than their repetitions' interval shows.
STEP_DRIFT = MIN_STEP_RATIO
# "Beyond that the disk decides": tps × reads per transaction ≈ the device's IOPS, "near" 1 in
# the table (×0.71-×1.41): the seed's "100-200 random IOPS" is 150 within ×1.33 either way.
DISK_QUALIFIER = "near"
# The report query washes the site's data out: "the site literally goes down" (сайт буквально
# ложится) is more than noticeable: the table's "greatly" (×1.5).
WASH_QUALIFIER = "greatly"

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
    ratio, low, high = step_ratio(before, after)
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


def step_rule(boundary: str) -> str:
    return f"a clear step: tps drops past {BOUNDARY_WORDS[boundary]}"


def judge_step(figure: Figure, boundary: str) -> Verdict:
    """The article's "clear step" ("noticeably", ×1.1, by its whole 95% interval), reproduced
    only when the whole interval also clears this machine's drift between points (×1.2)."""
    verdict = judge(figure, STEP_QUALIFIER, step_rule(boundary))
    if verdict.outcome != REPRODUCED:
        return verdict
    assert figure.ci_low is not None  # a reproduced figure has its interval
    if figure.ci_low < STEP_DRIFT:
        return weakened(
            verdict,
            f"its interval reaches below ×{STEP_DRIFT:g}, what points minutes apart drift on "
            "this machine with nothing changed (analysis/steps.py): a step this run cannot "
            "tell from drift",
        )
    return with_reason(
        verdict, f"its interval also clears ×{STEP_DRIFT:g}, this machine's drift between points"
    )


def step_verdict(finding: StepFinding | None, boundary: str, unspanned: Verdict) -> Verdict:
    """A clear step at the boundary (judge_step). `unspanned`: the verdict, with its reason,
    when the run measured no sizes either side of it."""
    if finding is None:
        return not_measured(NOT_A_SIZE_SWEEP)
    figure = step_figure(finding, boundary)
    if figure is None:
        return unspanned
    return judge_step(figure, boundary)


DISK_RULE = "the disk decides: tps × device reads per transaction ≈ the device's IOPS"


def disk_verdict(shares: list[float], iops_text: str) -> Verdict:
    """Past the OS cache the disk decides: each repetition's tps × device reads per
    transaction / the device's IOPS, "near" 1 by its 95% interval. A repetition without device
    reads (or without a transaction) is refused (BadFigure): past the OS cache it says the
    disk did not decide it, and the claim is not judged on the others."""
    figure = ratio_figure(f"tps × reads per transaction / {iops_text}", shares)
    if figure is None:
        return not_measured("no repetition past the OS cache recorded its device reads")
    return judge(figure, DISK_QUALIFIER, DISK_RULE, 1)


def emulated_disk_verdict(shares: list[float], iops_text: str, profiles: str) -> Verdict:
    """disk_verdict on the emulated disk: follows from the setup, with its figure. The FUSE
    daemon serves at most its preset's IOPS (150 for seed-004-vm, chosen inside the seed's
    100-200), so tps past memory ≈ IOPS / reads is the lab's own cap at work."""
    return follows_from_setup(
        disk_verdict(shares, iops_text),
        f"the disk was emulated ({profiles}): its IOPS are the lab's choice, enforced by the "
        "FUSE daemon, so tps ≈ IOPS / reads follows from the setup; on real storage (--dsn, "
        "or a spec's own data directory) it would be a finding",
    )


def wash_verdict(
    slowdown: Figure | None, left_shared_buffers: Figure | None, left_os_cache: Figure | None
) -> Verdict:
    """A big report query washes the site's data out of both caches and the site goes down:
    the lookups' time after / before the report "greatly" slower (×1.5), and in each cache
    the site's pages before / after the report "greatly" fewer; every part must hold
    (claims.combine). A part not measured says so."""
    parts = []
    for name, figure, what in (
        ("the site", slowdown, "the site's lookups slow down after the report"),
        ("shared_buffers", left_shared_buffers, "the site's pages leave shared_buffers"),
        ("the OS cache", left_os_cache, "the site's pages leave the OS cache"),
    ):
        verdict = (
            judge(figure, WASH_QUALIFIER, what)
            if figure is not None
            else not_measured(f"{name}: not measured")
        )
        parts.append((name, verdict))
    return combine(parts)


# The seed's VM gave 64MB of its ~590 MB to shared_buffers: the point judged is the one whose
# shared_buffers is nearest that share of the run's memory (on a log scale), huge pages off as
# on the seed's VM.
SEED_SHARED_BUFFERS_SHARE = 64 / 590
# One page added to both sides of "pages before / after the report": a cache the scan emptied
# gives a large finite ratio, not an infinite one (the index has ~19,000 pages: one page moves
# the ratio by nothing that matters).
PAGE_BYTES = 8192
WASH_STUDY = "cache-wash"


def report_washes_caches(data: RunData) -> Verdict:
    """Judged on seed 000's cache-wash run (PublishedClaim.judged_on): its idx1 / seq / idx2 is
    the seed's story on a table 1.5× the memory limit: the site's lookups (an index), one
    report query (a sequential scan of the whole table), the lookups again, with a snapshot of
    both caches just before and just after the scan."""
    reps = [r for r in repetitions(data) if r.huge_pages in ("off", "")]
    memory = data.memory_available_bytes
    if not reps or not memory:
        return not_measured(
            "measured by seed 000's cache-wash run (lookups, a scan of a table larger than the "
            "memory limit, the lookups again), and this run is not one"
        )
    target = SEED_SHARED_BUFFERS_SHARE * memory
    size = min(
        {r.shared_buffers_bytes for r in reps},
        key=lambda sb: abs(math.log(sb / target)) if sb > 0 else math.inf,
    )
    mine = [r for r in reps if r.shared_buffers_bytes == size]
    where = (
        f"shared_buffers {format_bytes(size)} (the seed's 64MB of ~590 MB is "
        f"{format_bytes(target)} of this run's {format_bytes(memory)}), huge pages off"
    )
    # seed 000's idx2/idx1 at that point, named as this claim reads it
    idx2_over_idx1 = survival_figure(mine, mine[0].huge_pages, size)
    slowdown = (
        dataclasses.replace(idx2_over_idx1, what=f"lookups after / before the report, {where}")
        if idx2_over_idx1
        else None
    )
    point_indexes = {
        result.point.point_index
        for result in data.points
        if shared_buffers_bytes(result.point.settings.get("shared_buffers")) == size
        and str(result.point.settings.get("huge_pages", "")).lower() in ("off", "")
    }
    left = _left_caches(data, point_indexes)
    buffers = (
        ratio_figure(
            f"the site's index pages in shared_buffers before / after, {where}",
            [b for b, _ in left],
        )
        if left
        else None
    )
    os_left = [o for _, o in left if o is not None]
    os_cache = (
        ratio_figure(f"the site's index pages in the OS cache before / after, {where}", os_left)
        if os_left and len(os_left) == len(left)
        else None
    )
    return wash_verdict(slowdown, buffers, os_cache)


def _left_caches(data: RunData, point_indexes: set[int]) -> list[tuple[float, float | None]]:
    """Per repetition of the points: the index's (shared_buffers, OS cache) bytes just before
    the scan over just after it, each with one page added (PAGE_BYTES)."""
    by_repetition: dict[tuple[int, int], list[Sample]] = {}
    for snapshot in data.snapshots:
        if snapshot.point_index in point_indexes and snapshot.label in SCAN_MOMENTS:
            if snapshot.data is None:
                continue
            sample = Sample(
                snapshot.point_index, snapshot.repetition, 0.0, snapshot.label, snapshot.data
            )
            by_repetition.setdefault((snapshot.point_index, snapshot.repetition), []).append(sample)
    found = []
    for samples in by_repetition.values():
        at = {r.moment: r for r in scan_residency(samples) if r.relation == "index"}
        before, after = at.get(SCAN_MOMENTS[0]), at.get(SCAN_MOMENTS[1])
        if before is None or after is None:
            continue
        buffers = (before.shared_buffers_bytes + PAGE_BYTES) / (
            after.shared_buffers_bytes + PAGE_BYTES
        )
        os_cache = None
        if before.os_cached_bytes is not None and after.os_cached_bytes is not None:
            os_cache = (before.os_cached_bytes + PAGE_BYTES) / (after.os_cached_bytes + PAGE_BYTES)
        found.append((buffers, os_cache))
    return found


# -- from a run ---------------------------------------------------------------------------------


def left_shared_buffers(data: RunData) -> Verdict:
    finding = run_steps(data)
    shared = {r.shared_buffers_bytes for r in data.points if r.shared_buffers_bytes}
    size = format_bytes(shared.pop()) if len(shared) == 1 else "shared_buffers"
    why = f"the spec measured no database both within and beyond shared_buffers ({size})"
    return step_verdict(finding, SHARED_BUFFERS, not_measured(why))


def left_memory(data: RunData) -> Verdict:
    return step_verdict(run_steps(data), MEMORY, _memory_unspanned(data))


def _memory_unspanned(data: RunData) -> Verdict:
    """Why no measured size lies past the OS cache: the machine's (no memory limit without
    root) or the spec's (its sizes stay within the limit)."""
    memory = data.memory_available_bytes
    sizes = [r.database_size_bytes for r in data.points if r.database_size_bytes]
    if not memory or not sizes:
        return not_measured(
            "the run recorded neither the memory available to the server nor data sizes"
        )
    largest = format_bytes(max(sizes))
    if data.memory_limit_bytes is None:
        return cannot(
            "without root there is no memory limit (the emulated machine's cgroup needs root), "
            f"so the OS cache is the host's RAM, {format_bytes(memory)}, and the largest "
            f"database measured, {largest}, fits in it: the data cannot outgrow the OS cache "
            "here (the seed's VM had 590 MB)"
        )
    return not_measured(
        f"the largest database measured, {largest}, stays within the server's memory limit "
        f"of {format_bytes(memory)}: the spec measured no size past the OS cache"
    )


@dataclass(frozen=True)
class DeviceUse:
    """One repetition past the OS cache: its tps, the emulated device's reads and the
    transactions they served, and the reads per second the device can serve those clients."""

    tps: float
    reads: float
    transactions: float
    device_iops: float

    @property
    def reads_per_transaction(self) -> float:
        return self.reads / self.transactions if self.transactions else math.inf

    @property
    def share(self) -> float:
        """0 without reads (the disk served none of it), inf without transactions: both are
        refused by ratio_figure, never dropped."""
        if not self.reads:
            return 0.0
        return self.tps * self.reads_per_transaction / self.device_iops


def device_iops(profile: DiskProfileRecord, clients: int) -> float:
    """What the emulated device serves: its IOPS cap, or fewer when the clients, each waiting
    for its own read, cannot keep it busy (clients / the time of one read)."""
    bandwidth, iops = profile.get("bandwidth_bytes_s"), profile.get("iops")
    per_read_s = profile["read_latency_s"] + (8192 / bandwidth if bandwidth else 0)
    by_clients = clients / per_read_s if per_read_s > 0 else math.inf
    return min(by_clients, iops) if iops else by_clients


HOST_DISK = (
    "the disk was not emulated, and on real storage the run records neither the device's "
    "reads (only the emulated device counts its requests; pg_stat_io's reads include what "
    "the OS cache served) nor the device's random-read IOPS at the run's clients (the storage "
    "probe times single cold reads); a per-repetition /proc/diskstats delta of the data "
    "directory's device and a random-read probe at the run's queue depth would make this a "
    "finding"
)


def disk_decides(data: RunData) -> Verdict:
    finding = run_steps(data)
    if finding is None:
        return not_measured(NOT_A_SIZE_SWEEP)
    past = _past_memory_labels(finding, data.memory_available_bytes)
    if not past:
        unspanned = _memory_unspanned(data)
        return Verdict(
            unspanned.outcome, f"no database was measured past the OS cache: {unspanned.reason}"
        )
    uses, profiles = [], set()
    for result in data.points:
        if result.point.label not in past:
            continue
        for m in result.ok:
            disk = m.metrics.get("disk") or {}
            profile = disk.get("profile")
            if not profile:
                return not_measured(HOST_DISK)
            reads = (disk.get("device") or {}).get("reads")
            transactions = ((m.metrics.get("probes") or {}).get("database") or {}).get(
                "xact_commit"
            )
            clients = (m.metrics.get("pgbench") or {}).get("clients")
            if reads is None or transactions is None or not clients:
                return not_measured(
                    f"repetition {m.repetition + 1} of {result.point.label} recorded no "
                    "device reads, transactions or clients"
                )
            profiles.add(profile["name"])
            uses.append(DeviceUse(m.tps or 0.0, reads, transactions, device_iops(profile, clients)))
    iops = sorted({round(u.device_iops) for u in uses})
    iops_text = f"{', '.join(sorted(profiles))}'s {'/'.join(map(str, iops))} IOPS"
    return emulated_disk_verdict([u.share for u in uses], iops_text, ", ".join(sorted(profiles)))


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
