"""What a results store holds, whichever database keeps it: runs, points, measurements."""

import json
import platform
import time
import uuid
from dataclasses import dataclass
from pathlib import Path


@dataclass
class Run:
    run_id: str
    name: str
    spec_path: str
    spec_text: str
    target: dict
    environment: dict
    status: str
    lab_pid: int | None
    work_dir: str | None
    created_at: float
    finished_at: float | None
    failure: str | None


@dataclass
class Measurement:
    point_index: int
    repetition: int
    status: str
    reason: str | None
    started_at: float
    finished_at: float
    wall_s: float
    server_action: str | None
    tps: float | None
    latency_avg_ms: float | None
    latency_stddev_ms: float | None
    metrics: dict


@dataclass
class StoredPoint:
    point_index: int
    label: str
    swept: dict
    workload: dict
    settings: dict


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def to_json(value) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def abandoned(runs: list[Run]) -> list[Run]:
    """Runs marked running whose lab process is gone (killed): their servers may live on.

    Only runs of this host: in a store shared by a team, another host's pid means nothing here,
    and its running run must not be marked interrupted (or its directory reaped) from here.
    """
    here = platform.node()
    return [
        run
        for run in runs
        if run.status == "running"
        and run.lab_pid
        and run.environment.get("hostname", here) == here
        and not Path(f"/proc/{run.lab_pid}").exists()
    ]


@dataclass
class StoredSnapshot:
    """One cache snapshot of a measurement (see the cache_snapshots table)."""

    point_index: int
    repetition: int
    seq: int
    taken_at: float
    label: str
    method: str | None
    mode: str | None
    elapsed_ms: float | None
    error: str | None
    data: dict | None


def group_snapshots(snapshots) -> dict[tuple[int, int], list[StoredSnapshot]]:
    """(point index, repetition) -> that measurement's snapshots, in order."""
    groups: dict[tuple[int, int], list[StoredSnapshot]] = {}
    for snapshot in snapshots:
        groups.setdefault((snapshot.point_index, snapshot.repetition), []).append(snapshot)
    return groups
