"""A stored run's answer, with intervals, and what it cannot tell: what `pgcachelab advise`
prints and what the report's "What this run shows" opens with (issue 25: one source).

Reads a RunData only, no plotting. Each kind of run reads the same analysis as the tables of its
report section: the steps over data sizes (analysis.steps, seed 004), the version-to-version
changes (analysis.versions, seed 001), the overhead sags (report.overhead_sags, seed 003), the
ladder (analysis.ladder), the cache-wash survival and best setting (analysis.cache_split, seed
000); and `compare`'s matched points. Where the intervals cannot tell values apart, the advice
says "no clear difference" rather than crown the luckier one.
"""

from pgcachelab.analysis.advice import (
    MIN_REPETITIONS,
    Advice,
    Choice,
    choose,
    format_interval,
    repetition_caveats,
)
from pgcachelab.analysis.cache_split import (
    PHASES,
    SURVIVAL_TOLERANCE,
    Effect,
    SurvivalRow,
    huge_pages_effect,
    index_survives_from,
    pgbench_logged_zeros,
    survival_table,
)
from pgcachelab.analysis.compare import Comparison
from pgcachelab.analysis.inspect_accuracy import accuracy_finding
from pgcachelab.analysis.steps import DISK, MATCH_FACTOR, MEMORY, MIN_STEP_RATIO, SHARED_BUFFERS
from pgcachelab.analysis.summary import summarise
from pgcachelab.analysis.versions import (
    CONTROL_SIGNIFICANT_LIMIT,
    VersionChange,
    control_base,
    control_changes,
    control_verdict,
    version_changes,
    version_order,
)
from pgcachelab.report.dataset import PointResult, RunData, repetitions, swept_text
from pgcachelab.report.offered_load import offered_load_findings
from pgcachelab.report.overhead_sags import (
    METHOD_NAMES,
    MethodSag,
    cell_accuracy,
    cell_text,
    is_overhead_run,
    method_sags,
)
from pgcachelab.report.steps import points_steps
from pgcachelab.report.tpcc_steps import is_tpcc_run, ladder_advice
from pgcachelab.units import format_bytes


def _cell(result: PointResult, topic: str) -> tuple:
    return tuple((k, v) for k, v in result.point.swept.items() if k != topic)


def _tps_by_cell(data: RunData, topic: str) -> dict[tuple, dict]:
    cells: dict[tuple, dict] = {}
    for result in data.points:
        if topic not in result.point.swept:
            continue
        values = [m.tps for m in result.ok if m.tps]
        cells.setdefault(_cell(result, topic), {})[result.point.swept[topic]] = values
    return cells


def ratio_text(ratio: float) -> str:
    """Two decimals below 10, three significant digits above, as the steps are quoted: 0.54,
    1.31, 13.6, 136."""
    return f"{ratio:.2f}" if abs(ratio) < 10 else f"{ratio:.3g}"


def ratio_interval(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "no interval"
    return f"95% CI {ratio_text(low)}–{ratio_text(high)}"


def _all_tied(choice: Choice) -> bool:
    """Every other value's interval overlaps the best's: the run singles out nothing."""
    return len(choice.summaries) > 1 and len(choice.indistinguishable) == len(choice.summaries) - 1


def _headline(choice: Choice, claim: str, unit: str, show=str) -> str:
    figure = format_interval(choice.best_summary, unit)
    if _all_tied(choice):
        return (
            f"no clear difference: {show(choice.best)} has the best median ({figure}), but "
            "every other value's interval overlaps it"
        )
    return f"{claim} ({figure})" + _tied_text(choice, show)


def _tied_text(choice: Choice, show=str) -> str:
    if not choice.indistinguishable:
        return ""
    return f"; as good within the intervals: {', '.join(show(v) for v in choice.indistinguishable)}"


def _others(choice: Choice, unit: str, show=str) -> str:
    return "; ".join(
        f"{show(v)}: {format_interval(s, unit)}"
        for v, s in sorted(choice.summaries.items(), key=lambda item: str(item[0]))
        if v != choice.best
    )


# -- cache-wash (seed 000) ------------------------------------------------------------------


def _geometric(row: SurvivalRow) -> Effect:
    assert row.geometric is not None  # _survival_advice keeps the rows that have one
    return row.geometric


def _survival_advice(reps: list, huge_pages: str, cell: str) -> Advice | None:
    """From which shared_buffers the index survives the scan: the report's findings table."""
    rows = [r for r in survival_table(reps) if r.huge_pages == huge_pages and r.geometric]
    if not rows:
        return None
    within = f"within {(SURVIVAL_TOLERANCE - 1) * 100:.0f}% of idx1"
    size, _ = index_survives_from(reps, huge_pages)
    row = next((r for r in rows if r.shared_buffers_bytes == size), rows[-1])
    geometric = _geometric(row)
    interval = ratio_interval(geometric.ci_low, geometric.ci_high)
    figure = (
        f"idx2/idx1 {geometric.ratio:.2f} ({interval}) at {format_bytes(row.shared_buffers_bytes)}"
    )
    if size is None:
        recommendation = (
            f"no shared_buffers measured keeps idx2 (the lookups after the scan) "
            f"{within}: {figure}, the largest"
        )
    else:
        recommendation = (
            f"idx2 stays {within} (the index survives the scan) from "
            f"shared_buffers = {format_bytes(size)}: {figure}"
        )
    caveats = []
    if size is not None and row.verdict != "yes":
        caveats.append(
            f"that the index survives rests on the median ratio: the interval reaches past "
            f"{SURVIVAL_TOLERANCE:.2f} ({row.verdict})"
        )
    evidence = "; ".join(
        f"{format_bytes(r.shared_buffers_bytes)}: {_geometric(r).ratio:.2f} "
        f"({ratio_interval(_geometric(r).ci_low, _geometric(r).ci_high)}), {r.verdict}"
        for r in rows
    )
    return Advice(
        "shared_buffers", cell, recommendation, "idx2/idx1 per point: " + evidence, caveats
    )


def _huge_pages_advice(reps: list) -> Advice | None:
    """Huge pages on against off, per phase: the report's huge pages table."""
    found = {phase: huge_pages_effect(reps, phase) for phase in PHASES}
    effects = {phase: e for phase, e in found.items() if e is not None}
    if not effects:
        return None
    significant = {phase: e for phase, e in effects.items() if e.significant}

    def text(phase, effect) -> str:
        return (
            f"{phase} on/off ×{effect.ratio:.2f} ({ratio_interval(effect.ci_low, effect.ci_high)})"
        )

    if significant:
        recommendation = "huge pages change the latency: " + "; ".join(
            text(phase, e) + (" faster" if e.ratio < 1 else " SLOWER")
            for phase, e in significant.items()
        )
    else:
        recommendation = "huge pages: no clear difference in any phase"
    evidence = "; ".join(text(phase, e) for phase, e in effects.items())
    return Advice("huge_pages", "", recommendation, evidence, [])


def cache_wash_advice(data: RunData) -> list[Advice]:
    """Seed 000: where the index survives the scan, the shared_buffers that minimises idx2 (the
    index lookups after the scan), and what huge pages change."""
    reps = repetitions(data)
    advice = []
    for huge_pages in sorted({r.huge_pages for r in reps}, reverse=True):
        mine = [r for r in reps if r.huge_pages == huge_pages]
        cell = f"huge_pages={huge_pages}" if huge_pages else ""
        survival = _survival_advice(reps, huge_pages, cell)
        advice += [survival] if survival else []
        samples: dict[int, list[float]] = {}
        for rep in mine:
            samples.setdefault(rep.shared_buffers_bytes, []).append(rep.median("idx2"))
        choice = choose(samples, higher_is_better=False, show=format_bytes)
        if choice is None:
            continue
        others = _others(choice, " ms", format_bytes)
        caveats = list(choice.caveats)
        zeros, total = pgbench_logged_zeros(mine)  # runs stored before the client timing
        if zeros:
            caveats.append(
                f"pgbench logged {zeros} of {total} lookups as 0 us (a reply already there "
                "when it looked; runs before the client timing): the medians are biased low"
            )
        advice.append(
            Advice(
                "shared_buffers",
                cell,
                _headline(
                    choice,
                    f"shared_buffers = {format_bytes(choice.best)} gives the "
                    "fastest index lookups after a large scan, idx2",
                    " ms",
                    format_bytes,
                ),
                f"idx2 median {format_interval(choice.best_summary, ' ms')}"
                + (f"; others: {others}" if others else ""),
                caveats,
            )
        )
    on_off = _huge_pages_advice(reps)
    return advice + ([on_off] if on_off else [])


# -- a sweep of one value at peak throughput ---------------------------------------------------


def best_value_advice(data: RunData, topic: str, what: str) -> list[Advice]:
    """The value of `topic` at peak throughput, per combination of the other swept values."""
    advice = []
    for cell, samples in sorted(_tps_by_cell(data, topic).items(), key=lambda kv: str(kv[0])):
        if topic == "version":  # the A/A control repeats a version: it is not a candidate
            samples = {v: s for v, s in samples.items() if control_base(str(v)) is None}
        choice = choose(samples, higher_is_better=True)
        if choice is None:
            continue
        others = _others(choice, " tps")
        advice.append(
            Advice(
                topic,
                swept_text(cell),
                _headline(choice, f"{topic} = {choice.best} {what}", " tps"),
                f"{format_interval(choice.best_summary, ' tps')}"
                + (f"; others: {others}" if others else ""),
                choice.caveats,
            )
        )
    return advice


def control_advice(data: RunData) -> list[Advice]:
    """Issue 19: the A/A control's verdict first; an untrustworthy run casts doubt on the rest."""
    if "version" not in data.swept_keys:
        return []
    verdict = control_verdict(control_changes(version_samples(data)))
    if verdict is None:
        return []
    share = f"{verdict.significant} of {verdict.cells} cells ({verdict.share:.0%})"
    if verdict.trustworthy:
        return [
            Advice(
                "control",
                "",
                "the A/A control holds: identical clusters were told "
                "apart no more often than chance",
                f"significant in {share}; the limit is {CONTROL_SIGNIFICANT_LIMIT:.0%}",
                [],
            )
        ]
    return [
        Advice(
            "control",
            "",
            "UNTRUSTWORTHY RUN: do not act on its version differences; "
            "repeat it on a quieter machine or with more repetitions",
            f"the A/A control (one version on two clusters) is significant in {share}, "
            f"more than the {CONTROL_SIGNIFICANT_LIMIT:.0%} chance allows",
            ["differences between versions of the size the control shows may be noise"],
        )
    ]


# -- data sizes (seed 004): the report's steps ---------------------------------------------------


def _boundary_text(name: str | None, size_bytes: float | None, data: RunData) -> str:
    if size_bytes is None:  # a boundary with a name has its size
        return ""
    if name == SHARED_BUFFERS:
        return f"shared_buffers ({format_bytes(size_bytes)})"
    if name == MEMORY:
        what = "the memory limit" if data.memory_limit_bytes else "the machine's RAM"
        return f"{what} ({format_bytes(size_bytes)})"
    return ""


def _where(step, data: RunData) -> str:
    if step.boundary in (SHARED_BUFFERS, MEMORY):
        return "where the data outgrows " + _boundary_text(step.boundary, step.boundary_bytes, data)
    if step.boundary == DISK:
        return "past memory, as less of the data stays cached"
    return "at no boundary of this run"


def _steps_of_cell(results: list[PointResult], cell: tuple, data: RunData) -> list[Advice]:
    finding = points_steps(results, data.memory_available_bytes)
    if finding is None:
        return []
    where = swept_text(cell)
    caveats = (
        repetition_caveats(
            {r.point.label: summarise([m.tps for m in r.ok if m.tps]) for r in results if r.ok}
        )
        if results
        else []
    )
    measured = f"{format_bytes(finding.smallest_bytes)} .. {format_bytes(finding.largest_bytes)}"
    advice = []
    if not finding.steps:
        advice.append(
            Advice(
                "scale",
                where,
                f"no clear step: from {measured} of data no drop in tps is both "
                f"{MIN_STEP_RATIO:.1f}× or more and outside the noise of the repetitions",
                "plateau: "
                + ", ".join(s.points[0].label for s in finding.segments)
                + f" ({len(finding.segments)} segment(s) after merging)",
                caveats,
            )
        )
    for step in finding.steps:
        before, after = step.before.points[-1], step.after.points[0]
        interval = ratio_interval(step.ci_low, step.ci_high)
        advice.append(
            Advice(
                "scale",
                where,
                f"tps falls ×{ratio_text(step.ratio)} ({interval}) "
                f"from {before.label} ({format_bytes(before.size_bytes)}) to {after.label} "
                f"({format_bytes(after.size_bytes)}), {_where(step, data)}",
                f"plateaus either side: {step.before.geometric_mean_tps:,.0f} tps "
                f"({', '.join(p.label for p in step.before.points)}) → "
                f"{step.after.geometric_mean_tps:,.0f} tps "
                f"({', '.join(p.label for p in step.after.points)}), geometric means",
                caveats,
            )
        )
    for boundary in finding.boundaries:
        if boundary.step is not None:
            continue
        named = _boundary_text(boundary.name, boundary.size_bytes, data)
        if boundary.spanned:
            text = (
                f"no clear step at {named}, although the run measured databases on both sides of it"
            )
        else:
            side = "smaller" if finding.largest_bytes <= boundary.size_bytes else "larger"
            text = (
                f"the run cannot show a step at {named}: every database measured "
                f"({measured}) was {side} than it by more than a factor of {MATCH_FACTOR:g}"
            )
            if boundary.name == MEMORY and not data.memory_limit_bytes:
                text += " (a memory limit, [machine] memory, needs root)"
        advice.append(Advice("scale", where, text, f"databases measured: {measured}", []))
    return advice


def scale_advice(data: RunData) -> list[Advice]:
    """Seed 004: where throughput falls as the data grows, and the boundary it matches (the
    step finder of the report's steps section, per combination of the other swept values)."""
    by_cell: dict[tuple, list[PointResult]] = {}
    for result in data.points:
        if "scale" in result.point.swept:
            by_cell.setdefault(_cell(result, "scale"), []).append(result)
    advice = []
    for cell, results in sorted(by_cell.items(), key=lambda kv: str(kv[0])):
        advice += _steps_of_cell(results, cell, data)
    return advice


# -- versions (seed 001): the report's version-to-version table -------------------------------


def version_samples(data: RunData) -> dict[tuple, dict[str, list[float]]]:
    """Cell (the other swept values) -> version -> tps of each repetition."""
    samples: dict[tuple, dict[str, list[float]]] = {}
    for result in data.points:
        version = str(result.point.swept["version"])
        cell = _cell(result, "version")
        samples.setdefault(cell, {})[version] = [m.tps for m in result.ok if m.tps]
    return samples


def _change_text(change: VersionChange) -> str:
    return (
        f"×{change.ratio:.2f} ({ratio_interval(change.ci_low, change.ci_high)}) at "
        f"{swept_text(change.cell) or 'the one cell'}"
    )


def version_pair_advice(previous: str, version: str, changes: list[VersionChange]) -> Advice:
    faster = [c for c in changes if c.significant and c.ratio > 1]
    slower = [c for c in changes if c.significant and c.ratio < 1]
    unclear = len(changes) - len(faster) - len(slower)
    pair = f"{version} against {previous}"
    if not faster and not slower:
        low = min(c.ratio for c in changes)
        high = max(c.ratio for c in changes)
        every = "every" if all(c.ci_low is not None for c in changes) else "no"
        verb = "includes" if every == "every" else "excludes"
        recommendation = (
            f"{pair}: no clear difference in any of the {len(changes)} cells "
            f"(ratios {low:.2f}–{high:.2f}; {every} 95% interval {verb} 1)"
        )
    else:
        parts = []
        if faster:
            best = max(faster, key=lambda c: c.ratio)
            parts.append(
                f"faster in {len(faster)} of {len(changes)} cells (up to {_change_text(best)})"
            )
        if slower:
            worst = min(slower, key=lambda c: c.ratio)
            parts.append(f"SLOWER in {len(slower)} (down to {_change_text(worst)})")
        if unclear:
            parts.append(f"no clear difference in {unclear}")
        recommendation = f"{pair}: " + "; ".join(parts)
    caveats = []
    fewest = min(min(c.samples) for c in changes)
    if fewest < MIN_REPETITIONS:
        caveats.append(
            f"only {fewest} repetitions for some cells: intervals are wide; use "
            f"repetitions = {MIN_REPETITIONS} or more"
        )
    caveats.append(
        "the versions ran one after another: a change of the machine's load during "
        "the run lands on the versions, and these intervals cannot see it"
    )
    evidence = "tps ratio per cell: " + "; ".join(_change_text(c) for c in changes)
    return Advice("version", "", recommendation, evidence, caveats)


def version_advice(data: RunData) -> list[Advice]:
    """Each version against the one before it, over every cell: the report's table."""
    changes = version_changes(version_samples(data))
    pairs: dict[tuple[str, str], list[VersionChange]] = {}
    for change in changes:
        pairs.setdefault((change.previous, change.version), []).append(change)
    order = version_order(v for pair in pairs for v in pair)
    ordered = sorted(pairs, key=lambda pair: (order.index(pair[1]), order.index(pair[0])))
    return [
        version_pair_advice(previous, version, pairs[(previous, version)])
        for previous, version in ordered
    ]


# -- the cost of looking inside shared_buffers (seed 003): the report's sag table -----------


def sag_text(sag) -> str:
    interval = sag.sag_ci_percent
    if interval is None:
        return f"{sag.sag_percent:+.1f}% (no interval)"
    return f"{sag.sag_percent:+.1f}% ({interval[0]:+.1f}..{interval[1]:+.1f}%)"


def _at(item: MethodSag) -> str:
    return f"at {cell_text(item.cell)}"


def _quoted_ci(item: MethodSag) -> tuple[float, float] | None:
    """The quoted sag's interval (method_advice keeps the items that quote one)."""
    return item.quoted.sag_ci_percent if item.quoted is not None else None


def method_advice(method: str, mine: list[MethodSag], floor: list[MethodSag]) -> Advice:
    name = METHOD_NAMES.get(method, method)
    quoted = [s for s in mine if s.quoted is not None]
    within = any(s.within_runs is not None for s in quoted)
    kind = "tps sag within runs" if within else "tps sag between runs"
    if not quoted:
        return Advice(
            method,
            "",
            f"polling with {name}: no sag measured (no baseline or no measurement)",
            "",
            [],
        )
    costs = [s for s in quoted if (ci := _quoted_ci(s)) and ci[0] > 0]
    rest = [s for s in quoted if s not in costs]
    across = all((ci := _quoted_ci(s)) and ci[1] >= 0 for s in rest)
    if costs:
        recommendation = f"polling with {name} once a second costs " + ", ".join(
            f"{sag_text(s.quoted)} {_at(s)}" for s in costs
        )
        if rest:
            recommendation += "; no clear cost " + ", ".join(
                f"{_at(s)} ({sag_text(s.quoted)})" for s in rest
            )
        recommendation += f" ({kind}, 95% intervals)"
    else:
        recommendation = (
            f"polling with {name} once a second: no clear cost, "
            + ", ".join(f"{sag_text(s.quoted)} {_at(s)}" for s in rest)
            + f" ({kind}; "
            + ("every 95% interval includes 0)" if across else "no 95% interval lies above 0)")
        )
    evidence = (
        "sag = 1 − tps(polled window) / tps(the unpolled window next to it)"
        if within
        else "sag = 1 − tps(method) / tps(baseline), paired by round"
    )
    between = [s for s in mine if within and s.between_runs is not None]
    if between:
        evidence += "; between runs: " + ", ".join(
            f"{sag_text(s.between_runs)} {_at(s)}" for s in between
        )
    if floor:
        evidence += "; the baseline's A/A test (polling in neither window), the noise floor: " + (
            ", ".join(f"{sag_text(s.within_runs)} {_at(s)}" for s in floor)
        )
    caveats = []
    if any(_quoted_ci(s) is None for s in quoted):
        caveats.append("one ratio at some cells: no interval")
    if any((ci := _quoted_ci(s)) and ci[1] < 0 for s in quoted):
        caveats.append("tps higher while polling, beyond the interval: drift, not a gain")
    return Advice(method, "", recommendation, evidence, caveats)


def overhead_advice(data: RunData) -> list[Advice]:
    """Per inspect method, what polling once a second costs in tps, per cell, with the
    interval of the report's sag table (within runs when the run alternated windows)."""
    sags = method_sags(data)
    floor = [s for s in sags if s.method == "none" and s.within_runs is not None]
    methods = list(dict.fromkeys(s.method for s in sags if s.method != "none"))
    advice = [method_advice(m, [s for s in sags if s.method == m], floor) for m in methods]
    for cell, accuracies in cell_accuracy(data).items():
        advice.append(
            Advice(
                "inspect mode",
                swept_text(cell),
                accuracy_finding(accuracies),
                "each mode's snapshot between two exact references (snapshot mode) during the "
                "warm-ups; misplaced: the buffers counted outside the references' range per "
                "relation, halved",
            )
        )
    return advice


# -- compare: run B against run A ------------------------------------------------------------


def comparison_advice(comparison: Comparison) -> list[Advice]:
    """What `compare` found, in the same words as a run's advice."""
    points = [p for p in comparison.points if p.ratio is not None]
    if not points:
        return [
            Advice(
                "compare",
                "",
                "nothing to compare: no matched point has measurements in both runs",
                "",
                [],
            )
        ]

    def text(point) -> str:
        return (
            f"×{point.ratio:.2f} ({ratio_interval(point.ci_low, point.ci_high)}) at {point.label}"
        )

    ratios = [p.ratio for p in points if p.ratio is not None]  # all of them: see points
    faster = [p for p in points if p.significant and p.ratio is not None and p.ratio > 1]
    slower = [p for p in points if p.significant and p.ratio is not None and p.ratio < 1]
    unclear = len(points) - len(faster) - len(slower)
    if not faster and not slower:
        low, high = min(ratios), max(ratios)
        recommendation = (
            f"B against A: no clear difference at any of the {len(points)} "
            f"matched points (tps ratios {low:.2f}–{high:.2f}; no 95% interval "
            "excludes 1)"
        )
    else:
        parts = []
        if faster:
            parts.append(
                f"B is faster at {len(faster)} of {len(points)} points ("
                + ", ".join(text(p) for p in faster)
                + ")"
            )
        if slower:
            parts.append(f"SLOWER at {len(slower)} (" + ", ".join(text(p) for p in slower) + ")")
        if unclear:
            parts.append(f"no clear difference at {unclear}")
        recommendation = "; ".join(parts)
    caveats = []
    serious = [d.what for d in comparison.context if d.serious]
    if serious:
        caveats.append(
            f"the runs differ in {', '.join(serious)}, which can explain a "
            "difference in tps by itself"
        )
    evidence = "tps ratio B/A per point (geometric means): " + "; ".join(text(p) for p in points)
    return [Advice("compare", "", recommendation, evidence, caveats)]


# -- every run ---------------------------------------------------------------------------------


def offered_load_advice(data: RunData) -> list[Advice]:
    """The knee of a sweep of pgbench's -R, one line per cell (report/offered_load.py)."""
    biased = any(r.latency_percentiles and r.latency_percentiles.biased_low for r in data.points)
    caveats = (
        ["pgbench's log read low at some points (0 µs entries): their percentiles are too low"]
        if biased
        else []
    )
    return [
        Advice(
            "rate",
            cell,
            line,
            "latency percentiles from pgbench's per-transaction log, measured from each "
            "transaction's scheduled start (no coordinated omission); medians over the "
            "repetitions",
            list(caveats),
        )
        for cell, line in offered_load_findings(data)
    ]


def run_advice(data: RunData) -> list[Advice]:
    """Every piece of advice the run's sweep allows; a note when it allows none."""
    keys = data.swept_keys
    advice: list[Advice] = []
    if any(m.metrics.get("cache_wash") for r in data.points for m in r.ok):
        advice += cache_wash_advice(data)
    elif is_tpcc_run(data):
        advice += ladder_advice(data)
    elif is_overhead_run(data):
        advice += overhead_advice(data)
    elif "version" in keys:
        control = control_advice(data)
        advice += version_advice(data)
        if control and control[0].caveats:  # untrustworthy: every version verdict says so
            for item in advice:
                item.caveats.append(f"the run's A/A control says: {control[0].evidence}")
        advice = control + advice
    else:
        if "clients" in keys:
            advice += best_value_advice(data, "clients", "gives the peak throughput")
        if "scale" in keys:
            advice += scale_advice(data)
        if "rate" in keys:
            advice += offered_load_advice(data)
    if not advice:
        swept = ", ".join(keys) or "nothing"
        advice.append(
            Advice(
                "run",
                "",
                "no advice: the measurements answer none of the questions advise knows",
                f"the run swept {swept}; advise knows cache-wash, TPC-C ladder and "
                "inspect-overhead runs, and sweeps of clients, scale, rate or version",
                [],
            )
        )
    failed = sum(len(r.failures) for r in data.points)
    if failed:
        for item in advice:
            item.caveats.append(f"{failed} measurements failed and are left out")
    return advice
