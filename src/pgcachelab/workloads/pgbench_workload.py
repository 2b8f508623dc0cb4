"""The pgbench workload: pgbench's tables at the point's scale, then one pgbench run."""

import dataclasses

import psycopg

from pgcachelab.machine import owned
from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.pgbench import init_args, run_args, run_pgbench, run_pgbench_init
from pgcachelab.workloads.pgbench_latency import (
    LogFigures,
    expected_transactions,
    latency_distribution,
    log_args,
    sampling_rate,
)
from pgcachelab.workloads.pgbench_output import parse_pgbench_init_output
from pgcachelab.workloads.protocol import Bench

LOG_PREFIX = "pgbench_log"


def checkpoint(conn: psycopg.Connection) -> bool:
    """Flush what loading dirtied, so that no measurement pays for it; False without rights."""
    try:
        conn.execute("checkpoint")
    except psycopg.errors.InsufficientPrivilege:
        return False
    return True


def ensure_data(bench: Bench, point) -> dict:
    """pgbench tables of the point's scale, initialised once and reused while it stays."""
    target, state, workload = bench.target, bench.state, point.workload
    if workload["mode"] == "custom" and not workload.get("init_steps"):
        return {"initialised": False}
    key = ("pgbench", workload["scale"], workload.get("init_steps"))
    if key == state.get("data_key"):
        return {"initialised": False, "scale": workload["scale"]}
    state["data_key"] = None
    args = init_args(workload["scale"], workload.get("init_steps"), target.server_major)
    output, wall_s = run_pgbench_init(bench.pgbench, args, target.pgbench_target({}))
    state["data_key"] = key
    with target.connect() as conn:
        checkpointed = checkpoint(conn)
    return {
        "initialised": True,
        "scale": workload["scale"],
        "init_args": args,
        "init_wall_s": wall_s,
        "init_steps_s": parse_pgbench_init_output(output).steps_s,
        "checkpoint_after_init": checkpointed,
    }


def prepare(bench: Bench, point, conn: psycopg.Connection) -> dict:
    """The unrecorded warm-up, if asked; its tps sizes the first run's latency log."""
    warmup_s = point.workload.get("warmup") or 0
    if warmup_s:
        pgbench_target = bench.target.pgbench_target(point.settings)
        warm = run_pgbench(bench.pgbench, run_args(point.workload, warmup_s, False), pgbench_target)
        _tps_estimates(bench).setdefault(point.index, warm.result.tps)
    return {"warmup_s": warmup_s}


def run(bench: Bench, point, conn: psycopg.Connection, mark=None) -> Outcome:
    """One pgbench run with its per-transaction log, sampled to stay near LOGGED_TARGET lines
    (one phase: `mark`, the hook for snapshots between phases, is unused)."""
    workload = point.workload
    clients = int(workload["clients"])
    rate = sampling_rate(
        expected_transactions(workload, clients, _tps_estimates(bench).get(point.index))
    )
    with owned.scratch_dir("pgcachelab-pgbench-") as scratch:
        measured = run_pgbench(
            bench.pgbench,
            run_args(workload) + log_args(str(scratch / LOG_PREFIX), rate),
            bench.target.pgbench_target(point.settings),
        )
        logs = [path.read_text() for path in sorted(scratch.glob(f"{LOG_PREFIX}.*"))]
    result = measured.result
    _tps_estimates(bench)[point.index] = result.tps
    figures = LogFigures(
        clients=clients,
        duration_s=None
        if workload.get("transactions")
        else float(workload.get("duration") or 0) or None,
        latency_avg_ms=result.latency_avg_ms,
        rate_limited=bool(workload.get("rate")),
    )
    latency = latency_distribution(logs, rate, figures)
    return Outcome(
        metrics={
            "pgbench": dataclasses.asdict(result),
            "pgbench_args": measured.args,
            "pgbench_wall_s": measured.wall_s,
            "latency": latency,
        },
        tps=result.tps,
        latency_avg_ms=result.latency_avg_ms,
        latency_stddev_ms=result.latency_stddev_ms,
        summary=_summary(result.tps, latency),
    )


def _tps_estimates(bench: Bench) -> dict:
    return bench.state.setdefault("tps_estimates", {})


def _summary(tps: float, latency: dict) -> str:
    if latency.get("p99_ms") is None:
        return f"{tps:,.0f} tps"
    return f"{tps:,.0f} tps, p99 {latency['p99_ms']:.3g} ms"
