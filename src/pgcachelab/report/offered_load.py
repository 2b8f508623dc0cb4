"""The report's section for a sweep of pgbench's -R: latency percentiles against offered and
achieved throughput, the knee marked, and the finding in one line (analysis/offered_load.py).

Other swept keys (clients, a setting) make cells: one line per cell, each with its own knee.
"""

from pathlib import Path

from markupsafe import Markup

from pgcachelab.analysis.offered_load import KEEPS_UP, LoadStep, finding, knee
from pgcachelab.analysis.rate_sweep import offered_load_steps
from pgcachelab.analysis.run_data import RunData
from pgcachelab.report.plots import save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import Row, Section, macro, table

TITLE = "Latency against offered load"
METHOD = (
    "Each point offered a fixed rate with pgbench -R (Poisson arrivals); pgbench measures each "
    "latency from the transaction's scheduled start, so time spent waiting behind a slow "
    "transaction is counted (its schedule lag): the percentiles are free of coordinated "
    "omission. Percentiles are medians over the repetitions of each repetition's, from "
    f"pgbench's per-transaction log. The knee: the first rate achieved below {KEEPS_UP:.0%} of "
    "the offered one by more than the Poisson schedule's own noise (three standard deviations "
    "of the transactions it scheduled)."
)


def offered_load_section(data: RunData, out_dir: Path) -> Section:
    if "rate" not in data.swept_keys:
        return Section(TITLE)
    cells = offered_load_steps(data)
    if not cells:
        return Section(TITLE)
    parts = []
    for cell, steps in cells.items():
        behind = knee(steps)
        rows = [
            Row(
                [
                    f"{s.offered_tps:,.0f}",
                    f"{s.achieved_tps:,.0f}",
                    f"{s.p50_ms:.3g}",
                    f"{s.p99_ms:.3g}" + (" *" if s.biased_low else ""),
                    f"{s.p999_ms:.3g}",
                    "–" if s.lag_p99_ms is None else f"{s.lag_p99_ms:.3g}",
                    "knee" if i == behind else ("behind" if not s.keeps_up else ""),
                ],
                "failed" if not s.keeps_up else "",
            )
            for i, s in enumerate(steps)
        ]
        head = [
            "offered tps",
            "achieved tps",
            "p50 ms",
            "p99 ms",
            "p99.9 ms",
            "schedule lag p99 ms",
            "",
        ]
        parts.append((f"{cell}: " if cell else "", finding(steps), Markup(table(head, rows))))
    body = macro("offered_load.html.j2", "offered_load")(METHOD, parts)
    return Section(TITLE, body, _plots(cells, out_dir), generic_plots=True)


def _plots(cells: dict[str, list[LoadStep]], out_dir: Path) -> list[Path]:
    figure, (latency_axis, throughput_axis) = plt.subplots(
        1, 2, figsize=(11, 4.2), gridspec_kw={"width_ratios": [3, 2]}
    )
    for cell, steps in cells.items():
        offered = [s.offered_tps for s in steps]
        prefix = f"{cell}: " if cell else ""
        for name, values, style in (
            ("p50", [s.p50_ms for s in steps], ":"),
            ("p99", [s.p99_ms for s in steps], "-"),
            ("p99.9", [s.p999_ms for s in steps], "--"),
        ):
            latency_axis.plot(offered, values, style, marker="o", label=f"{prefix}{name}")
        throughput_axis.plot(
            offered, [s.achieved_tps for s in steps], marker="o", label=f"{prefix}achieved"
        )
        behind = knee(steps)
        if behind is not None:
            for axis in (latency_axis, throughput_axis):
                axis.axvline(steps[behind].offered_tps, color="tab:red", alpha=0.4)
            latency_axis.annotate(
                "knee",
                (steps[behind].offered_tps, steps[behind].p99_ms),
                textcoords="offset points",
                xytext=(6, 6),
                color="tab:red",
            )
    every = sorted({s.offered_tps for steps in cells.values() for s in steps})
    throughput_axis.plot(every, every, color="grey", alpha=0.5, label="achieved = offered")
    latency_axis.set_yscale("log")
    if every[-1] > 20 * every[0]:  # rates orders of magnitude apart: each gets its own room
        for axis in (latency_axis, throughput_axis):
            axis.set_xscale("log")
    latency_axis.set_xlabel("offered load (pgbench -R, transactions/s)")
    latency_axis.set_ylabel("latency (ms, from the scheduled start)")
    latency_axis.set_title("latency percentiles against offered load")
    throughput_axis.set_xlabel("offered load (transactions/s)")
    throughput_axis.set_ylabel("achieved throughput (transactions/s)")
    throughput_axis.set_title("achieved against offered")
    for axis in (latency_axis, throughput_axis):
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8)
    figure.tight_layout()
    return save_figure(figure, out_dir, "latency-by-offered-load")
