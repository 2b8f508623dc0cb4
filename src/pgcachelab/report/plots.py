"""Plots of a run, as PNG and SVG files. They read a RunData and nothing else."""

import itertools
from pathlib import Path

from pgcachelab.analysis.run_data import PointResult, RunData
from pgcachelab.analysis.run_steps import run_steps
from pgcachelab.analysis.steps import DISK, MEMORY, SHARED_BUFFERS
from pgcachelab.report.pyplot import plt
from pgcachelab.units import format_bytes

MIB = 1024 * 1024
TPS_LABEL = "throughput (tps, transactions/s)"
TPS_LOG_SPAN = 20
# What a swept key counts, for the axis label: every axis says its unit.
AXIS_UNITS = {
    "scale": "pgbench scale factor (100,000 accounts each)",
    "clients": "clients (connections)",
    "threads": "pgbench threads",
    "duration": "duration (s)",
    "transactions": "transactions per client",
    "rate": "target rate (transactions/s)",
    "lookups": "index lookups",
}


def axis_label(key: str) -> str:
    return AXIS_UNITS.get(key, key)


def is_geometric(values) -> bool:
    """Swept values that grow by factors (1, 2, 4, 8...; 1, 4, 16) rather than steps: a log
    axis shows them evenly and keeps the small ones readable."""
    ordered = sorted(set(values))
    if len(ordered) < 3 or ordered[0] <= 0:
        return False
    ratios = [b / a for a, b in itertools.pairwise(ordered)]
    return ordered[-1] / ordered[0] >= 8 and min(ratios) >= 1.3


def set_x_axis(axis, key: str, values) -> None:
    """Label with the unit; log scale (base 2, plain tick labels) for geometric sweeps."""
    if is_geometric(values):
        axis.set_xscale("log", base=2)
        ticks = sorted(set(values))
        axis.set_xticks(ticks, [f"{t:g}" for t in ticks])
        axis.minorticks_off()
        axis.set_xlabel(f"{axis_label(key)}, log scale")
    else:
        axis.set_xlabel(axis_label(key))


def _numeric(values) -> bool:
    return all(isinstance(v, int | float) and not isinstance(v, bool) for v in values)


def x_axis_key(data: RunData) -> str | None:
    """The swept parameter to put on the x axis: scale if swept, else the first numeric one."""
    keys = data.swept_keys
    for key in ["scale", *keys]:
        if key in keys and _numeric([r.point.swept.get(key) for r in data.points]):
            return key
    return None


def series(data: RunData, x_key: str) -> dict[str, list[PointResult]]:
    """Points grouped by the values of every other swept parameter, ordered along x."""
    groups: dict[str, list[PointResult]] = {}
    for result in data.points:
        others = {k: v for k, v in result.point.swept.items() if k != x_key}
        name = ", ".join(f"{k}={v}" for k, v in others.items()) or "measured"
        groups.setdefault(name, []).append(result)
    for members in groups.values():
        members.sort(key=lambda r: r.point.swept[x_key])
    return groups


# Per-repetition dots: at most DOTS_PER_PLOT in a plot, between 5 and MAX_DOTS a point, evenly
# spaced by rank (issue 24). 2,000 repetitions a point drew 2,000 overlapping dots each, slowly,
# into a page of megabytes; a dozen spaced by rank still show the spread and both extremes.
DOTS_PER_PLOT = 600
MAX_DOTS = 60
MAX_FLIERS = 40  # outliers drawn per box of a box plot, likewise


def thin_by_rank(values, limit: int) -> list[float]:
    """At most `limit` of `values`: all when they are few, else evenly spaced ranks of the
    sorted values, the smallest and the largest always kept."""
    ordered = sorted(values)
    if len(ordered) <= limit:
        return ordered
    last = len(ordered) - 1
    return [ordered[round(i * last / (limit - 1))] for i in range(limit)]


def dots_per_point(data: RunData) -> int:
    return max(5, min(MAX_DOTS, DOTS_PER_PLOT // max(1, len(data.points))))


def dots_thinned(data: RunData) -> bool:
    return any(len(r.ok) > dots_per_point(data) for r in data.points)


def dots_note(data: RunData, what: str = "repetitions") -> str:
    """What the dots of a plot are, saying so when some point's were thinned."""
    if dots_thinned(data):
        return f"dots: {what} (at most {dots_per_point(data)} a point, evenly spaced by rank)"
    return f"dots: {what}"


def _scatter_and_median(
    axis, xs_of, results: list[PointResult], label: str, color, dots: int
) -> None:
    xs, medians = [], []
    for result in results:
        x = xs_of(result)
        if x is None or result.tps is None:
            continue
        values = thin_by_rank([m.tps for m in result.ok if m.tps is not None], dots)
        axis.scatter([x] * len(values), values, s=12, color=color, alpha=0.45, linewidths=0)
        if result.tps.median_low is not None:  # the median's order-statistic interval
            axis.vlines(
                x,
                result.tps.median_low,
                result.tps.median_high,
                color=color,
                linewidth=2.5,
                alpha=0.5,
            )
        xs.append(x)
        medians.append(result.tps.median)
    axis.plot(xs, medians, marker="o", markersize=4, color=color, label=label)


def save_figure(figure, out_dir: Path, name: str) -> list[Path]:
    paths = []
    for extension in ("png", "svg"):
        path = out_dir / f"{name}.{extension}"
        figure.savefig(path, dpi=110, bbox_inches="tight")
        paths.append(path)
    plt.close(figure)
    return paths


def _colors():
    return itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])


def _boundary_marker(axis, x, text, color, x_limit) -> None:
    if x <= x_limit:
        axis.axvline(x, color=color, linestyle="--", linewidth=1)
        axis.annotate(
            text,
            (x, 1),
            xycoords=("data", "axes fraction"),
            rotation=90,
            va="top",
            ha="right",
            fontsize=8,
            color=color,
        )
    else:
        axis.annotate(
            f"{text} →",
            (1, 0.98),
            xycoords="axes fraction",
            ha="right",
            va="top",
            fontsize=8,
            color=color,
        )


def throughput_plot(data: RunData, x_key: str, out_dir: Path) -> list[Path]:
    figure, axis = plt.subplots(figsize=(8, 4.5))
    for (name, results), color in zip(series(data, x_key).items(), _colors(), strict=False):
        _scatter_and_median(
            axis, lambda r: r.point.swept[x_key], results, name, color, dots_per_point(data)
        )
    set_x_axis(axis, x_key, [r.point.swept[x_key] for r in data.points])
    axis.set_ylabel(TPS_LABEL)
    axis.set_title(
        f"{data.run.name}: throughput against {x_key}\n"
        f"{dots_note(data)}, line: median, bar: the median's 95% interval",
        fontsize=10,
    )
    _tps_axis(axis, data)
    axis.grid(alpha=0.3)
    if x_key == "scale":
        _scale_boundaries(axis, data)
    axis.legend(fontsize=8)
    return save_figure(figure, out_dir, f"tps-by-{x_key}")


def _scale_boundaries(axis, data: RunData, plateaus: bool = True) -> None:
    """Where the database outgrows shared_buffers / memory, in scale units (interpolated),
    and the steps found; `plateaus` only where the y axis is tps."""
    known = sorted(
        (float(r.point.swept["scale"]), r.database_size_bytes)
        for r in data.points
        if r.database_size_bytes
    )
    if len(known) < 2:
        return
    x_limit = known[-1][0]
    for size, text, color in _boundaries(data):
        scale = _interpolate_scale(known, size)
        if scale is not None:
            _boundary_marker(axis, scale, text, color, x_limit)
        else:
            _boundary_marker(axis, x_limit * 10, text, color, x_limit)
    scale_of = {r.point.label: r.point.swept["scale"] for r in data.points}
    _draw_steps(axis, data, lambda point: scale_of[point.label], plateaus)


def _padded(axis, start: float, end: float) -> tuple[float, float]:
    """A plateau's x extent widened a little, so that a one-point plateau still shows."""
    if axis.get_xscale() == "log":
        return start / 1.06, end * 1.06
    margin = (axis.get_xlim()[1] - axis.get_xlim()[0]) * 0.015
    return start - margin, end + margin


def _tps_axis(axis, data: RunData) -> None:
    """tps from 0, or on a log scale when the medians span more than TPS_LOG_SPAN: past
    memory tps falls by one or two orders of magnitude (seed 004), and a linear axis would
    flatten everything after the drop onto zero."""
    medians = [r.tps.median for r in data.points if r.tps is not None and r.tps.median > 0]
    if medians and max(medians) / min(medians) > TPS_LOG_SPAN:
        axis.set_yscale("log")
        axis.set_ylabel(f"{TPS_LABEL}, log scale")
    else:
        axis.set_ylim(bottom=0)


def _draw_steps(axis, data: RunData, x_of, draw_plateaus: bool = True) -> None:
    """The steps found in the data (analysis/steps.py): each plateau as a thick line at its
    geometric mean tps, each step as a band between the points either side, labelled with its
    drop and 95% interval. Nothing when no step is significant: the plot then implies none."""
    finding = run_steps(data)
    if finding is None or not finding.steps:
        return
    left, right = axis.get_xlim()
    if draw_plateaus:
        for index, plateau in enumerate(finding.segments):
            xs = [x_of(point) for point in plateau.points]
            start, end = _padded(axis, min(xs), max(xs))
            label = "plateau (geometric mean)" if index == 0 else None
            axis.hlines(
                plateau.geometric_mean_tps,
                start,
                end,
                color="black",
                linewidth=5,
                alpha=0.18,
                label=label,
            )
    # Adjacent steps share an edge: a colour each keeps them apart.
    colours = itertools.cycle(["tab:orange", "tab:green", "tab:olive"])
    for number, (step, colour) in enumerate(zip(finding.steps, colours, strict=False), start=1):
        start, end = x_of(step.before.points[-1]), x_of(step.after.points[0])
        axis.axvspan(
            start,
            end,
            color=colour,
            alpha=0.15,
            linewidth=0,
            label=f"step {number} found in the data",
        )
        interval = (
            ""
            if step.ci_low is None or step.ci_high is None
            else f" ({_ratio_text(step.ci_low)}–{_ratio_text(step.ci_high)})"
        )
        boundaries: dict[str | None, str] = {
            SHARED_BUFFERS: "shared_buffers",
            MEMORY: "memory",
            DISK: "disk",
        }
        where = boundaries.get(step.boundary, "no boundary")
        axis.annotate(
            f"step {number}: ×{_ratio_text(step.ratio)}{interval}, {where}",
            ((start * end) ** 0.5, 0.5),
            xycoords=("data", "axes fraction"),
            rotation=90,
            ha="center",
            va="center",
            fontsize=7,
            color="tab:brown",
        )
    axis.set_xlim(left, right)


def _ratio_text(ratio: float) -> str:
    """1.31, 13.6, 136: two decimals below 10, whole numbers above 100."""
    if ratio >= 100:
        return f"{ratio:.0f}"
    return f"{ratio:.1f}" if ratio >= 10 else f"{ratio:.2f}"


def _interpolate_scale(known: list[tuple[float, float]], size: float) -> float | None:
    for (s0, b0), (s1, b1) in itertools.pairwise(known):
        if b0 <= size <= b1 and b1 > b0:
            return s0 + (size - b0) * (s1 - s0) / (b1 - b0)
    if size < known[0][1]:
        return known[0][0] * size / known[0][1]
    return None


def _boundaries(data: RunData) -> list[tuple[float, str, str]]:
    shared = {r.shared_buffers_bytes for r in data.points if r.shared_buffers_bytes}
    marks = []
    if len(shared) == 1:
        size = shared.pop()
        marks.append((size, f"shared_buffers {format_bytes(size)}", "tab:red"))
    memory = data.memory_available_bytes
    if memory:
        marks.append((memory, f"memory available {format_bytes(memory)}", "tab:purple"))
    return marks


def size_plot(data: RunData, out_dir: Path) -> list[Path]:
    """tps against database size, with the cache boundaries the seed talks about."""
    figure, axis = plt.subplots(figsize=(8, 4.5))
    x_key = x_axis_key(data)
    groups = series(data, x_key) if x_key else {"measured": data.points}
    sizes = [r.database_size_bytes / MIB for r in data.points if r.database_size_bytes]
    for (name, results), color in zip(groups.items(), _colors(), strict=False):
        results = sorted(results, key=lambda r: r.database_size_bytes or 0)
        _scatter_and_median(
            axis,
            lambda r: r.database_size_bytes / MIB if r.database_size_bytes else None,
            results,
            name,
            color,
            dots_per_point(data),
        )
    axis.set_xscale("log")
    axis.set_xlabel("database size (MiB, log scale)")
    axis.set_ylabel(TPS_LABEL)
    _tps_axis(axis, data)
    axis.grid(alpha=0.3, which="both")
    title = f"{data.run.name}: throughput against database size"
    thinned = dots_thinned(data)
    axis.set_title(
        f"{title}\n{dots_note(data)}" if thinned else title, fontsize=10 if thinned else None
    )
    if sizes:
        for size, text, color in _boundaries(data):
            _boundary_marker(axis, size / MIB, text, color, max(sizes) * 1.5)
        _draw_steps(axis, data, lambda point: point.size_bytes / MIB)
    axis.legend(fontsize=8)
    return save_figure(figure, out_dir, "tps-by-size")


def _median_lines(
    data: RunData,
    x_key: str,
    value_of,
    title: str,
    ylabel: str,
    name: str,
    out_dir: Path,
    boundaries: bool = False,
) -> list[Path]:
    """One line per series of `value_of(point result)` against the swept `x_key`."""
    figure, axis = plt.subplots(figsize=(8, 3.5))
    drawn = False
    for (label, results), color in zip(series(data, x_key).items(), _colors(), strict=False):
        points = [(r.point.swept[x_key], value_of(r)) for r in results]
        points = [(x, y) for x, y in points if y is not None]
        drawn = drawn or bool(points)
        axis.plot(
            [x for x, _ in points],
            [y for _, y in points],
            marker="o",
            markersize=4,
            color=color,
            label=label,
        )
    if not drawn:
        plt.close(figure)
        return []
    set_x_axis(axis, x_key, [r.point.swept[x_key] for r in data.points])
    axis.set_ylabel(ylabel)
    axis.grid(alpha=0.3)
    axis.set_title(f"{data.run.name}: {title}")
    if boundaries and x_key == "scale":
        _scale_boundaries(axis, data, plateaus=False)
    axis.legend(fontsize=8)
    return save_figure(figure, out_dir, name)


def latency_plot(data: RunData, x_key: str, out_dir: Path) -> list[Path]:
    return _median_lines(
        data,
        x_key,
        lambda r: r.latency_ms.median if r.latency_ms else None,
        f"latency against {x_key}",
        "latency average (ms, median of repetitions)",
        f"latency-by-{x_key}",
        out_dir,
    )


def hit_ratio_plot(data: RunData, x_key: str, out_dir: Path) -> list[Path]:
    """shared_buffers hit ratio during the measurements: why tps moves where it does."""
    return _median_lines(
        data,
        x_key,
        lambda r: r.blks_hit_ratio * 100 if r.blks_hit_ratio is not None else None,
        "blks_hit / (blks_hit + blks_read) during the measurements",
        "shared_buffers hit ratio (%)",
        f"hit-ratio-by-{x_key}",
        out_dir,
        boundaries=True,
    )


def memory_plot(data: RunData, x_key: str, out_dir: Path) -> list[Path]:
    """The capped server's memory: peak cgroup usage and page cache against the limit."""
    results = sorted(
        (r for r in data.points if r.cgroup_peak_bytes), key=lambda r: r.point.swept[x_key]
    )
    if not results or not data.memory_limit_bytes:
        return []
    figure, axis = plt.subplots(figsize=(8, 3.5))
    xs = [r.point.swept[x_key] for r in results]
    axis.plot(
        xs,
        [(r.cgroup_peak_bytes or 0) / MIB for r in results],  # results: those with a peak
        marker="o",
        markersize=4,
        label="peak usage of the server's cgroup",
    )
    axis.plot(
        xs,
        [(r.page_cache_bytes or 0) / MIB for r in results],
        marker="s",
        markersize=4,
        label="page cache of the server's files (end of point)",
    )
    axis.axhline(
        data.memory_limit_bytes / MIB,
        color="tab:purple",
        linestyle="--",
        label=f"memory limit {format_bytes(data.memory_limit_bytes)}",
    )
    set_x_axis(axis, x_key, xs)
    axis.set_ylabel("memory (MiB)")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.set_title(f"{data.run.name}: the emulated machine's memory")
    axis.legend(fontsize=8)
    return save_figure(figure, out_dir, f"memory-by-{x_key}")


def progress_plot(data: RunData, out_dir: Path) -> list[Path]:
    """Per-second tps of each point's first repetition (pgbench --progress)."""
    figure, axis = plt.subplots(figsize=(8, 4.5))
    drawn = 0
    colormap = plt.get_cmap("viridis")
    # At most about 12 legend entries: with more points, every n-th line is named and the
    # colour (point order) tells the rest apart.
    every = max(1, -(-len(data.points) // 12))
    for position, result in enumerate(data.points):
        ok = result.ok
        samples = ok[0].metrics.get("pgbench", {}).get("progress", []) if ok else []
        if not samples:
            continue
        named = position % every == 0 or position == len(data.points) - 1
        axis.plot(
            [s["elapsed_s"] for s in samples],
            [s["tps"] for s in samples],
            color=colormap(position / max(1, len(data.points) - 1)),
            linewidth=1,
            label=result.point.label if named else None,
        )
        drawn += 1
    if not drawn:
        plt.close(figure)
        return []
    axis.set_xlabel("time into the measurement (s)")
    axis.set_ylabel(f"{TPS_LABEL}, per second")
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.set_title(f"{data.run.name}: throughput over time, first repetition of each point")
    axis.legend(fontsize=7, ncol=2)
    return save_figure(figure, out_dir, "tps-over-time")


def all_plots(data: RunData, out_dir: Path) -> list[Path]:
    paths = []
    x_key = x_axis_key(data)
    if x_key:
        paths += throughput_plot(data, x_key, out_dir)
    if any(r.database_size_bytes for r in data.points) and x_key == "scale":
        paths += size_plot(data, out_dir)
    if x_key:
        paths += hit_ratio_plot(data, x_key, out_dir)
        paths += memory_plot(data, x_key, out_dir)
        paths += latency_plot(data, x_key, out_dir)
    paths += progress_plot(data, out_dir)
    return paths
