"""What pgbench's per-transaction log costs a point (issue 32), measured side by side.

pgbench select-only (2 clients, both cores busy, the data cached) for --duration seconds,
alternately without a log, with the full log, and with the log sampled as the lab samples it
(--sampling-rate for LOGGED_TARGET lines per run), --rounds times each in the order ABCABC...
so that drift spreads over all three. It prints each one's median tps, the ratios to the run
without a log, and how long turning the log into the stored distribution took (parsing and
HdrHistogram), as a share of the run. Target: the lab's sampled log costs under 1% of tps.

A benchmark, not a test: it prints the figures and PASS/FAIL and exits 0 unless something
failed to run. Needs root or the server user. Usage:
    .venv/bin/python bench/latency_log.py [--duration 10] [--rounds 5]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from pgcachelab.clusters.binaries import find_install, find_pgbench
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.workloads.pgbench_latency import (
    LogFigures,
    expected_transactions,
    latency_distribution,
    log_args,
    sampling_rate,
)
from pgcachelab.workloads.pgbench_output import parse_pgbench_output

CLIENTS = 2


def one_run(pgbench, dsn, duration_s, scratch: Path, rate: float | None) -> tuple[float, float]:
    """(tps, seconds spent turning the log into the distribution; 0 without a log)."""
    for old in scratch.glob("log.*"):
        old.unlink()
    args = [pgbench, "-n", "-b", "select-only", "-M", "prepared", "-c", str(CLIENTS)]
    args += ["-j", str(CLIENTS), "-T", str(duration_s)]
    if rate is not None:
        args += log_args(str(scratch / "log"), rate)
    done = subprocess.run([*args, dsn], check=True, capture_output=True, text=True)
    printed = parse_pgbench_output(done.stdout)
    if rate is None:
        return printed.tps, 0.0
    started = time.perf_counter()
    logs = [path.read_text() for path in sorted(scratch.glob("log.*"))]
    figures = LogFigures(CLIENTS, float(duration_s), printed.latency_avg_ms, False)
    latency_distribution(logs, rate, figures)
    return printed.tps, time.perf_counter() - started


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=5)
    options = parser.parse_args()
    user = server_user()
    install = install_usable_by(find_install(None), user)
    pgbench = str(find_pgbench(install))
    with (
        ManagedCluster.create(install, user) as cluster,
        tempfile.TemporaryDirectory() as scratch,
    ):
        cluster.apply_settings({"shared_buffers": "128MB"})
        dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
        subprocess.run([pgbench, "-i", "-s", "5", "-q", dsn], check=True, capture_output=True)
        warm_tps, _ = one_run(pgbench, dsn, 3, Path(scratch), None)
        workload = {"duration": options.duration}
        lab_rate = sampling_rate(expected_transactions(workload, CLIENTS, warm_tps))
        kinds = {"no log": None, "full log": 1.0, f"lab's log (rate {lab_rate:g})": lab_rate}
        tps: dict[str, list[float]] = {kind: [] for kind in kinds}
        parse_share: dict[str, list[float]] = {kind: [] for kind in kinds}
        for round_number in range(options.rounds):
            for kind, rate in kinds.items():
                value, parse_s = one_run(pgbench, dsn, options.duration, Path(scratch), rate)
                tps[kind].append(value)
                parse_share[kind].append(parse_s / options.duration)
            print(f"round {round_number + 1}/{options.rounds} done", file=sys.stderr)
    base = statistics.median(tps["no log"])
    print(f"pgbench select-only, {CLIENTS} clients, {options.duration} s x {options.rounds}")
    for kind in kinds:
        median = statistics.median(tps[kind])
        print(
            f"  {kind:28s} median {median:10,.0f} tps   ratio to no log {median / base:.3f}"
            f"   parsing {statistics.median(parse_share[kind]):.1%} of the run's time"
            f"   (min..max {min(tps[kind]):,.0f}..{max(tps[kind]):,.0f})"
        )
    lab_kind = list(kinds)[2]
    cost = 1 - statistics.median(tps[lab_kind]) / base
    print(f"the lab's sampled log costs {cost:+.1%} of tps: {'PASS' if cost < 0.01 else 'FAIL'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
