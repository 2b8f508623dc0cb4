"""The version part of a report (seed 001): throughput against clients, one line per version,
for each scale class and mode; and the version-to-version table with its intervals."""

import itertools
import math
from collections.abc import Iterable
from pathlib import Path

from markupsafe import Markup
from matplotlib.axes import Axes

from pgcachelab.analysis.run_data import PointResult, RunData, swept_text
from pgcachelab.analysis.versions import (
    CONTROL_SIGNIFICANT_LIMIT,
    VersionChange,
    control_base,
    control_changes,
    control_verdict,
    differing_settings,
    direction_disagreements,
    version_changes,
    version_order,
)
from pgcachelab.report.html import readable_setting
from pgcachelab.report.plots import TPS_LABEL, progress_plot, save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import ALL_COLUMNS, Row, Section, render, table
from pgcachelab.store.records import Cell
from pgcachelab.studies.versions.advice import version_samples
from pgcachelab.studies.versions.claims import compiled_by, compiler_release
from pgcachelab.units import format_bytes

TITLE = "Version to version"
X_KEY = "clients"


def is_version_run(data: RunData) -> bool:
    return "version" in data.swept_keys


def _cell(result: PointResult, leave_out: tuple[str, ...] = ("version",)) -> Cell:
    return tuple((k, v) for k, v in result.point.swept.items() if k not in leave_out)


def version_label(data: RunData, version: str) -> str:
    known = (data.run.target.get("versions") or {}).get(version) or {}
    twin = " (A/A control)" if control_base(version) is not None else ""
    return f"PostgreSQL {known.get('server_version') or version}{twin}"


def _panel_title(panel: Cell, results: list[PointResult]) -> str:
    """The cell, and what a scale class came to: its scale and the database's size."""
    title = swept_text(panel)
    scales = {(m.metrics.get("data") or {}).get("scale") for r in results for m in r.ok}
    scales.discard(None)
    sizes = [r.database_size_bytes for r in results if r.database_size_bytes]
    if "scale_class" in dict(panel) and len(scales) == 1:
        title += f" (scale {scales.pop()}, {format_bytes(max(sizes)) if sizes else '?'})"
    return title


def _label_panel(
    axis: Axes, data: RunData, panel: Cell, results: list[PointResult], x_label: str
) -> None:
    """A throughput panel's title, axes, grid and legend."""
    axis.set_title(_panel_title(panel, results) or data.run.name, fontsize=9)
    axis.set_xlabel(x_label)
    axis.set_ylabel(TPS_LABEL)
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=7)


def _hide_unused(axes: Iterable[Axes], used: int) -> None:
    """`axes`: a figure's grid of panels, flat; those past the `used` ones are hidden."""
    for axis in list(axes)[used:]:
        axis.set_visible(False)


def clients_panels(data: RunData) -> dict[Cell, list[PointResult]]:
    """The points of each panel: one per combination of the swept keys other than version and
    clients (scale class x mode, x storage with a disk sweep: the seed's charts)."""
    panels: dict[Cell, list[PointResult]] = {}
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
    figure, axes = plt.subplots(rows, columns, figsize=(5.2 * columns, 3.6 * rows), squeeze=False)
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
            tps = [r.tps for r in mine if r.tps is not None]  # all of them: see mine
            axis.fill_between(
                xs,
                [s.minimum for s in tps],
                [s.maximum for s in tps],
                color=colors[version],
                alpha=0.18,
                linewidth=0,
            )
            twin = control_base(version)  # the control: its twin's colour, dashed
            color = colors[twin] if twin in colors else colors[version]
            axis.plot(
                xs,
                [s.median for s in tps],
                marker="o",
                markersize=4,
                color=color,
                linestyle="--" if twin else "-",
                label=version_label(data, version),
            )
        axis.set_xscale("log", base=2)
        axis.set_xticks(clients, [str(c) for c in clients])
        axis.minorticks_off()
        _label_panel(axis, data, panel, results, "clients (log scale)")
    _hide_unused(axes.flat, len(panels))
    figure.suptitle(
        f"{data.run.name}: throughput against clients per version "
        "(line: median, band: min..max of the repetitions)",
        fontsize=11,
    )
    figure.tight_layout()
    return save_figure(figure, out_dir, "tps-by-clients-per-version")


def version_plot(data: RunData, out_dir: Path) -> list[Path]:
    """The article's story at a glance: one panel per scale class x mode (x storage ...),
    versions in release order on x, one line per client count (median, min..max bars); the
    A/A control a hollow marker beside its twin. Versions the machine could not obtain are
    ticks with no point, named in the title."""
    panels = clients_panels(data)
    if not panels:
        return []
    versions = version_order(str(r.point.swept["version"]) for r in data.points)
    unavailable = set(data.run.target.get("unavailable") or {})
    measured = [v for v in versions if control_base(v) is None]
    positions = {v: i for i, v in enumerate(measured)}
    columns = min(2, len(panels)) if len(panels) <= 6 else 3
    rows = math.ceil(len(panels) / columns)
    figure, axes = plt.subplots(
        rows,
        columns,
        figsize=(max(5.2, 0.62 * len(measured) + 2.6) * columns, 3.5 * rows),
        squeeze=False,
    )
    clients = sorted({r.point.swept.get(X_KEY) for r in data.points}, key=lambda c: c or 0)
    palette = plt.rcParams["axes.prop_cycle"].by_key()["color"]
    for axis, (panel, results) in zip(axes.flat, panels.items(), strict=False):
        for color, count in zip(itertools.cycle(palette), clients, strict=False):
            mine = [r for r in results if r.point.swept.get(X_KEY) == count and r.tps]
            line = sorted(
                (r for r in mine if control_base(str(r.point.swept["version"])) is None),
                key=lambda r: positions[str(r.point.swept["version"])],
            )
            stats = [r.tps for r in line if r.tps is not None]
            xs = [positions[str(r.point.swept["version"])] for r in line]
            medians = [s.median for s in stats]
            axis.errorbar(
                xs,
                medians,
                yerr=[[m - s.minimum for m, s in zip(medians, stats, strict=True)],
                      [s.maximum - m for m, s in zip(medians, stats, strict=True)]],
                marker="o", markersize=4, capsize=2, color=color,
                label=f"{count} clients" if count else "median",
            )  # fmt: skip
            for r in mine:  # the A/A control: hollow, a little to the right of its twin
                twin = control_base(str(r.point.swept["version"]))
                if twin in positions and r.tps is not None:
                    axis.plot(positions[twin] + 0.18, r.tps.median, marker="o",
                              markerfacecolor="none", color=color, markersize=5)  # fmt: skip
        axis.set_xticks(
            range(len(measured)),
            [f"{v}\n(none)" if v in unavailable else v for v in measured],
            fontsize=8,
        )
        _label_panel(axis, data, panel, results, "PostgreSQL major version (release order)")
    _hide_unused(axes.flat, len(panels))
    missing = f"; not installed here: {', '.join(sorted(unavailable))}" if unavailable else ""
    figure.suptitle(
        f"{data.run.name}: throughput by version (point: median, bar: min..max of the "
        f"repetitions; hollow: the A/A control){missing}",
        fontsize=10,
    )
    figure.tight_layout()
    return save_figure(figure, out_dir, "tps-by-version")


def compiler_steps(data: RunData) -> list[str]:
    """The steps between consecutive versions whose servers different compilers built:
    "10 → 11 (gcc 4.4 → gcc 7)"."""
    compilers = compiled_by(data)
    versions = [v for v in version_order(compilers) if control_base(v) is None]
    steps = []
    for older, newer in itertools.pairwise(versions):
        before, after = compiler_release(compilers[older]), compiler_release(compilers[newer])
        if before != after:
            steps.append(f"{older} → {newer} ({before} → {after})")
    return steps


def installs_rows(data: RunData) -> list[list[str]]:
    """Each version: where its server came from, the compiler that built it, and how the lab
    built it when it did; then each version the machine could not obtain, with the reason."""
    target = data.run.target or {}
    compilers = compiled_by(data)
    rows = []
    for version in version_order(target.get("versions") or {}):
        if control_base(version) is not None:
            continue
        known = target["versions"][version]
        record = known.get("install") or {}
        built = ""
        if record.get("compiler"):
            built = f"{record['compiler']}; CFLAGS {record.get('cflags', '?')}"
        translated = (target.get("translated_settings") or {}).get(version) or {}
        renamed = ", ".join(f"{a} as {b}" for a, b in translated.items())
        rows.append([
            version, str(known.get("server_version") or ""), str(known.get("source") or ""),
            compilers.get(version, "?"), built or "as published", renamed or "–",
        ])  # fmt: skip
    for version, reason in (target.get("unavailable") or {}).items():
        if control_base(version) is None:
            rows.append([version, "–", f"not installed here: {reason}", "–", "–", "–"])
    return rows


def _change_row(change: VersionChange) -> Row:
    if change.ci_low is None:
        interval, verdict = "–", "too few repetitions"
    else:
        interval = f"{change.ci_low:.3f}..{change.ci_high:.3f}"
        verdict = "no significant change"
        if change.significant:
            verdict = "faster" if change.ratio > 1 else "SLOWER"
    cells = [
        swept_text(change.cell),
        f"{change.previous} → {change.version}",
        f"{change.ratio:.3f}",
        interval,
        verdict,
        f"{change.samples[0]} / {change.samples[1]}",
    ]
    return Row(cells, "failed" if verdict == "SLOWER" else "")


def _interleaved_rounds(data: RunData) -> list[str]:
    """The order of each round (issue 19); none for runs that ran one version after another."""
    rounds = (data.run.environment.get("schedule") or {}).get("version_rounds") or []
    return [f"round {r['round'] + 1}, {r['group']}: {' → '.join(r['versions'])}" for r in rounds]


def _verdict_text(change: VersionChange) -> str:
    if change.ci_low is None:
        return "–"
    return "significant" if change.significant else "no significant difference"


def _control_rows(changes: list[VersionChange]) -> list[Row]:
    """The A/A control's cells: the run's noise floor."""
    return [
        Row(
            [
                swept_text(c.cell),
                f"{c.previous} ↔ {c.version}",
                f"{c.ratio:.3f}",
                "–" if c.ci_low is None else f"{c.ci_low:.3f}..{c.ci_high:.3f}",
                _verdict_text(c),
                f"{c.samples[0]} / {c.samples[1]}",
            ],
            "failed" if c.significant else "",
        )
        for c in changes
    ]


def _agreement(changes: list[VersionChange], previous: RunData | None) -> dict[str, object]:
    """Whether the previous run of the spec found its significant changes in the same
    direction as this one; the disagreements listed when it did not."""
    if previous is None or not is_version_run(previous):
        return {"previous": None, "agreeing_both": 0, "disagreeing": []}
    both, disagreeing = direction_disagreements(changes, version_changes(version_samples(previous)))
    return {
        "previous": previous.run.run_id,
        "agreeing_both": both,
        "disagreeing": [(swept_text(d.cell), d) for d in disagreeing],
    }


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


def _settings_table(data: RunData) -> str:
    """The defaults that differ between the versions, one column per version (one unit per
    amount: 9.6 counts max_wal_size in 16MB segments)."""
    differing = differing_settings(settings_by_version(data))
    if not differing:
        return ""
    versions = version_order(next(iter(differing.values())))
    rows = [[name, *(values[v] for v in versions)] for name, values in differing.items()]
    return table(["setting", *versions], rows, ALL_COLUMNS)


def versions_section(data: RunData, out_dir: Path, previous: RunData | None = None) -> Section:
    """Plots (one line per version in panels, standing for the generic plots), the
    version-to-version table, the A/A control's cells and, given the previous run of the spec,
    whether the two agree; empty when the run swept no version."""
    if not is_version_run(data):
        return Section(TITLE)
    samples = version_samples(data)
    changes = version_changes(samples)
    significant = [c for c in changes if c.significant]
    control = control_changes(samples)
    verdict = control_verdict(control) if control else None
    head = ["cell", "versions", "ratio", "95% CI", "verdict", "repetitions"]
    body = render(
        "versions.html.j2",
        changes=changes,
        significant=len(significant),
        slower=sum(1 for c in significant if c.ratio < 1),
        rounds=_interleaved_rounds(data),
        skipped=list((data.run.target.get("skipped_settings") or {}).items()),
        changes_table=Markup(table(head, [_change_row(c) for c in changes], ALL_COLUMNS)),
        **_agreement(changes, previous),
        control_table=Markup(
            table(["cell", "pair", *head[2:]], _control_rows(control), ALL_COLUMNS)
        )
        if control
        else "",
        verdict=verdict,
        share=f"{verdict.significant} of {verdict.cells} cells ({verdict.share:.0%})"
        if verdict
        else "",
        limit=CONTROL_SIGNIFICANT_LIMIT,
        settings_table=Markup(_settings_table(data)),
        installs_table=Markup(
            table(
                ["version", "server", "from", "compiled by", "built", "settings renamed"],
                installs_rows(data),
                ALL_COLUMNS,
            )
        ),
        pgbench=(data.run.target or {}).get("pgbench"),
        compiler_steps=compiler_steps(data),
    )
    several_clients = len({r.point.swept.get(X_KEY) for r in data.points}) > 1
    plots = (
        version_plot(data, out_dir)
        + (clients_plot(data, out_dir) if several_clients else [])
        + progress_plot(data, out_dir)
    )
    return Section(TITLE, Markup(body), plots, generic_plots=False)
