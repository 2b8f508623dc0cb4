"""The cache-wash part of a report: seed 000's box plots, per-phase cache figures, findings."""

import html
import statistics
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from pgcachelab.analysis.cache_split import (  # noqa: E402
    PHASES,
    SURVIVAL_TOLERANCE,
    Repetition,
    best_setting,
    huge_pages_effect,
    index_survives_from,
)
from pgcachelab.analysis.summary import hit_ratio  # noqa: E402
from pgcachelab.report.dataset import RunData, repetitions  # noqa: E402
from pgcachelab.report.plots import save_figure  # noqa: E402
from pgcachelab.units import format_bytes, shared_buffers_bytes  # noqa: E402

PHASE_TITLES = {
    "idx1": "idx1: index lookups before the scan",
    "seq": "seq: one sequential scan of the table",
    "idx2": "idx2: index lookups after the scan",
}
HUGE_PAGES_COLORS = {"on": "tab:orange", "off": "tab:blue", "try": "tab:green", "": "tab:blue"}


def _huge_pages_values(reps: list[Repetition]) -> list[str]:
    return sorted({r.huge_pages for r in reps}, reverse=True)


def box_plots(reps: list[Repetition], data: RunData, out_dir: Path) -> list[Path]:
    """The seed's three charts: every latency of a phase, per shared_buffers, huge pages
    side by side."""
    sizes = sorted({r.shared_buffers_bytes for r in reps})
    modes = _huge_pages_values(reps)
    width = 0.8 / max(1, len(modes))
    paths = []
    for phase in PHASES:
        figure, axis = plt.subplots(figsize=(max(8, len(sizes) * 0.9), 4.5))
        for offset, mode in enumerate(modes):
            samples = [
                [v for r in reps if r.shared_buffers_bytes == size and r.huge_pages == mode
                 for v in r.samples_ms[phase]]
                for size in sizes
            ]  # fmt: skip
            positions = [i + (offset - (len(modes) - 1) / 2) * width for i in range(len(sizes))]
            kept = [(p, s) for p, s in zip(positions, samples, strict=True) if s]
            if not kept:
                continue
            parts = axis.boxplot(
                [s for _, s in kept], positions=[p for p, _ in kept], widths=width * 0.9,
                patch_artist=True, showfliers=True, flierprops={"markersize": 2},
            )  # fmt: skip
            color = HUGE_PAGES_COLORS.get(mode, "tab:gray")
            for box in parts["boxes"]:
                box.set_facecolor(color)
                box.set_alpha(0.6)
            axis.plot([], [], color=color, linewidth=8, alpha=0.6,
                      label=f"huge_pages={mode}" if mode else "all points")  # fmt: skip
        axis.set_xticks(range(len(sizes)), [format_bytes(s) for s in sizes], rotation=45)
        # one box per setting, evenly spaced: geometric settings as on a log axis
        axis.set_xlabel("shared_buffers (one box per setting, evenly spaced)")
        axis.set_ylabel("latency (ms, log scale)")
        axis.set_yscale("log")
        axis.grid(alpha=0.3, axis="y", which="both")
        axis.set_title(f"{data.run.name}: {PHASE_TITLES[phase]}")
        axis.legend(fontsize=8)
        paths += save_figure(figure, out_dir, f"cache-wash-{phase}")
    return paths


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
        sizes = sorted({v[0] for v in values})
        hit_medians = [statistics.median([v[1] for v in values if v[0] == s]) for s in sizes]
        read_medians = [statistics.median([v[2] for v in values if v[0] == s]) for s in sizes]
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


def _level(summary) -> str:
    coverage = summary.median_coverage
    return "95% CI" if coverage >= 0.95 else f"min..max, a {coverage:.0%} interval"


def _ms(summary) -> str:
    text = f"median {summary.median:.3f} ms"
    if summary.median_low is not None:
        low, high = summary.median_low, summary.median_high
        text += f" ({_level(summary)} of the median {low:.3f}..{high:.3f})"
    return text


def findings_html(reps: list[Repetition]) -> str:
    if not reps:
        return "<p class='note'>No cache-wash measurement succeeded.</p>"
    rows = []
    for mode in _huge_pages_values(reps):
        label = f"huge_pages={mode}" if mode else "all points"
        size, ratio = index_survives_from(reps, mode)
        if size is None:
            answer = "none of the settings measured"
            figure = "–"
        else:
            answer = format_bytes(size)
            figure = f"idx2/idx1 = {ratio.median:.2f} (median)" + (
                f" ({_level(ratio)} of the median {ratio.median_low:.2f}..{ratio.median_high:.2f})"
                if ratio.median_low is not None else " (one repetition: no interval)"
            )  # fmt: skip
        rows.append(
            (f"smallest shared_buffers from which idx2 is within "
             f"{(SURVIVAL_TOLERANCE - 1) * 100:.0f}% of idx1 (the index survives the scan)",
             label, answer, figure)
        )  # fmt: skip
        for phase in PHASES:
            best, summary = best_setting(reps, mode, phase)
            rows.append((f"shared_buffers with the best median {phase}", label,
                         format_bytes(best), _ms(summary)))  # fmt: skip
    for phase in PHASES:
        effect = huge_pages_effect(reps, phase)
        if effect is None:
            continue
        interval = (
            f"95% CI {effect.ci_low:.3f}..{effect.ci_high:.3f}, {effect.pairs} pairs"
            if effect.ci_low is not None else f"{effect.pairs} pair: no interval"
        )  # fmt: skip
        verdict = "significant" if effect.significant else "not significant"
        rows.append((f"huge pages effect on {phase} (latency on / off)", "on vs off",
                     f"× {effect.ratio:.3f}", f"{interval}; {verdict}"))  # fmt: skip
    body = "".join(
        "<tr>" + "".join(f'<td class="text">{html.escape(str(c))}</td>' for c in row) + "</tr>"
        for row in rows
    )
    return (
        "<table><thead><tr><th>question</th><th>huge pages</th><th>answer</th>"
        f"<th>figure</th></tr></thead><tbody>{body}</tbody></table>"
    )


def cache_wash_section(data: RunData, out_dir: Path) -> tuple[list[Path], str]:
    """Plots and the findings table; nothing when the run is not a cache-wash run."""
    reps = repetitions(data)
    if not reps:
        return [], ""
    plots = box_plots(reps, data, out_dir) + phase_cache_plot(data, out_dir)
    return plots, findings_html(reps)
