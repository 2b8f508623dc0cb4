"""The TPC-C part of a report (seed 002): tpmC per ladder step (or per point) with the
repetitions' spread, each step's settings diff and warnings, the tpmC series over each run, and
latencies per transaction type."""

import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import TypeVar

from markupsafe import Markup
from matplotlib.lines import Line2D
from matplotlib.patches import Patch

from pgcachelab.analysis.memory_accounting import ladder_ram_check
from pgcachelab.analysis.run_data import RunData, measured_memory
from pgcachelab.analysis.step_resources import step_explanation
from pgcachelab.report.plots import MAX_DOTS, save_figure, thin_by_rank
from pgcachelab.report.pyplot import plt
from pgcachelab.report.render import ALL_COLUMNS, Section, render, table
from pgcachelab.store.metric_types import TpccMetrics, TpccMix
from pgcachelab.studies.tpcc.ladder import (
    figure,
    is_tpcc_run,
    median_of,
    step_name,
    step_samples,
    tpcc_runs,
)
from pgcachelab.studies.tpcc.step_results import StepResult, ladder_results, limit_verdicts
from pgcachelab.workloads.tpcc import differences

DISCLAIMER = "a TPC-C-like workload, not an audited TPC-C result"
# Workload parameters shown in a step's diff next to the server settings.
BAR_COLOR, LIMITED_COLOR = "#1f77b4", "#d62728"
# Lines per step in the series plot: past this many repetitions, evenly spaced in run order,
# since hundreds of overlapping lines show no more than ten and draw slowly (issue 24).
MAX_SERIES = 10

T = TypeVar("T")


def tpmc_plot(data: RunData, results: list[StepResult], out_dir: Path) -> list[Path]:
    """Bars: median tpmC per step; whiskers: min..max; dots: each repetition."""
    samples = {s.name: s.tpmc for s in step_samples(data)}
    figure, axis = plt.subplots(figsize=(max(6.0, 1.3 * len(results) + 2), 4.2))
    positions = range(len(results))
    medians = [r.median or 0 for r in results]
    colors = [LIMITED_COLOR if r.rate_limited else BAR_COLOR for r in results]
    axis.bar(positions, medians, color=colors, alpha=0.75)
    for x, result in zip(positions, results, strict=True):
        if result.minimum is not None and result.maximum is not None:
            axis.plot([x, x], [result.minimum, result.maximum], color="black", linewidth=1.2)
        values = thin_by_rank(samples.get(result.name) or [], MAX_DOTS)
        axis.scatter([x] * len(values), values, color="black", s=12, zorder=3)
        if result.median:  # above the highest repetition, clear of the whisker
            axis.annotate(
                f"{result.median:,.0f}",
                (x, result.maximum),
                ha="center",
                va="bottom",
                fontsize=8,
                xytext=(0, 4),
                textcoords="offset points",
            )
    handles = [
        Patch(color=BAR_COLOR, alpha=0.75, label="median of the repetitions"),
        Line2D(
            [],
            [],
            color="black",
            marker="o",
            markersize=4,
            label="each repetition (min..max)"
            if max(map(len, samples.values()), default=0) <= MAX_DOTS
            else f"repetitions, at most {MAX_DOTS} a step by rank (min..max)",
        ),
    ]
    if any(r.rate_limited for r in results):
        handles.insert(1, Patch(color=LIMITED_COLOR, alpha=0.75, label="capped by its rate limit"))
    positive = [m for m in medians if m > 0]
    if positive and max(positive) / min(positive) > 20:
        axis.set_yscale("log")  # a rate-limited step sits two orders below the others
        axis.set_ylabel("tpmC, New-Orders per minute (log scale)")
    else:
        axis.set_ylabel("tpmC, New-Orders per minute")
    axis.set_xticks(list(positions), [r.name for r in results], rotation=20, ha="right")
    axis.set_xlabel("ladder step (cumulative)" if "step" in data.swept_keys else "point")
    axis.set_title(f"tpmC per step ({DISCLAIMER})")
    axis.grid(axis="y", alpha=0.3)
    axis.legend(handles=handles, fontsize=8, loc="upper left")
    axis.margins(y=0.12)
    return save_figure(figure, out_dir, "tpcc_tpmc_per_step")


def evenly_spaced(items: list[T], limit: int) -> list[T]:
    """At most `limit` of `items`, evenly spaced, the first and the last kept."""
    if len(items) <= limit:
        return items
    last = len(items) - 1
    return [items[round(i * last / (limit - 1))] for i in range(limit)]


def series_plot(data: RunData, out_dir: Path) -> list[Path]:
    """tpmC in 10-second intervals over each run, one colour per step."""
    figure, axis = plt.subplots(figsize=(8.5, 4.0))
    palette = itertools.cycle(plt.rcParams["axes.prop_cycle"].by_key()["color"])
    drawn = False
    runs_by_point = [tpcc_runs(result) for result in data.points]
    thinned = any(len(runs) > MAX_SERIES for runs in runs_by_point)
    for result, runs, color in zip(data.points, runs_by_point, palette, strict=False):
        for number, run in enumerate(evenly_spaced(runs, MAX_SERIES)):
            series = run.get("series") or []
            if not series:
                continue
            xs = [(p["start_s"] + p["end_s"]) / 2 for p in series]
            axis.plot(
                xs,
                [p["tpmc"] for p in series],
                color=color,
                alpha=0.8,
                linewidth=1,
                marker=".",
                label=step_name(result) if number == 0 else None,
            )
            drawn = True
    if not drawn:
        plt.close(figure)
        return []
    axis.set_xlabel("time into the run (s)")
    axis.set_ylabel("tpmC in the interval (New-Orders per minute)")
    axis.set_title(
        f"tpmC over each run ({MAX_SERIES} repetitions a step, evenly spaced in run order)"
        if thinned
        else "tpmC over each run (every repetition)"
    )
    axis.set_ylim(bottom=0)
    axis.grid(alpha=0.3)
    axis.legend(fontsize=8, ncol=2)
    return save_figure(figure, out_dir, "tpcc_tpmc_series")


def _step_table(data: RunData, results: list[StepResult]) -> str:
    by_name = {step_name(r): tpcc_runs(r) for r in data.points}
    header = [
        "step",
        "repetitions",
        "tpmC median",
        "min..max",
        "vs step before (95% CI)",
        "",
        "tpmTOTAL",
        "New-Order p90 ms",
        "rolled back %",
        "retries",
        "failed tx",
        "client CPU ms/tx",
        "rate limit",
        "what the machine did (vs step before)",
    ]
    limits = limit_verdicts(results)
    resources = {step_name(r): r.resources for r in data.points}
    rows = []
    previous = None
    for result, limit in zip(results, limits, strict=True):
        runs = by_name.get(result.name, [])
        new_order_p90 = median_of(
            [
                stats.get("latency_ms", {}).get("p90") if stats else None
                for stats in (run["by_type"].get("new_order") for run in runs)
            ]
        )
        change = (
            f"×{result.ratio:.2f} ({result.ci_low:.2f}–{result.ci_high:.2f})"
            if result.ci_low is not None
            else (f"×{result.ratio:.2f}" if result.ratio else "")
        )
        share = median_of([run.get("rollback_share") for run in runs])
        cells = [
            result.name,
            str(result.n),
            figure(result.median),
            f"{figure(result.minimum)}..{figure(result.maximum)}",
            change,
            result.verdict,
            figure(median_of([run.get("tpm_total") for run in runs])),
            figure(new_order_p90, 2),
            figure(share * 100 if share is not None else None, 2),
            figure(median_of([run.get("retries") for run in runs])),
            figure(median_of([run.get("failed") for run in runs])),
            figure(median_of([run.get("client_cpu_ms_per_transaction") for run in runs]), 3),
            limit,
            (step_explanation(resources.get(previous), resources.get(result.name)) or "–")
            if previous
            else "",
        ]
        rows.append(cells)
        previous = result.name
    return table(header, rows, ALL_COLUMNS)


USED_COLUMNS = (
    ("cpu_user_pct", "CPU user %", 0),
    ("cpu_system_pct", "system %", 0),
    ("cpu_iowait_pct", "iowait %", 0),
    ("cpu_idle_pct", "idle %", 0),
    ("cgroup_cpu_pct", "server CPU %", 0),
    ("device_reads_per_s", "device reads/s", 0),
    ("device_writes_per_s", "writes/s", 0),
    ("device_wait_ms", "wait ms/IO", 2),
)


def _used_table(data: RunData) -> str:
    """Per step: the medians of its runs' resource summaries, WAL per second, checkpoints."""
    if not any(r.resources for r in data.points):
        return ""
    header = ["step", *(label for _, label, _ in USED_COLUMNS), "WAL MB/s", "checkpoints"]
    rows = []
    for result in data.points:
        used = result.resources or {}
        wal_rates, checkpoints = [], []
        for m in result.ok:
            probes = m.metrics.get("probes") or {}
            seconds = ((m.metrics.get("resources") or {}).get("summary") or {}).get("seconds")
            wal = (probes.get("wal") or {}).get("bytes")
            if wal is not None and seconds:
                wal_rates.append(wal / seconds / 1e6)
            counted = probes.get("checkpointer") or {}
            timed = counted.get("checkpoints_timed")
            requested = counted.get("checkpoints_requested")
            if timed is not None and requested is not None:
                checkpoints.append(timed + requested)
        rows.append(
            [
                step_name(result),
                *(figure(used.get(key), digits) for key, _, digits in USED_COLUMNS),
                figure(median_of(wal_rates), 2),
                figure(median_of(checkpoints)),
            ]
        )
    return table(header, rows, ALL_COLUMNS)


def _latency_table(data: RunData) -> str:
    """Median over repetitions of each transaction type's p50/p90/p99 per step."""
    types = ("new_order", "payment", "order_status", "delivery", "stock_level")
    header = ["step", *[f"{t} p50/p90/p99 ms" for t in types]]
    rows = []
    for result in data.points:
        runs = tpcc_runs(result)
        cells = [step_name(result)]
        for name in types:
            quantiles = [
                median_of(
                    [
                        (stats.get("latency_ms") or {}).get(q) if stats else None
                        for stats in (run["by_type"].get(name) for run in runs)
                    ]
                )
                for q in ("p50", "p90", "p99")
            ]
            cells.append(" / ".join(figure(q, 1) for q in quantiles))
        rows.append(cells)
    return table(header, rows, ALL_COLUMNS)


def _changes_text(result: StepResult) -> str:
    changed = [f"{n} {b if b is not None else '(default)'} → {v}" for n, b, v in result.changes]
    return "; ".join(changed) if changed else "none"


def _differences(data: RunData, shapes: list[tuple[str, str]]) -> list[str]:
    """What the runs did differently from TPC-C, as each run recorded it when it ran (a run
    before issue 51 drew its mix without the deck, and its client mode sent more statements);
    from the shape only for runs that recorded none."""
    recorded = [
        str(difference)
        for r in data.points
        for run in tpcc_runs(r)
        for difference in run.get("differences") or ()
    ]
    return recorded or [d for shape in shapes for d in differences(*shape)]


def mix_text(runs: Sequence[TpccMetrics]) -> str:
    """The runs whose mix fell below clause 5.2.3's minimums (issue 51); runs stored before
    the mix was checked say nothing of it."""
    checked: list[TpccMix] = []
    below: list[dict[str, float]] = []
    for run in runs:
        mix = run.get("mix")
        if isinstance(mix, dict):
            checked.append(mix)
            if isinstance(mix.get("below_minimums"), dict) and mix["below_minimums"]:
                below.append(mix["below_minimums"])
    if not checked:
        return ""
    if not below:
        return f"; the mix of every run ({len(checked)}) met clause 5.2.3's minimums"
    worst: dict[str, float] = {}
    for shares in below:
        for name, share in shares.items():
            worst[name] = min(share, worst.get(name, share))
    lowest = ", ".join(f"{name} {share * 100:.2f}%" for name, share in worst.items())
    return (
        f"; the mix of {len(below)} of {len(checked)} runs was BELOW clause 5.2.3's minimums"
        f" (lowest: {lowest}): their tpmC is not a TPC-C figure"
    )


def tpcc_section(data: RunData, out_dir: Path) -> Section:
    """Plots and the section's HTML, which stand for the generic plots; empty for runs that
    are not TPC-C."""
    if not is_tpcc_run(data):
        return Section("TPC-C")
    results = ladder_results(step_samples(data))
    plots = tpmc_plot(data, results, out_dir) + series_plot(data, out_dir)
    checks = {
        c["name"]: c["violations"]
        for r in data.points
        for run in tpcc_runs(r)
        for c in run.get("checks", [])
        if c["violations"]
    }
    checks_text = (
        "every run passed the consistency checks (clause 3.3.2 conditions 1–4, and no order"
        " line references the unused item of the rolled-back New-Orders)"
        if not checks
        else "FAILED consistency checks: " + "; ".join(f"{k} ({v})" for k, v in checks.items())
    )
    checks_text += mix_text([run for r in data.points for run in tpcc_runs(r)])
    # runs stored before issue 39 had one shape: procedures, no terminal times
    shapes = sorted(
        {
            (run.get("mode", "procedures"), run.get("terminal_times", "off"))
            for r in data.points
            for run in tpcc_runs(r)
        }
    )
    body = render(
        "tpcc.html.j2",
        memory=ladder_ram_check(measured_memory(data), data.memory_limit_bytes is not None),
        disclaimer=DISCLAIMER,
        shapes="; ".join(f"mode {mode}, terminal times {times}" for mode, times in shapes),
        differences="; ".join(dict.fromkeys(_differences(data, shapes))),
        checks=checks_text,
        step_table=Markup(_step_table(data, results)),
        steps=[(result, _changes_text(result)) for result in results],
        latency_table=Markup(_latency_table(data)),
        used_table=Markup(_used_table(data)),
    )
    return Section("TPC-C", Markup(body), plots, generic_plots=False)
