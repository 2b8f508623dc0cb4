"""The version part of a report (seed 001): throughput against clients, one line per version,
for each scale class and mode; and the version-to-version table with its intervals."""

import html
import itertools
import math
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
from markupsafe import Markup  # noqa: E402

from pgcachelab.analysis.versions import (  # noqa: E402
    CONTROL_SIGNIFICANT_LIMIT,
    ControlVerdict,
    VersionChange,
    control_base,
    control_changes,
    control_verdict,
    differing_settings,
    direction_disagreements,
    version_changes,
    version_order,
)
from pgcachelab.report.advice import version_samples  # noqa: E402
from pgcachelab.report.dataset import PointResult, RunData, swept_text  # noqa: E402
from pgcachelab.report.html import readable_setting  # noqa: E402
from pgcachelab.report.plots import TPS_LABEL, progress_plot, save_figure  # noqa: E402
from pgcachelab.report.render import ALL_COLUMNS, Row, Section, table  # noqa: E402
from pgcachelab.units import format_bytes  # noqa: E402

TITLE = "Version to version"
X_KEY = "clients"


def is_version_run(data: RunData) -> bool:
    return "version" in data.swept_keys


def _cell(result: PointResult, leave_out: tuple[str, ...] = ("version",)) -> tuple:
    return tuple((k, v) for k, v in result.point.swept.items() if k not in leave_out)


def version_label(data: RunData, version: str) -> str:
    known = (data.run.target.get("versions") or {}).get(version) or {}
    twin = " (A/A control)" if control_base(version) is not None else ""
    return f"PostgreSQL {known.get('server_version') or version}{twin}"


def _panel_title(panel: tuple, results: list[PointResult]) -> str:
    """The cell, and what a scale class came to: its scale and the database's size."""
    title = swept_text(panel)
    scales = {(m.metrics.get("data") or {}).get("scale") for r in results for m in r.ok}
    scales.discard(None)
    sizes = [r.database_size_bytes for r in results if r.database_size_bytes]
    if "scale_class" in dict(panel) and len(scales) == 1:
        title += f" (scale {scales.pop()}, {format_bytes(max(sizes)) if sizes else '?'})"
    return title


def clients_panels(data: RunData) -> dict[tuple, list[PointResult]]:
    """The points of each panel: one per combination of the swept keys other than version and
    clients (scale class x mode, x storage with a disk sweep: the seed's charts)."""
    panels: dict[tuple, list[PointResult]] = {}
    for result in data.points:
        panels.setdefault(_cell(result, ("version", X_KEY)), []).append(result)
    return panels


def clients_plot(data: RunData, out_dir: Path) -> list[Path]:
    """One panel per scale class x mode (every other swept combination), clients on x."""
    if X_KEY not in data.swept_keys:
        return []
    panels = clients_panels(data)
    modes = list(dict.fromkeys(r.point.swept.get("mode") for r in data.points))
    columns = len(modes) if 1 < len(modes) <= 4 else min(3, len(panels))
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(
        rows, columns, figsize=(5.2 * columns, 3.6 * rows), squeeze=False
    )  # fmt: skip
    versions = version_order(str(r.point.swept["version"]) for r in data.points)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    colors = dict(zip(versions, itertools.cycle(palette), strict=False))
    clients = sorted({r.point.swept[X_KEY] for r in data.points})
    for axis, (panel, results) in zip(axes.flat, panels.items(), strict=False):
        for version in versions:
            mine = sorted(
                (r for r in results if str(r.point.swept["version"]) == version and r.tps),
                key=lambda r: r.point.swept[X_KEY],
            )
            if not mine:
                continue
            xs = [r.point.swept[X_KEY] for r in mine]
            axis.fill_between(xs, [r.tps.minimum for r in mine], [r.tps.maximum for r in mine],
                              color=colors[version], alpha=0.18, linewidth=0)  # fmt: skip
            twin = control_base(version)  # the control: its twin's colour, dashed
            color = colors[twin] if twin in colors else colors[version]
            axis.plot(xs, [r.tps.median for r in mine], marker="o", markersize=4,
                      color=color, linestyle="--" if twin else "-",
                      label=version_label(data, version))  # fmt: skip
        axis.set_title(_panel_title(panel, results) or data.run.name, fontsize=9)
        axis.set_xscale("log", base=2)
        axis.set_xticks(clients, [str(c) for c in clients])
        axis.minorticks_off()
        axis.set_xlabel("clients (log scale)")
        axis.set_ylabel(TPS_LABEL)
        axis.set_ylim(bottom=0)
        axis.grid(alpha=0.3)
        axis.legend(fontsize=7)
    for axis in list(axes.flat)[len(panels) :]:
        axis.set_visible(False)
    figure.suptitle(
        f"{data.run.name}: throughput against clients per version "
        "(line: median, band: min..max of the repetitions)",
        fontsize=11,
    )
    figure.tight_layout()
    return save_figure(figure, out_dir, "tps-by-clients-per-version")


def _change_row(change: VersionChange) -> Row:
    if change.ci_low is None:
        interval, verdict = "–", "too few repetitions"
    else:
        interval = f"{change.ci_low:.3f}..{change.ci_high:.3f}"
        verdict = "no significant change"
        if change.significant:
            verdict = "faster" if change.ratio > 1 else "SLOWER"
    cells = [swept_text(change.cell), f"{change.previous} → {change.version}",
             f"{change.ratio:.3f}", interval, verdict,
             f"{change.samples[0]} / {change.samples[1]}"]  # fmt: skip
    return Row(cells, "failed" if verdict == "SLOWER" else "")


def changes_html(data: RunData, changes: list[VersionChange]) -> str:
    if not changes:
        return "<p class='note'>No cell was measured on two versions.</p>"
    significant = [c for c in changes if c.significant]
    slower = [c for c in significant if c.ratio < 1]
    head = ["cell", "versions", "ratio", "95% CI", "verdict", "repetitions"]
    skipped = data.run.target.get("skipped_settings") or {}
    skipped_note = "".join(
        f"<p class='note'>PostgreSQL {html.escape(v)} does not know "
        f"{html.escape(', '.join(names))}: its points ran without them.</p>"
        for v, names in skipped.items()
    )
    return (
        f"<p>{len(changes)} version-to-version comparisons; {len(significant)} significant "
        f"({len(significant) - len(slower)} faster, {len(slower)} slower).</p>"
        "<p class='note'>Ratio: geometric mean of the tps of the newer version's repetitions "
        "over the older one's, in the same cell. 95% interval: Welch's t on the logarithms of "
        "tps (independent samples, unequal variances). Significant: the interval excludes 1. "
        "Every version is driven by the same pgbench; the data of each version and scale is "
        f"initialised once and reused by every mode and client count. {_schedule_note(data)}"
        "</p>"
        f"{skipped_note}" + table(head, [_change_row(c) for c in changes], ALL_COLUMNS)
    )


def _schedule_note(data: RunData) -> str:
    rounds = (data.run.environment.get("schedule") or {}).get("version_rounds")
    if not rounds:  # runs stored before issue 19: one version after another
        return (
            "Versions ran one after another (read-write points update rows in place and "
            "their changes are not undone), so a change of the machine's load during the run "
            "lands on the versions and these intervals cannot see it: compare on a quiet "
            "machine, or repeat the run with the versions in the other order."
        )
    orders = "; ".join(
        html.escape(f"round {r['round'] + 1}, {r['group']}: {' → '.join(r['versions'])}")
        for r in rounds
    )
    return (
        "Versions were interleaved: every round gave each version a turn in each data group, "
        "in an order shuffled per round and recorded, with the other versions' files dropped "
        "from the OS cache at each start, so a change of the machine's load spreads over all "
        "versions instead of landing on one. Within a turn read-only points ran before "
        "read-write ones, so every read-only point saw the data the earlier rounds' writes "
        f"left, whatever the round. The order: {orders}."
    )


def _verdict_text(change: VersionChange) -> str:
    if change.ci_low is None:
        return "–"
    return "significant" if change.significant else "no significant difference"


def control_html(data: RunData, changes: list[VersionChange]) -> tuple[str, ControlVerdict | None]:
    """The A/A control's cells: the run's noise floor, and whether the run can be trusted."""
    if not changes:
        return "", None
    verdict = control_verdict(changes)
    head = ["cell", "pair", "ratio", "95% CI", "verdict", "repetitions"]
    rows = [
        Row([swept_text(c.cell), f"{c.previous} ↔ {c.version}", f"{c.ratio:.3f}",
             "–" if c.ci_low is None else f"{c.ci_low:.3f}..{c.ci_high:.3f}",
             _verdict_text(c), f"{c.samples[0]} / {c.samples[1]}"],
            "failed" if c.significant else "")
        for c in changes
    ]  # fmt: skip
    if verdict is None:
        summary = "<p class='note'>The control has too few repetitions for an interval.</p>"
    else:
        share = f"{verdict.significant} of {verdict.cells} cells ({verdict.share:.0%})"
        if verdict.trustworthy:
            summary = (
                f"<p>A/A control: the twin clusters differ significantly in {share}, within "
                f"the {CONTROL_SIGNIFICANT_LIMIT:.0%} that chance allows at the 95% level: "
                "two identical clusters measured in these rounds were told apart no more often "
                "than chance would.</p>"
            )
        else:
            summary = (
                f"<p class='warning'><strong>UNTRUSTWORTHY RUN:</strong> the A/A control's twin "
                f"clusters, the same version with the same settings, differ significantly in "
                f"{share}, more than the {CONTROL_SIGNIFICANT_LIMIT:.0%} chance allows at the "
                "95% level. Differences of that size between versions may be the run's noise "
                "(the machine's load, the clusters' placement): repeat the run, on a quieter "
                "machine or with more repetitions.</p>"
            )
    return (
        "<h3>A/A control: one version on two clusters</h3>"
        f"{summary}"
        "<p class='note'>One version measured twice, as two independent clusters with their "
        "own data, in the same rounds as the others. Its ratios should be 1; how far they "
        "stray is the noise floor of every version-to-version ratio in this run. About one "
        "cell in twenty is significant by chance alone.</p>" + table(head, rows, ALL_COLUMNS),
        verdict,
    )


def agreement_html(changes: list[VersionChange], previous: RunData | None) -> str:
    """Whether the previous run of the spec found its significant changes in the same
    direction as this one; the disagreements listed when it did not."""
    if previous is None or not is_version_run(previous):
        return ""
    both, disagreeing = direction_disagreements(changes, version_changes(version_samples(previous)))
    name = html.escape(previous.run.run_id)
    if not both:
        return (f"<p class='note'>Against run {name} (the previous run of this spec): no "
                "change is significant in both runs.</p>")  # fmt: skip
    if not disagreeing:
        return (f"<p>Against run {name} (the previous run of this spec): the {both} changes "
                "significant in both runs agree in direction.</p>")  # fmt: skip
    items = "".join(
        f"<li>{html.escape(swept_text(d.cell))}: {html.escape(d.previous)} → "
        f"{html.escape(d.version)} ×{d.ratio:.3f} here, ×{d.other_ratio:.3f} in run {name}</li>"
        for d in disagreeing
    )
    return (
        f"<p class='warning'><strong>The runs disagree:</strong> of the {both} changes "
        f"significant both here and in run {name} (the previous run of this spec), "
        f"{len(disagreeing)} point the other way:</p><ul>{items}</ul>"
    )


def settings_by_version(data: RunData) -> dict[str, dict[str, str]]:
    """The settings each version's server reported (its first recorded point)."""
    by_version: dict[str, dict[str, str]] = {}
    for result in data.points:
        version = str(result.point.swept["version"])
        settings = data.server_settings.get(result.point.point_index)
        if control_base(version) is not None:  # its twin's defaults, by construction
            continue
        if settings and version not in by_version:
            by_version[version] = {name: readable_setting(s) for name, s in settings.items()}
    return by_version


def version_settings_html(data: RunData) -> str:
    """The defaults that differ between the versions, one column per version (one unit per
    amount: 9.6 counts max_wal_size in 16MB segments)."""
    differing = differing_settings(settings_by_version(data))
    if not differing:
        return ""
    versions = version_order(next(iter(differing.values())))
    rows = [[name, *(values[v] for v in versions)] for name, values in differing.items()]
    return (
        "<h3>Settings that differ between the versions</h3>"
        "<p class='note'>Every version ran the same spec; these are the defaults that changed "
        "between releases (as pg_settings reported them), part of what each "
        "version's numbers mean.</p>" + table(["setting", *versions], rows, ALL_COLUMNS)
    )


def versions_section(data: RunData, out_dir: Path, previous: RunData | None = None) -> Section:
    """Plots (one line per version in panels, standing for the generic plots), the
    version-to-version table, the A/A control's cells and, given the previous run of the spec,
    whether the two agree; empty when the run swept no version."""
    if not is_version_run(data):
        return Section(TITLE)
    samples = version_samples(data)
    changes = version_changes(samples)
    control, _ = control_html(data, control_changes(samples))
    body = changes_html(data, changes) + agreement_html(changes, previous) + control
    plots = clients_plot(data, out_dir) + progress_plot(data, out_dir)
    return Section(TITLE, Markup(body + version_settings_html(data)), plots, generic_plots=False)
