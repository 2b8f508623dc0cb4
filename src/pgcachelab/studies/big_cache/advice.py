"""Seed 004's advice: where throughput falls as the data grows and the boundary it matches (the
step finder of the report's steps section); the peak over clients; the offered-load knee."""

from pgcachelab.analysis.advice import Advice, ratio_interval, ratio_text, repetition_caveats
from pgcachelab.analysis.rate_sweep import offered_load_findings
from pgcachelab.analysis.run_data import PointResult, RunData, swept_text
from pgcachelab.analysis.run_steps import points_steps
from pgcachelab.analysis.steps import (
    DISK,
    MATCH_FACTOR,
    MEMORY,
    MIN_STEP_RATIO,
    SHARED_BUFFERS,
    Step,
)
from pgcachelab.analysis.summary import summarise
from pgcachelab.analysis.sweep_advice import cell_without
from pgcachelab.store.records import Cell
from pgcachelab.units import format_bytes


def _boundary_text(name: str | None, size_bytes: float | None, data: RunData) -> str:
    if size_bytes is None:  # a boundary with a name has its size
        return ""
    if name == SHARED_BUFFERS:
        return f"shared_buffers ({format_bytes(size_bytes)})"
    if name == MEMORY:
        what = "the memory limit" if data.memory_limit_bytes else "the machine's RAM"
        return f"{what} ({format_bytes(size_bytes)})"
    return ""


def _where(step: Step, data: RunData) -> str:
    if step.boundary in (SHARED_BUFFERS, MEMORY):
        return "where the data outgrows " + _boundary_text(step.boundary, step.boundary_bytes, data)
    if step.boundary == DISK:
        return "past memory, as less of the data stays cached"
    return "at no boundary of this run"


def _steps_of_cell(results: list[PointResult], cell: Cell, data: RunData) -> list[Advice]:
    finding = points_steps(results, data.memory_available_bytes)
    if finding is None:
        return []
    where = swept_text(cell)
    caveats = (
        repetition_caveats(
            {
                r.point.label: summary
                for r in results
                if (summary := summarise([m.tps for m in r.ok if m.tps])) is not None
            }
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
    by_cell: dict[Cell, list[PointResult]] = {}
    for result in data.points:
        if "scale" in result.point.swept:
            by_cell.setdefault(cell_without(result, "scale"), []).append(result)
    advice = []
    for cell, results in sorted(by_cell.items(), key=lambda kv: str(kv[0])):
        advice += _steps_of_cell(results, cell, data)
    return advice


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
