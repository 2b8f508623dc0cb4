"""What the runner asks of a workload, and what it gives one: one signature for all of them.

A workload is a module (workloads/registry.py names them) with three functions: ensure_data
builds or finds the point's data, prepare runs the unrecorded warm-up, run measures once.
"""

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import psycopg

from pgcachelab.clusters.target import Target
from pgcachelab.progress import Progress
from pgcachelab.workloads.outcome import Outcome


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


class Workload(Protocol):
    def ensure_data(self, bench: Bench, point) -> dict:
        """Build or find the point's data; returns what was done, for the metrics."""

    def prepare(self, bench: Bench, point, conn: psycopg.Connection) -> dict:
        """The unrecorded warm-up; returns what was done, for the metrics."""

    def run(
        self, bench: Bench, point, conn: psycopg.Connection, mark: Callable[[str], None] | None
    ) -> Outcome:
        """One measured run. `mark(label)`, when given, takes a cache snapshot between the
        run's phases (a workload of one phase leaves it unused)."""
