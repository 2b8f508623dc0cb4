"""The plan of a run: a validated spec's points (the product of its sweeps and ladder steps)
and the order they run in. Pure, no servers."""

import dataclasses
import itertools
import random
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pgcachelab.analysis.statistics import MIN_EXACT_95
from pgcachelab.errors import UserError
from pgcachelab.spec.ladder import (
    LadderStep,
    cumulative,
    host_in_force,
    resolve_memory_shares,
)
from pgcachelab.spec.rules import DATA_KEYS
from pgcachelab.spec.schema import InspectOptions
from pgcachelab.units import shared_buffers_bytes
from pgcachelab.workloads.parameters import PointParameters


@dataclass(frozen=True)
class Point:
    """One combination of swept values: what to set on the server and what to run."""

    index: int
    workload: PointParameters  # the workload's parameters, all resolved (durations in seconds)
    settings: dict  # server settings as text, fixed ones merged with swept ones
    swept: dict  # just the swept values, as written: what tells points apart
    host: dict = field(default_factory=dict)  # host (OS) settings in force: machine/host_settings

    @property
    def label(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.swept.items()) or "single point"

    def with_workload(self, **changes) -> "Point":
        """The point with some of its workload's parameters replaced (as it runs here)."""
        return dataclasses.replace(self, workload=self.workload.changed(**changes))

    def to_store(self) -> "PointRecord":
        """The point as the results store keeps it (its parameters as their record())."""
        return PointRecord(self.index, self.label, self.swept, self.workload, self.settings)


@dataclass(frozen=True)
class PointRecord:
    """A point in the shape the store writes (store.records.PointToStore)."""

    index: int
    label: str
    swept: dict
    workload: PointParameters
    settings: dict


@dataclass
class ExperimentSpec:
    path: Path
    text: str
    name: str
    description: str
    workload: str
    repetitions: int  # measured repetitions per point; with auto, the most a point gets
    order: str
    seed: int
    pg_bin: str | None
    listen_tcp: bool
    data_checksums: bool | None  # None: each version's initdb default (on from 18)
    memory_bytes: int | None
    settings: dict[str, str]
    parameters: PointParameters  # the workload's fixed parameters and per-point keys
    sweep_workload: dict[str, list]  # as written: what labels and tells points apart
    sweep_settings: dict[str, list]
    report: dict = field(default_factory=dict)
    ladder: list[LadderStep] = field(default_factory=list)  # cumulative steps, in order
    # The memory that "N% of memory" settings are shares of: set by the runner once it knows
    # the (emulated) machine; until then they resolve against [machine] memory, if given.
    memory_for_shares: int | None = None
    inspect: InspectOptions | None = None
    store: str | None = None  # where the run is stored: a postgresql:// URL or a SQLite path
    fleet_hosts: str = "spread"  # queued runs: "same" host class for every unit, or "spread"
    fleet_max_tries: int = 3  # queued runs: a unit is given up after this many failed tries
    fleet_host_class: str | None = None  # queued runs: only agents of this class measure it
    fleet_classes: tuple[str, ...] = ()  # queued runs, "spread": each point over these classes
    warmup_repetitions: int = 0  # run first at every point, stored, left out of every figure
    auto_repetitions: bool = False
    target_ci: float | None = None  # auto: the relative half-width of the median's 95% interval
    # The swept workload values as a point's workload gets them: converted exactly as the
    # fixed value of the key is ("5s" -> 5.0, [45, 43, 4, 4, 4] -> "45,43,4,4,4"; issue 16).
    sweep_resolved: dict[str, list] = field(default_factory=dict)
    block_by: str | None = None  # order = "blocks": the swept key whose values make the blocks
    host: dict = field(default_factory=dict)  # [machine.host]: host settings of every point
    # The study a run of it is, stored with the run (spec/study.py); `reproduce` sets another
    # study's name when it runs that study's spec
    study: str = "big-cache"

    def has_host_settings(self) -> bool:
        return bool(self.host) or any(step.host for step in self.ladder)

    @property
    def rounds(self) -> int:
        """Rounds over every point scheduled up front, warm-up ones included; with auto,
        further rounds run only for the points that have not settled (runner)."""
        if self.auto_repetitions:
            return self.warmup_repetitions + min(MIN_EXACT_95, self.repetitions)
        return self.warmup_repetitions + self.repetitions

    def setting_names(self) -> set[str]:
        return set(self.settings) | set(self.sweep_settings)

    def points(self) -> list[Point]:
        return expand_points(self)

    def schedule(self) -> list[tuple[int, int]]:
        """(point index, repetition) pairs in the order they run, grouped by the data they need."""
        groups = [data_group(point) for point in self.points()]
        return schedule(len(groups), self.rounds, self.order, self.seed, groups)

    @property
    def versions(self) -> list[str]:
        """The swept server versions (major versions or bin directories), if any."""
        return self.sweep_workload.get("version", [])

    def disks(self) -> tuple[str | None, ...]:
        """The disks the points run on, in the order they first appear (None: not named)."""
        return tuple(dict.fromkeys(point.workload.disk for point in self.points()))

    def set_disk(self, disk: str) -> None:
        """--disk: the disk of every point, instead of what the spec says."""
        if "disk" in self.sweep_workload or any("disk" in s.workload for s in self.ladder):
            raise UserError(
                f"--disk: the spec {self.path} sweeps the disk, so each point names its own",
                "drop --disk, or the spec's disk sweep",
            )
        self.parameters = self.parameters.changed(disk=disk)


def huge_pages_on(spec: ExperimentSpec) -> bool:
    values = spec.sweep_settings.get("huge_pages", [spec.settings.get("huge_pages", "")])
    return any(str(v).lower() == "on" for v in values)


def _descending_bytes(values: list[str]) -> list[str]:
    return sorted(values, key=shared_buffers_bytes, reverse=True)


def expand_points(spec: ExperimentSpec) -> list[Point]:
    """The product of all sweeps, first key outermost, workload sweeps before settings.

    With huge pages on, shared_buffers runs from the largest down (seed 000): the kernel can
    always shrink a huge page pool, but may not find contiguous memory to grow it later.
    """
    axes: list[tuple[str, str, list[Any]]] = []
    if spec.ladder:
        axes.append(("step", "step", [step.name for step in spec.ladder]))
    axes += [
        ("workload", k, list(zip(v, spec.sweep_resolved.get(k, v), strict=True)))
        for k, v in spec.sweep_workload.items()
    ]
    # In blocks the values run as written: the spec's author chose the order (seed 000 writes
    # shared_buffers from the largest down, so the huge page pool only ever shrinks in a block)
    descending = huge_pages_on(spec) and spec.order != "blocks"
    axes += [
        ("settings", k, _descending_bytes(v) if k == "shared_buffers" and descending else v)
        for k, v in spec.sweep_settings.items()
    ]
    if spec.order == "blocks":  # the block key outermost: one block of points after another
        axes.sort(key=lambda axis: axis[1] != spec.block_by)
    points = []
    in_force = dict(zip([s.name for s in spec.ladder], cumulative(spec.ladder), strict=True))
    host_of_step = dict(zip([s.name for s in spec.ladder], host_in_force(spec.ladder), strict=True))
    memory = spec.memory_for_shares or spec.memory_bytes
    combos = itertools.product(*(values for _, _, values in axes)) if axes else [()]
    for index, combo in enumerate(combos):
        changes = {}  # to the fixed parameters, in the axes' order
        settings = dict(spec.settings)
        host = dict(spec.host)
        swept = {}
        for (kind, key, _), value in zip(axes, combo, strict=True):
            if kind == "workload":
                swept[key], changes[key] = value  # as written, as resolved
                continue
            swept[key] = value
            if kind == "step":
                step_settings, step_workload = in_force[value]
                settings.update(step_settings)
                changes.update(step_workload)
                host.update(host_of_step[value])
            else:
                settings[key] = value
        settings = resolve_memory_shares(settings, memory)
        workload = spec.parameters.changed(**changes)
        points.append(Point(index, workload, settings, swept, host))
    return points


def data_group(point: Point) -> tuple:
    """What a point needs built before it runs: its server version and its data."""
    # A workload without one of the keys (cache-wash has no scale) counts it as None.
    return tuple(str(getattr(point.workload, key, None)) for key in DATA_KEYS)


def schedule(
    point_count: int, repetitions: int, order: str, seed: int, groups: list | None = None
) -> list[tuple[int, int]]:
    """Sequential: all repetitions of a point together; interleaved: every point once per round
    (slow drift of the machine then spreads over all points); random: shuffled rounds; blocks:
    every point once per round in the points' order, which expand_points made block after block.

    `groups` (one key per point) keeps the points that share data together, groups in their
    first point's order, so that the order applies within a group: interleaving points that need
    different data would rebuild it at every point.
    """
    groups = groups or [()] * point_count
    members: dict = {}
    for index, group in enumerate(groups):
        members.setdefault(group, []).append(index)
    rng = random.Random(seed)
    ordered = []
    for indexes in members.values():
        if order == "sequential":
            ordered += [(p, r) for p in indexes for r in range(repetitions)]
            continue
        for r in range(repetitions):
            round_indexes = list(indexes)
            if order == "random":
                rng.shuffle(round_indexes)
            ordered += [(p, r) for p in round_indexes]
    return ordered
