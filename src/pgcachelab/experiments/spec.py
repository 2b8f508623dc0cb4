"""Experiment specs: TOML in, validated points out. Pure logic, no servers.

A spec names the workload, fixed server settings and workload parameters, the swept ones,
repetitions and order. Every problem is one UserError naming file, key, value and the fix.
"""

import itertools
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pgcachelab.analysis.statistics import MIN_EXACT_95
from pgcachelab.clusters.guc import (
    SettingInfo,
    canonical_value,
    check_setting_value,
    setting_value_text,
)
from pgcachelab.clusters.installs import normalise_major
from pgcachelab.errors import UserError
from pgcachelab.experiments.ladder import (
    NO_LIMIT,
    STEP_KEYS,
    LadderStep,
    cumulative,
    memory_share,
    resolve_memory_shares,
)
from pgcachelab.machine.disk_profiles import DiskProfileError, canonical_disk
from pgcachelab.machine.oscache import OS_CACHE_MODES
from pgcachelab.units import parse_bytes, parse_seconds, shared_buffers_bytes
from pgcachelab.workloads.scale_class import SCALE_CLASSES
from pgcachelab.workloads.tpcc.params import MAX_WAREHOUSES, format_weights, parse_weights

WORKLOADS = ("pgbench", "cache-wash", "tpcc")
ORDERS = ("sequential", "interleaved", "random")
PGBENCH_MODES = ("select-only", "simple-update", "tpcb-like", "custom")
PROTOCOLS = ("simple", "extended", "prepared")
INIT_STEP_LETTERS = set("dtgGvpf")
SWEEPABLE_WORKLOAD_KEYS = ("scale", "scale_class", "clients", "threads", "duration",
                           "transactions", "mode", "rate", "protocol", "os_cache", "prewarm",
                           "version", "inspect_method", "disk")  # fmt: skip
# Keys whose values change the data or the server a point needs: points are grouped by them, so
# that data is initialised (and a version's cluster created) once per group, not once per point.
DATA_KEYS = ("version", "scale", "scale_class", "init_steps", "warehouses")
# Per-point cache handling, kept with the workload parameters of each point.
MACHINE_POINT_DEFAULTS = {"os_cache": "keep", "prewarm": False}
MACHINE_KEYS = {"memory", "disk", *MACHINE_POINT_DEFAULTS}

TOP_KEYS = {"name", "description", "workload", "repetitions", "order", "seed", "server",
            "machine", "pgbench", "cache_wash", "tpcc", "ladder", "sweep", "report",
            "inspect", "warmup_repetitions", "target_ci", "max_repetitions", "store"}  # fmt: skip
DEFAULT_TARGET_CI = 0.02  # repetitions = "auto": until the median is known to ±2%...
DEFAULT_MAX_REPETITIONS = 20  # ...or this many measured repetitions
# warmup (a time) and warmup_lookups (a count) exclude each other: None means "not given", and
# with neither the warm-up is the seed's 100 s.
CACHE_WASH_DEFAULTS = {"table_size": 1.0, "lookups": 100, "warmup": None, "warmup_lookups": None,
                       "prewarm": True}  # fmt: skip
CACHE_WASH_WARMUP_S = "100s"
CACHE_WASH_SWEEPABLE = ("os_cache", "prewarm", "lookups", "inspect_method", "disk")
# TPC-C (seed 002): rate_tpm is all terminals together, "off" for no limit.
TPCC_DEFAULTS = {"warehouses": 1, "workers": 2, "clients": 4, "threads": "auto",
                 "duration": "60s", "warmup": "0s", "weights": "45,43,4,4,4",
                 "home_warehouse": True, "rate_tpm": NO_LIMIT, "max_tries": 10,
                 "transactions": None}  # fmt: skip
TPCC_SWEEPABLE = ("warehouses", "clients", "threads", "duration", "transactions", "warmup",
                  "weights",
                  "home_warehouse", "rate_tpm", "os_cache", "prewarm", "version",
                  "inspect_method", "disk")  # fmt: skip
# What a ladder step may change besides server settings: not the data or the server version.
LADDER_WORKLOAD_KEYS = {
    "pgbench": set(SWEEPABLE_WORKLOAD_KEYS) - set(DATA_KEYS),
    "cache-wash": set(CACHE_WASH_SWEEPABLE),
    "tpcc": set(TPCC_SWEEPABLE) - set(DATA_KEYS),
}
SERVER_KEYS = {"pg_bin", "listen_tcp", "settings", "data_checksums"}
REPORT_KEYS = {"title"}
# Cache snapshots during a run (issue 7): before and after each point, between a workload's
# phases, and every N seconds from a thread with its own connection.
SNAPSHOT_CHOICES = ("none", "before-after")
INSPECT_METHODS = ("auto", "extension", "pg_buffercache", "summary")
INSPECT_MODES = ("consistent", "fast")
INSPECT_DEFAULTS = {
    "snapshots": "before-after",
    "every": "0s",
    "method": "auto",
    "mode": "consistent",
    "os_cache": True,
    "top": 30,
    "accuracy_pairs": False,
    "alternate": "0s",
}
PGBENCH_DEFAULTS = {
    "mode": "select-only",
    "scripts": [],
    "scale": 1,
    "scale_class": None,  # small | medium | large: the scale follows shared_buffers and memory
    "clients": 1,
    "threads": 1,
    "duration": "10s",
    "transactions": None,
    "progress": 1,
    "per_statement": False,
    "init_steps": None,  # None: server-side generation where the server has it (13+)
    "warmup": "0s",
    "rate": None,
    "protocol": "simple",
    "max_tries": None,
    "progress_warmup": "1s",  # per-second tps of the first seconds is left out of stability checks
}


@dataclass(frozen=True)
class Script:
    file: Path
    weight: int


@dataclass(frozen=True)
class InspectOptions:
    """What `[inspect]` asks for; a point's method is its workload's `inspect_method`."""

    snapshots: str  # none | before-after (and between a workload's phases)
    every_s: float  # 0: no snapshots during the point
    os_cache: bool  # mincore over the relation files when the data directory is local
    top: int  # relations stored per snapshot; the rest are summed
    accuracy_pairs: bool  # extension: fast then consistent, back to back, during the warm-up
    # > 0: `every` polls only in every other window of this many seconds of the measured run,
    # and pgbench reports tps each second (analysis/inspect_overhead.py says why)
    alternate_s: float = 0.0


def parse_inspect_method(value: str) -> tuple[str, str] | None:
    """ "extension/fast" -> ("extension", "fast"); "pg_buffercache" -> (.., "consistent");
    "none" -> None (no snapshot at all: the baseline of the overhead experiment)."""
    if value == "none":
        return None
    method, _, mode = value.partition("/")
    return method, mode or "consistent"


@dataclass(frozen=True)
class Point:
    """One combination of swept values: what to set on the server and what to run."""

    index: int
    workload: dict  # pgbench parameters, all resolved (durations in seconds)
    settings: dict  # server settings as text, fixed ones merged with swept ones
    swept: dict  # just the swept values, as written: what tells points apart

    @property
    def label(self) -> str:
        return ", ".join(f"{key}={value}" for key, value in self.swept.items()) or "single point"


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
    parameters: dict  # the workload's fixed parameters, and the per-point cache handling
    sweep_workload: dict[str, list]  # as written: what labels and tells points apart
    sweep_settings: dict[str, list]
    report: dict = field(default_factory=dict)
    ladder: list[LadderStep] = field(default_factory=list)  # cumulative steps, in order
    # The memory that "N% of memory" settings are shares of: set by the runner once it knows
    # the (emulated) machine; until then they resolve against [machine] memory, if given.
    memory_for_shares: int | None = None
    inspect: InspectOptions | None = None
    store: str | None = None  # where the run is stored: a postgresql:// URL or a SQLite path
    warmup_repetitions: int = 0  # run first at every point, stored, left out of every figure
    auto_repetitions: bool = False
    target_ci: float | None = None  # auto: the relative half-width of the median's 95% interval
    # The swept workload values as a point's workload gets them: converted exactly as the
    # fixed value of the key is ("5s" -> 5.0, [45, 43, 4, 4, 4] -> "45,43,4,4,4"; issue 16).
    sweep_resolved: dict[str, list] = field(default_factory=dict)

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
        return tuple(dict.fromkeys(point.workload.get("disk") for point in self.points()))

    def set_disk(self, disk: str) -> None:
        """--disk: the disk of every point, instead of what the spec says."""
        if "disk" in self.sweep_workload or any("disk" in s.workload for s in self.ladder):
            raise UserError(
                f"--disk: the spec {self.path} sweeps the disk, so each point names its own",
                "drop --disk, or the spec's disk sweep",
            )
        self.parameters["disk"] = disk


class SpecProblem:
    """Builds the one-line errors for one spec file."""

    def __init__(self, path: Path):
        self.path = path

    def __call__(self, key: str, message: str, hint: str) -> UserError:
        return UserError(f"{self.path}: {key}: {message}", hint)

    def bad_value(self, key: str, value, why: str, hint: str) -> UserError:
        return self(key, f"invalid value {_show(value)}: {why}", hint)


def _show(value) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    return repr(value)


def load_spec(path: str | Path) -> ExperimentSpec:
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as error:
        raise UserError(
            f"cannot read spec {str(path)!r}: {error.strerror}",
            "give the path of an experiment TOML file, e.g. experiments/big-cache-quick.toml",
        ) from None
    except UnicodeDecodeError as error:  # `run /bin/ls` (issue 18)
        raise UserError(
            f"{path}: not a TOML text file (not UTF-8 at byte {error.start})",
            "give the path of an experiment TOML file, e.g. experiments/big-cache-quick.toml",
        ) from None
    return parse_spec(text, path)


def parse_spec(text: str, path: Path) -> ExperimentSpec:
    problem = SpecProblem(path)
    try:
        raw = tomllib.loads(text)
    except tomllib.TOMLDecodeError as error:
        raise UserError(f"{path}: not valid TOML: {error}", "fix the TOML syntax") from None

    _reject_unknown(problem, raw, TOP_KEYS, "")
    server = _table(problem, raw, "server")
    _reject_unknown(problem, server, SERVER_KEYS, "server.")
    report = _table(problem, raw, "report")
    _reject_unknown(problem, report, REPORT_KEYS, "report.")
    pgbench_raw = _table(problem, raw, "pgbench")
    _reject_unknown(problem, pgbench_raw, set(PGBENCH_DEFAULTS), "pgbench.")
    machine = _table(problem, raw, "machine")
    _reject_unknown(problem, machine, MACHINE_KEYS, "machine.")
    sweep = _table(problem, raw, "sweep")
    sweep_settings_raw = _table(problem, sweep, "settings", "sweep.")
    sweep_workload_raw = {key: value for key, value in sweep.items() if key != "settings"}
    workload = raw.get("workload", "pgbench")
    if workload not in WORKLOADS:
        raise problem.bad_value(
            "workload", workload, "unknown workload", f"use one of {', '.join(WORKLOADS)}"
        )
    sweepable = {"pgbench": SWEEPABLE_WORKLOAD_KEYS, "cache-wash": CACHE_WASH_SWEEPABLE,
                 "tpcc": TPCC_SWEEPABLE}[workload]  # fmt: skip
    for key in sweep_workload_raw:
        if key not in sweepable:
            raise problem(
                f"sweep.{key}",
                f"unknown sweep key for the {workload} workload",
                f"sweep one of {', '.join(sweepable)}, or a server setting under [sweep.settings]",
            )
    cache_wash_raw = _table(problem, raw, "cache_wash")
    _reject_unknown(problem, cache_wash_raw, set(CACHE_WASH_DEFAULTS), "cache_wash.")
    if workload == "cache-wash" and pgbench_raw:
        raise problem("pgbench", "the cache-wash workload takes no [pgbench] table",
                      "put its parameters under [cache_wash]")  # fmt: skip
    if workload != "cache-wash" and cache_wash_raw:
        raise problem("cache_wash", "[cache_wash] needs workload = \"cache-wash\"",
                      'set workload = "cache-wash" or remove the table')  # fmt: skip
    tpcc_raw = _table(problem, raw, "tpcc")
    _reject_unknown(problem, tpcc_raw, set(TPCC_DEFAULTS), "tpcc.")
    if workload != "tpcc" and tpcc_raw:
        raise problem("tpcc", '[tpcc] needs workload = "tpcc"',
                      'set workload = "tpcc" or remove the table')  # fmt: skip
    if workload == "tpcc" and pgbench_raw:
        raise problem("pgbench", "the tpcc workload takes no [pgbench] table",
                      "put its parameters under [tpcc]")  # fmt: skip
    repetitions, auto, target_ci = _repetitions(problem, raw)
    if auto and workload != "pgbench":
        raise problem("repetitions", f'invalid value "auto": it follows the tps of pgbench, '
                      f"not the figures of {workload}", "give a number of repetitions")  # fmt: skip
    warmup_repetitions = raw.get("warmup_repetitions", 0)
    _positive_int(problem, "warmup_repetitions", warmup_repetitions, 0)
    order = raw.get("order", "sequential")
    if order not in ORDERS:
        raise problem.bad_value("order", order, "unknown order", f"use one of {', '.join(ORDERS)}")
    seed = raw.get("seed", 1)
    if not isinstance(seed, int):
        raise problem.bad_value("seed", seed, "not an integer", "use an integer such as 1")

    settings = {}
    for name, value in _table(problem, server, "settings", "server.").items():
        settings[name] = _setting_text(problem, f"server.settings.{name}", value)

    memory_bytes = None
    if "memory" in machine:
        memory_bytes = _memory(problem, "machine.memory", machine["memory"])
    if workload == "cache-wash":
        parameters = _cache_wash_parameters(problem, {**CACHE_WASH_DEFAULTS, **cache_wash_raw})
    elif workload == "tpcc":
        parameters = _tpcc_parameters(problem, {**TPCC_DEFAULTS, **tpcc_raw}, "tpcc.")
    else:
        parameters = {**PGBENCH_DEFAULTS, **pgbench_raw}
        parameters = _resolve_workload(problem, parameters, "pgbench.", path.parent)
    if "disk" in machine:
        parameters["disk"] = _disk(problem, "machine.disk", machine["disk"])
    for key, default in MACHINE_POINT_DEFAULTS.items():
        # cache-wash prewarms by itself (table, then index: the seed's order) unless told not to
        value = machine.get(key, parameters.get(key, default))
        parameters[key] = _machine_point_value(problem, f"machine.{key}", value)

    inspect = None
    if "inspect" in raw:
        inspect_raw = _table(problem, raw, "inspect")
        _reject_unknown(problem, inspect_raw, set(INSPECT_DEFAULTS), "inspect.")
        inspect, parameters["inspect_method"] = _inspect_options(
            problem, {**INSPECT_DEFAULTS, **inspect_raw}
        )
        if inspect.alternate_s:
            _check_alternation(problem, inspect, workload, parameters)
    if "inspect_method" in sweep_workload_raw and inspect is None:
        raise problem("sweep.inspect_method", "sweeping the inspect method needs [inspect]",
                      "add an [inspect] table (e.g. every = \"1s\")")  # fmt: skip

    sweep_workload, sweep_resolved = {}, {}
    for key, values in sweep_workload_raw.items():
        values = _sweep_values(problem, f"sweep.{key}", values)
        if key == "version":
            values = [_version_value(problem, f"sweep.{key}", value) for value in values]
        if key == "disk":  # a table's label is its canonical text, what the point runs on
            values = [_disk(problem, f"sweep.{key}", value) for value in values]
        resolved = [
            _swept_value(problem, workload, parameters, key, value, path.parent) for value in values
        ]
        _refuse_repeats(problem, f"sweep.{key}", values, resolved)
        sweep_workload[key], sweep_resolved[key] = values, resolved
    sweep_settings = {}
    for name, values in sweep_settings_raw.items():
        values = _sweep_values(problem, f"sweep.settings.{name}", values)
        sweep_settings[name] = [
            _setting_text(problem, f"sweep.settings.{name}", value) for value in values
        ]
        # "1MB" and "1024kB" are one value; with the server's catalogue, validate_settings
        # also catches those only its units tell apart (work_mem = 1024 is 1MB)
        forms = [canonical_value(value) for value in sweep_settings[name]]
        _refuse_repeats(problem, f"sweep.settings.{name}", sweep_settings[name], forms)

    ladder = _ladder(problem, raw.get("ladder"), workload, parameters, path.parent)
    for step in ladder:
        for key in [*step.workload, *(f"settings.{name}" for name in step.settings)]:
            swept = sweep_settings if key.startswith("settings.") else sweep_workload
            if key.removeprefix("settings.") in swept:
                raise problem(f"sweep.{key}", "both the sweep and a ladder step set it",
                              "set it in one place: the ladder or the sweep")  # fmt: skip

    pg_bin = server.get("pg_bin")
    if pg_bin is not None and not isinstance(pg_bin, str):
        raise problem.bad_value("server.pg_bin", pg_bin, "not a path", "give a bin directory")
    if pg_bin is not None and "version" in sweep_workload:
        raise problem("server.pg_bin", "the spec sweeps version: each point names its server",
                      "remove server.pg_bin, or the version sweep")  # fmt: skip
    has_class = "scale_class" in sweep_workload or parameters.get("scale_class") is not None
    if has_class and ("scale" in sweep_workload or "scale" in pgbench_raw):
        raise problem("sweep.scale_class", "both a scale and a scale class are given",
                      "use one of them: a scale class sets the scale")  # fmt: skip
    listen_tcp = server.get("listen_tcp", False)
    if not isinstance(listen_tcp, bool):
        raise problem.bad_value("server.listen_tcp", listen_tcp, "not a boolean", "true or false")
    data_checksums = server.get("data_checksums")
    if data_checksums is not None and not isinstance(data_checksums, bool):
        raise problem.bad_value(
            "server.data_checksums", data_checksums, "not a boolean", "true or false"
        )

    store = _store_key(problem, raw.get("store"))
    for key, value in (("name", raw.get("name")), ("description", raw.get("description")),
                       ("report.title", report.get("title"))):  # fmt: skip
        if value is not None and not isinstance(value, str):
            raise problem.bad_value(key, value, "not a string", f'write {key} = "..."')

    return ExperimentSpec(
        path=path,
        text=text,
        name=str(raw.get("name", path.stem)),
        description=str(raw.get("description", "")),
        workload=workload,
        repetitions=repetitions,
        order=order,
        seed=seed,
        pg_bin=pg_bin,
        listen_tcp=listen_tcp,
        data_checksums=data_checksums,
        memory_bytes=memory_bytes,
        settings=settings,
        parameters=parameters,
        sweep_workload=sweep_workload,
        sweep_resolved=sweep_resolved,
        sweep_settings=sweep_settings,
        report=report,
        ladder=ladder,
        inspect=inspect,
        warmup_repetitions=warmup_repetitions,
        auto_repetitions=auto,
        target_ci=target_ci,
        store=store,
    )


def _repetitions(problem: SpecProblem, raw: dict) -> tuple[int, bool, float | None]:
    """(measured repetitions or the auto maximum, auto, target) from repetitions, target_ci and
    max_repetitions."""
    repetitions = raw.get("repetitions", 1)
    if repetitions != "auto":
        if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
            raise problem.bad_value(
                "repetitions", repetitions, "neither a positive integer nor \"auto\"",
                'use 1 or more, or "auto" with target_ci and max_repetitions',
            )  # fmt: skip
        for key in ("target_ci", "max_repetitions"):
            if key in raw:
                raise problem(key, 'only used with repetitions = "auto"',
                              f'set repetitions = "auto" or remove {key}')  # fmt: skip
        return repetitions, False, None
    target = raw.get("target_ci", DEFAULT_TARGET_CI)
    if not isinstance(target, float | int) or isinstance(target, bool) or not 0 < target < 1:
        raise problem.bad_value(
            "target_ci", target, "not a fraction between 0 and 1",
            "write the half-width relative to the median, e.g. 0.02 for ±2%",
        )  # fmt: skip
    maximum = raw.get("max_repetitions", DEFAULT_MAX_REPETITIONS)
    _positive_int(problem, "max_repetitions", maximum, MIN_EXACT_95)
    return maximum, True, float(target)


def _store_key(problem: SpecProblem, value) -> str | None:
    """The spec's store, checked now; a password is refused: the spec text is stored."""
    from pgcachelab.store.location import STORE_HINT, parse_store

    if value is None:
        return None
    if not isinstance(value, str):
        raise problem.bad_value("store", value, "not a string", STORE_HINT)
    location = parse_store(value, f"{problem.path}: store")
    if location.password_in_url():
        raise problem(
            "store",
            f"a password in {location.masked()!r} would be stored with the run's spec",
            "leave it out of the URL and put it in PGPASSWORD or ~/.pgpass",
        )
    return value


def _reject_unknown(problem: SpecProblem, table: dict, allowed: set, prefix: str) -> None:
    for key in table:
        if key not in allowed:
            raise problem(
                f"{prefix}{key}",
                "unknown key",
                f"use one of {', '.join(sorted(allowed))}",
            )


def _table(problem: SpecProblem, raw: dict, key: str, prefix: str = "") -> dict:
    value = raw.get(key, {})
    if not isinstance(value, dict):
        raise problem(f"{prefix}{key}", "must be a table", f"write it as [{prefix}{key}]")
    return value


def _memory(problem: SpecProblem, key: str, value, minimum_mb: int = 64) -> int:
    try:
        amount = parse_bytes(value)
    except ValueError as error:
        raise problem.bad_value(key, value, str(error), 'write a size such as "1GiB"') from None
    if amount < minimum_mb * 1024 * 1024:
        raise problem.bad_value(key, value, f"below {minimum_mb}MB", 'write a size such as "1GiB"')
    return amount


def _cache_wash_parameters(problem: SpecProblem, raw: dict, prefix: str = "cache_wash.") -> dict:
    """table_size: bytes ("1GiB") or a fraction of the server's memory (1.0, the seed)."""
    resolved = dict(raw)
    size = raw["table_size"]
    if isinstance(size, str):
        resolved["table_size"] = _memory(problem, f"{prefix}table_size", size, minimum_mb=1)
    elif not isinstance(size, float) or not 0 < size <= 4:
        raise problem.bad_value(
            f"{prefix}table_size", size, "neither a size nor a fraction of memory",
            'write a size such as "1GiB" or a fraction such as 1.0',
        )  # fmt: skip
    resolved["lookups"] = _positive_int(problem, f"{prefix}lookups", raw["lookups"])
    warmup, warmup_lookups = raw.get("warmup"), raw.get("warmup_lookups")
    if warmup is not None and warmup_lookups is not None:
        raise problem(f"{prefix}warmup_lookups", f"cannot be given with {prefix}warmup",
                      "keep one: warmup = \"100s\" warms for a time, warmup_lookups = N for a "
                      "count of lookups")  # fmt: skip
    if warmup_lookups is not None:
        resolved["warmup_lookups"] = _positive_int(
            problem, f"{prefix}warmup_lookups", warmup_lookups, 0
        )
    else:
        warmup = CACHE_WASH_WARMUP_S if warmup is None else warmup
        resolved["warmup"] = _seconds(problem, f"{prefix}warmup", warmup, True)
    if not isinstance(raw["prewarm"], bool):
        raise problem.bad_value(f"{prefix}prewarm", raw["prewarm"], "not a boolean", "true/false")
    return resolved


def _inspect_method(problem: SpecProblem, key: str, value) -> str:
    """ "none", a method, or "extension/MODE"; returned as written."""
    if not isinstance(value, str):
        raise problem.bad_value(key, value, "not a method", 'write e.g. "extension/fast"')
    method, slash, mode = value.partition("/")
    if value != "none" and (
        method not in INSPECT_METHODS or (slash and (method != "extension" or
                                                     mode not in INSPECT_MODES))
    ):  # fmt: skip
        raise problem.bad_value(
            key, value, "unknown inspect method",
            f"use none, {', '.join(INSPECT_METHODS)}, extension/consistent or extension/fast",
        )  # fmt: skip
    return value


def _inspect_options(problem: SpecProblem, raw: dict) -> tuple[InspectOptions, str]:
    """The options, and the point's method ("extension/fast", "auto", ...) for the workload."""
    if raw["snapshots"] not in SNAPSHOT_CHOICES:
        raise problem.bad_value("inspect.snapshots", raw["snapshots"], "unknown choice",
                                f"use one of {', '.join(SNAPSHOT_CHOICES)}")  # fmt: skip
    every_s = _seconds(problem, "inspect.every", raw["every"], True)
    if raw["snapshots"] == "none" and not every_s:
        raise problem.bad_value("inspect.snapshots", "none", "and no every: nothing to take",
                                'set every = "5s", or snapshots = "before-after"')  # fmt: skip
    method = _inspect_method(problem, "inspect.method", raw["method"])
    if "/" in method or method == "none":
        raise problem.bad_value("inspect.method", method, "give the mode under inspect.mode",
                                f"use one of {', '.join(INSPECT_METHODS)}")  # fmt: skip
    if raw["mode"] not in INSPECT_MODES:
        raise problem.bad_value("inspect.mode", raw["mode"], "unknown mode",
                                f"use one of {', '.join(INSPECT_MODES)}")  # fmt: skip
    if raw["mode"] != "consistent" and method not in ("auto", "extension"):
        raise problem.bad_value("inspect.mode", raw["mode"], f"the {method} method has no modes",
                                'use method = "extension", or mode = "consistent"')  # fmt: skip
    for key in ("os_cache", "accuracy_pairs"):
        if not isinstance(raw[key], bool):
            raise problem.bad_value(f"inspect.{key}", raw[key], "not a boolean", "true or false")
    top = _positive_int(problem, "inspect.top", raw["top"])
    alternate_s = _seconds(problem, "inspect.alternate", raw["alternate"], True)
    options = InspectOptions(raw["snapshots"], every_s, raw["os_cache"], top,
                             raw["accuracy_pairs"], alternate_s)  # fmt: skip
    point_method = method if raw["mode"] == "consistent" else f"{method}/{raw['mode']}"
    return options, point_method


def _check_alternation(problem: SpecProblem, inspect: InspectOptions, workload: str,
                       parameters: dict) -> None:  # fmt: skip
    """Alternating windows need pgbench's per-second progress and room for several pairs."""
    alternate = f"{inspect.alternate_s:g}s"
    if workload != "pgbench":
        raise problem.bad_value("inspect.alternate", alternate, f"not for the {workload} workload",
                                "alternate works with pgbench runs; remove it")  # fmt: skip
    if not inspect.every_s:
        raise problem.bad_value("inspect.alternate", alternate, "alternates nothing without every",
                                'set every = "1s" too')  # fmt: skip
    if inspect.alternate_s < 2 * inspect.every_s or inspect.alternate_s < 2:
        raise problem.bad_value("inspect.alternate", alternate, "too short for whole samples",
                                "use at least 2s and twice every, e.g. \"5s\"")  # fmt: skip
    duration = parameters.get("duration")
    if duration and duration < 4 * inspect.alternate_s:
        raise problem.bad_value("inspect.alternate", alternate, "fewer than two pairs of windows"
                                f" fit in the {duration:g}s run", "make it at most a quarter of"
                                " pgbench.duration")  # fmt: skip


def _machine_point_value(problem: SpecProblem, key: str, value):
    if key.endswith("os_cache") and value not in OS_CACHE_MODES:
        raise problem.bad_value(
            key, value, "unknown cache mode", f"use one of {', '.join(OS_CACHE_MODES)}"
        )
    if key.endswith("prewarm") and not isinstance(value, bool):
        raise problem.bad_value(key, value, "not a boolean", "true or false")
    return value


def _disk(problem: SpecProblem, key: str, value) -> str:
    """A disk preset, "host" or a table of latencies, as its canonical text."""
    try:
        return canonical_disk(value)
    except DiskProfileError as error:
        raise problem.bad_value(key, value, str(error), "see the README's disk presets") from None


def _setting_text(problem: SpecProblem, key: str, value) -> str:
    if isinstance(value, dict | list):
        raise problem.bad_value(key, value, "not a setting value", "use a string, number or bool")
    text = setting_value_text(value)
    if "%" in text and "memory" in text.lower():
        share = memory_share(text)
        if share is None or not 0 < share < 1:
            raise problem.bad_value(
                key,
                value,
                "not a share of memory",
                'write e.g. "25% of memory" (more than 0, below 100)',
            )
    return text


def _tpcc_parameters(problem: SpecProblem, raw: dict, prefix: str, only: str | None = None) -> dict:
    """Check TPC-C parameters and resolve units; `only` limits checks to one swept key."""
    resolved = dict(raw)

    def check(key):
        return only is None or only == key

    for key in ("warehouses", "workers", "clients", "max_tries"):
        if check(key):
            resolved[key] = _positive_int(problem, f"{prefix}{key}", raw[key])
    if check("warehouses") and resolved["warehouses"] > MAX_WAREHOUSES:
        raise problem.bad_value(
            f"{prefix}warehouses",
            raw["warehouses"],
            f"more than {MAX_WAREHOUSES}",
            "each warehouse is about 100 MB",
        )
    if check("transactions") and raw["transactions"] is not None:
        resolved["transactions"] = _positive_int(
            problem, f"{prefix}transactions", raw["transactions"]
        )
    if check("threads") and raw["threads"] != "auto":
        resolved["threads"] = _positive_int(problem, f"{prefix}threads", raw["threads"])
    for key in ("duration", "warmup"):
        if check(key):
            resolved[key] = _seconds(problem, f"{prefix}{key}", raw[key], key == "warmup")
    if check("weights"):
        weights = raw["weights"]
        text = ",".join(map(str, weights)) if isinstance(weights, list) else str(weights)
        try:
            resolved["weights"] = format_weights(parse_weights(text, f"{prefix}weights"))
        except UserError as error:
            raise UserError(f"{problem.path}: {error.message}", error.hint) from None
    if check("home_warehouse") and not isinstance(raw["home_warehouse"], bool):
        raise problem.bad_value(
            f"{prefix}home_warehouse",
            raw["home_warehouse"],
            "not a boolean",
            "true binds each terminal to one warehouse",
        )
    rate = raw["rate_tpm"]
    if (
        check("rate_tpm")
        and rate != NO_LIMIT
        and (not isinstance(rate, int | float) or isinstance(rate, bool) or rate <= 0)
    ):
        raise problem.bad_value(
            f"{prefix}rate_tpm",
            rate,
            "not a positive rate",
            f'transactions per minute of all terminals, e.g. 300, or "{NO_LIMIT}"',
        )
    return resolved


def _ladder(problem: SpecProblem, raw, workload: str, parameters: dict, base_dir: Path) -> list:
    """`[[ladder]]` steps: a name, an optional description, settings and workload changes."""
    if raw is None:
        return []
    if not isinstance(raw, list) or not raw or not all(isinstance(s, dict) for s in raw):
        raise problem(
            "ladder",
            "not a list of steps",
            'write [[ladder]] tables, each with name = "..." and its changes',
        )
    allowed = LADDER_WORKLOAD_KEYS[workload]
    steps, names = [], set()
    for position, entry in enumerate(raw):
        key = f"ladder[{position}]"
        name = entry.get("name")
        if not isinstance(name, str) or not name.strip():
            raise problem(f"{key}.name", "a step needs a name", 'e.g. name = "io"')
        if name in names:
            raise problem.bad_value(f"{key}.name", name, "repeats a step name", "name each once")
        names.add(name)
        for other in set(entry) - STEP_KEYS:
            if other not in allowed:
                raise problem(
                    f"{key}.{other}",
                    f"a {workload} ladder step cannot set it",
                    f"steps set settings = {{...}} and {', '.join(sorted(allowed))}",
                )
        workload_changes = {k: v for k, v in entry.items() if k not in STEP_KEYS}
        for change_key, value in workload_changes.items():
            merged = {**parameters, change_key: value}
            if change_key in MACHINE_POINT_DEFAULTS:
                _machine_point_value(problem, f"{key}.{change_key}", value)
            elif change_key == "disk":
                workload_changes[change_key] = _disk(problem, f"{key}.{change_key}", value)
            elif change_key == "inspect_method":
                _inspect_method(problem, f"{key}.{change_key}", value)
            elif workload == "tpcc":
                checked = _tpcc_parameters(problem, merged, f"{key}.", only=change_key)
                workload_changes[change_key] = checked[change_key]
            elif workload == "cache-wash":
                checked = _cache_wash_parameters(problem, merged, f"{key}.")
                workload_changes[change_key] = checked[change_key]
            else:
                checked = _resolve_workload(problem, merged, f"{key}.", base_dir, only=change_key)
                workload_changes[change_key] = checked[change_key]
        settings = {
            setting: _setting_text(problem, f"{key}.settings.{setting}", value)
            for setting, value in _table(problem, entry, "settings", f"{key}.").items()
        }
        description = entry.get("description", "")
        steps.append(LadderStep(name, str(description), settings, workload_changes))
    return steps


def _sweep_values(problem: SpecProblem, key: str, values) -> list:
    """A list as written, or a range table {from, to, step} / {from, to, factor}."""
    if isinstance(values, dict):
        values = _expand_range(problem, key, values)
    if not isinstance(values, list):
        raise problem.bad_value(key, values, "a sweep needs a list", "write e.g. [1, 2, 4]")
    if not values:
        raise problem(key, "empty sweep", "list at least one value, or remove the key")
    if len(set(map(str, values))) != len(values):
        raise problem.bad_value(key, values, "repeats a value", "list each value once")
    return values


def _refuse_repeats(problem: SpecProblem, key: str, written: list, forms: list) -> None:
    """A sweep whose values are equal once converted ("1MB" and "1024kB", "60s" and "1min")
    would measure one point twice under two labels."""
    first_of: dict = {}
    for value, form in zip(written, forms, strict=True):
        if form in first_of:
            raise problem.bad_value(
                key, value, f"repeats a value: the same as {_show(first_of[form])}",
                "list each value once",
            )  # fmt: skip
        first_of[form] = value


def _swept_value(problem: SpecProblem, workload: str, parameters: dict, key: str, value,
                 base_dir: Path):  # fmt: skip
    """One swept workload value, checked and converted by the same code as the fixed one."""
    if key in ("version", "disk"):  # converted already, for their labels
        return value
    if key in MACHINE_POINT_DEFAULTS:
        return _machine_point_value(problem, f"sweep.{key}", value)
    if key == "inspect_method":
        return _inspect_method(problem, f"sweep.{key}", value)
    merged = {**parameters, key: value}
    if workload == "cache-wash":
        return _cache_wash_parameters(problem, merged, "sweep.")[key]
    if workload == "tpcc":
        return _tpcc_parameters(problem, merged, "sweep.", only=key)[key]
    return _resolve_workload(problem, merged, "sweep.", base_dir, only=key)[key]


def _expand_range(problem: SpecProblem, key: str, table: dict) -> list:
    allowed = {"from", "to", "step", "factor"}
    unknown = set(table) - allowed
    if unknown or "from" not in table or "to" not in table:
        raise problem.bad_value(
            key, table, "not a range", "write {from = 1, to = 50, step = 1} or {..., factor = 2}"
        )
    start, stop = table["from"], table["to"]
    if isinstance(start, str) and isinstance(stop, str):
        return _expand_size_range(problem, key, table)
    if not all(isinstance(v, int | float) for v in (start, stop)) or start <= 0 or stop < start:
        raise problem.bad_value(key, table, "from/to must be numbers, 0 < from <= to", "fix them")
    values = []
    if "factor" in table:
        factor = table["factor"]
        if not isinstance(factor, int | float) or factor <= 1:
            raise problem.bad_value(key, table, "factor must be > 1", "use e.g. factor = 2")
        value = start
        while value <= stop * (1 + 1e-9):
            values.append(round(value) if isinstance(start, int) else value)
            value *= factor
        return sorted(set(values), key=values.index)
    step = table.get("step", 1)
    if not isinstance(step, int | float) or step <= 0:
        raise problem.bad_value(key, table, "step must be positive", "use e.g. step = 1")
    value = start
    while value <= stop + 1e-9:
        values.append(value)
        value += step
    return values


def _expand_size_range(problem: SpecProblem, key: str, table: dict) -> list[str]:
    """{from = "128kB", to = "900MB", factor = 2} -> ["128kB", "256kB", ...] (in kB, exact)."""
    try:
        start, stop = parse_bytes(table["from"]), parse_bytes(table["to"])
    except ValueError as error:
        raise problem.bad_value(key, table, str(error), 'write sizes such as "128kB"') from None
    factor = table.get("factor")
    if "step" in table or not isinstance(factor, int | float) or factor <= 1 or stop < start:
        raise problem.bad_value(
            key, table, "a size range needs from <= to and a factor > 1",
            'write {from = "128kB", to = "900MB", factor = 2}',
        )  # fmt: skip
    values, size = [], float(start)
    while size <= stop * (1 + 1e-9):
        text = exact_size_text(int(size // 1024) * 1024)
        if text not in values:
            values.append(text)
        size *= factor
    return values


def exact_size_text(size_bytes: int) -> str:
    """The largest unit that states `size_bytes` exactly: 65536kB -> "64MB", 1536kB stays."""
    for unit, factor in (("TB", 1024**4), ("GB", 1024**3), ("MB", 1024**2), ("kB", 1024)):
        if size_bytes % factor == 0:
            return f"{size_bytes // factor}{unit}"
    return f"{size_bytes}B"


def _version_value(problem: SpecProblem, key: str, value) -> str:
    """A major version as text ("9.6", "13"), or a bin directory kept as written."""
    text = str(value)
    if "/" in text:
        return text
    try:
        return normalise_major(text)
    except UserError as error:
        raise problem.bad_value(key, value, "not a PostgreSQL major version", error.hint) from None


def _positive_int(problem, key, value, minimum=1) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < minimum:
        raise problem.bad_value(
            key, value, f"not an integer >= {minimum}", f"use {minimum} or more"
        )
    return value


def _resolve_workload(
    problem: SpecProblem, pgbench: dict, prefix: str, base_dir: Path, only: str | None = None
) -> dict:
    """Check pgbench parameters and resolve units; `only` limits checks to one swept key."""
    resolved = dict(pgbench)

    def check(key):
        return only is None or only == key

    if check("mode") and pgbench["mode"] not in PGBENCH_MODES:
        raise problem.bad_value(
            f"{prefix}mode",
            pgbench["mode"],
            "unknown mode",
            f"use one of {', '.join(PGBENCH_MODES)}",
        )
    if check("protocol") and pgbench["protocol"] not in PROTOCOLS:
        raise problem.bad_value(
            f"{prefix}protocol", pgbench["protocol"], "unknown protocol",
            f"use one of {', '.join(PROTOCOLS)}",
        )  # fmt: skip
    for key in ("scale", "clients", "threads"):
        if key == "threads" and pgbench[key] == "auto":
            continue  # as many as the clients, up to the cores: decided where pgbench runs
        if check(key):
            resolved[key] = _positive_int(problem, f"{prefix}{key}", pgbench[key])
    if check("scale_class") and pgbench["scale_class"] not in (None, *SCALE_CLASSES):
        raise problem.bad_value(
            f"{prefix}scale_class", pgbench["scale_class"], "unknown scale class",
            f"use one of {', '.join(SCALE_CLASSES)}",
        )  # fmt: skip
    if check("progress"):
        resolved["progress"] = _positive_int(problem, f"{prefix}progress", pgbench["progress"], 0)
    if check("transactions") and pgbench["transactions"] is not None:
        _positive_int(problem, f"{prefix}transactions", pgbench["transactions"])
    if check("max_tries") and pgbench["max_tries"] is not None:
        _positive_int(problem, f"{prefix}max_tries", pgbench["max_tries"])
    for key in ("duration", "warmup", "progress_warmup"):
        if check(key):
            resolved[key] = _seconds(problem, f"{prefix}{key}", pgbench[key], key != "duration")
    if check("rate") and pgbench["rate"] is not None:
        rate = pgbench["rate"]
        if not isinstance(rate, int | float) or isinstance(rate, bool) or rate <= 0:
            raise problem.bad_value(f"{prefix}rate", rate, "not a positive rate", "tps, e.g. 500")
    if check("per_statement") and not isinstance(pgbench["per_statement"], bool):
        raise problem.bad_value(
            f"{prefix}per_statement", pgbench["per_statement"], "not a boolean", "true or false"
        )
    steps = pgbench["init_steps"]
    if (
        check("init_steps")
        and steps is not None
        and (not isinstance(steps, str) or not steps or set(steps) - INIT_STEP_LETTERS)
    ):
        raise problem.bad_value(
            f"{prefix}init_steps", steps, "not pgbench init steps", 'use letters of "dtgGvpf"'
        )
    if check("scripts") or check("mode"):
        resolved["scripts"] = _scripts(problem, pgbench, prefix, base_dir)
    return resolved


def _seconds(problem, key, value, zero_ok) -> float:
    try:
        seconds = parse_seconds(value)
    except ValueError as error:
        raise problem.bad_value(key, value, str(error), 'write e.g. "20s" or "2min"') from None
    if seconds < 0 or (seconds == 0 and not zero_ok) or seconds != int(seconds):
        raise problem.bad_value(key, value, "must be a whole number of seconds > 0", 'e.g. "20s"')
    return seconds


def _scripts(problem, pgbench, prefix, base_dir) -> list[Script]:
    raw_scripts = pgbench["scripts"]
    if pgbench["mode"] != "custom":
        if raw_scripts:
            raise problem(
                f"{prefix}scripts",
                f'scripts are only run in mode "custom", not "{pgbench["mode"]}"',
                'set mode = "custom" or remove scripts',
            )
        return []
    if not isinstance(raw_scripts, list) or not raw_scripts:
        raise problem(f"{prefix}scripts", "custom mode needs scripts",
                      'list them: scripts = [{ file = "a.sql", weight = 1 }]')  # fmt: skip
    scripts = []
    for position, entry in enumerate(raw_scripts):
        key = f"{prefix}scripts[{position}]"
        if isinstance(entry, Script):
            scripts.append(entry)
            continue
        if isinstance(entry, str):
            entry = {"file": entry}
        if not isinstance(entry, dict) or set(entry) - {"file", "weight"} or "file" not in entry:
            raise problem.bad_value(
                key, entry, "not a script", 'use { file = "a.sql", weight = 1 }'
            )
        file = (base_dir / entry["file"]).resolve()
        if not file.is_file():
            raise problem.bad_value(
                f"{key}.file", entry["file"], "no such file", "paths are relative to the spec"
            )
        weight = _positive_int(problem, f"{key}.weight", entry.get("weight", 1), 0)
        scripts.append(Script(file=file, weight=weight))
    return scripts


def validate_settings(
    spec: ExperimentSpec,
    catalogue: dict[str, SettingInfo],
    applicable_contexts: set[str] | None = None,
    target: str = "the server",
    skip: frozenset[str] = frozenset(),
) -> None:
    """Check every setting name and value against the server's catalogue.

    `applicable_contexts` limits which settings may be set at all (an existing server: only
    those a session can set, since the lab never changes its configuration).
    """
    problem = SpecProblem(spec.path)
    memory = spec.memory_for_shares or spec.memory_bytes
    named = [(f"server.settings.{n}", n, [v]) for n, v in spec.settings.items()]
    named += [(f"sweep.settings.{n}", n, vs) for n, vs in spec.sweep_settings.items()]
    named += [
        (f"ladder[{i}].settings.{n}", n, [v])
        for i, step in enumerate(spec.ladder)
        for n, v in step.settings.items()
    ]
    named = [
        (key, name, [resolve_memory_shares({name: v}, memory)[name] for v in values])
        for key, name, values in named
    ]
    for key, name, values in named:
        if name in skip:
            continue
        info = catalogue.get(name)
        if info is None:
            close = _close_names(name, catalogue)
            raise problem(
                key,
                f'unknown server setting "{name}"',
                f"did you mean {close}?" if close else "see pg_settings for the names",
            )
        if info.context == "internal":
            raise problem(key, f'"{name}" is read-only (internal)', "remove it from the spec")
        if applicable_contexts is not None and info.context not in applicable_contexts:
            how = "a restart" if info.context == "postmaster" else "a configuration change"
            raise problem(
                key,
                f'"{name}" needs {how} of {target}, which the lab never changes',
                "run without --dsn so the lab manages its own cluster, or drop the setting",
            )
        for value in values:
            why = check_setting_value(info, value)
            if why:
                raise problem.bad_value(key, value, why, "fix the value")
        _refuse_repeats(problem, key, values, [canonical_value(v, info) for v in values])


def _close_names(name: str, catalogue: dict) -> str:
    import difflib

    return ", ".join(difflib.get_close_matches(name, catalogue, n=2))


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
    axes = [("step", "step", [step.name for step in spec.ladder])] if spec.ladder else []
    axes += [
        ("workload", k, list(zip(v, spec.sweep_resolved.get(k, v), strict=True)))
        for k, v in spec.sweep_workload.items()
    ]
    axes += [
        (
            "settings",
            k,
            _descending_bytes(v) if k == "shared_buffers" and huge_pages_on(spec) else v,
        )
        for k, v in spec.sweep_settings.items()
    ]
    points = []
    in_force = dict(zip([s.name for s in spec.ladder], cumulative(spec.ladder), strict=True))
    memory = spec.memory_for_shares or spec.memory_bytes
    combos = itertools.product(*(values for _, _, values in axes)) if axes else [()]
    for index, combo in enumerate(combos):
        workload = dict(spec.parameters)
        settings = dict(spec.settings)
        swept = {}
        for (kind, key, _), value in zip(axes, combo, strict=True):
            if kind == "workload":
                swept[key], workload[key] = value  # as written, as resolved
                continue
            swept[key] = value
            if kind == "step":
                step_settings, step_workload = in_force[value]
                settings.update(step_settings)
                workload.update(step_workload)
            else:
                settings[key] = value
        settings = resolve_memory_shares(settings, memory)
        if "duration" in workload:
            workload["duration"] = parse_seconds(workload["duration"])
        points.append(Point(index=index, workload=workload, settings=settings, swept=swept))
    return points


def data_group(point: Point) -> tuple:
    """What a point needs built before it runs: its server version and its data."""
    return tuple(str(point.workload.get(key)) for key in DATA_KEYS)


def schedule(
    point_count: int, repetitions: int, order: str, seed: int, groups: list | None = None
) -> list[tuple[int, int]]:
    """Sequential: all repetitions of a point together; interleaved: every point once per round
    (slow drift of the machine then spreads over all points); random: shuffled rounds.

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
