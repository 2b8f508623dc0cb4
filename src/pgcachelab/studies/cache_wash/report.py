"""The cache-wash part of a report: seed 000's box plots, per-phase cache figures, findings.

It opens with the seed's own findings judged on the run (studies/cache_wash/claims.py: the
verdicts `reproduce` gives), the
order the points ran in, whether huge pages on and off had the same RAM, and the seed's charts
(one mean per iteration). Then the findings: how the latencies were taken (and the client
timing's cross-check), idx2/idx1 per point with its interval, the smallest shared_buffers that
keeps the index next to the index's size, the huge pages effect per phase, and, from the cache
snapshots, where the index and the table were just before and just after the scan: why idx2 is
slow or not.
"""

import functools
import itertools
import math
import statistics
from collections.abc import Callable
from pathlib import Path

import numpy as np
from markupsafe import Markup
from matplotlib import cbook, ticker
from matplotlib.figure import Figure

from pgcachelab.analysis.cache_composition import Sample
from pgcachelab.analysis.cache_split import (
    CLIENT_TIMING,
    PHASES,
    SCAN_MOMENTS,
    SURVIVAL_TOLERANCE,
    WASH_RELATIONS,
    Repetition,
    Residency,
    best_setting,
    huge_pages_effect,
    index_survives_from,
    pgbench_logged_zeros,
    point_groups,
    scan_residency,
    survival_table,
)
from pgcachelab.analysis.claims import BadFigure, Verdict, noise
from pgcachelab.analysis.memory_accounting import same_ram_check
from pgcachelab.analysis.run_data import RunData, measured_memory
from pgcachelab.analysis.run_order import order_note
from pgcachelab.analysis.summary import Effect, Summary, hit_ratio, summarise
from pgcachelab.report.cache_composition import samples as snapshot_samples
from pgcachelab.report.plots import MAX_FLIERS, save_figure, thin_by_rank
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import Section, inline_svg, macro, table
from pgcachelab.store.metric_types import WashData
from pgcachelab.studies.cache_wash.repetitions import repetitions
from pgcachelab.units import format_bytes, shared_buffers_bytes

TITLE = "Cache wash: idx1, the scan, idx2"
PHASE_TITLES = {
    "idx1": "idx1: index lookups before the scan",
    "seq": "seq: one sequential scan of the table",
    "idx2": "idx2: index lookups after the scan",
}
HUGE_PAGES_COLORS = {"on": "tab:orange", "off": "tab:blue", "try": "tab:green", "": "tab:blue"}


def _huge_pages_values(reps: list[Repetition]) -> list[str]:
    return sorted({r.huge_pages for r in reps}, reverse=True)


def box_plots(reps: list[Repetition], data: RunData, out_dir: Path) -> list[Path]:
    """Every latency of a phase, per shared_buffers, huge pages side by side.

    Each box is drawn from its summary (quartiles, whiskers at 1.5 IQR) and at most
    MAX_FLIERS of its outliers, evenly spaced by rank: a full design (13,554 repetitions of 100
    lookups) has thousands of outliers per box, which drew slowly into a page of megabytes
    and read as one smear."""
    paths = []
    for phase in PHASES:
        figure, thinned = _box_figure(reps, functools.partial(_lookups, phase))
        figure.axes[0].set_ylabel("latency (ms, log scale)")
        title = f"{data.run.name}: {PHASE_TITLES[phase]}"
        if thinned:
            title += f"\noutliers: at most {MAX_FLIERS} per box, evenly spaced by rank"
        figure.axes[0].set_title(title, fontsize=10 if thinned else None)
        paths += save_figure(figure, out_dir, f"cache-wash-{phase}")
    return paths


def seed_box_plots(reps: list[Repetition], data: RunData, out_dir: Path) -> list[Path]:
    """The seed's three charts: one value per iteration and phase, the mean of its lookups
    (what pgbench --report-latencies gave the seed; for seq the one scan), per shared_buffers,
    huge pages side by side."""
    paths = []
    for phase in PHASES:
        figure, _ = _box_figure(reps, functools.partial(_means, phase))
        axis = figure.axes[0]
        axis.set_ylabel("mean of the iteration (ms, log scale)")
        axis.set_title(
            f"{data.run.name}: {PHASE_TITLES[phase]}\none mean per iteration, as in the seed"
        )
        paths += save_figure(figure, out_dir, f"cache-wash-seed-{phase}")
    return paths


def seed_charts_html(reps: list[Repetition], paths: list[Path]) -> str:
    """The seed's charts in the section, under a caption that says what a box is."""
    typical = statistics.median_low([len(r.samples_ms["idx1"]) for r in reps])
    figures = [
        (inline_svg(path), path.stem, path.with_suffix(".png").name)
        for path in paths
        if path.suffix == ".svg"
    ]
    return _part("seed_charts", typical, figures)


def _lookups(phase: str, group: list[Repetition]) -> np.ndarray:
    # an array (given a list, matplotlib checks every value as a row), filled straight from
    # the repetitions' lists: no list of 20 million floats between
    chained = itertools.chain.from_iterable(r.samples_ms[phase] for r in group)
    return np.fromiter(chained, dtype=float)


def _means(phase: str, group: list[Repetition]) -> np.ndarray:
    return np.fromiter((r.mean(phase) for r in group), dtype=float)


def _box_figure(
    reps: list[Repetition], values_of: Callable[[list[Repetition]], np.ndarray]
) -> tuple[Figure, bool]:
    """(figure, whether outliers were thinned): one box per shared_buffers and huge pages
    value, side by side, of `values_of(repetitions of the point)`; the caller titles it."""
    sizes = sorted({r.shared_buffers_bytes for r in reps})
    modes = _huge_pages_values(reps)
    width = 0.8 / max(1, len(modes))
    groups = point_groups(reps)
    thinned = False
    lowest, highest = math.inf, 0.0
    figure, axis = plt.subplots(figsize=(max(8, len(sizes) * 0.9), 4.5))
    for offset, mode in enumerate(modes):
        positions, stats = [], []
        for i, size in enumerate(sizes):
            values = values_of(groups.get((mode, size), []))
            if not values.size:
                continue
            lowest, highest = min(lowest, values.min()), max(highest, values.max())
            box = cbook.boxplot_stats(values)[0]
            thinned = thinned or len(box["fliers"]) > MAX_FLIERS
            box["fliers"] = thin_by_rank(box["fliers"], MAX_FLIERS)
            positions.append(i + (offset - (len(modes) - 1) / 2) * width)
            stats.append(box)
        if not stats:
            continue
        parts = axis.bxp(
            stats,
            positions=positions,
            widths=width * 0.9,
            patch_artist=True,
            showfliers=True,
            flierprops={"markersize": 2},
            # black: matplotlib's orange median would read as huge pages on
            medianprops={"color": "black"},
        )
        color = HUGE_PAGES_COLORS.get(mode, "tab:gray")
        for box in parts["boxes"]:
            box.set_facecolor(color)
            box.set_alpha(0.6)
        axis.plot([], [], color=color, linewidth=8, alpha=0.6, label=_mode_label(mode))
    axis.set_xticks(range(len(sizes)), [format_bytes(s) for s in sizes], rotation=45)
    # one box per setting, evenly spaced: geometric settings as on a log axis
    axis.set_xlabel("shared_buffers (one box per setting, evenly spaced)")
    axis.set_yscale("log")
    # plain numbers (0.14, not 1.4×10^-1); within a decade no power of ten is on the axis,
    # so the minor ticks carry the labels
    plain = ticker.FuncFormatter(lambda value, _: f"{value:g}")
    axis.yaxis.set_major_formatter(plain)
    within_a_decade = lowest > 0 and highest / lowest < 10
    axis.yaxis.set_minor_formatter(plain if within_a_decade else ticker.NullFormatter())
    axis.grid(alpha=0.3, axis="y", which="both")
    # beside the axes: "best" placement tests every line of every box (seconds at 54
    # boxes), and inside it would hide some
    axis.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    return figure, thinned


def phase_cache_plot(data: RunData, out_dir: Path) -> list[Path]:
    """shared_buffers hit ratio and blocks read from outside shared_buffers, per phase."""
    rows: dict[tuple[str, str], list[tuple[int, float, float]]] = {}
    for result in data.points:
        settings = result.point.settings
        size = shared_buffers_bytes(settings.get("shared_buffers"))
        mode = str(settings.get("huge_pages", "")).lower()
        for m in result.ok:
            statio = (m.metrics.get("cache_wash") or {}).get("statio") or {}
            for phase, counters in statio.items():
                hits = counters["heap_blks_hit"] + counters["idx_blks_hit"]
                reads = counters["heap_blks_read"] + counters["idx_blks_read"]
                ratio = hit_ratio(hits, reads)
                rows.setdefault((phase, mode), []).append((size, (ratio or 0) * 100, reads))
    if not rows:
        return []
    figure, (hits_axis, reads_axis) = plt.subplots(1, 2, figsize=(12, 4.2))
    styles = {"idx1": "o-", "seq": "s--", "idx2": "^-"}
    for (phase, mode), values in sorted(rows.items()):
        by_size: dict[int, list[tuple[int, float, float]]] = {}
        for value in values:
            by_size.setdefault(value[0], []).append(value)
        sizes = sorted(by_size)
        hit_medians = [statistics.median(v[1] for v in by_size[s]) for s in sizes]
        read_medians = [statistics.median(v[2] for v in by_size[s]) for s in sizes]
        label = f"{phase}" + (f", huge_pages={mode}" if mode else "")
        xs = [s / 2**20 for s in sizes]
        hits_axis.plot(xs, hit_medians, styles[phase], markersize=4, label=label)
        reads_axis.plot(xs, read_medians, styles[phase], markersize=4, label=label)
    for axis in (hits_axis, reads_axis):
        axis.set_xscale("log")
        axis.set_xlabel("shared_buffers (MiB, log scale)")
        axis.grid(alpha=0.3, which="both")
        axis.legend(fontsize=7)
    hits_axis.set_ylabel("shared_buffers hit ratio of the phase (%)")
    hits_axis.set_title("hit ratio per phase", fontsize=10)
    reads_axis.set_ylabel("blocks read from outside shared_buffers (8 kB blocks)")
    reads_axis.set_title("blocks read per phase", fontsize=10)
    reads_axis.set_yscale("symlog", linthresh=1)
    reads_axis.set_ylim(bottom=0)
    figure.suptitle(f"{data.run.name}: where each phase found its blocks (pg_statio)")
    return save_figure(figure, out_dir, "cache-wash-blocks")


def _level(summary: Summary) -> str:
    coverage = summary.median_coverage
    assert coverage is not None  # asked only of a median with an interval, which has one
    return "95% CI" if coverage >= 0.95 else f"min..max, a {coverage:.0%} interval"


def _ms(summary: Summary) -> str:
    text = f"median {summary.median:.3f} ms"
    if summary.median_low is not None:
        low, high = summary.median_low, summary.median_high
        text += f" ({_level(summary)} of the median {low:.3f}..{high:.3f})"
    return text


def _part(name: str, *args: object) -> str:
    """A part of the section as templates/cache_wash.html.j2's macro `name` renders it: text
    escaped there, what is already HTML passed as Markup."""
    return str(macro("cache_wash.html.j2", name)(*args))


def _table(headers: list[str], rows: list[list[str]], text_columns: int = 1) -> str:
    """The first `text_columns` columns are left-aligned."""
    return table(headers, rows, range(text_columns))


def _mode_label(mode: str) -> str:
    return f"huge_pages={mode}" if mode else "all points"


def data_sizes(data: RunData) -> WashData:
    """The workload's table and index sizes (cache_wash.data of any measurement)."""
    for result in data.points:
        for m in result.ok:
            sizes = (m.metrics.get("cache_wash") or {}).get("data")
            if sizes and sizes.get("index_bytes"):
                return sizes
    return {}


def _with_index_size(size: int, sizes: WashData) -> str:
    index_bytes = sizes.get("index_bytes")
    if not index_bytes:
        return format_bytes(size)
    return (
        f"{format_bytes(size)} (index {format_bytes(index_bytes)}: shared_buffers "
        f"{size / index_bytes:.2g}× the index)"
    )


def timing_html(data: RunData, reps: list[Repetition]) -> str:
    """How the latencies were taken: the client timing's cross-check, or pgbench's log (runs
    stored before it), whose lookups logged as 0 us are counted."""
    checks = [
        check
        for result in data.points
        for m in result.ok
        for phase, check in ((m.metrics.get("cache_wash") or {}).get("cross_check") or {}).items()
        if phase != "seq"
    ]
    parts = []
    if checks:
        overhead = summarise([c["loop_overhead_share"] * 100 for c in checks])
        ratio = summarise([c["median_to_wall_per_sample"] for c in checks])
        outside = [c for c in checks if not c["within_tolerance"]]
        assert overhead is not None and ratio is not None  # one figure per check at least
        parts.append(
            f"Every lookup was timed on the client (a monotonic clock around each execute of a "
            f"prepared statement, one new session per phase, its first lookup left out). "
            f"Cross-check over {len(checks)} lookup phases: the samples add up to the phase's "
            f"wall time but for the loop's own overhead, median {overhead.median:.2f}% of it "
            f"(at most {overhead.maximum:.2f}%; tolerance {checks[0]['tolerance']:.0%}); the "
            f"median lookup is {ratio.median:.2f}× the wall time per lookup (a median below the "
            f"mean of skewed latencies). "
            + (
                f"{len(outside)} phases exceeded the tolerance: their samples leave out more "
                "than the loop should."
                if outside
                else "Every phase is within the tolerance."
            )
        )
    zeros, total = pgbench_logged_zeros(reps)
    if total:
        old = sum(1 for r in reps if r.timing != CLIENT_TIMING)
        parts.append(
            f"{old} repetitions were timed from pgbench's per-transaction log (stored before the "
            f"client timing): {zeros} of their {total} lookups were logged as 0 us (pgbench 14+ "
            "logs a reply already waiting as 0)"
            + (", so their medians are biased low." if zeros else "; none here.")
        )
    return _part("notes", parts)


def _ratio_text(summary: Summary | None) -> str:
    if summary is None:
        return "–"
    return f"{summary.median:.2f}"


def _interval_text(summary: Summary | None, digits: int = 2) -> str:
    if summary is None or summary.median_low is None:
        return "one repetition: no interval"
    return f"{summary.median_low:.{digits}f}..{summary.median_high:.{digits}f} ({_level(summary)})"


def _geometric_text(effect: Effect | None) -> str:
    if effect is None or effect.ci_low is None:
        return "–"
    return f"{effect.ratio:.2f} ({effect.ci_low:.2f}..{effect.ci_high:.2f})"


def survival_html(reps: list[Repetition], sizes: WashData) -> str:
    """Per point: idx1 and idx2 medians, idx2/idx1 with its intervals, and the verdict."""
    rows = []
    groups = point_groups(reps)
    for row in survival_table(reps):
        group = groups[(row.huge_pages, row.shared_buffers_bytes)]
        idx1 = statistics.median(r.median("idx1") for r in group)
        idx2 = statistics.median(r.median("idx2") for r in group)
        index_bytes = sizes.get("index_bytes")
        rows.append(
            [
                format_bytes(row.shared_buffers_bytes),
                _mode_label(row.huge_pages),
                f"{row.shared_buffers_bytes / index_bytes:.2g}×" if index_bytes else "–",
                str(len(group)),
                f"{idx1:.3f}",
                f"{idx2:.3f}",
                _ratio_text(row.ratio),
                _interval_text(row.ratio),
                _geometric_text(row.geometric),
                row.verdict,
            ]
        )
    headers = [
        "shared_buffers",
        "huge pages",
        "shared_buffers / index",
        "repetitions",
        "idx1 median (ms)",
        "idx2 median (ms)",
        "idx2/idx1 median",
        "interval of the median",
        "idx2/idx1 geometric mean (95% CI)",
        f"idx2 within {(SURVIVAL_TOLERANCE - 1) * 100:.0f}% of idx1?",
    ]
    tolerance_pct = f"{(SURVIVAL_TOLERANCE - 1) * 100:.0f}"
    table = _table(headers, rows, text_columns=2)
    return _part("survival", tolerance_pct, f"{SURVIVAL_TOLERANCE:.2f}", Markup(table))


def huge_pages_html(reps: list[Repetition]) -> str:
    """The huge pages effect per phase, or why it is not there."""
    modes = {r.huge_pages for r in reps}
    if not {"on", "off"} <= modes:
        swept = ", ".join(sorted(_mode_label(m) for m in modes))
        return _part("huge_pages_not_measured", swept)
    rows = []
    for phase in PHASES:
        effect = huge_pages_effect(reps, phase)
        if effect is None:
            rows.append([phase, "–", "no pair with both on and off", "–", "–"])
            continue
        interval = (
            f"{effect.ci_low:.3f}..{effect.ci_high:.3f}"
            if effect.ci_low is not None
            else "one pair: no interval"
        )
        verdict = "significant" if effect.significant else "not significant"
        if effect.significant:
            verdict += ": faster with huge pages" if effect.ratio < 1 else ": slower with them"
        rows.append([phase, f"× {effect.ratio:.3f}", interval, str(effect.pairs), verdict])
    headers = ["phase", "on / off", "95% CI", "pairs", "verdict"]
    return _part("huge_pages", Markup(_table(headers, rows, text_columns=1)))


def _cached_text(residency: Residency, cached_bytes: float | None) -> str:
    share = residency.share(cached_bytes)
    if cached_bytes is None:
        return "not read"
    megabytes = f"{cached_bytes / 2**20:.1f} MB"
    return megabytes if share is None else f"{share:.0%} ({megabytes})"


def _neither_text(residency: Residency) -> str:
    bounds = residency.in_neither_bytes
    if bounds is None or not residency.size_bytes:
        return "–"
    low, high = (value / residency.size_bytes for value in bounds)
    return f"{low:.0%}" if round(low, 2) == round(high, 2) else f"{low:.0%}..{high:.0%}"


def point_residencies(
    data: RunData, sizes: WashData
) -> list[tuple[int, str, dict[tuple[str, str], Residency]]]:
    """(shared_buffers, huge pages, {(relation, moment): Residency}) per point with snapshots
    around the scan, by huge pages then shared_buffers."""
    by_point: dict[int, list[Sample]] = {}
    for sample in snapshot_samples(data):
        if sample.label in SCAN_MOMENTS:
            by_point.setdefault(sample.point_index, []).append(sample)
    points = []
    for result in data.points:
        mine = by_point.get(result.point.point_index)
        if not mine:
            continue
        settings = result.point.settings
        size = shared_buffers_bytes(settings.get("shared_buffers"))
        mode = str(settings.get("huge_pages", "")).lower()
        by_key = {(r.relation, r.moment): r for r in scan_residency(mine, sizes)}
        points.append((size, mode, by_key))
    return sorted(points, key=lambda point: (point[1] != "on", point[1], point[0]))


def scan_residency_plot(data: RunData, out_dir: Path) -> list[Path]:
    """Index and table in each cache just before and just after the scan, per point: the
    composition around the scan, as % of each relation."""
    points = point_residencies(data, data_sizes(data))
    if not points:
        return []
    bars = [
        ("shared_buffers", "after idx1", "tab:blue", 0.45),
        ("shared_buffers", "after seq", "tab:blue", 0.95),
        ("OS cache", "after idx1", "tab:orange", 0.45),
        ("OS cache", "after seq", "tab:orange", 0.95),
    ]
    figure, axes = plt.subplots(1, 2, figsize=(max(10, len(points) * 1.6), 4.2), sharey=True)
    width = 0.8 / len(bars)
    labels = [
        format_bytes(size) + (f"\nhuge_pages={mode}" if mode else "") for size, mode, _ in points
    ]
    for axis, relation in zip(axes, ("index", "table"), strict=True):
        for offset, (cache, moment, color, alpha) in enumerate(bars):
            heights = []
            for _, _, by_key in points:
                at = by_key.get((relation, moment))
                cached = (
                    None
                    if at is None
                    else (
                        at.shared_buffers_bytes if cache == "shared_buffers" else at.os_cached_bytes
                    )
                )
                share = None if at is None else at.share(cached)
                heights.append(0 if share is None else share * 100)
            xs = [i + (offset - (len(bars) - 1) / 2) * width for i in range(len(points))]
            axis.bar(
                xs, heights, width * 0.95, color=color, alpha=alpha, label=f"{cache}, {moment}"
            )
        axis.set_xticks(range(len(points)), labels, fontsize=8)
        axis.set_xlabel("shared_buffers (one group per point, evenly spaced)")
        axis.set_ylabel(f"share of the {relation} cached (%)")
        axis.set_ylim(0, 105)
        axis.grid(alpha=0.3, axis="y")
        axis.set_title(f"{relation} ({WASH_RELATIONS[relation]})", fontsize=10)
        # below the axes: the bars reach 100%, where a legend inside would hide them
        axis.legend(fontsize=7, loc="upper center", bbox_to_anchor=(0.5, -0.22), ncol=2)
    figure.suptitle(
        f"{data.run.name}: where the index and the table were just before the scan"
        " (after idx1)\nand just after it (after seq), medians over repetitions",
        fontsize=11,
        y=1.04,
    )
    return save_figure(figure, out_dir, "cache-wash-around-the-scan")


def residency_html(data: RunData, reps: list[Repetition], sizes: WashData) -> str:
    """Per point, index and table in shared_buffers and in the OS cache around the scan."""
    found = [s for s in snapshot_samples(data) if s.label in SCAN_MOMENTS]
    if not found:
        return _part("residency_not_measured")
    ratios = {(row.huge_pages, row.shared_buffers_bytes): row for row in survival_table(reps)}
    # one each: thirteen columns do not fit
    tables: dict[str, list[list[str]]] = {"index": [], "table": []}
    for size, mode, by_key in point_residencies(data, sizes):
        row = ratios.get((mode, size))
        for relation, rows in tables.items():
            cells = [format_bytes(size), _mode_label(mode)]
            cells += [_ratio_text(row.ratio if row else None)] if relation == "index" else []
            for moment in SCAN_MOMENTS:
                at = by_key.get((relation, moment))
                cells += (
                    ["–", "–"]
                    if at is None
                    else [
                        _cached_text(at, at.shared_buffers_bytes),
                        _cached_text(at, at.os_cached_bytes),
                    ]
                )
            after = by_key.get((relation, "after seq"))
            rows.append([*cells, "–" if after is None else _neither_text(after)])
    headers = [
        "before the scan: in shared_buffers",
        "before: in the OS cache",
        "after the scan: in shared_buffers",
        "after: in the OS cache",
        "after: in neither cache",
    ]
    names = ", ".join(f"{k} {v}" for k, v in (("index", "random_random_idx"), ("table", "random")))
    return _part(
        "residency",
        names,
        WASH_RELATIONS["index"],
        Markup(_table(["shared_buffers", "huge pages", "idx2/idx1", *headers], tables["index"], 2)),
        WASH_RELATIONS["table"],
        Markup(_table(["shared_buffers", "huge pages", *headers], tables["table"], 2)),
    )


def findings_html(reps: list[Repetition], data: RunData | None = None) -> str:
    if not reps:
        return _part("findings", None, None, None, None, None)
    sizes = data_sizes(data) if data is not None else {}
    rows = []
    for mode in _huge_pages_values(reps):
        label = _mode_label(mode)
        size, ratio = index_survives_from(reps, mode)
        if size is None:
            answer = "none of the settings measured" + (
                f" (index {format_bytes(sizes['index_bytes'])})" if sizes.get("index_bytes") else ""
            )
            figure = "–"
        else:
            assert ratio is not None  # index_survives_from gives a size with its ratio
            answer = _with_index_size(size, sizes)
            figure = f"idx2/idx1 = {ratio.median:.2f} (median)" + (
                f" ({_level(ratio)} of the median {ratio.median_low:.2f}..{ratio.median_high:.2f})"
                if ratio.median_low is not None
                else " (one repetition: no interval)"
            )
        rows.append(
            [
                f"smallest shared_buffers from which idx2 is within "
                f"{(SURVIVAL_TOLERANCE - 1) * 100:.0f}% of idx1 (the index survives the scan)",
                label,
                answer,
                figure,
            ]
        )
        for phase in PHASES:
            best, summary = best_setting(reps, mode, phase)
            rows.append(
                [
                    f"shared_buffers with the best median {phase}",
                    label,
                    format_bytes(best),
                    _ms(summary),
                ]
            )
    return _part(
        "findings",
        Markup(timing_html(data, reps) if data is not None else ""),
        Markup(_table(["question", "huge pages", "answer", "figure"], rows, text_columns=4)),
        Markup(survival_html(reps, sizes)),
        Markup(huge_pages_html(reps)),
        Markup(residency_html(data, reps, sizes)) if data is not None else None,
    )


def claims_html(data: RunData) -> str:
    """Each of the seed's findings in its words, and its verdict on this run: the same rules,
    figures and verdicts as `pgcachelab reproduce` (issue 46)."""
    # the study imports this module when it draws a report, never at import time
    from pgcachelab.studies.cache_wash.study import CacheWash

    judged = []
    for claim in CacheWash.claims:
        verdict = _judged(claim.judge, data)
        figure = f"{verdict.figure.text()}: " if verdict.figure else ""
        judged.append((claim, verdict.outcome, figure + verdict.reason))
    return _part("claims", judged)


def _judged(judge: Callable[[RunData], Verdict], data: RunData) -> Verdict:
    """A figure the rules refuse leaves the claim undecided, as in `reproduce`."""
    try:
        return judge(data)
    except BadFigure as error:
        return noise(f"undecided: the figure was refused: {error}")


def run_conditions_html(data: RunData) -> str:
    """The order the points ran in, and whether huge pages on and off had the same RAM."""
    # a block key may be a workload key (os_cache), which only the swept values hold
    settings = [{**result.point.settings, **result.point.swept} for result in data.points]
    memory = same_ram_check(measured_memory(data), data.memory_limit_bytes is not None)
    return _part("run_conditions", order_note(data.schedule, settings), memory)


def cache_wash_section(data: RunData, out_dir: Path) -> Section:
    """The seed's findings judged, its charts, then the other plots and the findings; empty
    when the run is not a cache-wash run."""
    reps = repetitions(data)
    if not reps:
        return Section(TITLE)
    seed_charts = seed_box_plots(reps, data, out_dir)
    plots = box_plots(reps, data, out_dir) + phase_cache_plot(data, out_dir)
    plots += scan_residency_plot(data, out_dir)
    body = _part(
        "section",
        Markup(claims_html(data)),
        Markup(run_conditions_html(data)),
        Markup(seed_charts_html(reps, seed_charts)),
        Markup(findings_html(reps, data)),
    )
    return Section(TITLE, Markup(body), plots)
