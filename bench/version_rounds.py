"""A stored version-sweep run (issue 19) in figures: its wall time and the machine's load, the
A/A control's significant share, and the read-write drift its read-only points saw.

Drift: a version's read-only points run first in each of its turns, after the earlier rounds'
read-write points changed the data. The ratio of a read-only point's tps in the last round to
the first, per version, scale class and clients, shows what that drift (plus the machine's own
drift over the run) did; the A/A control's ratios are the noise to compare it with. Medians
and ranges of ratios, no target: it is what chose keeping the data over a copy per round.

Usage: .venv/bin/python bench/version_rounds.py RUN_ID [--lab-dir ./lab] [RUN_ID ...]
"""

import argparse
import math
import statistics
import sys
from pathlib import Path

from pgcachelab.analysis.run_data import load_run
from pgcachelab.analysis.versions import control_changes, control_verdict
from pgcachelab.store.sqlite import SqliteResultStore
from pgcachelab.studies.versions.report import version_samples


def drift_ratios(data) -> dict[str, list[float]]:
    """scale class -> last round's tps / first round's, over the read-only points."""
    by_class: dict[str, list[float]] = {}
    for result in data.points:
        if result.point.swept.get("mode") != "select-only":
            continue
        by_round = {m.repetition: m.tps for m in result.ok if m.tps}
        if len(by_round) < 2:
            continue
        first, last = min(by_round), max(by_round)
        scale_class = str(result.point.swept.get("scale_class", "all"))
        by_class.setdefault(scale_class, []).append(by_round[last] / by_round[first])
    return by_class


def describe(store: SqliteResultStore, run_id: str) -> None:
    run = store.run(run_id)
    data = load_run(store, run_id)
    measurements = [m for r in data.points for m in (*r.ok, *r.failures)]
    loads = [m.metrics.get("load_average_1m") for m in measurements]
    loads = [load for load in loads if load is not None]
    wall_s = (run.finished_at or max(m.finished_at for m in measurements)) - run.created_at
    print(
        f"run {run_id} ({run.name}, {run.status}): wall {wall_s / 60:.1f} min, "
        f"{len(measurements)} measurements, {sum(len(r.failures) for r in data.points)} failed"
    )
    if loads:
        print(
            f"  load average (1 min) at the measurements: median {statistics.median(loads):.1f}"
            f", {min(loads):.1f}..{max(loads):.1f}"
        )
    verdict = control_verdict(control_changes(version_samples(data)))
    if verdict is not None:
        print(
            f"  A/A control: significant in {verdict.significant} of {verdict.cells} cells "
            f"({verdict.share:.1%}); {'trusted' if verdict.trustworthy else 'UNTRUSTWORTHY'}"
        )
    for scale_class, ratios in drift_ratios(data).items():
        geometric = math.exp(statistics.fmean(math.log(r) for r in ratios))
        print(
            f"  read-only tps, last round / first, {scale_class}: geometric mean "
            f"{geometric:.3f}, {min(ratios):.3f}..{max(ratios):.3f} over {len(ratios)} points"
        )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_ids", nargs="+")
    parser.add_argument("--lab-dir", type=Path, default=Path("lab"))
    args = parser.parse_args()
    store = SqliteResultStore.open_read_only(args.lab_dir / "results.sqlite")
    try:
        for run_id in args.run_ids:
            describe(store, run_id)
    finally:
        store.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
