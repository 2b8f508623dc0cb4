"""Experiment specs: TOML in, validated points out. Pure logic, no servers.

A spec names the workload, fixed server settings and workload parameters, the swept ones,
repetitions and order. Every problem is one UserError naming file, key, value and the fix.
"""

import itertools
import random
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from pgcachelab.clusters.guc import SettingInfo, check_setting_value, setting_value_text
from pgcachelab.clusters.installs import normalise_major
from pgcachelab.errors import UserError
from pgcachelab.machine.oscache import OS_CACHE_MODES
from pgcachelab.units import parse_bytes, parse_seconds, shared_buffers_bytes
from pgcachelab.workloads.scale_class import SCALE_CLASSES

WORKLOADS = ("pgbench", "cache-wash")
ORDERS = ("sequential", "interleaved", "random")
PGBENCH_MODES = ("select-only", "simple-update", "tpcb-like", "custom")
PROTOCOLS = ("simple", "extended", "prepared")
INIT_STEP_LETTERS = set("dtgGvpf")
SWEEPABLE_WORKLOAD_KEYS = ("scale", "scale_class", "clients", "threads", "duration",
                           "transactions", "mode", "rate", "protocol", "os_cache", "prewarm",
                           "version")  # fmt: skip
# Keys whose values change the data or the server a point needs: points are grouped by them, so
# that data is initialised (and a version's cluster created) once per group, not once per point.
DATA_KEYS = ("version", "scale", "scale_class", "init_steps")
# Per-point cache handling, kept with the workload parameters of each point.
MACHINE_POINT_DEFAULTS = {"os_cache": "keep", "prewarm": False}
MACHINE_KEYS = {"memory", *MACHINE_POINT_DEFAULTS}

TOP_KEYS = {"name", "description", "workload", "repetitions", "order", "seed", "server",
            "machine", "pgbench", "cache_wash", "sweep", "report", "store"}  # fmt: skip
CACHE_WASH_DEFAULTS = {"table_size": 1.0, "lookups": 100, "warmup": "100s", "prewarm": True}
CACHE_WASH_SWEEPABLE = ("os_cache", "prewarm", "lookups")
SERVER_KEYS = {"pg_bin", "listen_tcp", "settings", "data_checksums"}
REPORT_KEYS = {"title"}
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
}


@dataclass(frozen=True)
class Script:
    file: Path
    weight: int


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
    repetitions: int
    order: str
    seed: int
    pg_bin: str | None
    listen_tcp: bool
    data_checksums: bool | None  # None: each version's initdb default (on from 18)
    memory_bytes: int | None
    settings: dict[str, str]
    parameters: dict  # the workload's fixed parameters, and the per-point cache handling
    sweep_workload: dict[str, list]
    sweep_settings: dict[str, list]
    report: dict = field(default_factory=dict)
    store: str | None = None  # where the run is stored: a postgresql:// URL or a SQLite path

    def setting_names(self) -> set[str]:
        return set(self.settings) | set(self.sweep_settings)

    def points(self) -> list[Point]:
        return expand_points(self)

    def schedule(self) -> list[tuple[int, int]]:
        """(point index, repetition) pairs in the order they run, grouped by the data they need."""
        groups = [data_group(point) for point in self.points()]
        return schedule(len(groups), self.repetitions, self.order, self.seed, groups)

    @property
    def versions(self) -> list[str]:
        """The swept server versions (major versions or bin directories), if any."""
        return self.sweep_workload.get("version", [])


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
        text = path.read_text()
    except OSError as error:
        raise UserError(
            f"cannot read spec {str(path)!r}: {error.strerror}",
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
    sweepable = SWEEPABLE_WORKLOAD_KEYS if workload == "pgbench" else CACHE_WASH_SWEEPABLE
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
    if workload == "pgbench" and cache_wash_raw:
        raise problem("cache_wash", "[cache_wash] needs workload = \"cache-wash\"",
                      'set workload = "cache-wash" or remove the table')  # fmt: skip
    repetitions = raw.get("repetitions", 1)
    if not isinstance(repetitions, int) or isinstance(repetitions, bool) or repetitions < 1:
        raise problem.bad_value(
            "repetitions", repetitions, "not a positive integer", "use 1 or more"
        )
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
    else:
        parameters = {**PGBENCH_DEFAULTS, **pgbench_raw}
        parameters = _resolve_workload(problem, parameters, "pgbench.", path.parent)
    for key, default in MACHINE_POINT_DEFAULTS.items():
        # cache-wash prewarms by itself (table, then index: the seed's order) unless told not to
        value = machine.get(key, parameters.get(key, default))
        parameters[key] = _machine_point_value(problem, f"machine.{key}", value)

    sweep_workload = {}
    for key, values in sweep_workload_raw.items():
        values = _sweep_values(problem, f"sweep.{key}", values)
        if key == "version":
            values = [_version_value(problem, f"sweep.{key}", value) for value in values]
        for value in values:
            if key == "version":
                continue
            if key in MACHINE_POINT_DEFAULTS:
                _machine_point_value(problem, f"sweep.{key}", value)
            elif workload == "cache-wash":
                _cache_wash_parameters(problem, {**parameters, key: value}, "sweep.")
            else:
                _resolve_workload(
                    problem, {**parameters, key: value}, "sweep.", path.parent, only=key
                )
        sweep_workload[key] = values
    sweep_settings = {}
    for name, values in sweep_settings_raw.items():
        values = _sweep_values(problem, f"sweep.settings.{name}", values)
        sweep_settings[name] = [
            _setting_text(problem, f"sweep.settings.{name}", value) for value in values
        ]

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
        sweep_settings=sweep_settings,
        report=report,
        store=store,
    )


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
    resolved["warmup"] = _seconds(problem, f"{prefix}warmup", raw["warmup"], True)
    if not isinstance(raw["prewarm"], bool):
        raise problem.bad_value(f"{prefix}prewarm", raw["prewarm"], "not a boolean", "true/false")
    return resolved


def _machine_point_value(problem: SpecProblem, key: str, value):
    if key.endswith("os_cache") and value not in OS_CACHE_MODES:
        raise problem.bad_value(
            key, value, "unknown cache mode", f"use one of {', '.join(OS_CACHE_MODES)}"
        )
    if key.endswith("prewarm") and not isinstance(value, bool):
        raise problem.bad_value(key, value, "not a boolean", "true or false")
    return value


def _setting_text(problem: SpecProblem, key: str, value) -> str:
    if isinstance(value, dict | list):
        raise problem.bad_value(key, value, "not a setting value", "use a string, number or bool")
    return setting_value_text(value)


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
    for key in ("duration", "warmup"):
        if check(key):
            resolved[key] = _seconds(problem, f"{prefix}{key}", pgbench[key], key == "warmup")
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
    named = [(f"server.settings.{n}", n, [v]) for n, v in spec.settings.items()]
    named += [(f"sweep.settings.{n}", n, vs) for n, vs in spec.sweep_settings.items()]
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
    axes = [("workload", k, v) for k, v in spec.sweep_workload.items()]
    axes += [
        (
            "settings",
            k,
            _descending_bytes(v) if k == "shared_buffers" and huge_pages_on(spec) else v,
        )
        for k, v in spec.sweep_settings.items()
    ]
    points = []
    combos = itertools.product(*(values for _, _, values in axes)) if axes else [()]
    for index, combo in enumerate(combos):
        workload = dict(spec.parameters)
        settings = dict(spec.settings)
        swept = {}
        for (kind, key, _), value in zip(axes, combo, strict=True):
            swept[key] = value
            if kind == "workload":
                workload[key] = value
            else:
                settings[key] = value
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
