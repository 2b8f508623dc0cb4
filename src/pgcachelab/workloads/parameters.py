"""What a point runs: each workload's parameters, one frozen pydantic model per workload, used
by the spec, the runner and the read side. Pure.

A workload's table model (PgbenchTable: the spec's [pgbench] keys) and the per-point keys set
under [machine] and [inspect] (PointKeys) make its parameters (PgbenchParameters). The spec
validates its table, then each point's values, fixed, swept and from a ladder step, through
these fields (spec/load.py); a point carries one frozen object of them, with its
sweep's and ladder step's values applied, and the runner and the workloads read its
attributes; a results store keeps `record()`, and reads a stored point back as the same model
(`stored_parameters`), its values checked for their types only (workloads/values.py).
"""

from typing import Annotated, Any, ClassVar, Literal, Self, get_args

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    StrictBool,
    ValidationInfo,
    model_validator,
)

from pgcachelab.machine.oscache import OsCacheMode
from pgcachelab.workloads.scale_class import ScaleClass, scale_for_class
from pgcachelab.workloads.tpcc.params import NO_LIMIT, TerminalTimes, parse_weights
from pgcachelab.workloads.tpcc.params import Mode as TpccMode
from pgcachelab.workloads.tpcc.terminal_times import suggested_duration_s, too_short_for_a_new_order
from pgcachelab.workloads.values import (
    Count,
    Disk,
    InitSteps,
    InspectMethod,
    LatencyLimitMs,
    PgbenchRate,
    RateTpm,
    ScriptEntry,
    Seconds,
    TableSize,
    Threads,
    Version,
    Warehouses,
    Weights,
    refuse,
    stored,
)

PgbenchMode = Literal["select-only", "simple-update", "tpcb-like", "custom"]
PGBENCH_MODES: tuple[str, ...] = get_args(PgbenchMode)
PgbenchProtocol = Literal["simple", "extended", "prepared"]
PROTOCOLS: tuple[str, ...] = get_args(PgbenchProtocol)
CACHE_WASH_WARMUP_S = 100.0  # the seed's warm-up, when neither a time nor a count is given
# A point stored by the code before typed points has these keys only when they were given.
OPTIONAL_KEYS = ("disk", "inspect_method", "version")
# Keys added after runs were stored: a point stores one only when it is set (true), so a spec
# without it stores the same JSON as before the key existed.
STORED_WHEN_SET = ("checkpoint",)


class ParameterTable(BaseModel):
    """A TOML table: unknown keys refused, no silent coercion ("3" is not 3); frozen."""

    model_config = ConfigDict(extra="forbid", strict=True, frozen=True)


class PointKeys(ParameterTable):
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


class PgbenchTable(ParameterTable):
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
    def _scripts_with_custom_mode(self, info: ValidationInfo) -> Self:
        if stored(info):  # rules are the spec's: a stored point ran as it was
            return self
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


class CacheWashTable(ParameterTable):
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

    @model_validator(mode="before")
    @classmethod
    def _seed_warmup_by_default(cls, raw: Any, info: ValidationInfo) -> Any:
        if stored(info) or not isinstance(raw, dict):
            return raw
        if raw.get("warmup") is None and raw.get("warmup_lookups") is None:
            return {**raw, "warmup": CACHE_WASH_WARMUP_S}
        return raw

    @model_validator(mode="after")
    def _warmup_by_time_or_count(self, info: ValidationInfo) -> Self:
        if stored(info):
            return self
        if self.warmup is not None and self.warmup_lookups is not None:
            raise refuse(
                "warmup_lookups",
                "cannot be given with {prefix}warmup",
                'keep one: warmup = "100s" warms for a time, warmup_lookups = N for a '
                "count of lookups",
            )
        return self


class TpccTable(ParameterTable):
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
    def _terminal_times_fit_the_duration(self, info: ValidationInfo) -> Self:
        if stored(info) or self.terminal_times != "spec" or self.transactions is not None:
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


class PointParameters(PointKeys):
    """A workload's parameters and the per-point keys: what a point runs. Each workload's class
    extends it and its table model."""

    # The workload's table: its keys, in the order its record lists them.
    table: ClassVar[type[ParameterTable]]
    # A key of the workload's table that every point of it stored, since the first run: it tells
    # a stored point's workload (stored_parameters).
    stored_key: ClassVar[str]

    def record(self) -> dict[str, object]:
        """The parameters as the results store keeps them: the workload's own keys in the
        spec's order, then the per-point keys; lists, not tuples. A point read back from a
        store records the keys it was stored with, no more (a key added since stays unset)."""
        names = dict.fromkeys([*self.table.model_fields, *PointKeys.model_fields])
        values = {name: getattr(self, name) for name in names if name in self.model_fields_set}
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in values.items()
            if (value is not None or name not in OPTIONAL_KEYS)
            and (value or name not in STORED_WHEN_SET)
        }

    @model_validator(mode="after")
    def _every_key_given(self, info: ValidationInfo) -> Self:
        """A point from a spec (or built in code) stores every key, defaults too; one read
        from a store keeps the keys it was stored with (record())."""
        if not stored(info):
            self.model_fields_set.update(type(self).model_fields)
        return self

    def changed(self, **changes: object) -> Self:
        """These parameters with some replaced (a sweep's value, a ladder step's changes), as
        converted already: not validated again."""
        unknown = sorted(set(changes) - set(type(self).model_fields))
        if unknown:
            raise TypeError(f"{type(self).__name__} has no parameter {', '.join(unknown)}")
        return self.model_copy(update=changes)

    @property
    def client_sessions(self) -> int | None:
        """The sessions the workload opens at once, which max_connections must hold; None:
        one at a time."""
        return None

    @property
    def checkpoint_before_run(self) -> bool:
        """Whether a CHECKPOINT runs right before the measured run (experiments/checkpoint.py)."""
        return False

    @property
    def read_only(self) -> bool:
        """Whether a run leaves the data as it found it (version rounds run these first)."""
        return False

    @property
    def sized_by_memory(self) -> bool:
        """Whether the data's size follows the server's memory (sized_for resolves it)."""
        return False

    def sized_for(self, shared_buffers_bytes: int, memory_bytes: int) -> Self:
        """The parameters as they run on a server of this memory; raises ScaleClassError."""
        return self


class PgbenchParameters(PgbenchTable, PointParameters):
    table = PgbenchTable
    stored_key = "scale"
    # Set only at run time, never stored (not a key of the table): with [inspect] alternate
    # pgbench's progress lines carry Unix timestamps, to be cut along the polled windows
    # (runner._with_progress_for_windows).
    progress_timestamp: StrictBool = False

    @property
    def client_sessions(self) -> int | None:
        return self.clients

    @property
    def checkpoint_before_run(self) -> bool:
        return self.checkpoint

    @property
    def read_only(self) -> bool:
        return self.mode == "select-only"

    @property
    def sized_by_memory(self) -> bool:
        return self.scale_class is not None

    def sized_for(self, shared_buffers_bytes: int, memory_bytes: int) -> Self:
        """The scale the scale class means for this shared_buffers and memory."""
        if self.scale_class is None:
            return self
        return self.changed(
            scale=scale_for_class(self.scale_class, shared_buffers_bytes, memory_bytes)
        )

    @property
    def brings_own_data(self) -> bool:
        """Custom scripts without init steps: no pgbench tables are built for them."""
        return self.mode == "custom" and not self.init_steps


class CacheWashParameters(CacheWashTable, PointParameters):
    table = CacheWashTable
    stored_key = "table_size"
    # its table's prewarm default (true: the seed's order) wins over PointKeys'


class TpccParameters(TpccTable, PointParameters):
    table = TpccTable
    stored_key = "warehouses"

    @property
    def client_sessions(self) -> int | None:
        return self.clients

    @property
    def checkpoint_before_run(self) -> bool:
        return self.checkpoint


PARAMETERS: dict[str, type[PointParameters]] = {
    "pgbench": PgbenchParameters,
    "cache-wash": CacheWashParameters,
    "tpcc": TpccParameters,
}


def stored_parameters(record: dict[str, Any]) -> PointParameters:
    """A stored point's parameters (its JSON, decoded) as its workload's model; raises
    pydantic's ValidationError or ValueError on a record no workload stores."""
    for model in PARAMETERS.values():
        if model.stored_key in record:
            return model.model_validate(record, context={"stored": True})
    raise ValueError(f"no workload stores parameters without any of {_STORED_KEYS}")


_STORED_KEYS = ", ".join(model.stored_key for model in PARAMETERS.values())
