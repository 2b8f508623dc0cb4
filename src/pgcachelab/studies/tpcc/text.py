"""TPC-C results as plain text (stdout; exporters/json.py writes the JSON). Renderers only: no
I/O."""

import math

from pgcachelab.report.tables import format_table
from pgcachelab.units import format_bytes
from pgcachelab.workloads.tpcc import differences
from pgcachelab.workloads.tpcc.deck import describe
from pgcachelab.workloads.tpcc.driver import TpccRun
from pgcachelab.workloads.tpcc.loader import LoadResult
from pgcachelab.workloads.tpcc.params import format_weights

DISCLAIMER = "TPC-C-like workload, not an audited TPC-C result"
LATENCY_KEYS = ("mean", "p50", "p90", "p95", "p99", "max")


def _ms(value: float | None) -> str:
    return (
        "-" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:.2f}"
    )


def _percent(share: float) -> str:
    return "-" if math.isnan(share) else f"{share * 100:.2f}%"


def format_load(result: LoadResult) -> str:
    phases = ", ".join(
        f"{name} {seconds:.1f} s" for name, seconds in result.seconds_by_phase.items()
    )
    checks = ", ".join("ok" if c.passed else f"FAILED ({c.violations})" for c in result.checks)
    lines = [
        f"loaded {result.info.warehouses} warehouse(s) in {result.total_s:.1f} s ({phases})",
        f"size {format_bytes(result.database_bytes)}; C-Load for C_LAST"
        f" {result.info.constants.c_last_load}; consistency checks: {checks}",
    ]
    if result.seconds_by_task:
        # the tasks of a phase run side by side: their seconds overlap and exceed the phase's
        tasks = ", ".join(f"{name} {s:.1f} s" for name, s in result.seconds_by_task.items())
        lines.append(f"tasks, on parallel sessions: {tasks}")
    return "\n".join(lines)


def _length(run: TpccRun) -> str:
    if run.options.transactions:
        return f"{run.options.transactions} transactions each ({run.summary.duration_s:.1f} s)"
    return f"{run.options.duration_s} s"


def format_run(run: TpccRun) -> str:
    summary = run.summary
    options = run.options
    lines = [
        f"{DISCLAIMER}: {run.warehouses} warehouse(s), {options.clients} terminal(s)"
        f" ({'home warehouse' if options.home_warehouse else 'any warehouse'}),"
        f" {_length(run)}, mix {format_weights(options.weights)}, mode {options.mode},"
        f" terminal times {options.terminal_times}, pgbench {run.pgbench_version}",
        f"tpmC {summary.tpmc:,.0f}   tpmTOTAL {summary.tpm_total:,.0f}",
        f"New-Orders {summary.new_orders:,} (rolled back {run.rollbacks:,},"
        f" {_percent(run.rollback_share)}); failed {summary.failed:,};"
        f" retries {'-' if run.retries is None else f'{run.retries:,}'}",
        "settings: " + (", ".join(f"{k}={v}" for k, v in run.settings.items()) or "defaults"),
        f"client CPU {run.client_cpu_s:.2f} s ({_ms(run.client_cpu_ms_per_transaction)} ms per"
        f" transaction); C_LAST C-Load {run.c_last_load}, C-Run {run.c_last_run}",
        "",
    ]
    rows = []
    for stats in summary.by_type.values():
        latency = stats.latency_ms
        quantiles = [_ms(latency.get(key)) for key in LATENCY_KEYS]
        rows.append([stats.name, f"{stats.completed:,}", f"{stats.failed:,}", *quantiles])
    lines.append(
        format_table(
            [
                "transaction",
                "completed",
                "failed",
                "mean ms",
                "p50 ms",
                "p90 ms",
                "p95 ms",
                "p99 ms",
                "max ms",
            ],
            rows,
        )
    )
    lines.append("")
    lines.append(
        format_table(
            ["interval", "New-Orders", "tpmC"],
            [
                [f"{p.start_s:.0f}-{p.end_s:.0f} s", f"{p.new_orders:,}", f"{p.tpmc:,.0f}"]
                for p in summary.series
            ],
        )
    )
    if run.rate_limited:
        lines.append(
            f"warning: the run reached its rate limit ({options.rate_tpm:,.0f} transactions per"
            " minute): the figures show the limit, not the server; raise or drop --rate-tpm"
        )
    lines.append(describe(run.mix))
    if not run.mix.met:
        lines.append(
            "warning: the run's mix is below clause 5.2.3's minimums: its tpmC is not a TPC-C"
            " figure; run longer (whole decks meet them) or with the standard --weights"
        )
    lines.append(
        "consistency checks after the run: "
        + ", ".join("ok" if c.passed else f"FAILED ({c.violations})" for c in run.checks)
    )
    if options.terminal_times == "spec":
        lines.append(
            "with keying and think times the latencies are mean response times: pgbench logs"
            " whole cycles, and the sleeps' means come out of its per-command report"
        )
    shape = differences(options.mode, options.terminal_times)
    lines.append("differences from TPC-C: " + "; ".join(shape))
    return "\n".join(lines)
