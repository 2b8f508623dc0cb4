"""Seed 003's findings judged on an overhead run: the consistent read of the buffer cache sags
tps, the lighter modes sag less, and the nonconsistent mode's error stays below 3%.

The seed's modes are the lab's methods by what they lock (extension/pg_cachelab/pg_cachelab.c):
its "consistent" (every buffer-mapping partition lock for one pass, pg_buffercache before
PostgreSQL 10) is pg_cachelab's `snapshot` mode, and pg_buffercache itself on a server older
than 10; since 10 pg_buffercache takes no partition lock at all, and pg_cachelab's `consistent`
reads as it does, so neither is the seed's consistent read. Its "semiconsistent" is
`semiconsistent`, its "nonconsistent" is `fast`.

Pure rules over the sags (studies/inspect_overhead/sags.py) and the accuracy trials'
errors (analysis/inspect_accuracy.py) that tests feed directly, and thin adapters from RunData.
"""

import math
import statistics
from dataclasses import dataclass

from pgcachelab.analysis.claims import (
    CONTRADICTED,
    NOISE,
    REPRODUCED,
    Figure,
    Verdict,
    at_least,
    at_most,
    cannot,
)
from pgcachelab.analysis.inspect_accuracy import SEED_LOSS, TrialError, trial_error, trials
from pgcachelab.analysis.inspect_overhead import Sag
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.statistics import t95
from pgcachelab.studies.inspect_overhead.sags import METHOD_NAMES, MethodSag, cell_text, method_sags
from pgcachelab.units import shared_buffers_bytes

# A sag of at least 1% of tps by its whole 95% interval: the smallest sag the alternating
# windows were built to resolve (analysis/inspect_overhead.py: separate runs differ by more
# than the 1% the question is about), and less than anyone diagnosing a slow server notices.
SAG_PERCENT = 1.0
# "Sags less": the lighter mode's sag below the consistent read's, by the whole 95% interval of
# their difference; any margin above 0 would be a number the seed never gave.
LESS_MARGIN_POINTS = 0.0
# The seed's "< 3% lost of snapshot consistency", as a share of shared_buffers misplaced.
LOSS_PERCENT = SEED_LOSS * 100

SNAPSHOT_METHOD = "extension/snapshot"
LIGHTER = {"extension/semiconsistent": "semiconsistent", "extension/fast": "nonconsistent"}
PG10 = 100000  # server_version_num from which pg_buffercache takes no partition lock
SEED_MACHINE = "the seed's server had 144 CPUs and 200GB of shared_buffers"


# -- the pure rules ---------------------------------------------------------------------------


def sag_figure(what: str, sag: Sag | None) -> Figure | None:
    if sag is None:
        return None
    low, high = sag.sag_ci_percent if sag.sag_ci_percent else (None, None)
    return Figure(what, sag.sag_percent, low, high, sag.ratios.n, "%")


def consistent_sag_verdict(figure: Figure | None, unmeasured: str, machine: str = "") -> Verdict:
    """The consistent read sags tps by at least SAG_PERCENT. `unmeasured`: why the run has no
    consistent read to judge; `machine`: this machine against the seed's, said when the sag
    does not show."""
    if figure is None:
        return cannot(unmeasured)
    verdict = at_least(figure, SAG_PERCENT, f"the consistent read sags tps by ≥ {SAG_PERCENT:g}%")
    if verdict.outcome != REPRODUCED and machine:
        return Verdict(verdict.outcome, f"{verdict.reason} ({machine})", verdict.figure)
    return verdict


def sag_difference(what: str, consistent: Sag, lighter: Sag) -> Figure:
    """The consistent read's sag minus the lighter mode's, in percentage points, with Welch's
    95% interval over their tps ratios (separate samples: their measurements do not pair)."""
    a, b = consistent.ratios, lighter.ratios
    difference = (b.mean - a.mean) * 100  # a sag is 1 - the mean ratio
    n = min(a.n, b.n)
    if a.stdev is None or b.stdev is None:
        return Figure(what, difference, repetitions=n, unit="points")
    share_a, share_b = a.stdev**2 / a.n, b.stdev**2 / b.n
    error = math.sqrt(share_a + share_b)
    if error == 0:
        return Figure(what, difference, difference, difference, n, "points")
    df = error**4 / (share_a**2 / (a.n - 1) + share_b**2 / (b.n - 1))
    half = t95(df) * error * 100
    return Figure(what, difference, difference - half, difference + half, n, "points")


def lighter_verdict(differences: dict[str, Figure | None], unmeasured: str) -> Verdict:
    """Each lighter mode sags less than the consistent read (difference ≥ LESS_MARGIN_POINTS by
    its whole interval): contradicted when one sags more beyond the noise, reproduced when every
    one measured sags less, else noise; cannot when none was measured beside a consistent read."""
    rule = "the lighter mode sags less than the consistent read"
    parts = {
        mode: at_least(figure, LESS_MARGIN_POINTS, rule)
        for mode, figure in differences.items()
        if figure is not None
    }
    if not parts:
        return cannot(unmeasured)
    missing = sorted(set(differences) - set(parts))
    outcomes = {v.outcome for v in parts.values()}
    if CONTRADICTED in outcomes:
        outcome = CONTRADICTED
    elif outcomes == {REPRODUCED}:
        outcome = REPRODUCED
    else:
        outcome = NOISE
    decider = next(v for v in parts.values() if v.outcome == outcome)
    others = [f"{m}: {v.text()}" for m, v in parts.items() if v is not decider]
    others += [f"{m}: not measured" for m in missing]
    reason = decider.reason + (f" (also {'; '.join(others)})" if others else "")
    return Verdict(outcome, reason, decider.figure)


def fast_error_verdict(errors: list[TrialError]) -> Verdict:
    """The fast (nonconsistent) mode misplaces under 3% of shared_buffers: the mean share over
    its trials at most LOSS_PERCENT by its whole interval, and the worst trial under it too (the
    seed quotes its maximum)."""
    if not errors:
        return cannot(
            "the run took no accuracy trials of the fast mode (`[inspect] accuracy_pairs` on an "
            "extension point), so its error against an exact snapshot is not measured"
        )
    shares = [e.misplaced_share * 100 for e in errors]
    mean = statistics.fmean(shares)
    what = "fast's misplaced share of shared_buffers, mean over trials"
    if len(shares) < 2:
        figure = Figure(what, mean, repetitions=1, unit="%")
    else:
        half = t95(len(shares) - 1) * statistics.stdev(shares) / math.sqrt(len(shares))
        figure = Figure(what, mean, mean - half, mean + half, len(shares), "%")
    worst = max(shares)
    verdict = at_most(figure, LOSS_PERCENT, f"fast's error < {LOSS_PERCENT:g}% of shared_buffers")
    if verdict.outcome == REPRODUCED and worst >= LOSS_PERCENT:
        why = f"{verdict.reason}; but its worst trial misplaced {worst:.2f}%, and the seed's "
        return Verdict(NOISE, why + "figure is its maximum", figure)
    return Verdict(verdict.outcome, f"{verdict.reason}; worst trial {worst:.2f}%", figure)


# -- from a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsistentRead:
    cell: tuple
    method: str
    name: str
    sag: Sag | None


def _version_num(data: RunData, point_index: int) -> float | None:
    setting = data.server_settings.get(point_index, {}).get("server_version_num") or {}
    value = setting.get("normalised")
    return float(value) if value is not None else None


def _consistent_reads(data: RunData, sags: list[MethodSag]) -> list[ConsistentRead]:
    """The measured reads that take every partition lock, per cell, largest shared_buffers
    first (the seed's finding is about big shared memory)."""
    found = []
    for sag in sags:
        version = _version_num(data, sag.result.point.point_index)
        if sag.method == SNAPSHOT_METHOD:
            name = "pg_cachelab snapshot"
        elif sag.method == "pg_buffercache" and version is not None and version < PG10:
            major, minor = divmod(int(version), 10000)
            name = f"pg_buffercache on PostgreSQL {major}.{minor // 100}"
        else:
            continue
        found.append(ConsistentRead(sag.cell, sag.method, name, sag.quoted))
    return sorted(found, key=lambda read: -_cell_shared_buffers(read.cell))


def _cell_shared_buffers(cell: tuple) -> float:
    value = dict(cell).get("shared_buffers")
    return (shared_buffers_bytes(value) or 0) if value else 0


def _unmeasured(sags: list[MethodSag]) -> str:
    methods = sorted({METHOD_NAMES.get(s.method, s.method) for s in sags})
    return (
        "the run measured no read that takes every buffer-mapping partition lock (the seed's "
        "consistent read: pg_cachelab's snapshot mode, or pg_buffercache before PostgreSQL 10; "
        f"since 10 pg_buffercache takes none); it measured {'; '.join(methods) or 'nothing'}"
    )


def _machine(data: RunData) -> str:
    cores = data.run.environment.get("cores")
    return f"{SEED_MACHINE}; this one {cores} cores" if cores else SEED_MACHINE


def consistent_read_sags(data: RunData) -> Verdict:
    sags = method_sags(data)
    reads = _consistent_reads(data, sags)
    if not reads:
        return cannot(_unmeasured(sags))
    with_sag = [read for read in reads if read.sag is not None]
    if not with_sag:
        return cannot(
            f"{reads[0].name} was measured with no baseline (inspect_method none) beside it, "
            "so it has no sag"
        )
    read = with_sag[0]
    figure = sag_figure(f"tps sag of {read.name}, {cell_text(read.cell)}", read.sag)
    return consistent_sag_verdict(figure, _unmeasured(sags), _machine(data))


NO_LIGHTER = (
    "no semiconsistent or fast (nonconsistent) point with a sag was measured beside the "
    "consistent read, under the same shared_buffers"
)


def lighter_modes_sag_less(data: RunData) -> Verdict:
    sags = method_sags(data)
    reads = _consistent_reads(data, sags)
    if not reads:
        return cannot(_unmeasured(sags))
    for read in reads:
        beside = {s.method: s.quoted for s in sags if s.cell == read.cell}
        if read.sag is None or not any(beside.get(method) for method in LIGHTER):
            continue
        differences: dict[str, Figure | None] = {}
        for method, mode in LIGHTER.items():
            light = beside.get(method)
            what = f"{read.name} sag − {mode} sag, {cell_text(read.cell)}"
            differences[mode] = sag_difference(what, read.sag, light) if light else None
        return lighter_verdict(differences, NO_LIGHTER)
    return cannot(NO_LIGHTER)


def fast_error(data: RunData) -> Verdict:
    taken = [t for t in trials(data.snapshots) if t.mode == "fast"]
    exact = [t for t in taken if t.reference_mode == "snapshot"]
    if taken and not exact:
        return cannot(
            "the run's accuracy pairs compare fast with the consistent mode, itself no exact "
            "snapshot: its error against the truth is not measured (runs since the references "
            "take a snapshot before and after each trial)"
        )
    return fast_error_verdict([trial_error(t) for t in exact])
