"""Seed 003's findings judged on an overhead run: the consistent read of the buffer cache
greatly slows the server, the lighter modes less; nonconsistent is ~10% faster to take than
consistent, semiconsistent ~5 times slower than nonconsistent and, under SELECT-only load,
close to it in effect; nonconsistent's error stays below 3%.

The seed's modes are the lab's methods by what they lock (extension/pg_cachelab/pg_cachelab.c):
its "consistent" (every buffer-mapping partition lock for one pass, pg_buffercache before
PostgreSQL 10) is pg_cachelab's `snapshot` mode, and pg_buffercache itself on a server older
than 10; since 10 pg_buffercache takes no partition lock at all, and pg_cachelab's `consistent`
reads as it does, so neither is the seed's consistent read. Its "semiconsistent" is
`semiconsistent`, its "nonconsistent" is `fast`.

Every figure is a ratio in the seed's direction, judged by the word the seed uses
(analysis/qualifiers.py): tps without polling / tps while polling for a sag, the consistent
read's time / nonconsistent's for "faster". Pure rules over the sags
(studies/inspect_overhead/sags.py), the accuracy rounds' times and errors
(analysis/inspect_accuracy.py), which tests feed directly, then thin adapters from RunData.
"""

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from pgcachelab.analysis import qualifiers
from pgcachelab.analysis.claims import (
    REPRODUCED,
    BadFigure,
    Figure,
    Verdict,
    combine,
    follows_from_setup,
    mean_figure,
    noise,
    not_measured,
    ratio_figure,
    weakened,
    with_reason,
)
from pgcachelab.analysis.inspect_accuracy import (
    SEED_LOSS,
    TrialError,
    TrialTime,
    trial_error,
    trial_rounds,
    trials,
)
from pgcachelab.analysis.inspect_overhead import Sag
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.versions import welch_log_ratio
from pgcachelab.store.records import Cell
from pgcachelab.studies.inspect_overhead.sags import (
    METHOD_NAMES,
    MethodSag,
    cell_text,
    cells,
    method_sags,
    poll_coverage,
)
from pgcachelab.units import shared_buffers_bytes
from pgcachelab.workloads.parameters import PgbenchParameters

# The seed's words and figures, each with the key of the qualifier table that judges it.
GREATLY = "greatly"  # "takes an exclusive lock on all shared buffers, which greatly affects ..."
LESS = "direction"  # semiconsistent "made less affects on system compared to consistent"
NOT_NOTICEABLY = "same"  # nonconsistent "doesn`t noticeably affects on the systems"
FASTER = 1.1  # nonconsistent "10% faster then consistent method"
SLOWER = 5.0  # semiconsistent "5 time slower then nonconsistent"
APPROACHING = "same"  # "Semiconsistent show results approaching to nonconsistent on SELECTONLY"
# The seed's "the maximum loss of accuracy was less then 3%", as a share of shared_buffers.
LOSS_PERCENT = SEED_LOSS * 100

SNAPSHOT_METHOD = "extension/snapshot"
SEMICONSISTENT_METHOD = "extension/semiconsistent"
FAST_METHOD = "extension/fast"
LIGHTER = {SEMICONSISTENT_METHOD: "semiconsistent", FAST_METHOD: "nonconsistent"}
PG10 = 100000  # server_version_num from which pg_buffercache takes no partition lock
SEED_SHARED_BUFFERS = "200GB"
SEED_MACHINE = f"the seed's server had 144 CPUs and {SEED_SHARED_BUFFERS} of shared_buffers"


# -- the pure rules ---------------------------------------------------------------------------


def _inverted(figure: Figure, what: str) -> Figure:
    """1 / the figure: its interval's ends swap."""
    low, high = (
        (1 / figure.ci_high, 1 / figure.ci_low)
        if figure.ci_low is not None and figure.ci_high is not None
        else (None, None)
    )
    return Figure(what, 1 / figure.value, low, high, figure.repetitions, figure.unit)


def slowdown_figure(what: str, sag: Sag | None) -> Figure | None:
    """tps without polling / tps while polling: the inverse of the geometric mean of the sag's
    ratios (polled / not polled), with Student's 95% interval on their logs. A ratio of 0 (a
    polled window without a transaction) is refused (BadFigure), never left out."""
    if sag is None or not sag.values:
        return None
    polled = ratio_figure(what, sag.values)
    return None if polled is None else _inverted(polled, what)


def relative_tps_figure(what: str, lighter: Sag, heavier: Sag) -> Figure:
    """tps while `lighter` polls / tps while `heavier` polls, each against its unpolled windows:
    the ratio of their geometric means, with Welch's 95% interval on the difference of their
    logs (separate points: their ratios do not pair). Equal ratios within each give an interval
    of zero width, which decides nothing."""
    for sag in (lighter, heavier):
        _check_ratios(what, sag.values)
    ratio, low, high = welch_log_ratio(list(heavier.values), list(lighter.values))
    n = min(len(lighter.values), len(heavier.values))
    return Figure(what, ratio, low, high, n)


def _check_ratios(what: str, values: Sequence[float]) -> None:
    for index, value in enumerate(values):
        if not (math.isfinite(value) and value > 0):
            raise BadFigure(
                f"{what}: ratio {index + 1} of {len(values)} is {value!r}, not a positive "
                "finite number (a window without a transaction?)"
            )
    if not values:
        raise BadFigure(f"{what}: no ratio")


CONSISTENT_CLAIM = "the consistent read greatly slows the server"


def consistent_sag_verdict(figure: Figure | None, unmeasured: str, machine: str = "") -> Verdict:
    """tps without polling / tps while the consistent read polls, judged "greatly".
    `unmeasured`: why the run has no consistent read to judge; `machine`: this machine against
    the seed's, said when the claim is not reproduced."""
    if figure is None:
        return not_measured(unmeasured)
    verdict = qualifiers.judge(figure, GREATLY, CONSISTENT_CLAIM)
    if verdict.outcome != REPRODUCED and machine:
        return with_reason(verdict, machine)
    return verdict


LIGHTER_CLAIM = "the lighter mode slows the server less than the consistent read"


def lighter_verdict(ratios: dict[str, Figure | None], unmeasured: str) -> Verdict:
    """Each lighter mode sags less than the consistent read: per mode, tps while it polls / tps
    while the consistent read polls judged by "direction" (whole interval above ×1), then the
    one combining rule over the modes (a mode not measured keeps the claim from reproduced)."""
    if not any(figure is not None for figure in ratios.values()):
        return not_measured(unmeasured)
    parts = [
        (
            mode,
            qualifiers.judge(figure, LESS, LIGHTER_CLAIM)
            if figure is not None
            else not_measured(f"{mode} was not measured beside the consistent read"),
        )
        for mode, figure in ratios.items()
    ]
    return combine(parts)


def not_noticeable_verdict(figure: Figure | None, unmeasured: str) -> Verdict:
    """Nonconsistent "doesn`t noticeably affects on the systems": tps without polling / tps
    while fast polls within the table's "same" band."""
    if figure is None:
        return not_measured(unmeasured)
    return qualifiers.judge(figure, NOT_NOTICEABLY, "nonconsistent does not noticeably slow it")


def approaching_verdict(figure: Figure | None, unmeasured: str) -> Verdict:
    """Semiconsistent's "results approaching to nonconsistent" under SELECT-only load: tps while
    fast polls / tps while semiconsistent polls within the table's "same" band."""
    if figure is None:
        return not_measured(unmeasured)
    claim = "semiconsistent slows SELECT-only load about as nonconsistent does"
    return qualifiers.judge(figure, APPROACHING, claim)


NO_ROUNDS = (
    "the run took no accuracy rounds (`[inspect] accuracy_pairs` on an extension point): no "
    "mode was timed beside the others under the same load"
)


def _on_cpu(times: Sequence[TrialTime]) -> bool:
    """Whether to compare the server CPU of each read: when every trial has it (on this
    machine a read under 250 clients waits for a CPU far longer than it runs), else the time
    at the client."""
    return all(t.cpu_ms is not None and t.reference_cpu_ms is not None for t in times)


def _mode_ms(time: TrialTime, cpu: bool) -> float:
    return time.cpu_ms if cpu and time.cpu_ms is not None else time.elapsed_ms


def _reference_ms(time: TrialTime, cpu: bool) -> float:
    return time.reference_cpu_ms if cpu and time.reference_cpu_ms is not None else time.reference_ms


def _timed(cpu: bool) -> str:
    return "server CPU" if cpu else "time at the client"


def faster_verdict(rounds: list[dict[str, TrialTime]], where: str = "") -> Verdict:
    """Nonconsistent "10% faster then consistent": per accuracy round, the time of the exact
    references around fast (snapshot mode, the seed's consistent read) / fast's time (server
    CPU where every trial has it); their geometric mean judged "about ×1.1". The lab's
    consistent mode (header locks, no partition lock) is said beside it."""
    paired = [r["fast"] for r in rounds if "fast" in r]
    if not paired:
        return not_measured(NO_ROUNDS)
    cpu = _on_cpu(paired)
    what = f"{_timed(cpu)} of the consistent read (snapshot) / nonconsistent (fast){where}"
    figure = ratio_figure(what, [_reference_ms(t, cpu) / _mode_ms(t, cpu) for t in paired])
    assert figure is not None
    verdict = qualifiers.judge(figure, "about", "nonconsistent is ~10% faster", FASTER)
    lab_consistent = [r["consistent"] for r in rounds if "consistent" in r]
    if lab_consistent:
        cpu = _on_cpu(lab_consistent)
        other = ratio_figure(
            f"{_timed(cpu)} of snapshot / the lab's consistent mode (header locks, no "
            "partition lock)",
            [_reference_ms(t, cpu) / _mode_ms(t, cpu) for t in lab_consistent],
        )
        assert other is not None
        verdict = with_reason(verdict, f"for context, {other.text()}")
    return verdict


# Why the semiconsistent read's time is the lab's, not the seed's: a figure this design decides.
SEMICONSISTENT_DESIGN = (
    "the time is set by the lab's own semiconsistent (extension/pg_cachelab/pg_cachelab.c): it "
    "walks every buffer header once per partition, 128 passes, hashing each tag not yet "
    "counted; the seed's patch (an attachment) is not in its text, and a read that takes one "
    "partition lock at a time can be written with one pass (e.g. locking each buffer's own "
    "partition), so the ratio measures the lab's implementation, not the seed's method"
)


def slower_verdict(rounds: list[dict[str, TrialTime]], where: str = "") -> Verdict:
    """Semiconsistent "5 time slower then nonconsistent": per accuracy round, semiconsistent's
    time / fast's, moments apart under the same load; their geometric mean judged "about ×5"."""
    paired = [r for r in rounds if "semiconsistent" in r and "fast" in r]
    if not paired:
        return not_measured(NO_ROUNDS)
    cpu = _on_cpu([t for r in paired for t in (r["semiconsistent"], r["fast"])])
    what = f"{_timed(cpu)} of semiconsistent / nonconsistent (fast){where}"
    ratios = [_mode_ms(r["semiconsistent"], cpu) / _mode_ms(r["fast"], cpu) for r in paired]
    figure = ratio_figure(what, ratios)
    assert figure is not None
    verdict = qualifiers.judge(figure, "about", "semiconsistent is ~5× slower", SLOWER)
    return follows_from_setup(verdict, SEMICONSISTENT_DESIGN)


def fast_error_verdict(errors: list[TrialError]) -> Verdict:
    """The fast (nonconsistent) mode misplaces under 3% of shared_buffers: the mean share over
    its trials "up to" LOSS_PERCENT by its whole interval, and the worst trial under it too (the
    seed quotes its maximum)."""
    if not errors:
        return not_measured(
            "the run took no accuracy trials of the fast mode (`[inspect] accuracy_pairs` on an "
            "extension point), so its error against an exact snapshot is not measured"
        )
    shares = [e.misplaced_share * 100 for e in errors]
    what = "fast's misplaced share of shared_buffers, mean over trials"
    figure = mean_figure(what, shares, "%")
    assert figure is not None
    if figure.zero_width and max(shares) == 0:
        figure = none_misplaced_figure(errors)
    worst = max(shares)
    verdict = qualifiers.judge(figure, "up to", "fast's error < 3% of shared_buffers", LOSS_PERCENT)
    if verdict.outcome == REPRODUCED and worst >= LOSS_PERCENT:
        return weakened(
            verdict, f"its worst trial misplaced {worst:.2f}%, and the seed's figure is its maximum"
        )
    return with_reason(verdict, f"worst trial {worst:.2f}%")


def none_misplaced_figure(errors: list[TrialError]) -> Figure:
    """Every trial misplaced none of its buffers: equal repetitions give a zero-width interval,
    which decides nothing, yet 0 of millions of buffers says more than that. The figure is
    then the exact (Clopper-Pearson) 95% upper bound on the share of buffers misplaced, 0 of
    all the trials' buffers: 1 - 0.025^(1/M), in closed form for 0 successes."""
    buffers = sum(max(1, e.buffers_total) for e in errors)
    upper = (1 - 0.025 ** (1 / buffers)) * 100
    what = (
        f"fast's misplaced share of shared_buffers: 0 of {buffers:,} buffers over "
        f"{len(errors)} trials (exact binomial 95% bound)"
    )
    return Figure(what, 0.0, 0.0, upper, len(errors), "%")


def guarded(what: str, rule: Callable[[], Verdict]) -> Verdict:
    """The verdict of `rule()`, or noise naming the measurement a figure refused (BadFigure: a
    polled window without a transaction, a failed timing)."""
    try:
        return rule()
    except BadFigure as refused:
        return noise(f"{what}: {refused}")


# -- from a run ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class ConsistentRead:
    cell: Cell
    method: str
    name: str
    sag: Sag | None
    measured: MethodSag


# A mode that polled in fewer than half of its polled windows: its sag is mostly of windows it
# did not poll in, and says little of polling with it.
MIN_POLLED_SHARE = 0.5


def coverage_caveat(coverage: dict[str, tuple[int, int]]) -> str:
    """Why the sags say little of polling ("" when every mode polled in at least
    MIN_POLLED_SHARE of its polled windows): mode -> (windows with a poll, polled windows)."""
    short = [
        f"{mode} polled in only {covered} of its {polled} polled windows"
        for mode, (covered, polled) in coverage.items()
        if polled and covered < MIN_POLLED_SHARE * polled
    ]
    if not short:
        return ""
    return (
        "; ".join(short) + " (the sampler skips a read that would run past its window): "
        "its sag is mostly of windows it did not poll in"
    )


def _checked(verdict: Verdict, data: RunData, measured: Sequence[MethodSag]) -> Verdict:
    """The verdict, weakened when a mode behind it polled in too few of its windows."""
    coverage = {
        METHOD_NAMES.get(m.method, m.method): poll_coverage(data, m.result) for m in measured
    }
    caveat = coverage_caveat(coverage)
    return weakened(verdict, caveat) if caveat else verdict


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
        found.append(ConsistentRead(sag.cell, sag.method, name, sag.quoted, sag))
    return sorted(found, key=lambda read: -_cell_shared_buffers(read.cell))


def _cell_shared_buffers(cell: Cell) -> float:
    value = dict(cell).get("shared_buffers")
    return (shared_buffers_bytes(str(value)) or 0) if value else 0


def _at(cell: Cell) -> str:
    """Where a figure was measured, beside the seed's shared_buffers."""
    return f", {cell_text(cell)} (the seed's: {SEED_SHARED_BUFFERS})"


def _unmeasured(sags: list[MethodSag]) -> str:
    methods = sorted({METHOD_NAMES.get(s.method, s.method) for s in sags})
    return (
        "the spec measured no read that takes every buffer-mapping partition lock (the seed's "
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
        return not_measured(_unmeasured(sags))
    with_sag = [read for read in reads if read.sag is not None]
    if not with_sag:
        return not_measured(
            f"{reads[0].name} was measured with no baseline (inspect_method none) beside it, "
            "so it has no sag"
        )
    read = with_sag[0]
    what = f"tps without / while polling with {read.name}{_at(read.cell)}"
    verdict = guarded(
        what,
        lambda: consistent_sag_verdict(
            slowdown_figure(what, read.sag), _unmeasured(sags), _machine(data)
        ),
    )
    return _checked(verdict, data, [read.measured])


NO_LIGHTER = (
    "the spec measured no semiconsistent or fast (nonconsistent) point with a sag beside the "
    "consistent read, under the same shared_buffers"
)


def _beside_consistent(data: RunData) -> tuple[ConsistentRead, dict[str, MethodSag]] | None:
    """The largest-shared_buffers consistent read with a sag and a lighter mode beside it."""
    sags = method_sags(data)
    for read in _consistent_reads(data, sags):
        beside = {s.method: s for s in sags if s.cell == read.cell and s.quoted is not None}
        if read.sag is not None and any(method in beside for method in LIGHTER):
            return read, beside
    return None


def lighter_modes_sag_less(data: RunData) -> Verdict:
    found = _beside_consistent(data)
    if found is None:
        return not_measured(NO_LIGHTER)
    read, beside = found
    consistent = read.sag
    assert consistent is not None

    def rule() -> Verdict:
        ratios: dict[str, Figure | None] = {}
        for method, mode in LIGHTER.items():
            light = beside[method].quoted if method in beside else None
            what = f"tps while {mode} / while {read.name} polls{_at(read.cell)}"
            ratios[mode] = relative_tps_figure(what, light, consistent) if light else None
        return lighter_verdict(ratios, NO_LIGHTER)

    measured = [read.measured, *(beside[m] for m in LIGHTER if m in beside)]
    return _checked(guarded("the lighter modes against the consistent read", rule), data, measured)


def _largest_with(
    data: RunData, methods: Sequence[str]
) -> tuple[Cell, dict[str, MethodSag]] | None:
    """The largest-shared_buffers cell where every one of `methods` has a sag."""
    by_cell: dict[Cell, dict[str, MethodSag]] = {}
    for sag in method_sags(data):
        if sag.quoted is not None:
            by_cell.setdefault(sag.cell, {})[sag.method] = sag
    found = [(cell, got) for cell, got in by_cell.items() if all(m in got for m in methods)]
    return max(found, key=lambda item: _cell_shared_buffers(item[0]), default=None)


def fast_not_noticeable(data: RunData) -> Verdict:
    found = _largest_with(data, [FAST_METHOD])
    unmeasured = "the spec measured no sag of the fast (nonconsistent) mode against a baseline"
    if found is None:
        return not_measured(unmeasured)
    cell, got = found
    fast = got[FAST_METHOD]
    what = f"tps without / while polling with pg_cachelab fast{_at(cell)}"
    verdict = guarded(
        what, lambda: not_noticeable_verdict(slowdown_figure(what, fast.quoted), unmeasured)
    )
    return _checked(verdict, data, [fast])


def semiconsistent_approaches_fast(data: RunData) -> Verdict:
    found = _largest_with(data, [FAST_METHOD, SEMICONSISTENT_METHOD])
    if found is None:
        return not_measured(
            "the spec did not measure both semiconsistent and fast (nonconsistent) against a "
            "baseline under the same shared_buffers"
        )
    cell, got = found
    fast, semiconsistent = got[FAST_METHOD], got[SEMICONSISTENT_METHOD]
    assert fast.quoted is not None and semiconsistent.quoted is not None
    fast_sag, semiconsistent_sag = fast.quoted, semiconsistent.quoted
    parameters = data.points[0].point.workload if data.points else None
    mode = parameters.mode if isinstance(parameters, PgbenchParameters) else None
    what = f"tps while fast / while semiconsistent polls{_at(cell)}"
    verdict = guarded(
        what,
        lambda: approaching_verdict(relative_tps_figure(what, fast_sag, semiconsistent_sag), ""),
    )
    if mode and mode != "select-only":
        verdict = weakened(
            verdict, f"the seed's finding is under SELECT-only load, this run's {mode}"
        )
    return _checked(verdict, data, [fast, semiconsistent])


def _largest_cell_rounds(data: RunData) -> tuple[list[dict[str, TrialTime]], str]:
    """The accuracy rounds of the largest shared_buffers' extension points, and where."""
    by_cell = cells(data)
    if not by_cell:
        return [], ""
    for cell in sorted(by_cell, key=lambda c: -_cell_shared_buffers(c)):
        indexes = {r.point.point_index for r in by_cell[cell].values()}
        rounds = trial_rounds([s for s in data.snapshots if s.point_index in indexes])
        if rounds:
            return rounds, _at(cell) + ", per accuracy round under the load"
    return [], ""


def nonconsistent_faster(data: RunData) -> Verdict:
    rounds, where = _largest_cell_rounds(data)
    return guarded("the accuracy rounds' times", lambda: faster_verdict(rounds, where))


def semiconsistent_slower(data: RunData) -> Verdict:
    rounds, where = _largest_cell_rounds(data)
    return guarded("the accuracy rounds' times", lambda: slower_verdict(rounds, where))


def fast_error(data: RunData) -> Verdict:
    taken = [t for t in trials(data.snapshots) if t.mode == "fast"]
    exact = [t for t in taken if t.reference_mode == "snapshot"]
    if taken and not exact:
        return not_measured(
            "the run's accuracy pairs compare fast with the consistent mode, itself no exact "
            "snapshot: its error against the truth is not measured (runs since the references "
            "take a snapshot before and after each trial)"
        )
    return guarded("fast's trials", lambda: fast_error_verdict([trial_error(t) for t in exact]))
