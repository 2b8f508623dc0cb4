"""A run's sizes against the machine it will have, checked before any server starts (issue 35).

Each check is pure: the runner gathers the facts (free space where the clusters go, the
server's max_connections, the memory limit) and a refusal here is one user error naming the
key, the value and the estimate, so that a spec no machine could run ends in a second, not in
a point that fails after a load of hours (or a load of petabytes that fills the disk).
"""

from pgcachelab.errors import UserError
from pgcachelab.experiments.connection_room import DEFAULT_MAX_CONNECTIONS, with_room_for_clients
from pgcachelab.experiments.spec import ExperimentSpec, Point
from pgcachelab.experiments.version_rounds import group_of
from pgcachelab.machine import host_tunables
from pgcachelab.machine.disk_profiles import HOST
from pgcachelab.machine.host_tunables import IO_SCHEDULER
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
