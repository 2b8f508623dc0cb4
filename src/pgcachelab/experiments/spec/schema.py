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

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    BeforeValidator,
    ConfigDict,
    Field,
    StrictBool,
    StrictInt,
    StrictStr,
    model_validator,
)

from pgcachelab.analysis.statistics import MIN_EXACT_95
from pgcachelab.experiments.spec import rules
from pgcachelab.experiments.spec.rules import WORKLOAD_TABLES
from pgcachelab.experiments.spec.sweeps import SweepValues, SweptSettings
from pgcachelab.experiments.spec.values import (
    INSPECT_METHODS,
    INSPECT_MODES,
    Control,
    Count,
    Disk,
    Fraction,
    HostTable,
    InitSteps,
    InspectMethod,
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
from pgcachelab.machine.oscache import OS_CACHE_MODES
from pgcachelab.workloads.scale_class import SCALE_CLASSES
from pgcachelab.workloads.tpcc.params import MODES as TPCC_MODES
from pgcachelab.workloads.tpcc.params import NO_LIMIT, TERMINAL_TIMES

WORKLOADS = ("pgbench", "cache-wash", "tpcc")
ORDERS = ("sequential", "interleaved", "random", "blocks")
PGBENCH_MODES = ("select-only", "simple-update", "tpcb-like", "custom")
PROTOCOLS = ("simple", "extended", "prepared")
SNAPSHOT_CHOICES = ("none", "before-after")  # and between a workload's phases (issue 7)
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

    disk: Disk | None = None
    os_cache: Literal[OS_CACHE_MODES] = "keep"
    prewarm: StrictBool = False
    inspect_method: InspectMethod | None = None
    version: Version | None = None


class PgbenchParameters(Table):
    mode: Literal[PGBENCH_MODES] = "select-only"
    scripts: list[ScriptEntry] = []
    scale: Count() = 1
    scale_class: Literal[SCALE_CLASSES] | None = None  # the scale follows memory
    clients: Count() = 1
    threads: Threads = 1
    duration: Seconds(zero_ok=False) = 10.0
    transactions: Count() | None = None
    progress: Count(0) = 1
    per_statement: StrictBool = False
    init_steps: InitSteps | None = None  # None: server-side generation where the server has it
    warmup: Seconds() = 0.0
    rate: PgbenchRate | None = None
    # pgbench --latency-limit (ms): with rate, transactions already that late are skipped
    latency_limit: LatencyLimitMs | None = None
    protocol: Literal[PROTOCOLS] = "simple"
    max_tries: Count() | None = None
    progress_warmup: Seconds() = 1.0  # its per-second tps is left out of stability checks

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
    table_size: TableSize = 1.0  # bytes, or a fraction of the server's memory (the seed: 1.0)
    lookups: Count() = 100
    warmup: Seconds() | None = None  # a time, or...
    warmup_lookups: Count(0) | None = None  # ...a count of lookups; neither: the seed's 100 s
    prewarm: StrictBool = True  # table, then index: the seed's order

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
    warehouses: Warehouses = 1
    workers: Count() = 2
    clients: Count() = 4
    threads: Threads = "auto"
    duration: Seconds(zero_ok=False) = 60.0
    warmup: Seconds() = 0.0
    weights: Weights = "45,43,4,4,4"
    home_warehouse: StrictBool = True
    rate_tpm: RateTpm = NO_LIMIT  # all terminals together (seed 002)
    max_tries: Count() = 10
    transactions: Count() | None = None
    mode: Literal[TPCC_MODES] = "procedures"  # or "client": the statements from pgbench
    terminal_times: Literal[TERMINAL_TIMES] = "off"  # or "spec": keying and think times


class PgbenchPoint(PgbenchParameters, PointKeys):
    pass


class CacheWashPoint(CacheWashParameters, PointKeys):
    pass  # its prewarm default (true) wins over PointKeys'


class TpccPoint(TpccParameters, PointKeys):
    pass


POINT_MODELS = {"pgbench": PgbenchPoint, "cache-wash": CacheWashPoint, "tpcc": TpccPoint}
PARAMETER_MODELS = {
    "pgbench": PgbenchParameters,
    "cache-wash": CacheWashParameters,
    "tpcc": TpccParameters,
}


# -- the other tables ----------------------------------------------------------------------------


class InspectTable(Table):
    """Cache snapshots during a run (issue 7): before and after each point, between a
    workload's phases, and every N seconds from a thread with its own connection. The run's
    options as they are: a point's method is its workload's `inspect_method`."""

    snapshots: Literal[SNAPSHOT_CHOICES] = "before-after"  # and between a workload's phases
    every_s: Seconds() = Field(0.0, alias="every")  # 0: no snapshots during the point
    method: Literal[INSPECT_METHODS] = "auto"  # the points' method: point_method()
    mode: Literal[INSPECT_MODES] = "consistent"
    os_cache: StrictBool = True  # mincore over the relation files when the data dir is local
    top: Count() = 30  # relations stored per snapshot; the rest are summed
    # extension: each pg_cachelab mode between two exact references, during the warm-up
    accuracy_pairs: StrictBool = False
    # > 0: `every` polls only in every other window of this many seconds of the measured run,
    # and pgbench reports tps each second (analysis/inspect_overhead.py says why)
    alternate_s: Seconds() = Field(0.0, alias="alternate")
    # pg_stat_activity's wait events ten times a second during the measured run (9.6+)
    wait_events: StrictBool = False

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
    pg_bin: StrictStr | None = None
    listen_tcp: StrictBool = False
    data_checksums: StrictBool | None = None  # None: each version's initdb default (on from 18)
    settings: dict[str, SettingText] = {}


class MachineTable(Table):
    memory: Size(64) | None = None
    disk: Disk | None = None
    os_cache: Literal[OS_CACHE_MODES] | None = None
    prewarm: StrictBool | None = None
    host: HostTable = {}  # host (OS) settings for the whole run: machine/host_tunables.py

    def point_keys(self) -> dict:
        """The per-point keys this table sets, to merge into the workload's."""
        return self.model_dump(exclude={"memory", "host"}, exclude_none=True)


class ReportTable(Table):
    title: StrictStr | None = None


FLEET_HOSTS = ("same", "spread")
DEFAULT_MAX_TRIES = 3


class FleetTable(Table):
    """How agents share a queued run (issue 21): "same" keeps every unit on the host class
    that measured its first one (a comparison of points); "spread" takes any host."""

    hosts: Literal[FLEET_HOSTS] = "spread"
    # A unit that fails (or whose agent dies) this many times is given up, with its reasons.
    max_tries: Count(1) = DEFAULT_MAX_TRIES


class SweepTable(Table):
    """Server settings under [sweep.settings]; workload keys beside them (rules check which)."""

    model_config = ConfigDict(extra="allow")
    __pydantic_extra__: dict[str, SweepValues] = Field(init=False)
    settings: dict[str, SweptSettings] = {}

    def workload(self) -> dict[str, list]:
        return self.model_extra


class LadderStepTable(Table):
    """A `[[ladder]]` step: a name, settings, host (OS) settings, and workload keys it changes
    (rules check which)."""

    model_config = ConfigDict(extra="allow")
    name: StepName = Field("", validate_default=True)
    description: StrictStr = ""
    settings: dict[str, SettingText] = {}
    host: HostTable = {}

    def workload(self) -> dict:
        return self.model_extra


class SpecFile(Table):
    """The whole file; cross-table rules in rules.py run once every table is valid."""

    name: StrictStr | None = None
    description: StrictStr = ""
    workload: Literal[WORKLOADS] = "pgbench"
    repetitions: Repetitions = 1  # with "auto": until target_ci, at most max_repetitions
    target_ci: Fraction = DEFAULT_TARGET_CI
    max_repetitions: Count(MIN_EXACT_95) = DEFAULT_MAX_REPETITIONS
    warmup_repetitions: Count(0) = 0  # run first at every point, stored, left out of figures
    order: Literal[ORDERS] = "sequential"
    # order = "blocks": each round runs the points of one value of this swept key, then the next
    # (values as written), the others' values in their written order (seed 000's schedule)
    block_by: StrictStr | None = None
    seed: StrictInt = 1
    store: Store | None = None  # a postgresql:// URL or a SQLite path
    # One swept version measured a second time on clusters of its own, as "<version> control":
    # the noise floor of a version sweep (true: the last listed version)
    control: Control = False
    server: ServerTable = Field(default_factory=ServerTable)
    machine: MachineTable = Field(default_factory=MachineTable)
    pgbench: PgbenchParameters | None = None
    cache_wash: CacheWashParameters | None = None
    tpcc: TpccParameters | None = None
    inspect: InspectTable | None = None
    sweep: SweepTable = Field(default_factory=SweepTable)
    ladder: Annotated[list[LadderStepTable], BeforeValidator(steps_list)] = []
    report: ReportTable = Field(default_factory=ReportTable)
    fleet: FleetTable = Field(default_factory=FleetTable)

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
