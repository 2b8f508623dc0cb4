"""The overhead part of a report (seed 003): tps sag per inspect method, snapshot time against
shared_buffers, and each pg_cachelab mode's error under the load. Shown when a run sweeps
`inspect_method`."""

import statistics
from pathlib import Path

from markupsafe import Markup

from pgcachelab.analysis.inspect_accuracy import ModeAccuracy
from pgcachelab.analysis.inspect_overhead import (
    BASELINE,
    Sag,
    interval_above,
    sag_above,
)
from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.summary import Summary, summarise
from pgcachelab.analysis.versions import version_order
from pgcachelab.analysis.wait_events import (
    POLLED,
    QUIET,
    WHOLE_RUN,
    buffer_mapping_excess,
    tally_measurements,
)
from pgcachelab.report.plots import save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import Section, macro, table
from pgcachelab.store.records import Cell
from pgcachelab.studies.inspect_overhead.sags import (
    KEY,
    METHOD_NAMES,
    MethodSag,
    cell_accuracy,
    cell_text,
    cells,
    method_sags,
    window_length_s,
)
from pgcachelab.units import format_bytes

TITLE = "The cost of looking inside shared_buffers"


def _times_ms(data: RunData, point_index: int) -> list[float]:
    return [
        s.elapsed_ms
        for s in data.snapshots
        if s.point_index == point_index and s.label == "sample" and s.elapsed_ms is not None
    ]


def _cpu_ms(data: RunData, point_index: int) -> list[float]:
    """Server CPU time of each periodic snapshot (sampler: /proc of the polling backend)."""
    return [
        s.data["server_cpu_ms"]
        for s in data.snapshots
        if s.point_index == point_index
        and s.label == "sample"
        and s.data
        and "server_cpu_ms" in s.data
    ]


def cpu_share(cpu_ms: float, elapsed_ms: float | None, cores: int) -> float:
    """% of the machine's CPU that polling once a second takes: a snapshot that outlasts the
    second is followed by the next one at once (the sampler skips the ticks it overran)."""
    return 100 * cpu_ms / max(1000.0, elapsed_ms or 0.0) / cores


def _pct(value: float) -> str:
    return f"{value:+.2f}"


def _sag_cells(sag: Sag | None) -> list[str]:
    """Sag %, its 95% interval, and how many ratios it averages (rounds or window pairs)."""
    if sag is None:
        return ["–", "–", "–"]
    interval = sag.sag_ci_percent
    return [
        _pct(sag.sag_percent),
        "–" if interval is None else f"{_pct(interval[0])}..{_pct(interval[1])}",
        str(sag.ratios.n),
    ]


def _extension_mode(method: str) -> str | None:
    """ "extension/fast" -> "fast"; "extension" -> "consistent"; other methods None."""
    name, _, mode = method.partition("/")
    return (mode or "consistent") if name == "extension" else None


def _table(head: list[str], rows: list[list[str]]) -> str:
    """The first two columns (cell, method) are text."""
    return table(head, rows, range(2))


def sag_table(data: RunData, accuracy: dict[Cell, dict[str, ModeAccuracy]]) -> str:
    """The sag per method with its interval (within runs first: the figure to quote), the
    snapshot's time and CPU share; the rest of each point's figures in a detail table."""
    cores = data.run.environment.get("cores") or 1
    window_s = window_length_s(data)  # 0: the run did not alternate windows
    summary_ms = {
        cell: _median(_times_ms(data, methods["summary"].point.point_index))
        for cell, methods in cells(data).items()
        if "summary" in methods
    }
    rows, details = [], []
    for sag in method_sags(data):
        result = sag.result
        times = _times_ms(data, result.point.point_index)
        median_ms, cpu_ms = _median(times), _median(_cpu_ms(data, result.point.point_index))
        names = [cell_text(sag.cell), METHOD_NAMES.get(sag.method, sag.method)]
        within = _sag_cells(sag.within_runs)[:2] if window_s else []
        rows.append(
            [
                *names,
                *within,
                *_sag_cells(sag.between_runs)[:2],
                "–" if median_ms is None else f"{median_ms:.2f}",
                "–" if cpu_ms is None else f"{cpu_share(cpu_ms, median_ms, cores):.2f}",
                *(
                    accuracy_cells(
                        accuracy.get(sag.cell, {}).get(_extension_mode(sag.method) or "")
                    )
                    if accuracy
                    else []
                ),
            ]
        )
        summary = summary_ms.get(sag.cell)
        details.append(
            [
                *names,
                f"{result.tps.median:,.0f}" if result.tps else "–",
                *([_sag_cells(sag.within_runs)[2]] if window_s else []),
                _sag_cells(sag.between_runs)[2],
                "–" if not times else f"{max(times):.2f}",
                str(len(times)),
                "–" if median_ms is None or not summary else f"{median_ms / summary:.2f}",
                "–" if cpu_ms is None else f"{cpu_ms:.2f}",
            ]
        )
    head = ["cell", "method"]
    if window_s:
        head += ["sag % within runs", "95% CI"]
    head += [
        "sag % between runs",
        "95% CI",
        "snapshot ms (median)",
        f"CPU % of {cores} cores at 1/s",
    ]
    if accuracy:
        head.append("misplaced % of shared_buffers (median / max)")
    detail_head = ["cell", "method", "tps median"]
    detail_head += ["window pairs"] if window_s else []
    detail_head += [
        "rounds",
        "snapshot ms (max)",
        "snapshots",
        "× summary",
        "server CPU ms per snapshot (median)",
    ]
    return str(
        _part(
            "sag",
            f"{window_s:g}" if window_s else None,
            Markup(_table(head, rows)),
            Markup(_table(detail_head, details)),
        )
    )


def _median(values: list[float]) -> float | None:
    return statistics.median(values) if values else None


def _share(value: float) -> str:
    return f"{value * 100:.2f}"


def accuracy_cells(accuracy: ModeAccuracy | None) -> list[str]:
    """Misplaced % of shared_buffers, median and worst over the trials."""
    if accuracy is None:
        return ["–"]
    return [f"{_share(accuracy.misplaced_share_median)} / {_share(accuracy.misplaced_share_max)}"]


def accuracy_table(data: RunData, accuracy: dict[Cell, dict[str, ModeAccuracy]]) -> str:
    rows = []
    old_pairs = False
    for cell, modes in accuracy.items():
        for mode, found in modes.items():
            old_pairs |= found.reference_mode != "snapshot"
            drift = found.drift_share_median
            worst = found.largest_relation or ""
            rows.append(
                [
                    cell_text(cell),
                    f"{mode} (against {found.reference_mode})",
                    str(found.trials),
                    f"{found.misplaced_median:,.1f}",
                    f"{found.misplaced_max:,.1f}",
                    _share(found.misplaced_share_median),
                    _share(found.misplaced_share_max),
                    f"{found.largest_max:,} ({_share(found.largest_share_max)}%)"
                    + (f" {worst}" if worst else ""),
                    "–" if drift is None else _share(drift),
                    "all held" if not found.failed_checks else "; ".join(found.failed_checks),
                ]
            )
    if not rows:
        return ""
    head = [
        "cell",
        "mode",
        "trials",
        "misplaced buffers (median)",
        "… (max)",
        "% of shared_buffers (median)",
        "… (max)",
        "worst relation: buffers outside its range",
        "cache drift % (median)",
        "self-checks",
    ]
    return str(_part("accuracy", old_pairs, Markup(table(head, rows, [0, 1, 7, 9]))))


def time_plot(data: RunData, out_dir: Path) -> list[Path]:
    """Snapshot time per method against shared_buffers (when shared_buffers is swept)."""
    lines: dict[str, list[tuple[float, float]]] = {}
    for result in data.points:
        method = str(result.point.swept.get(KEY, BASELINE))
        median_ms = _median(_times_ms(data, result.point.point_index))
        if method == BASELINE or median_ms is None or not result.shared_buffers_bytes:
            continue
        lines.setdefault(method, []).append((result.shared_buffers_bytes, median_ms))
    if not lines or len({x for values in lines.values() for x, _ in values}) < 2:
        return []
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for method, values in sorted(lines.items()):
        values.sort()
        axis.plot(
            [x for x, _ in values],
            [y for _, y in values],
            "o-",
            markersize=4,
            label=METHOD_NAMES.get(method, method),
        )
    sizes = sorted({x for values in lines.values() for x, _ in values})
    axis.set_xscale("log")
    axis.set_yscale("log")
    axis.set_xticks(sizes, [format_bytes(s) for s in sizes])
    axis.minorticks_off()
    axis.set_xlabel("shared_buffers (log scale)")
    axis.set_ylabel("snapshot time under load (ms, median, log scale)")
    axis.grid(alpha=0.3, which="both")
    axis.legend(fontsize=8)
    axis.set_title(f"{data.run.name}: the cost of one snapshot per method")
    return save_figure(figure, out_dir, "inspect-snapshot-time")


def inspect_overhead_section(data: RunData, out_dir: Path) -> Section:
    """Plots and tables; empty when the run does not sweep inspect_method."""
    if KEY not in data.swept_keys:
        return Section(TITLE)
    by_cell = cell_accuracy(data)  # once: both tables show it
    accuracy = accuracy_table(data, by_cell)
    body = _part(
        "section",
        Markup(versions_note(data)),
        Markup(sag_table(data, by_cell)),
        Markup(wait_events_table(data)),
        Markup(accuracy),
    )
    return Section(TITLE, body, time_plot(data, out_dir))


def _part(name: str, *args: object) -> Markup:
    """A part of the section as templates/inspect_overhead.html.j2's macro `name` renders it:
    text escaped there, what is already HTML passed as Markup."""
    return Markup(macro("inspect_overhead.html.j2", name)(*args))


# Seed 003's lock, as PostgreSQL's history records its removal (issue 22).
LOCKS_REMOVED_IN = "10"
LOCKS_REMOVED_NOTE = (
    "Up to PostgreSQL 9.6, pg_buffercache_pages() took every buffer-mapping partition lock "
    "(shared) for its whole scan of the buffer headers: a backend that misses and must map a "
    "new buffer needs one of them exclusive and waits for the scan to end; hits take them "
    "shared and do not wait. PostgreSQL 10 dropped them: commit 6e654546fb \"Don't bother to "
    'lock bufmgr partitions in pg_buffercache" (2016-09-29), release note "Allow '
    "pg_buffercache to run with fewer locks (Ivan Kartyshov). This makes it less disruptive "
    'when run on production systems."'
)


def _version_of(cell: Cell) -> str | None:
    version = dict(cell).get("version")
    return None if version is None else str(version)


def _takes_the_locks(version: str) -> bool:
    """Released before the locks were dropped (a control label sorts with its twin)."""
    return version != LOCKS_REMOVED_IN and version_order([version, LOCKS_REMOVED_IN])[0] == version


def _excess(result: PointResult) -> Summary | None:
    """Backends waiting on buffer mapping, polled window minus its quiet neighbour, over all
    pairs of the point's repetitions."""
    return summarise([e for m in result.ok for e in buffer_mapping_excess(m.metrics)])


def _interval(summary: Summary | None) -> tuple[float | None, float | None] | None:
    return None if summary is None else (summary.ci_low, summary.ci_high)


def _figure(value: float, interval: tuple[float | None, float | None] | None, digits: int) -> str:
    if interval is None or None in interval:
        return f"{value:+.{digits}f}"
    return f"{value:+.{digits}f} ({interval[0]:+.{digits}f}..{interval[1]:+.{digits}f})"


VERDICTS = {
    True: "larger beyond the noise (95% intervals apart)",
    False: "not larger beyond the noise (95% intervals overlap)",
    None: "not comparable (no interval)",
}


def versions_note(data: RunData) -> str:
    """With a version sweep: where the locks went; per version (and per value of the other
    swept keys, e.g. shared_buffers), the grouped view's sag and the buffer-mapping waits
    polling adds; whether each version before 10 is above each later one beyond the noise, in
    both; and when its sag is not, what the wait events say of why."""
    groups: dict[Cell, dict[str, MethodSag]] = {}
    for sag in method_sags(data):
        version = _version_of(sag.cell)
        if sag.method == "pg_buffercache" and version and sag.quoted:
            rest = tuple((key, value) for key, value in sag.cell if key != "version")
            groups.setdefault(rest, {})[version] = sag
    items = []
    for rest, points in groups.items():
        prefix = f"{cell_text(rest)}, " if len(groups) > 1 and rest else ""
        items += _version_lines(data, points, prefix)
    if not items:
        return ""
    return str(_part("versions", LOCKS_REMOVED_NOTE, items))


def _quoted(sag: MethodSag) -> Sag:
    """The sag's figure to quote; versions_note keeps only the sags that have one."""
    quoted = sag.quoted
    assert quoted is not None
    return quoted


def _version_lines(data: RunData, points: dict[str, MethodSag], prefix: str) -> list[str]:
    ordered = version_order(points)
    excess = {version: _excess(points[version].result) for version in ordered}
    figures = []
    for version in ordered:
        sag = _quoted(points[version])
        line = f"{prefix}{version}: sag {_figure(sag.sag_percent, sag.sag_ci_percent, 2)}%"
        view_ms = _median(_times_ms(data, points[version].result.point.point_index))
        line += "" if view_ms is None else f"; the view took {view_ms:.0f} ms (median)"
        added = excess[version]
        if added is not None:
            line += (
                f"; buffer-mapping waits added while polled "
                f"{_figure(added.mean, _interval(added), 3)} "
                "backends"
            )
        figures.append(line)
    verdicts, reasons = [], []
    for old in (v for v in ordered if _takes_the_locks(v)):
        sag_larger, waits_larger = True, True
        for new in (v for v in ordered if not _takes_the_locks(v)):
            above = sag_above(_quoted(points[old]), _quoted(points[new]))
            sag_larger = sag_larger and above is True
            line = f"{prefix}{old} against {new}: sag {VERDICTS[above]}"
            if excess[old] is not None and excess[new] is not None:
                above = interval_above(_interval(excess[old]), _interval(excess[new]))
                waits_larger = waits_larger and above is True
                line += f"; buffer-mapping waits added {VERDICTS[above]}"
            verdicts.append(line)
        if not sag_larger:
            reasons += _why_no_larger_sag(data, prefix, old, points, waits_larger)
    return figures + verdicts + reasons


def _why_no_larger_sag(
    data: RunData, prefix: str, old: str, points: dict[str, MethodSag], waits_larger: bool
) -> list[str]:
    """The wait events' account of an old version whose sag is not above the newer ones':
    how many backends the view's locks held up while it polled, against the sags' noise."""
    result = points[old].result
    polled = tally_measurements([m.metrics for m in result.ok]).get(POLLED)
    if polled is None or not polled.samples:
        return []
    share = polled.buffer_mapping / polled.active * 100 if polled.active else 0.0
    top = ", ".join(f"{name} {mean:.3f}" for name, mean in polled.top_waits()) or "none"
    clients = result.point.workload.client_sessions
    of_clients = f" of its {clients}" if clients else ""
    text = (
        f"Why {prefix}{old}'s sag is not larger, from its wait events in the polled windows:"
        f" {polled.active:.2f}{of_clients} client backends were active per sample, and"
        f" {polled.buffer_mapping:.3f} of them ({share:.1f}%) waited on a buffer-mapping"
        f" lock (most waited: {top})."
    )
    newer = [_quoted(points[v]) for v in version_order(points) if not _takes_the_locks(v)]
    if waits_larger:
        widths = [s.sag_ci_percent[1] - s.sag_ci_percent[0] for s in newer if s.sag_ci_percent]
        width = f" (the newer versions' intervals are {min(widths):.1f} points wide or more)"
        text += (
            " The locks are felt: polling adds more waiting backends here than on the newer"
            " versions. But the view costs every version throughput by itself (the newer ones"
            f" sag {min(s.sag_percent for s in newer):+.1f}% or more here), and what the locks"
            " add on top is smaller than the sags' noise"
            f"{width if widths else ''}: more rounds, or more clients per core, would tell it"
            " apart."
        )
    else:
        text += (
            " The view holds the partition locks while it scans the buffer headers, but a"
            " backend waits for them only when it misses shared_buffers during that scan, and"
            " polling did not add more such waits than on every newer version beyond the"
            " noise: the locks cost"
            " throughput when many backends miss at once (more clients per core, data further"
            " beyond shared_buffers), which this run did not produce."
        )
    return [text]


def wait_events_table(data: RunData) -> str:
    """Per point: what its client backends waited on in polled and quiet windows (mean
    backends per sample), from `[inspect] wait_events`; "" when no point sampled them."""
    rows = []
    for sag in method_sags(data):
        result = sag.result
        tallies = tally_measurements([m.metrics for m in result.ok])
        for kind in (POLLED, QUIET, WHOLE_RUN):
            tally = tallies.get(kind)
            if tally is None:
                continue
            share = tally.buffer_mapping / tally.active * 100 if tally.active else 0.0
            others = ", ".join(f"{name} {mean:.3f}" for name, mean in tally.top_waits())
            rows.append(
                [
                    cell_text(sag.cell),
                    METHOD_NAMES.get(sag.method, sag.method),
                    kind,
                    str(tally.samples),
                    f"{tally.active:.2f}",
                    f"{tally.buffer_mapping:.3f}",
                    f"{share:.1f}",
                    others or "–",
                ]
            )
    if not rows:
        return ""
    head = [
        "cell",
        "method",
        "windows",
        "samples",
        "active backends",
        "waiting on buffer mapping",
        "% of active",
        "most waited events",
    ]
    return str(_part("wait_events", Markup(_table(head, rows))))
