"""What looking inside shared_buffers costs: seed 003's question, measured side by side.

(a) Snapshot time per method at a few shared_buffers sizes, buffers filled with one table
    (pg_prewarm): the pg_buffercache view grouped by relation, pg_buffercache_summary() (totals
    only, 16+), and pg_cachelab_relations() in its four modes. Medians of --repeat calls, and
    the ratios issue 7 sets targets for: extension <= 2x summary, grouped view >= 30x
    extension; and each mode against fast, which seed 003 found 10% faster than its
    consistent mode and 5x faster than its semiconsistent one.
(b) tps of a pgbench select-only load (2 clients, saturating two cores) while a session polls
    once a second, at the largest size: one pgbench run per method, cut into windows of
    --window seconds that are polled and not polled in turn, and pgbench's per-second tps
    compared between neighbouring windows (analysis/inspect_overhead.py): drift between runs
    cancels. "none" polls in neither window: its figure is the noise floor (an A/A test).
    Also the server CPU time one snapshot costs the polling backend (/proc/PID/schedstat),
    and what that makes of the machine's CPU once a second: the sag to expect when the load
    keeps every core busy.
    Target: polling the extension costs under 1% of tps.

A benchmark, not a test: it prints the figures and PASS/FAIL against the targets, and exits 0
unless something failed to run. Needs root or the server user, and `pgcachelab extension
install` done for the install. Usage:
    .venv/bin/python bench/inspect_overhead.py [--sizes 128MB,1GB] [--repeat 7] [--duration 60]
"""

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pgcachelab.analysis.inspect_overhead import Windows, alternation_ratios, sag_of_ratios
from pgcachelab.clusters import extension
from pgcachelab.clusters.binaries import find_install, find_pgbench
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.probes.buffercache import _VIEW_ROWS
from pgcachelab.probes.process_cpu import cpu_seconds
from pgcachelab.units import parse_bytes
from pgcachelab.workloads.pgbench_output import parse_pgbench_output

SNAPSHOT_SQL = {
    "grouped view": _VIEW_ROWS,
    "summary": "select * from pg_buffercache_summary()",
    "extension consistent": "select * from pg_cachelab_relations('consistent')",
    "extension fast": "select * from pg_cachelab_relations('fast')",
    "extension semiconsistent": "select * from pg_cachelab_relations('semiconsistent')",
    "extension snapshot": "select * from pg_cachelab_relations('snapshot')",
}
EXTENSION_TO_SUMMARY_TARGET = 2.0
VIEW_TO_EXTENSION_TARGET = 30.0
TPS_SAG_TARGET_PERCENT = 1.0
FILL_FRACTION = 0.9  # of shared_buffers, so the grouped view has rows to group
ROW_BYTES = 240  # about, for repeat('x', 200) rows: only to size the fill table


def parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="128MB,1GB", help="shared_buffers sizes for (a)")
    parser.add_argument("--repeat", type=int, default=7, help="calls per method and size")
    parser.add_argument("--duration", type=int, default=60, help="seconds per pgbench run (b)")
    parser.add_argument("--no-load", action="store_true", help="(a) only: no pgbench runs")
    parser.add_argument("--window", type=int, default=5, help="seconds per window (b)")
    parser.add_argument("--pg-bin", default=None, help="bin directory (default: the wheel's 18)")
    return parser.parse_args()


def note(text: str) -> None:
    print(text, file=sys.stderr, flush=True)


def fill_buffers(cluster: ManagedCluster, shared_buffers_bytes: int) -> None:
    rows = int(shared_buffers_bytes * FILL_FRACTION / ROW_BYTES)
    with cluster.connect() as conn:
        conn.execute("create extension if not exists pg_prewarm")
        conn.execute("drop table if exists fill")
        conn.execute(
            "create table fill as select g as id, repeat('x', 200) as filler"
            " from generate_series(1, %s) g",
            [rows],
        )
        conn.execute("select pg_prewarm('fill')")


def snapshot_times_ms(cluster: ManagedCluster, repeat: int) -> dict[str, float]:
    medians = {}
    with cluster.connect() as conn:
        for name, query in SNAPSHOT_SQL.items():
            conn.execute(query).fetchall()  # once unmeasured: catalog caches, plans
            times = []
            for _ in range(repeat):
                started = time.perf_counter()
                conn.execute(query).fetchall()
                times.append((time.perf_counter() - started) * 1000)
            medians[name] = statistics.median(times)
    return medians


def alternating_run(cluster, pgbench: Path, dsn: str, args, query: str | None):
    """One pgbench run with `query` polled once a second in every other window; returns the
    tps ratios of the window pairs and the CPU seconds per snapshot (None without a query)."""
    windows = Windows(time.time(), args.window, first_polled=True)
    stop, cpu, taken = threading.Event(), [0.0], [0]

    def poll() -> None:
        with cluster.connect() as conn:
            pid = conn.execute("select pg_backend_pid()").fetchone()[0]
            next_at, last_s = time.monotonic() + 1.0, 0.0
            while not stop.wait(max(0.0, next_at - time.monotonic())):
                next_at += 1.0
                now = time.time()
                index = windows.index(now)
                if not windows.polled(index) or now + last_s > windows.end(index):
                    continue  # not this window, or it would run into the next
                started, cpu_before = time.perf_counter(), cpu_seconds(pid)
                conn.execute(query).fetchall()
                cpu[0] += cpu_seconds(pid) - cpu_before
                taken[0] += 1
                last_s = time.perf_counter() - started

    poller = threading.Thread(target=poll) if query else None
    if poller:
        poller.start()
    try:
        output = subprocess.run(
            [str(pgbench), "-S", "-n", "-c", "2", "-j", "2", "-T", str(args.duration),
             "-P", "1", "--progress-timestamp", dsn],
            capture_output=True, text=True, check=True,
        )  # fmt: skip
    finally:
        stop.set()
        if poller:
            poller.join()
    progress = parse_pgbench_output(output.stderr + output.stdout).progress
    ratios = alternation_ratios([(p.elapsed_s, p.tps) for p in progress], windows)
    return ratios, (cpu[0] / taken[0] if taken[0] else None)


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


def interval_verdict(low: float | None, high: float | None, target: float) -> str:
    """PASS when the whole 95% interval of the sag is under the target, FAIL when it is all
    over it; otherwise the measurement cannot tell (compare the A/A row's width)."""
    if low is None or high is None:
        return "UNDECIDED (no interval)"
    if high < target:
        return "PASS"
    if low > target:
        return "FAIL"
    return f"UNDECIDED (the interval is {high - low:.1f} points wide)"


def main() -> int:
    args = parse_args()
    user = server_user()
    install = install_usable_by(find_install(args.pg_bin), user)
    if not extension.is_installed(install):
        note(f"pg_cachelab is not installed for {install.bin_dir}: pgcachelab extension install")
        return 1
    pgbench = find_pgbench(install)
    sizes = [size.strip() for size in args.sizes.split(",")]
    with tempfile.TemporaryDirectory(prefix="pgcachelab-bench-", dir="/tmp") as base:
        Path(base).chmod(0o755)
        with ManagedCluster.create(install, user, parent_dir=Path(base)) as cluster:
            print(f"PostgreSQL {install.version}; medians of {args.repeat} calls, in ms")
            print(f"{'shared_buffers':>14}  " + "  ".join(f"{n:>20}" for n in SNAPSHOT_SQL)
                  + "  consistent/summary  fast/summary  view/consistent  view/fast")  # fmt: skip
            for size in sizes:
                cluster.apply_settings({"shared_buffers": size})
                with cluster.connect() as conn:
                    conn.execute("create extension if not exists pg_cachelab")
                    conn.execute("create extension if not exists pg_buffercache")
                note(f"filling {size} of shared_buffers ...")
                fill_buffers(cluster, parse_bytes(size))
                times = snapshot_times_ms(cluster, args.repeat)
                ratios = {
                    mode: (times[f"extension {mode}"] / times["summary"],
                           times["grouped view"] / times[f"extension {mode}"])
                    for mode in ("consistent", "fast")
                }  # fmt: skip
                (consistent_share, consistent_gain), (fast_share, fast_gain) = ratios.values()
                print(f"{size:>14}  " + "  ".join(f"{t:>20.2f}" for t in times.values())
                      + f"  {consistent_share:>18.2f}  {fast_share:>12.2f}"
                      + f"  {consistent_gain:>15.1f}  {fast_gain:>9.1f}")  # fmt: skip
                against_fast = {
                    mode: times[f"extension {mode}"] / times["extension fast"]
                    for mode in ("consistent", "semiconsistent", "snapshot")
                }
                print(f"{'':>14}  against fast: " + ", ".join(
                    f"{mode} {ratio:.2f}x" for mode, ratio in against_fast.items()))  # fmt: skip
            for mode, (to_summary, view_ratio) in ratios.items():
                print(f"targets at {sizes[-1]} (the issue's figures are for 8GB), {mode}:"
                      f" <= {EXTENSION_TO_SUMMARY_TARGET}x summary"
                      f" {verdict(to_summary <= EXTENSION_TO_SUMMARY_TARGET)},"
                      f" grouped view >= {VIEW_TO_EXTENSION_TARGET}x it"
                      f" {verdict(view_ratio >= VIEW_TO_EXTENSION_TARGET)}")  # fmt: skip

            if args.no_load:
                return 0
            dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
            note("pgbench -i -s 10 ...")
            subprocess.run([str(pgbench), "-i", "-s", "10", "-q", dsn], check=True,
                           capture_output=True)  # fmt: skip
            cores = os.cpu_count() or 1
            print(f"\ntps sag at {sizes[-1]}: pgbench -S -c 2 for {args.duration} s per method,"
                  f" polled once a second in every other {args.window} s window")  # fmt: skip
            print(
                f"{'method':>22}  {'sag %':>7}  {'95% CI':>15}  {'pairs':>5}"
                f"  {'CPU ms/snapshot':>15}  {'= % of ' + str(cores) + ' cores':>14}"
            )
            for name, query in [("none (A/A)", None), *SNAPSHOT_SQL.items()]:
                ratios, cpu_s = alternating_run(cluster, pgbench, dsn, args, query)
                sag = sag_of_ratios(ratios, name)
                low, high = sag.sag_ci_percent if sag and sag.sag_ci_percent else (None, None)
                interval = "-" if low is None else f"{low:+.2f}..{high:+.2f}"
                share = "-" if cpu_s is None else f"{cpu_s * 100 / cores:.2f}"
                print(
                    f"{name:>22}  {sag.sag_percent if sag else float('nan'):>+7.2f}"
                    f"  {interval:>15}  {len(ratios):>5}"
                    f"  {'-' if cpu_s is None else f'{cpu_s * 1000:.1f}':>15}  {share:>14}"
                )
                if name.startswith("extension") and sag:
                    target = TPS_SAG_TARGET_PERCENT
                    print(f"{'':>22}  target, sag under {target}%: by CPU share"
                          f" {verdict(cpu_s is not None and cpu_s * 100 / cores < target)};"
                          f" measured {interval_verdict(low, high, target)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
