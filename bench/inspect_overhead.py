"""What looking inside shared_buffers costs: seed 003's question, measured side by side.

(a) Snapshot time per method at a few shared_buffers sizes, buffers filled with one table
    (pg_prewarm): the pg_buffercache view grouped by relation, pg_buffercache_summary() (totals
    only, 16+), and pg_cachelab_relations() in both modes. Medians of --repeat calls, and the
    ratios issue 7 sets targets for: extension <= 2x summary, grouped view >= 30x extension.
(b) tps of a pgbench select-only load with and without a snapshot every second, alternating
    bare, polled, bare, ... and comparing each polled run with the mean of its neighbours (tps
    drifts on a shared machine); target: polling the extension costs under 1% of tps.

A benchmark, not a test: it prints the figures and PASS/FAIL against the targets, and exits 0
unless something failed to run. Needs root or the server user, and `pgcachelab extension
install` done for the install. Usage:
    .venv/bin/python bench/inspect_overhead.py [--sizes 128MB,1GB] [--repeat 7] [--pairs 3]
"""

import argparse
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

from pgcachelab.clusters import extension
from pgcachelab.clusters.binaries import find_install, find_pgbench
from pgcachelab.clusters.managed import ManagedCluster
from pgcachelab.clusters.osuser import install_usable_by, server_user
from pgcachelab.probes.buffercache import _VIEW_ROWS
from pgcachelab.units import parse_bytes

SNAPSHOT_SQL = {
    "grouped view": _VIEW_ROWS,
    "summary": "select * from pg_buffercache_summary()",
    "extension consistent": "select * from pg_cachelab_relations('consistent')",
    "extension fast": "select * from pg_cachelab_relations('fast')",
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
    parser.add_argument("--pairs", type=int, default=3, help="polled runs per method in (b)")
    parser.add_argument("--duration", type=int, default=10, help="seconds per pgbench run")
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


def pgbench_tps(pgbench: Path, dsn: str, duration: int) -> float:
    output = subprocess.run(
        [str(pgbench), "-S", "-n", "-c", "2", "-j", "2", "-T", str(duration), dsn],
        capture_output=True, text=True, check=True,
    ).stdout  # fmt: skip
    for line in output.splitlines():
        if line.startswith("tps = ") and "without initial connection time" in line:
            return float(line.split()[2])
    raise RuntimeError(f"no tps in pgbench output: {output[-300:]}")


def polled_tps(cluster, pgbench: Path, dsn: str, duration: int, query: str) -> float:
    """tps while another session runs `query` once a second."""
    stop = threading.Event()

    def poll() -> None:
        with cluster.connect() as conn:
            while not stop.wait(1.0):
                conn.execute(query).fetchall()

    poller = threading.Thread(target=poll)
    poller.start()
    try:
        return pgbench_tps(pgbench, dsn, duration)
    finally:
        stop.set()
        poller.join()


def verdict(ok: bool) -> str:
    return "PASS" if ok else "FAIL"


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
            for mode, (to_summary, view_ratio) in ratios.items():
                print(f"targets at {sizes[-1]} (the issue's figures are for 8GB), {mode}:"
                      f" <= {EXTENSION_TO_SUMMARY_TARGET}x summary"
                      f" {verdict(to_summary <= EXTENSION_TO_SUMMARY_TARGET)},"
                      f" grouped view >= {VIEW_TO_EXTENSION_TARGET}x it"
                      f" {verdict(view_ratio >= VIEW_TO_EXTENSION_TARGET)}")  # fmt: skip

            dsn = f"host={cluster.socket_dir} port={cluster.port} user=lab dbname=postgres"
            note("pgbench -i -s 10 ...")
            subprocess.run([str(pgbench), "-i", "-s", "10", "-q", dsn], check=True,
                           capture_output=True)  # fmt: skip
            print(f"\ntps, pgbench -S -c 2 for {args.duration} s, polled once a second vs not")
            for name in ("extension consistent", "grouped view"):
                sags = []
                bare_before = pgbench_tps(pgbench, dsn, args.duration)
                for _ in range(args.pairs):
                    polled = polled_tps(cluster, pgbench, dsn, args.duration, SNAPSHOT_SQL[name])
                    bare_after = pgbench_tps(pgbench, dsn, args.duration)
                    baseline = (bare_before + bare_after) / 2
                    sags.append(100.0 * (baseline - polled) / baseline)
                    bare_before = bare_after
                sag = statistics.median(sags)
                print(f"{name:>22}: median tps sag {sag:+.2f}% over {args.pairs} runs"
                      f" ({', '.join(f'{s:+.1f}' for s in sags)})")  # fmt: skip
                if name == "extension consistent":
                    print(f"target: under {TPS_SAG_TARGET_PERCENT}%:"
                          f" {verdict(sag < TPS_SAG_TARGET_PERCENT)}")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
