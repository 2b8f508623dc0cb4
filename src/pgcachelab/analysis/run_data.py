"""A run as the renderers see it: points with their measurements and summaries, from the store.

Renderers only read this; it is rebuilt from the store alone.
"""

import functools
import statistics
from dataclasses import dataclass, field

from pgcachelab.analysis.cache_split import PHASES, phase_samples
from pgcachelab.analysis.latency import PointPercentiles, point_percentiles
from pgcachelab.analysis.memory_accounting import MeasuredMemory
from pgcachelab.analysis.statistics import (
    Noise,
    StabilityWarning,
    after_warmup,
    machine_noise,
    point_warnings,
    progress_warnings,
    repetitions_warning,
    settled,
)
from pgcachelab.analysis.step_resources import point_resources
from pgcachelab.analysis.summary import Summary, hit_ratio, summarise
from pgcachelab.store.records import (
    Cell,
    Measurement,
    ResultStore,
    Run,
    StoredPoint,
    StoredSnapshot,
    gc_paused,
)
from pgcachelab.store.run_types import RunSchedule, ServerSettings
from pgcachelab.units import shared_buffers_bytes
from pgcachelab.workloads.parameters import PgbenchParameters

# The figures of a measurement's metrics that the report and `advise` read (the store reads
# only these: decoding every figure of 100,000 measurements was most of a report's time,
# issue 24). A section that reads another figure must name it here: reading one not named
# raises MetricNotRead (store/records.py) rather than finding nothing, and
# tests/test_report_metrics.py renders every fixture run both ways.
REPORT_METRICS = (
    "cache_wash",
    "checkpoint",
    "data.scale",
    "database_size_bytes",
    "disk",
    "fleet",
    "inspect_windows",
    "latency",
    "machine.cgroup",
    "machine.memory_accounting",
    "pgbench",
    "probes.checkpointer",
    "probes.database",
    "probes.wal",
    "resources.summary",
    "tpcc",
    "version_switch.server",
    "wait_events",
)


@dataclass
class PointResult:
    point: StoredPoint
    measurements: list[Measurement]
    tps: Summary | None
    latency_ms: Summary | None
    database_size_bytes: float | None
    blks_hit_ratio: float | None
    shared_buffers_bytes: float | None
    cgroup_peak_bytes: float | None = None  # the emulated machine's memory, when capped
    page_cache_bytes: float | None = None
    # What each counted repetition measured, by figure: "tps", or a cache-wash phase's median
    # ("idx1 ms"): the samples of its stability warnings and of the run's noise
    figures: dict[str, list[float]] = field(default_factory=dict)
    warmup: list[Measurement] = field(default_factory=list)  # discarded warm-up repetitions
    latency_percentiles: PointPercentiles | None = None  # pgbench points with their logs
    resources: dict[str, float] | None = None  # medians of the resource sampler's summaries
    warnings: list[StabilityWarning] = field(default_factory=list)
    settled: bool | None = None  # repetitions = "auto": whether it reached the target

    # Once per point: sections ask for them again and again (a scan of every measurement each
    # time); a loaded point's measurements do not change.
    @functools.cached_property
    def ok(self) -> list[Measurement]:
        return [m for m in self.measurements if m.status == "ok"]

    @functools.cached_property
    def failures(self) -> list[Measurement]:
        return [m for m in self.measurements if m.status != "ok"]

    @property
    def failure_reasons(self) -> list[str]:
        """Each reason once, sorted."""
        return sorted({m.reason or "" for m in self.failures})


@dataclass
class RunData:
    run: Run
    points: list[PointResult]
    # point index -> the whole pg_settings
    server_settings: dict[int, ServerSettings] = field(default_factory=dict)
    schedule: RunSchedule = field(default_factory=RunSchedule)  # order, repetitions (runner)
    noise: dict[str, Noise] = field(default_factory=dict)  # figure ("tps", "idx1 ms") -> noise
    snapshots: list[StoredSnapshot] = field(default_factory=list)  # cache snapshots ([inspect])
    # Findings that several sections draw (the steps: three plots and a table), computed once.
    memo: dict[str, object] = field(default_factory=dict, repr=False, compare=False)

    @property
    def warnings(self) -> list[StabilityWarning]:
        counts = {r.point.label: len(r.ok) for r in self.points}
        few = repetitions_warning(counts)
        return ([few] if few else []) + [w for result in self.points for w in result.warnings]

    @property
    def unsettled(self) -> list[PointResult]:
        return [r for r in self.points if r.settled is False]

    @property
    def swept_keys(self) -> list[str]:
        keys: list[str] = []
        for result in self.points:
            keys += [k for k in result.point.swept if k not in keys]
        return keys

    @property
    def memory_limit_bytes(self) -> float | None:
        """The server's memory cap; never more than the host had (runs stored before issue 16
        could ask for more, which the cgroup never enforced)."""
        limit = self.run.target.get("memory_limit_bytes")
        host = self.run.environment.get("memory_total_bytes")
        return min(limit, host) if limit and host else limit

    @property
    def memory_available_bytes(self) -> float | None:
        """The emulated machine's memory when a limit was set, else the machine's RAM."""
        return self.memory_limit_bytes or self.run.environment.get("memory_total_bytes")


def swept_text(cell: Cell) -> str:
    """A cell, the (key, value) pairs of the swept keys that hold it: "mode=rw, clients=8"."""
    return ", ".join(f"{k}={v}" for k, v in cell)


def schedule_of(run: Run) -> RunSchedule:
    """The run's order, seed and repetitions, as the runner recorded them; {} for a run stored
    before it did (commit d02b303), when a spec could set neither warm-up nor automatic
    repetitions: its figures count every repetition (its report reads the rest from the
    stored spec, report/build.py)."""
    return run.environment.get("schedule") or {}


def repetition_figures(ok: list[Measurement]) -> dict[str, list[float]]:
    """What each repetition measured: tps, or a cache-wash repetition's median per phase."""
    figures = {"tps": [m.tps for m in ok if m.tps is not None]}
    lookups = [samples for m in ok if (samples := phase_samples(m.metrics))]
    for phase in PHASES:
        figures[f"{phase} ms"] = [statistics.median(samples[phase]) for samples in lookups]
    return {name: values for name, values in figures.items() if values}


def _warnings(
    point: StoredPoint, ok: list[Measurement], target: float | None, figures: dict[str, list[float]]
) -> list[StabilityWarning]:
    """The point's repetitions (`figures`: their repetition_figures), then each repetition's
    per-second tps."""
    found: list[StabilityWarning] = []
    for name, values in figures.items():
        what = "repetitions" if name == "tps" else f"{name} medians of the repetitions"
        found += point_warnings(point.label, values, target if name == "tps" else None, what)
    # only pgbench's measurements have per-second tps (metrics["pgbench"]["progress"])
    parameters = point.workload
    progress_warmup_s = (
        parameters.progress_warmup if isinstance(parameters, PgbenchParameters) else 0
    )
    writes = not parameters.read_only
    for m in ok:
        samples = (m.metrics.get("pgbench") or {}).get("progress") or []
        seconds, values = after_warmup(samples, progress_warmup_s)
        label = f"{point.label} #{m.repetition + 1}"
        found += progress_warnings(label, seconds, values, writes)
    return found


def load_run(store: ResultStore, run_id: str) -> RunData:
    with gc_paused():
        return _load_run(store, run_id)


def _load_run(store: ResultStore, run_id: str) -> RunData:
    run = store.run(run_id)
    assert run is not None, f"no run {run_id}"  # callers look it up first
    schedule = schedule_of(run)
    warmup_repetitions = schedule.get("warmup_repetitions") or 0
    target = schedule.get("target_ci") if schedule.get("repetitions") == "auto" else None
    measurements = store.measurements(run_id, REPORT_METRICS)
    server_settings = store.server_settings(run_id)
    by_point: dict[int, list[Measurement]] = {}
    for m in measurements:  # one pass: scanning them all per point was O(points x measurements)
        by_point.setdefault(m.point_index, []).append(m)
    results, figures_by_point = [], {}
    for point in store.points(run_id):
        everything = by_point.get(point.point_index, [])
        mine = [m for m in everything if m.repetition >= warmup_repetitions]
        ok = [m for m in mine if m.status == "ok"]
        tps = [m.tps for m in ok if m.tps is not None]
        figures = figures_by_point[point.point_index] = repetition_figures(ok)
        stored_sizes = [m.metrics.get("database_size_bytes") for m in ok]
        sizes = [s for s in stored_sizes if s is not None]
        hits = sum(_probe(m, "blks_hit") or 0 for m in ok)
        reads = sum(_probe(m, "blks_read") or 0 for m in ok)
        shared_buffers = server_settings.get(point.point_index, {}).get("shared_buffers", {})
        # in bytes: shared_buffers has a unit, so pg_settings' value normalises to a number
        normalised = shared_buffers.get("normalised")
        results.append(
            PointResult(
                point=point,
                measurements=mine,
                tps=summarise([m.tps for m in ok]),
                latency_ms=summarise([m.latency_avg_ms for m in ok]),
                latency_percentiles=point_percentiles([m.metrics.get("latency") for m in ok]),
                resources=point_resources(
                    [(m.metrics.get("resources") or {}).get("summary") for m in ok]
                ),
                database_size_bytes=max(sizes) if sizes else None,
                blks_hit_ratio=hit_ratio(hits, reads) if ok else None,
                shared_buffers_bytes=normalised if not isinstance(normalised, str) else None,
                cgroup_peak_bytes=_max_cgroup(ok, "peak_bytes"),
                page_cache_bytes=_max_cgroup(ok, "page_cache_bytes"),
                figures=figures,
                warmup=[m for m in everything if m.repetition < warmup_repetitions],
                warnings=_warnings(point, ok, target, figures),
                settled=settled(tps, target) if target else None,
            )
        )
    by_figure: dict[str, dict[int, list[float]]] = {}
    for point_index, figures in figures_by_point.items():
        for name, values in figures.items():
            by_figure.setdefault(name, {})[point_index] = values
    noise = {name: machine_noise(by_point) for name, by_point in by_figure.items()}
    return RunData(
        run, results, server_settings, schedule, noise, snapshots=store.snapshots(run_id)
    )


def _max_cgroup(measurements: list[Measurement], key: str) -> float | None:
    stored = [((m.metrics.get("machine") or {}).get("cgroup") or {}).get(key) for m in measurements]
    values = [v for v in stored if v is not None]
    return max(values) if values else None


def _probe(measurement: Measurement, counter: str) -> float | None:
    return measurement.metrics.get("probes", {}).get("database", {}).get(counter)


def measured_memory(data: RunData) -> list[MeasuredMemory]:
    """Each successful measurement's memory accounting (metrics machine.memory_accounting: the
    emulated RAM, the huge pages pool and the cap; None when stored before it was recorded),
    with its point's huge pages and shared_buffers."""
    found: list[MeasuredMemory] = []
    for result in data.points:
        settings = result.point.settings
        for m in result.ok:
            found.append(
                MeasuredMemory(
                    huge_pages=str(settings.get("huge_pages", "")).lower(),
                    shared_buffers_bytes=shared_buffers_bytes(settings.get("shared_buffers")),
                    accounting=(m.metrics.get("machine") or {}).get("memory_accounting"),
                )
            )
    return found
