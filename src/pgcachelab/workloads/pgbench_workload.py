"""The pgbench workload: pgbench's tables at the point's scale, then one pgbench run."""

import dataclasses

import psycopg

from pgcachelab.machine import owned
from pgcachelab.units import format_bytes
from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.parameters import PgbenchParameters
from pgcachelab.workloads.pgbench import init_args, run_args, run_pgbench, run_pgbench_init
from pgcachelab.workloads.pgbench_latency import (
    LogFigures,
    expected_transactions,
    latency_distribution,
    log_args,
    sampling_rate,
)
from pgcachelab.workloads.pgbench_output import parse_pgbench_init_output
from pgcachelab.workloads.protocol import Bench, DataEstimate
from pgcachelab.workloads.scale_class import BYTES_PER_SCALE

LOG_PREFIX = "pgbench_log"

# What the runner asks of it (workloads/protocol.py).
parameters_type = PgbenchParameters
keeps_data = False
prewarms_itself = False
prewarm_after_version_switch = True
run_stopping_errors: tuple[type[Exception], ...] = ()


def data_estimate(parameters: PgbenchParameters, memory_bytes: int | None) -> DataEstimate | None:
    """pgbench's tables at the point's scale (its class resolved); none for custom scripts
    that bring their own data."""
    if parameters.brings_own_data:
        return None
    scale = parameters.scale
    key = "pgbench.scale_class" if parameters.scale_class else "pgbench.scale"
    value = parameters.scale_class or scale
    return DataEstimate(
        identity=(scale, parameters.init_steps),
        size_bytes=scale * BYTES_PER_SCALE,
        key=key,
        value=f"{value!r} (about {format_bytes(BYTES_PER_SCALE)} per unit of scale)",
        build=f"pgbench -i at scale {scale} (~{format_bytes(scale * BYTES_PER_SCALE)})",
    )


def known_seconds(parameters: PgbenchParameters) -> tuple[float, list[str]]:
    """The warm-up and the measured run; a run of so many transactions is not known."""
    return run_seconds(parameters.warmup, parameters.duration, parameters.transactions)


def run_seconds(
    warmup_s: float, duration_s: float, transactions: int | None
) -> tuple[float, list[str]]:
    """(seconds, what is not known) of a warm-up and a run for a time or a count."""
    if transactions:
        left_out = [f"runs of {transactions:,} transactions: their time depends on the throughput"]
        return float(warmup_s or 0), left_out
    return float(warmup_s or 0) + float(duration_s), []


def checkpoint(conn: psycopg.Connection) -> bool:
    """Flush what loading dirtied, so that no measurement pays for it; False without rights."""
    try:
        conn.execute("checkpoint")
    except psycopg.errors.InsufficientPrivilege:
        return False
    return True


def ensure_data(bench: Bench, point) -> dict:
    """pgbench tables of the point's scale, initialised once and reused while it stays."""
    target, state, parameters = bench.target, bench.state, point.workload
    if parameters.brings_own_data:
        return {"initialised": False}
    key = ("pgbench", parameters.scale, parameters.init_steps)
    if key == state.get("data_key"):
        return {"initialised": False, "scale": parameters.scale}
    state["data_key"] = None
    args = init_args(parameters.scale, parameters.init_steps, target.server_major)
    output, wall_s = run_pgbench_init(bench.pgbench, args, target.pgbench_target({}))
    state["data_key"] = key
    with target.connect() as conn:
        checkpointed = checkpoint(conn)
    return {
        "initialised": True,
        "scale": parameters.scale,
        "init_args": args,
        "init_wall_s": wall_s,
        "init_steps_s": parse_pgbench_init_output(output).steps_s,
        "checkpoint_after_init": checkpointed,
    }


def prepare(bench: Bench, point, conn: psycopg.Connection) -> dict:
    """The unrecorded warm-up, if asked; its tps sizes the first run's latency log."""
    warmup_s = point.workload.warmup or 0  # 0, not 0.0: as runs before typed points stored it
    if warmup_s:
        pgbench_target = bench.target.pgbench_target(point.settings)
        warm = run_pgbench(bench.pgbench, run_args(point.workload, warmup_s, False), pgbench_target)
        _tps_estimates(bench).setdefault(point.index, warm.result.tps)
    return {"warmup_s": warmup_s}


def run(bench: Bench, point, conn: psycopg.Connection, mark=None) -> Outcome:
    """One pgbench run with its per-transaction log, sampled to stay near LOGGED_TARGET lines
    (one phase: `mark`, the hook for snapshots between phases, is unused)."""
    parameters = point.workload
    rate = sampling_rate(expected_transactions(parameters, _tps_estimates(bench).get(point.index)))
    with owned.scratch_dir("pgcachelab-pgbench-") as scratch:
        measured = run_pgbench(
            bench.pgbench,
            run_args(parameters) + log_args(str(scratch / LOG_PREFIX), rate),
            bench.target.pgbench_target(point.settings),
        )
        logs = [path.read_text() for path in sorted(scratch.glob(f"{LOG_PREFIX}.*"))]
    result = measured.result
    _tps_estimates(bench)[point.index] = result.tps
    figures = LogFigures(
        clients=parameters.clients,
        duration_s=None if parameters.transactions else parameters.duration,
        latency_avg_ms=result.latency_avg_ms,
        rate_limited=bool(parameters.rate),
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
