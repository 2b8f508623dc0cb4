"""What a point runs: each workload's parameters, typed, as the spec validated them. Pure.

The spec's pydantic models (experiments/spec/schema.py) check and convert the values; each
point then carries one frozen object of these, with its sweep's and ladder step's values
applied, and the runner and the workloads read its attributes. The fields mirror the spec's
point models one for one (tests/test_point_parameters.py holds them to it), and a point is
stored as `record()`: the dict that runs stored before these types existed hold.
"""

import dataclasses
from dataclasses import dataclass, field
from pathlib import Path
from typing import ClassVar, Self

from pgcachelab.workloads.scale_class import scale_for_class


@dataclass(frozen=True)
class Script:
    """A custom pgbench script: its file (resolved against the spec's directory), its weight."""

    file: Path
    weight: int


# Set only at run time, never stored: with [inspect] alternate pgbench's progress lines carry
# Unix timestamps, to be cut along the polled windows (runner._with_progress_for_windows).
RUN_TIME_ONLY = {"stored": False}
# Keys added after runs were stored: a point stores one only when it is set (true), so a spec
# without it stores the same JSON as before the key existed.
STORED_WHEN_SET = {"stored_when_set": True}


@dataclass(frozen=True, kw_only=True)
class PointParameters:
    """What every point has besides its workload's parameters ([machine], [inspect], a version
    sweep); the workloads' parameter classes extend it."""

    disk: str | None  # canonical text of the emulated disk; None: not named
    os_cache: str  # keep, drop-cluster or drop-all (machine/oscache.py)
    prewarm: bool
    inspect_method: str | None  # None: no [inspect]
    version: str | None  # None: not a version sweep

    # A point stored by the code before these types has these keys only when they were given.
    OPTIONAL_KEYS: ClassVar[tuple[str, ...]] = ("disk", "inspect_method", "version")

    def record(self) -> dict:
        """The parameters as the results store keeps them: the workload's own keys in the
        spec's order, then the per-point keys; lists, not tuples."""
        # The workload's class declares its keys in its table's order, cache-wash's prewarm
        # among them; the JSON is stored with sorted keys, the order shows in run --plan.
        own = [name for name in type(self).__annotations__ if not name.isupper()]
        names = dict.fromkeys([*own, *(f.name for f in dataclasses.fields(PointParameters))])
        stored = {f.name for f in dataclasses.fields(self) if f.metadata.get("stored", True)}
        values = {name: getattr(self, name) for name in names if name in stored}
        when_set = {f.name for f in dataclasses.fields(self) if f.metadata.get("stored_when_set")}
        return {
            name: list(value) if isinstance(value, tuple) else value
            for name, value in values.items()
            if (value is not None or name not in self.OPTIONAL_KEYS)
            and (value or name not in when_set)
        }

    def changed(self, **changes) -> Self:
        """These parameters with some replaced (a sweep's value, a ladder step's changes)."""
        return dataclasses.replace(self, **changes)

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


@dataclass(frozen=True, kw_only=True)
class PgbenchParameters(PointParameters):
    mode: str  # select-only, simple-update, tpcb-like or custom
    scripts: tuple[Script, ...]
    scale: int
    scale_class: str | None
    clients: int
    threads: int | str  # "auto": one per client up to the cores
    duration: float  # seconds
    transactions: int | None
    progress: int  # seconds between --progress lines; 0: none
    per_statement: bool
    init_steps: str | None
    warmup: float  # seconds
    rate: float | None  # tps
    latency_limit: float | None  # ms
    protocol: str
    max_tries: int | None
    progress_warmup: float  # seconds
    checkpoint: bool = field(default=False, metadata=STORED_WHEN_SET)
    progress_timestamp: bool = field(default=False, metadata=RUN_TIME_ONLY)

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


@dataclass(frozen=True, kw_only=True)
class CacheWashParameters(PointParameters):
    table_size: int | float  # bytes, or (a float) a fraction of the server's memory
    lookups: int
    warmup: float | None  # seconds; None: warm for warmup_lookups instead
    warmup_lookups: int | None
    prewarm: bool  # pg_prewarm table then index before the warm-up (the seed's order)


@dataclass(frozen=True, kw_only=True)
class TpccParameters(PointParameters):
    warehouses: int
    workers: int
    clients: int
    threads: int | str
    duration: float  # seconds
    warmup: float  # seconds
    weights: str  # "45,43,4,4,4"
    home_warehouse: bool
    rate_tpm: int | float | str  # "off": no limit
    max_tries: int
    transactions: int | None
    mode: str  # procedures or client
    terminal_times: str  # off or spec
    checkpoint: bool = field(default=False, metadata=STORED_WHEN_SET)

    @property
    def client_sessions(self) -> int | None:
        return self.clients

    @property
    def checkpoint_before_run(self) -> bool:
        return self.checkpoint
