"""The pgbench workload: pgbench's tables at the point's scale, then one pgbench run."""

import dataclasses

import psycopg

from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.pgbench import init_args, run_args, run_pgbench, run_pgbench_init
from pgcachelab.workloads.pgbench_output import parse_pgbench_init_output
from pgcachelab.workloads.protocol import Bench


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
    """The unrecorded warm-up run, if asked."""
    warmup_s = point.workload.get("warmup") or 0
    if warmup_s:
        pgbench_target = bench.target.pgbench_target(point.settings)
        run_pgbench(bench.pgbench, run_args(point.workload, warmup_s, False), pgbench_target)
    return {"warmup_s": warmup_s}


def run(bench: Bench, point, conn: psycopg.Connection, mark=None) -> Outcome:
    """One pgbench run (one phase: `mark`, the hook for snapshots between phases, is unused)."""
    measured = run_pgbench(
        bench.pgbench, run_args(point.workload), bench.target.pgbench_target(point.settings)
    )
    return Outcome(
        metrics={
            "pgbench": dataclasses.asdict(measured.result),
            "pgbench_args": measured.args,
            "pgbench_wall_s": measured.wall_s,
        },
        tps=measured.result.tps,
        latency_avg_ms=measured.result.latency_avg_ms,
        latency_stddev_ms=measured.result.latency_stddev_ms,
        summary=f"{measured.result.tps:,.0f} tps",
    )
