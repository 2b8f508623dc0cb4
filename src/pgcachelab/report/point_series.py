"""One measurement second by second (`report RUN --point N`, issue 32): pgbench's tps, the
latency percentiles of each second from its log, and the machine's CPU, memory and device from
the resource sampler, on one time axis, to see *when* within a run something happened."""

from pathlib import Path

from pgcachelab.errors import UserError
from pgcachelab.report.plots import save_figure
from pgcachelab.report.pyplot import plt
from pgcachelab.store.metric_types import ProgressSample
from pgcachelab.store.records import Measurement

SERIES_METRICS = ("pgbench.progress", "latency.per_second", "resources")


def chosen_measurement(
    measurements: list[Measurement], point_index: int, repetition: int | None
) -> Measurement:
    """The point's repetition asked for; by default its median-tps successful one."""
    mine = [m for m in measurements if m.point_index == point_index]
    if not mine:
        known = sorted({m.point_index for m in measurements})
        raise UserError(
            f"--point: no point {point_index} in this run",
            f"the run's points are {', '.join(map(str, known)) or 'none'} (see `show`)",
        )
    if repetition is not None:
        for m in mine:
            if m.repetition == repetition:
                return m
        raise UserError(
            f"--repetition: point {point_index} has no repetition {repetition}",
            f"its repetitions are {', '.join(str(m.repetition) for m in mine)}",
        )
    ok = sorted((m for m in mine if m.status == "ok" and m.tps), key=lambda m: m.tps or 0.0)
    return ok[len(ok) // 2] if ok else mine[0]


def point_series_plot(measurement: Measurement, label: str, out_dir: Path) -> list[Path]:
    """The measurement's per-second panels, as point-N-rR.png/svg; those it has no data for
    are left out (a run stored before the resource sampler has tps and latency only)."""
    panels = [p for p in (_tps, _latency, _cpu, _device, _memory) if p(measurement, None)]
    if not panels:
        raise UserError(
            f"--point: point {measurement.point_index} #{measurement.repetition + 1} has no "
            "per-second series",
            "measure with progress = 1 (the default); the latency and resource series are "
            "stored by this version of the lab",
        )
    start = _start_time(measurement)
    figure, axes = plt.subplots(len(panels), 1, figsize=(10, 2.4 * len(panels)), sharex=True)
    axes = [axes] if len(panels) == 1 else list(axes)
    for panel, axis in zip(panels, axes, strict=True):
        panel(measurement, (axis, start))
        axis.grid(True, alpha=0.3)
        axis.legend(fontsize=8, loc="upper right")
    axes[-1].set_xlabel("seconds since the run began")
    axes[0].set_title(f"{label}, repetition {measurement.repetition + 1}: second by second")
    figure.tight_layout()
    name = f"point-{measurement.point_index}-r{measurement.repetition}"
    return save_figure(figure, out_dir, name)


def _start_time(m: Measurement) -> float:
    rows = _resource_rows(m)
    seconds = [row["unix_time"] for row in rows] + [s[0] for s in _latency_seconds(m)]
    return min(seconds) if seconds else m.started_at


def _progress(m: Measurement) -> list[ProgressSample]:
    return ((m.metrics.get("pgbench") or {}).get("progress")) or []


def _latency_seconds(m: Measurement) -> list[list]:
    return ((m.metrics.get("latency") or {}).get("per_second")) or []


def _resource_rows(m: Measurement) -> list[dict]:
    resources = m.metrics.get("resources") or {}
    columns = resources.get("columns") or []
    return [dict(zip(columns, row, strict=False)) for row in resources.get("rows") or []]


def _tps(m: Measurement, target) -> bool:
    progress = _progress(m)
    if target is None or not progress:
        return bool(progress)
    axis, _ = target
    # pgbench's progress counts from its own start (or Unix times with --progress-timestamp)
    times = [s["elapsed_s"] for s in progress]
    if times and times[0] > 1e9:
        times = [t - target[1] for t in times]
    axis.plot(times, [s["tps"] for s in progress], marker=".", label="tps (pgbench --progress)")
    axis.set_ylabel("tps")
    axis.set_ylim(bottom=0)
    return True


def _latency(m: Measurement, target) -> bool:
    seconds = _latency_seconds(m)
    if target is None or not seconds:
        return bool(seconds)
    axis, start = target
    times = [row[0] + 0.5 - start for row in seconds]  # a second's transactions: its middle
    axis.plot(times, [row[2] for row in seconds], ":", marker=".", label="p50")
    axis.plot(times, [row[3] for row in seconds], "-", marker=".", label="p99")
    axis.plot(times, [row[4] for row in seconds], "--", alpha=0.6, label="max")
    axis.set_yscale("log")
    axis.set_ylabel("latency (ms)")
    return True


def _columns(m: Measurement, target, names: dict, ylabel: str, log: bool = False) -> bool:
    rows = _resource_rows(m)
    present = [name for name in names if any(row.get(name) is not None for row in rows)]
    if target is None or not present:
        return bool(present)
    axis, start = target
    times = [row["unix_time"] - start for row in rows]
    for name in present:
        axis.plot(times, [row.get(name) for row in rows], marker=".", label=names[name])
    axis.set_ylabel(ylabel)
    if log:
        axis.set_yscale("symlog")
    return True


def _cpu(m: Measurement, target) -> bool:
    names = {
        "cpu_user_pct": "user",
        "cpu_system_pct": "system",
        "cpu_iowait_pct": "iowait",
        "cgroup_cpu_pct": "server's cgroup",
    }
    return _columns(m, target, names, "machine CPU (%)")


def _device(m: Measurement, target) -> bool:
    names = {
        "device_reads_per_s": "reads/s",
        "device_writes_per_s": "writes/s",
        "device_wait_ms": "wait per IO (ms)",
    }
    return _columns(m, target, names, "data device", log=True)


def _memory(m: Measurement, target) -> bool:
    rows = _resource_rows(m)
    if target is None or not rows:
        return _columns(m, None, {"page_cache_bytes": ""}, "")
    axis, start = target
    times = [row["unix_time"] - start for row in rows]
    for name, label in (("page_cache_bytes", "page cache"), ("dirty_bytes", "dirty")):
        values = [row.get(name) for row in rows]
        if any(v is not None for v in values):
            axis.plot(times, [v / 2**20 if v is not None else None for v in values], label=label)
    axis.set_ylabel("memory (MiB)")
    return True
