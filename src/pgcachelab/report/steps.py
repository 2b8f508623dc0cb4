"""The steps section of a pgbench report over data sizes (seed 004): where tps drops, by how
much, and which boundary each step matches; or, plainly, that there is none."""

from markupsafe import Markup

from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.run_steps import disk_label, emulated_disk, run_steps
from pgcachelab.analysis.step_resources import step_explanation
from pgcachelab.analysis.steps import (
    DISK,
    MATCH_FACTOR,
    MEMORY,
    MIN_STEP_RATIO,
    SHARED_BUFFERS,
    Step,
    StepFinding,
)
from pgcachelab.report.render import macro, table
from pgcachelab.units import format_bytes


def _interval(step: Step) -> str:
    if step.ci_low is None:
        return "no interval (one repetition)"
    return f"{step.ci_low:.2f}–{step.ci_high:.2f}"


def _between(step: Step) -> str:
    return (
        f"{step.before.points[-1].label} ({format_bytes(step.last_size_before)}) → "
        f"{step.after.points[0].label} ({format_bytes(step.first_size_after)})"
    )


def boundary_text(name: str | None, size_bytes: float | None, data: RunData) -> Markup:
    """The boundary a step matches, for a table cell (templates/steps.html.j2's `boundary`)."""
    size = format_bytes(size_bytes) if size_bytes is not None else "?"
    kinds: dict[str | None, str] = {SHARED_BUFFERS: "shared_buffers", DISK: "disk"}
    kind = kinds.get(name)
    if name == MEMORY:
        kind = "memory limit" if data.memory_limit_bytes else "RAM"
    return _part("boundary", kind, size, disk_label(data) if name == DISK else None)


def _not_shown(name: str, size_bytes: float, finding: StepFinding, data: RunData) -> Markup:
    """Why a boundary's step could not appear in this run, and what would show it."""
    side = "smaller" if finding.largest_bytes <= size_bytes else "larger"
    measured = (
        f"every database measured was {side} than it by more than a factor of "
        f"{MATCH_FACTOR:g} ({format_bytes(finding.smallest_bytes)} .. "
        f"{format_bytes(finding.largest_bytes)})"
    )
    no_memory_limit = name == MEMORY and not data.memory_limit_bytes
    return _part("could_not_appear", measured, no_memory_limit)


def _boundary_table(finding: StepFinding, data: RunData) -> str:
    rows = []
    for boundary in finding.boundaries:
        if boundary.step is not None:
            index = finding.steps.index(boundary.step) + 1
            what = f"step {index}: ×{boundary.step.ratio:.2f} ({_interval(boundary.step)})"
        elif boundary.spanned:
            what = _part("no_step", f"{MATCH_FACTOR:g}")
        else:
            what = _not_shown(boundary.name, boundary.size_bytes, finding, data)
        rows.append([boundary_text(boundary.name, boundary.size_bytes, data), what])
    memory = next((b for b in finding.boundaries if b.name == MEMORY), None)
    disk_steps = [i + 1 for i, s in enumerate(finding.steps) if s.boundary == DISK]
    further = (
        f"; steps {', '.join(map(str, disk_steps))}: tps keeps falling as less of the data "
        "stays cached at each size"
        if disk_steps
        else ""
    )
    host_disk = "" if emulated_disk(data) else " (the host's disk: no emulated disk in this run)"
    if memory is not None and memory.step is not None:
        index = finding.steps.index(memory.step) + 1
        what = f"past step {index} the data no longer fits in memory{further}{host_disk}"
    elif memory is not None and memory.spanned:
        what = f"no significant step past memory{further}{host_disk}"
    else:
        what = _part("disk_could_not_appear", emulated_disk(data))
    rows.append([_part("disk", disk_label(data)), what])
    return table(None, rows, {1}, row_headers=True)


def _summary(finding: StepFinding) -> Markup:
    parts = [
        f"step {index} ×{step.ratio:.3g} ({_interval(step)}) at "
        f"{format_bytes(step.location_bytes)}, {_short_boundary(step.boundary)}"
        for index, step in enumerate(finding.steps, start=1)
    ]
    return _part(
        "summary",
        parts,
        format_bytes(finding.smallest_bytes),
        format_bytes(finding.largest_bytes),
        f"{MIN_STEP_RATIO:.1f}",
    )


def _short_boundary(name: str | None) -> str:
    names: dict[str | None, str] = {
        SHARED_BUFFERS: "shared_buffers",
        MEMORY: "memory",
        DISK: "past memory (the disk)",
    }
    return names.get(name, "no boundary")


def step_machine_text(step: Step, data: RunData) -> str | None:
    """The resource figures of the last point before the step and the first after it."""
    by_label = {r.point.label: r.resources for r in data.points}
    return step_explanation(
        by_label.get(step.before.points[-1].label), by_label.get(step.after.points[0].label)
    )


def _machine_text(step: Step, data: RunData) -> str:
    return step_machine_text(step, data) or "– (no resource series: measured before issue 32)"


def steps_html(data: RunData) -> str:
    finding = run_steps(data)
    if finding is None:
        return ""
    rows = [
        [
            index,
            _between(step),
            format_bytes(step.location_bytes),
            f"{step.before.geometric_mean_tps:,.0f} → {step.after.geometric_mean_tps:,.0f}",
            _part("drop", f"{step.ratio:.2f}"),
            _interval(step),
            boundary_text(step.boundary, step.boundary_bytes, data),
            _machine_text(step, data),
        ]
        for index, step in enumerate(finding.steps, start=1)
    ]
    head = [
        "step",
        "between the points",
        "at",
        "tps of the plateaus either side (geometric means)",
        "drop",
        "95% interval",
        "matches",
        "what the machine did (the points either side)",
    ]
    return str(
        _part(
            "steps",
            _summary(finding),
            Markup(table(head, rows, {1, 6, 7})) if rows else None,
            Markup(_boundary_table(finding, data)),
            f"{MIN_STEP_RATIO:.1f}",
            f"{MATCH_FACTOR:g}",
        )
    )


def _part(name: str, *args) -> Markup:
    """A part of the section as templates/steps.html.j2's macro `name` renders it: text
    escaped there, what is already HTML passed as Markup."""
    return macro("steps.html.j2", name)(*args)
