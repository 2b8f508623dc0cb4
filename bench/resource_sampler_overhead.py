"""What sampling the machine's resources once a second costs (issue 32): the sampler's thread
runs as during a measurement (the device of --data-dir through /proc/diskstats, CPU, context
switches, memory) on an idle lab for --duration seconds, --runs times, and its own CPU time
(time.thread_time in the thread) is divided by the wall time. The server's CPU is read from a
process tree of --processes children, as for a managed server outside a cgroup.
    Target: at most 1% of one CPU (the median of the runs).

A benchmark, not a test: it prints the figures and PASS/FAIL against the target, and exits 0
unless something failed to run. Usage:
    .venv/bin/python bench/resource_sampler_overhead.py [--duration 30] [--runs 3]
        [--data-dir DIR]
"""

import argparse
import os
import statistics
import subprocess
import sys
import time
import types
from pathlib import Path

from pgcachelab.experiments.resource_sampler import ResourceSampler, sources_of

TARGET_SHARE = 0.01


class _Server:
    """A managed server as the sampler sees one: a data directory on this machine, no cgroup,
    so the server's CPU is read from its processes; the lab itself, with a child per
    --processes, stands in for a postmaster and its backends."""

    kind = "managed"
    machine = None

    def __init__(self, data_dir: Path, process):
        self.data_dir = data_dir
        self.cluster = types.SimpleNamespace(process=process)

    def disk_record(self) -> dict:
        return {"counters": None, "profile": None}  # the host's disk: read from diskstats


def one_run(data_dir: Path, duration_s: float) -> dict:
    sources = sources_of(_Server(data_dir, types.SimpleNamespace(pid=os.getpid())))
    started = time.monotonic()
    sampler = ResourceSampler.start(sources)
    time.sleep(duration_s)
    kept = sampler.close()
    wall_s = time.monotonic() - started
    return {
        "share": kept["sampler_cpu_s"] / wall_s,
        "cpu_s": kept["sampler_cpu_s"],
        "samples": kept["samples"],
        "failed": kept["failed"],
        "device": kept["source"]["device"],
        "cgroup": kept["source"]["cgroup"],
    }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--duration", type=float, default=30.0, help="seconds per run")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--data-dir", type=Path, default=Path.cwd())
    parser.add_argument("--processes", type=int, default=12, help="a server's processes")
    args = parser.parse_args()
    # children of this process, as a postmaster has its backends and auxiliaries
    sleepers = [subprocess.Popen(["sleep", "3600"]) for _ in range(args.processes)]
    try:
        return _runs(args)
    finally:
        for sleeper in sleepers:
            sleeper.kill()
            sleeper.wait()


def _runs(args) -> int:
    shares = []
    for number in range(1, args.runs + 1):
        run = one_run(args.data_dir, args.duration)
        if run["failed"]:
            print(f"run {number}: {run['failed']} sample(s) failed", file=sys.stderr)
            return 1
        shares.append(run["share"])
        print(
            f"run {number}: {run['samples']} samples, sampler CPU {run['cpu_s'] * 1000:.1f} ms "
            f"in {args.duration:.0f} s = {run['share']:.4%} of one CPU "
            f"({run['cpu_s'] / run['samples'] * 1e6:.0f} µs per sample; device "
            f"{run['device']}, server CPU from {run['cgroup']})"
        )
    median = statistics.median(shares)
    verdict = "PASS" if median <= TARGET_SHARE else "FAIL"
    print(f"median: {median:.4%} of one CPU (target <= {TARGET_SHARE:.0%}): {verdict}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
