"""The report's measurement quality: the machine's noise on top, then the stability warnings,
one line per kind with the points it touches and one piece of advice, each kind's details
folded in a <details> (issue 25: 19 warnings repeating one advice per point went unread)."""

import re
from dataclasses import dataclass

from pgcachelab.analysis.hosts import (
    confounding_warning,
    overlap_warning,
    run_confounding,
    run_overlaps,
)
from pgcachelab.analysis.run_data import RunData
from pgcachelab.analysis.statistics import MIN_EXACT_95, WIDE_SPREAD_CV, StabilityWarning
from pgcachelab.report.render import macro, render

# What each kind of warning is, in a few words: the line's title.
KIND_TITLES = {
    "repetitions": "too few repetitions for a 95% interval of the median",
    "spread": "repetitions spread widely",
    "unsettled": "never settled within the target interval",
    "trend": "tps trends during the measurement (no steady state)",
    "dips": "seconds with tps far below the median",
    "spikes": "seconds with tps far above the median",
    "hosts": "points and host classes confounded",
    "overlap": "two agents on one host at once",
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
            )
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
    return str(macro("warning_kind.html.j2", "warning_kind")(group, _points_text(group)))


def quality_html(data: RunData) -> str:
    """The machine's noise, then the warnings by kind, then how they are found."""
    confounding = run_confounding(data)  # a run queued for agents on several host classes
    warnings = [confounding_warning(confounding)] if confounding else []
    overlaps = run_overlaps(data)  # agents sharing a machine
    warnings += [overlap_warning(overlaps)] if overlaps else []
    warnings += data.warnings
    groups = group_warnings(warnings, [r.point.label for r in data.points])
    return render(
        "quality.html.j2",
        noise_by_figure=[(name, n) for name, n in data.noise.items() if n.median_cv is not None],
        settled=data.schedule.get("repetitions") == "auto" and not data.unsettled,
        warnings=len(warnings),
        groups=[(group, _points_text(group)) for group in groups],
        min_exact=MIN_EXACT_95,
        wide_spread_cv=WIDE_SPREAD_CV,
    )
