"""The report's measurement quality: the machine's noise on top, then the stability warnings,
one line per kind with the points it touches and one piece of advice, each kind's details
folded in a <details> (issue 25: 19 warnings repeating one advice per point went unread)."""

import html
import re
from dataclasses import dataclass

from pgcachelab.analysis.statistics import MIN_EXACT_95, WIDE_SPREAD_CV, StabilityWarning
from pgcachelab.report.dataset import RunData

# What each kind of warning is, in a few words: the line's title.
KIND_TITLES = {
    "repetitions": "too few repetitions for a 95% interval of the median",
    "spread": "repetitions spread widely",
    "unsettled": "never settled within the target interval",
    "trend": "tps trends during the measurement (no steady state)",
    "dips": "seconds with tps far below the median",
    "spikes": "seconds with tps far above the median",
}
POINTS_NAMED = 4  # on the summary line; the others are counted, and listed in the details


@dataclass(frozen=True)
class WarningKind:
    kind: str
    title: str
    advice: str  # "try ...": the same for every warning of the kind
    points: list[str]  # the points affected, each once, in run order
    warnings: list[StabilityWarning]


def _point_of(warning: StabilityWarning, labels: list[str]) -> str:
    """The point a warning is about: a measurement's warning names "label #repetition"."""
    if warning.point in labels:
        return warning.point
    return re.sub(r" #\d+$", "", warning.point)


def group_warnings(warnings: list[StabilityWarning], labels: list[str]) -> list[WarningKind]:
    """One group per kind, in the order the kinds first appear."""
    groups: dict[str, list[StabilityWarning]] = {}
    for warning in warnings:
        groups.setdefault(warning.kind or warning.problem, []).append(warning)
    found = []
    for kind, members in groups.items():
        points = list(dict.fromkeys(_point_of(w, labels) for w in members))
        found.append(
            WarningKind(
                kind,
                KIND_TITLES.get(kind, members[0].problem),
                members[0].try_next,
                points,
                members,
            )  # fmt: skip
        )
    return found


def _points_text(group: WarningKind) -> str:
    if group.points == ["run"]:
        return group.warnings[0].problem
    named = ", ".join(group.points[:POINTS_NAMED])
    more = len(group.points) - POINTS_NAMED
    where = f"{len(group.points)} point(s): {named}" + (f" and {more} more" if more > 0 else "")
    measurements = sum(1 for w in group.warnings if w.point not in group.points)
    if measurements:
        where += f" ({measurements} measurement(s))"
    return where


def warning_kind_html(group: WarningKind) -> str:
    """One line: the kind, where, and what to try; each warning in the folded details."""
    details = "".join(
        f"<li>{html.escape(w.point)}: {html.escape(w.problem)}</li>" for w in group.warnings
    )
    return (
        f'<li class="warning-kind" data-kind="{html.escape(group.kind)}"><details><summary>'
        f"<b>{html.escape(group.title)}</b>: {html.escape(_points_text(group))}; "
        f"<i>try {html.escape(group.advice)}</i></summary>"
        f"<ul class='warning-details'>{details}</ul></details></li>"
    )


def noise_html(data: RunData) -> str:
    parts = []
    measured = {name: n for name, n in data.noise.items() if n.median_cv is not None}
    for name, noise in measured.items():
        worst = max(noise.cv_by_point.values())
        parts.append(
            f"<p>Noise of this machine during the run ({html.escape(name)}): repeated identical "
            f"points vary by a median coefficient of variation of <b>{noise.median_cv:.1%}</b> "
            f"(worst point {worst:.1%}, {len(noise.cv_by_point)} points with 2+ repetitions). "
            "A difference between points of that order is within the machine's noise.</p>"
        )
    if not measured:
        parts.append("<p class='note'>No point has two repetitions: the machine's noise is "
                     "unknown. Use repetitions = 3 or more.</p>")  # fmt: skip
    return "".join(parts)


def quality_html(data: RunData) -> str:
    """The machine's noise, then the warnings by kind, then how they are found."""
    parts = [noise_html(data)]
    if data.schedule.get("repetitions") == "auto" and not data.unsettled:
        parts.append("<p>Every point settled within the target interval.</p>")
    groups = group_warnings(data.warnings, [r.point.label for r in data.points])
    if groups:
        lines = "".join(warning_kind_html(group) for group in groups)
        parts.append(
            f"<p>{len(data.warnings)} warning(s) of {len(groups)} kind(s) (open a line for "
            f"each point):</p><ul class='warnings'>{lines}</ul>"
        )
    else:
        parts.append("<p>No stability warning.</p>")
    parts.append(
        "<p class='note'>Medians come with the exact distribution-free 95% interval of the "
        f"median (order statistics, binomial): it needs {MIN_EXACT_95} repetitions; with fewer "
        "the interval shown is min..max with its real coverage (e.g. 75% for 3). Warnings: a "
        f"spread over {WIDE_SPREAD_CV:.0%} CV, fewer repetitions than a 95% interval needs, "
        "per-second tps (pgbench --progress, after progress_warmup seconds) trending by 5% or "
        "more with a significant slope, and seconds far below or above the median (dips, "
        "e.g. checkpoint stalls).</p>"
    )
    return "".join(parts)
