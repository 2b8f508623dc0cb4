"""What a results store holds, whichever database keeps it: runs, points, measurements."""

import contextlib
import gc
import json
import platform
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol, cast

import orjson

from pgcachelab.store.metric_types import MeasurementMetrics
from pgcachelab.store.run_types import RunEnvironment, RunTarget, ServerSettings, SnapshotData
from pgcachelab.workloads.parameters import PointParameters

# A swept value as the spec wrote it (a setting's text, a number of clients, a method, ...)
Swept = str | int | float | bool
# Some of a point's swept values as (key, value) pairs: the "cell" of the others
Cell = tuple[tuple[str, Swept], ...]


@dataclass
class Run:
    run_id: str
    name: str
    spec_path: str
    spec_text: str
    target: RunTarget  # JSON, as clusters/targets.py's describe() wrote it
    environment: RunEnvironment  # JSON, as probes/environment.py collected it
    status: str
    lab_pid: int | None
    work_dir: str | None
    created_at: float
    finished_at: float | None
    failure: str | None
    # The study the run is (studies/registry.py), chosen from its validated spec when it was
    # created (spec/study.py): recorded, never guessed again from what it measured.
    study: str


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
    metrics: MeasurementMetrics


@dataclass
class StoredPoint:
    point_index: int
    label: str
    swept: dict[str, Swept]  # as the spec wrote each swept value
    workload: PointParameters  # stored as its record(), read back by stored_parameters
    settings: dict[str, str]  # server settings as postgresql.conf text


def new_run_id() -> str:
    return time.strftime("%Y%m%d-%H%M%S-") + uuid.uuid4().hex[:6]


def to_json(value: object) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def from_json(text: str) -> object:
    """A stored JSON value (a measurement's metrics, a snapshot's data), decoded.

    By orjson: decoding every measurement is most of what a report, `advise` or `compare` of a
    big run costs, and orjson does it 1.6-3x faster than json (issue 24). It refuses what
    json writes and accepts, NaN and integers past 64 bits: those few values go to json.
    """
    try:
        return orjson.loads(text)
    except orjson.JSONDecodeError:
        return json.loads(text)


# A figure inside a measurement's metrics, as a read names it: keys joined by dots.
METRIC_PATH = re.compile(r"[a-z_][a-z0-9_]*(\.[a-z_][a-z0-9_]*)*")


def metric_path(path: str) -> list[str]:
    """The keys of a dotted path ("probes.database"); a path of other characters is a bug."""
    if not METRIC_PATH.fullmatch(path):
        raise ValueError(f"not a metrics path: {path!r}")
    return path.split(".")


class MetricNotRead(Exception):
    """A reader asked for a figure it did not name in its read: a bug in the lab, which must
    fail loudly, or the section would silently show nothing."""


class SelectedMetrics(dict[str, object]):
    """Metrics read for some paths only: a key that none of the paths covers raises
    MetricNotRead instead of reading as absent."""

    def __init__(self, covered: frozenset[str]) -> None:
        super().__init__()
        self.covered = covered

    def _check(self, key: object) -> None:
        if key not in self.covered:
            raise MetricNotRead(
                f"metrics {key!r} was not read (read: {', '.join(sorted(self.covered))}):"
                " name its path in the reader's list of metrics (analysis/run_data.py)"
            )

    def get(self, key: str, default: object = None) -> object:
        if dict.__contains__(self, key):
            return dict.__getitem__(self, key)
        self._check(key)
        return default

    def __getitem__(self, key: str) -> object:
        if not dict.__contains__(self, key):
            self._check(key)
        return dict.__getitem__(self, key)

    def __contains__(self, key: object) -> bool:
        if dict.__contains__(self, key):
            return True
        self._check(key)
        return False


def _covered(paths: Sequence[str], prefix: tuple[str, ...]) -> frozenset[str]:
    """The keys under `prefix` that the paths reach."""
    depth = len(prefix)
    return frozenset(
        keys[depth]
        for keys in (path.split(".") for path in paths)
        if len(keys) > depth and tuple(keys[:depth]) == prefix
    )


def nest_metrics(paths: Sequence[str], values: Sequence[object]) -> MeasurementMetrics:
    """Metrics holding each path's value, nested as stored; a path it lacks (None) is left
    out, as an absent key reads to `.get`; a key no path covers raises MetricNotRead."""
    metrics = SelectedMetrics(_covered(paths, ()))
    for path, value in zip(paths, values, strict=True):
        if value is None:
            continue
        *parents, leaf = path.split(".")
        node: dict[str, object] = metrics
        for depth, key in enumerate(parents):
            if not dict.__contains__(node, key):
                dict.__setitem__(
                    node, key, SelectedMetrics(_covered(paths, tuple(parents[: depth + 1])))
                )
            child = dict.__getitem__(node, key)
            assert isinstance(child, dict)  # a key with paths below it holds them
            node = child
        dict.__setitem__(node, leaf, value)
    # the stored JSON, of the shape its writers give it (tests/test_metric_keys.py)
    return cast(MeasurementMetrics, metrics)


def pick_metrics(metrics: MeasurementMetrics, paths: Sequence[str]) -> MeasurementMetrics:
    """The figures of `metrics` at `paths`, as a store's read of those paths returns them."""
    values = []
    for path in paths:
        node: object = metrics
        for key in path.split("."):
            node = node.get(key) if isinstance(node, dict) else None
        values.append(node)
    return nest_metrics(paths, values)


@contextlib.contextmanager
def gc_paused() -> Iterator[None]:
    """Python's cycle collector off while a run's measurements are read and summarised.

    Decoded metrics are hundreds of thousands of dicts and lists, and every few hundred
    allocations the collector walks the young ones, now and then all of them: at 100,000
    measurements that was 60% of the decoding time (issue 24). They hold no reference cycle,
    so reference counting frees them all the same. On the way out what was read is moved out
    of the collector's sight (gc.freeze), or its next collection would walk all of it once,
    seconds at that size; only a reference cycle among those objects could then outlive its
    use, until the process ends.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        gc.freeze()
        if enabled:
            gc.enable()


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
    data: SnapshotData | None


def group_snapshots(
    snapshots: Iterable[StoredSnapshot],
) -> dict[tuple[int, int], list[StoredSnapshot]]:
    """(point index, repetition) -> that measurement's snapshots, in order."""
    groups: dict[tuple[int, int], list[StoredSnapshot]] = {}
    for snapshot in snapshots:
        groups.setdefault((snapshot.point_index, snapshot.repetition), []).append(snapshot)
    return groups


class PointToStore(Protocol):
    """A point of a new run as the spec expands it (spec.Point)."""

    @property
    def index(self) -> int: ...
    @property
    def label(self) -> str: ...
    @property
    def swept(self) -> dict[str, Swept]: ...
    @property
    def workload(self) -> PointParameters: ...
    @property
    def settings(self) -> dict[str, str]: ...


class ResultStore(Protocol):
    """A results store, whichever database keeps it: store/sql_store.py writes its methods
    once; store/sqlite.py and store/postgresql.py only connect and migrate."""

    @property
    def location(self) -> str:
        """How messages name this store (a PostgreSQL URL without its password)."""
        ...

    def close(self) -> None: ...

    # -- writing: each call is durable on return (autocommit) ------------------------------

    def create_run(
        self,
        name: str,
        spec_path: str | Path,
        spec_text: str,
        target: Mapping[str, object],
        environment: Mapping[str, object],
        points: Iterable[PointToStore],
        study: str,
    ) -> str:
        """A new run of `study`, marked running, with its points; returns its id."""
        ...

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None: ...

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None: ...

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None: ...

    def record_measurement(self, run_id: str, m: Measurement) -> None:
        """Insert or replace: a retried repetition is present exactly once."""
        ...

    def record_server_settings(
        self, run_id: str, point_index: int, settings: ServerSettings
    ) -> None: ...

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: Sequence[StoredSnapshot]
    ) -> None:
        """Replace the measurement's snapshots: a retried repetition keeps only its own."""
        ...

    def import_run(
        self,
        run: Run,
        points: Sequence[StoredPoint],
        measurements: Sequence[Measurement],
        server_settings: dict[int, ServerSettings],
        snapshots: Sequence[StoredSnapshot] = (),
    ) -> bool:
        """Write a run read from another store, in one transaction; True if it was new here."""
        ...

    # -- reading ---------------------------------------------------------------------------

    def runs(self) -> list[Run]: ...

    def run(self, run_id: str) -> Run | None: ...

    def points(self, run_id: str) -> list[StoredPoint]: ...

    def measurements(self, run_id: str, metrics: Sequence[str] | None = None) -> list[Measurement]:
        """`metrics`: the dotted paths ("probes.database") of the figures to read, each
        measurement's metrics then holding only those; None: every figure."""
        ...

    def completed(self, run_id: str) -> set[tuple[int, int]]:
        """(point, repetition) pairs measured successfully: what a resume skips."""
        ...

    def server_settings(self, run_id: str) -> dict[int, ServerSettings]: ...

    def snapshots(self, run_id: str) -> list[StoredSnapshot]: ...

    def abandoned_runs(self) -> list[Run]:
        """Runs of this host marked running whose lab process is gone (killed)."""
        ...
