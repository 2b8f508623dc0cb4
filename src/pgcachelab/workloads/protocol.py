"""What the runner asks of a workload, and what it gives one: one signature for all of them.

A workload is a module (workloads/registry.py names them) with three functions that run
things: ensure_data builds or finds the point's data, prepare runs the unrecorded warm-up, run
measures once. Beside them it says, in plain values and pure functions, what the runner, the
plan and the preflight checks would otherwise have to know about it by name: its parameters'
type, whether its data is kept for --resume, whether it prewarms itself, which errors stop a
run, how big its data is and how long a point takes.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, TypeVar

import psycopg

from pgcachelab.clusters.target import Target
from pgcachelab.progress import Progress
from pgcachelab.workloads.outcome import Outcome
from pgcachelab.workloads.parameters import PointParameters


@dataclass
class Bench:
    """What a workload runs on during one measurement."""

    target: Target  # the server: a managed cluster, one per version, or one given by --dsn
    pgbench: Path
    state: dict  # what the workload keeps between points of this cluster (the data loaded now)
    progress: Progress
    # The server's memory in bytes, for a workload that sizes its data on it; a function
    # because it may read the store, which only such a workload should pay for.
    memory_bytes: Callable[[], int]


@dataclass(frozen=True)
class DataEstimate:
    """The data a point needs built, as the workload's ensure_data tells one data set from
    another; for run --plan and the free-space check before a run (issue 35)."""

    identity: object  # equal for two points that share their data
    size_bytes: int  # about how much it takes on disk
    key: str  # the spec key that decides its size, e.g. "pgbench.scale"
    value: str  # that key's value, with the estimate per unit
    build: str  # what building it is, e.g. "pgbench -i at scale 10 (~154MB)"


# Each workload takes its own parameters' type (a narrower argument than PointParameters).
P = TypeVar("P", bound=PointParameters)


class Workload(Protocol[P]):
    parameters_type: type[P]  # what its points carry (workloads/parameters.py)
    # The cluster's data survives a failed run, for --resume: it took long to build.
    keeps_data: bool
    # It pg_prewarms its own relations (the point's prewarm is its own step, not the runner's).
    prewarms_itself: bool
    # After a version sweep switches clusters, the runner prewarms the new one: a server that
    # had been running would hold its data (the switch dropped the OS cache).
    prewarm_after_version_switch: bool
    # Errors after which the data is no longer valid: the point fails with the error as its
    # reason, then the whole run stops (its later figures would mean nothing).
    run_stopping_errors: tuple[type[Exception], ...]

    def data_estimate(self, parameters: P, memory_bytes: int | None) -> DataEstimate | None:
        """The data a point of these parameters needs built (its scale class already
        resolved); None when it brings its own."""

    def known_seconds(self, parameters: P) -> tuple[float, list[str]]:
        """(seconds a point takes that the spec says, what takes time it does not say)."""

    def ensure_data(self, bench: Bench, point) -> dict:
        """Build or find the point's data; returns what was done, for the metrics."""

    def prepare(self, bench: Bench, point, conn: psycopg.Connection) -> dict:
        """The unrecorded warm-up; returns what was done, for the metrics."""

    def run(
        self, bench: Bench, point, conn: psycopg.Connection, mark: Callable[[str], None] | None
    ) -> Outcome:
        """One measured run. `mark(label)`, when given, takes a cache snapshot between the
        run's phases (a workload of one phase leaves it unused)."""
