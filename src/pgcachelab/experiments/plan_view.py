"""The plan of a run (`run --plan`): every measurement in the order it will run, with the
settings in force, the memory and huge pages it needs and an estimate of its time. Pure: it
starts nothing, and reads the machine only through the PlanMachine the caller gives it.

The order is the runner's own (runner.planned_schedule), so the plan cannot drift from the run.
Every figure that is not read from the spec is an estimate, and says what it leaves out.
"""

import dataclasses
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pgcachelab.analysis.versions import server_version_of
from pgcachelab.errors import ClusterError
from pgcachelab.experiments.connection_room import with_room_for_clients
from pgcachelab.experiments.runner import planned_schedule
from pgcachelab.experiments.version_rounds import group_of
from pgcachelab.machine.emulated import MIN_MEMORY_LEFT, cap_for_pool
from pgcachelab.machine.hugepages_estimate import (
    DEFAULT_PAGE_SIZE_BYTES,
    LATEST_CALIBRATED_MAJOR,
    estimate_huge_pages,
)
from pgcachelab.spec import ExperimentSpec, Point
from pgcachelab.units import format_bytes, shared_buffers_bytes
from pgcachelab.workloads.parameters import PointParameters
from pgcachelab.workloads.protocol import Workload
from pgcachelab.workloads.registry import WORKLOADS
from pgcachelab.workloads.scale_class import ScaleClassError

# What one measurement costs besides its workload: the server's restart or reload with the
# point's settings (and their check), the session, the probes and the store write.
OVERHEAD_S = 2.0
ESTIMATE_IS = (
    "estimate: each measurement's warm-up and measured run from the spec, plus "
    f"{OVERHEAD_S:.0f} s for the server's restart, probes and store write"
)
_MAJOR = re.compile(r"^([0-9]+)(?:\.[0-9]+)?$")  # ASCII: \d took "٣"


@dataclass(frozen=True)
class PlanMachine:
    """What the plan knows of the machine the run will have, gathered by the caller."""

    ram_bytes: int | None  # the emulated RAM: --memory, else [machine] memory; None: no limit
    ram_source: str | None  # "--memory" or "machine.memory", for the reader
    host_memory_bytes: int | None  # this host's RAM: "% of memory" and scale classes without one
    page_size_bytes: int = DEFAULT_PAGE_SIZE_BYTES
    server_major: int | None = None  # the server a run without a version sweep uses, if known


def major_of(version: str | None) -> int | None:
    """18 for "18" or "18.6", 9 for "9.6"; None for a bin directory or nothing."""
    match = _MAJOR.match(str(version or "").strip())
    return int(match.group(1)) if match else None


def build_plan(spec: ExperimentSpec, machine: PlanMachine) -> dict:
    """The plan as JSON-ready data: {"points": [one entry per measurement, in run order], ...}.

    Sets spec.memory_for_shares as the runner does: "N% of memory" is a share of the emulated
    RAM, else of this host's.
    """
    spec.memory_for_shares = machine.ram_bytes or machine.host_memory_bytes
    memory_for_data = machine.ram_bytes or machine.host_memory_bytes
    points = spec.points()
    schedule = planned_schedule(spec)
    data_in_cluster: dict = {}  # the cluster a measurement runs on -> the data it holds now
    entries = []
    for position, (index, repetition) in enumerate(schedule, start=1):
        # a version sweep's cluster per version and data group, as the runner switches to it:
        # before the scale class becomes a scale
        cluster = None
        if spec.versions:
            cluster = (points[index].workload.version, group_of(points[index]))
        point, scale_problem = _with_scale(points[index], memory_for_data)
        builds = []
        if cluster not in data_in_cluster:
            version = point.workload.version
            builds.append(f"initdb (PostgreSQL {version})" if version else "initdb")
            data_in_cluster[cluster] = None
        data, data_text = _data_of(WORKLOADS[spec.workload], point, memory_for_data)
        if data is not None and data_in_cluster[cluster] != data:
            builds.append(data_text)
            data_in_cluster[cluster] = data
        entry = _entry(spec, machine, point, position, repetition, builds)
        entry["problems"] += [scale_problem] if scale_problem else []
        entries.append(entry)
    return _summary(spec, machine, points, entries)


def _entry(
    spec: ExperimentSpec,
    machine: PlanMachine,
    point: Point,
    position: int,
    repetition: int,
    builds: list[str],
) -> dict:
    seconds, left_out = _workload_seconds(spec, point)
    version = point.workload.version  # set on every point of a version sweep, and only there
    major = major_of(server_version_of(version)) if version else None
    major = major or machine.server_major
    shared_buffers = _bytes_or_none(point.settings.get("shared_buffers"))
    # a managed cluster runs with room for the point's clients (the runner raises
    # max_connections), and each connection takes shared memory the pool must hold
    in_force = with_room_for_clients(point.settings, point.workload.client_sessions)
    huge_pages = _huge_pages(in_force, major, machine.page_size_bytes)
    memory, problems = _memory(machine, shared_buffers, huge_pages)
    return {
        "position": position,
        "point": point.index,
        "repetition": repetition,
        "warmup_repetition": repetition < spec.warmup_repetitions,
        "label": point.label,
        "swept": _json_safe(point.swept),
        "settings": dict(point.settings),
        "host": dict(point.host),  # host (OS) settings in force: [machine.host], [ladder.host]
        "workload": _workload_that_matters(point.workload),
        "checkpoint_before_run": point.workload.checkpoint_before_run,
        "server_major": major,
        "shared_buffers_bytes": shared_buffers,
        "huge_pages_estimate": huge_pages,
        "memory": memory,
        "problems": problems,
        "estimated_seconds": seconds + OVERHEAD_S,
        "not_estimated": left_out,
        "builds_not_estimated": builds,
    }


def _summary(spec: ExperimentSpec, machine: PlanMachine, points: list, entries: list) -> dict:
    total = sum(entry["estimated_seconds"] for entry in entries)
    left_out = list(dict.fromkeys(item for entry in entries for item in entry["not_estimated"]))
    builds = [build for entry in entries for build in entry["builds_not_estimated"]]
    repetitions: dict[str, Any] = {
        "repetitions": "auto" if spec.auto_repetitions else spec.repetitions,
        "warmup_repetitions": spec.warmup_repetitions,
        "rounds_planned": spec.rounds,  # warm-up ones included; with auto, the first ones
    }
    notes = []
    if spec.auto_repetitions:
        most = total / spec.rounds * (spec.warmup_repetitions + spec.repetitions)
        repetitions |= {
            "max_repetitions": spec.repetitions,
            "target_ci": spec.target_ci,
            "estimated_seconds_at_most": most,
        }
        notes.append(
            f'repetitions = "auto": the estimate is for the first {spec.rounds} rounds; points '
            f"whose median has not settled to ±{spec.target_ci:.0%} run more, up to "
            f"{spec.repetitions} measured repetitions: at most about {most:,.0f} s"
        )
    if any(e["server_major"] is None and e["huge_pages_estimate"] for e in entries):
        notes.append(
            "the server's version is unknown: its huge pages are estimated as for PostgreSQL "
            f"{LATEST_CALIBRATED_MAJOR}"
        )
    ram, host = machine.ram_bytes, machine.host_memory_bytes
    if ram and host and ram > host:
        notes.append(
            f"{machine.ram_source}: {format_bytes(ram)} is more than this host's "
            f"{format_bytes(host)} of memory: the run refuses it here"
        )
    if ram is None:
        host_text = f" ({format_bytes(host)})" if host else ""
        pool_text = ""
        if any(entry["huge_pages_estimate"] for entry in entries):
            pool_text = ", and the huge page pool comes out of it"
        notes.append(f"no memory limit: the server has the host's memory{host_text}{pool_text}")
    notes += sorted({problem for entry in entries for problem in entry["problems"]})
    return {
        "spec": str(spec.path),
        "name": spec.name,
        "workload": spec.workload,
        "order": spec.order,
        "seed": spec.seed,
        **repetitions,
        "point_count": len(points),
        "measurement_count": len(entries),
        "memory": {
            "ram_bytes": machine.ram_bytes,
            "ram_source": machine.ram_source,
            "host_memory_bytes": machine.host_memory_bytes,
            "huge_page_size_bytes": machine.page_size_bytes,
        },
        "estimated_seconds": total,
        "estimate": ESTIMATE_IS,
        "not_estimated": left_out,
        "builds_not_estimated": builds,
        "notes": notes,
        "points": entries,
    }


# -- one measurement's parts -----------------------------------------------------------------------


def _bytes_or_none(value) -> int | None:
    """A size setting in bytes; None when it is not one (an unresolved "25% of memory")."""
    try:
        return shared_buffers_bytes(value)
    except ValueError:
        return None


def _huge_pages(settings: dict, major: int | None, page_size_bytes: int) -> dict | None:
    """The pool a point with huge_pages = on needs; None when it is off or try (the lab then
    gives back what it added: machine/emulated.py)."""
    if str(settings.get("huge_pages", "")).lower() != "on":
        return None
    try:
        estimate = estimate_huge_pages(settings, major, page_size_bytes)
    except ValueError:  # a size still "N% of memory": nothing to resolve it against
        return None
    return {
        "pages": estimate.pages,
        "page_size_bytes": estimate.page_size_bytes,
        "bytes": estimate.bytes,
        "shared_memory_bytes": estimate.shared_memory_bytes,
        "estimate": f"formula calibrated on PostgreSQL {estimate.calibrated_on}",
    }


def _memory(machine: PlanMachine, shared_buffers: int | None, huge_pages: dict | None):
    """({"ram_bytes", "huge_pages_pool_bytes", "cap_bytes"}, problems): the emulated machine
    caps the server's cgroup at its RAM less the huge page pool, as a real machine loses the
    pool from its RAM."""
    ram = machine.ram_bytes
    pool = huge_pages["bytes"] if huge_pages else 0
    memory = {
        "ram_bytes": ram,
        "huge_pages_pool_bytes": pool,
        "cap_bytes": ram - pool if ram is not None else None,
    }
    problems = []
    if ram is not None and shared_buffers is not None and shared_buffers >= ram:
        problems.append(
            f"shared_buffers {format_bytes(shared_buffers)} does not fit in the "
            f"{format_bytes(ram)} of RAM: such a point fails (shared_buffers_exceeds_memory)"
        )
        memory["cap_bytes"] = None
    elif ram is not None and pool:
        try:
            cap_for_pool(ram, pool)  # the run's own rule
        except ClusterError:
            problems.append(
                f"a huge page pool of about {format_bytes(pool)} leaves less than "
                f"{format_bytes(MIN_MEMORY_LEFT)} of the {format_bytes(ram)} of RAM: such a "
                "point fails (hugepages_exceed_memory)"
            )
            memory["cap_bytes"] = None
    return memory, problems


def _workload_seconds(spec: ExperimentSpec, point: Point) -> tuple[float, list[str]]:
    """(seconds known from the spec, what takes time the spec does not say)."""
    workload = WORKLOADS[spec.workload]
    seconds, left_out = workload.known_seconds(point.workload)
    if point.workload.prewarm and not workload.prewarms_itself:
        left_out.append("pg_prewarm of every relation")
    if point.workload.checkpoint_before_run:
        left_out.append("a CHECKPOINT before each measured run (it writes what is dirty)")
    if spec.inspect is not None:
        left_out.append("the cache snapshots of [inspect]")
    return seconds, left_out


def _with_scale(point: Point, memory_bytes: int | None) -> tuple[Point, str | None]:
    """(the point with the scale its scale class means on this machine, as runner._with_scale
    gives it; the reason the run refuses the class, if it does)."""
    shared_buffers = _bytes_or_none(point.settings.get("shared_buffers"))
    if not point.workload.sized_by_memory or not memory_bytes or shared_buffers is None:
        return point, None
    try:
        workload = point.workload.sized_for(shared_buffers, memory_bytes)
    except ScaleClassError as error:  # preflight.check_run refuses the whole run
        return point, f"scale_class: {error}: the run refuses to start"
    return dataclasses.replace(point, workload=workload), None


def _data_of(workload: Workload, point: Point, memory_bytes: int | None) -> tuple:
    """(what identifies the data the point needs, how it is built) as the workload's
    ensure_data keys it; (None, "") when the point needs none built."""
    estimate = workload.data_estimate(point.workload, memory_bytes)
    if estimate is None:
        return None, ""
    return estimate.identity, estimate.build


def _workload_that_matters(workload: PointParameters) -> dict:
    """The point's workload parameters without those that do not apply: unset ones, and the
    duration of a run for a count of transactions."""
    shown = {k: v for k, v in workload.record().items() if v is not None and v != []}
    if shown.get("transactions"):
        shown.pop("duration", None)
    return _json_safe(shown)


def _json_safe(value):
    if isinstance(value, dict):
        return {str(k): _json_safe(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_json_safe(v) for v in value]
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return _json_safe(dataclasses.asdict(value))
    if isinstance(value, Path):
        return str(value)
    return value
