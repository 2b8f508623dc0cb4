"""What one spec value may be: each type here checks a value, converts it, and says why not.

A model field typed with one of these converts its value; a swept value goes through the same
field of the same model as a fixed one (issue 16), so this is the only place a value is read.
A refusal is a PydanticCustomError whose context carries our sentence and its hint; errors.py
renders it as one line.
"""

import math
from functools import cache
from typing import Annotated, Any, Literal, TypeGuard, get_args

from pydantic import PlainValidator, ValidationInfo
from pydantic_core import PydanticCustomError

from pgcachelab.clusters.guc import setting_value_text
from pgcachelab.clusters.installs import normalise_major
from pgcachelab.errors import UserError
from pgcachelab.experiments.ladder import memory_share
from pgcachelab.machine import host_tunables
from pgcachelab.machine.disk_profiles import DiskProfileError, canonical_disk
from pgcachelab.printable import has_control_characters
from pgcachelab.quantities import INT_MAX, MAX_RATE, NumberError, duration, number, size
from pgcachelab.units import MAX_SECONDS, beyond_limits
from pgcachelab.user_files import regular_file_refusal
from pgcachelab.workloads.parameters import Script
from pgcachelab.workloads.tpcc.params import MAX_WAREHOUSES, NO_LIMIT, format_weights, parse_weights

InspectMethodName = Literal["auto", "extension", "pg_buffercache", "summary"]
INSPECT_METHODS: tuple[str, ...] = get_args(InspectMethodName)
# probes.buffercache.MODES
InspectMode = Literal["consistent", "fast", "semiconsistent", "snapshot"]
INSPECT_MODES: tuple[str, ...] = get_args(InspectMode)
INIT_STEP_LETTERS = set("dtgGvpf")


def invalid(why: str, hint: str | None, **where) -> PydanticCustomError:
    """Refuse the value at hand: `key: invalid value X: why`. `at` names a key below the
    validated one (a script's file); `value` shows another value than the input."""
    return PydanticCustomError("spec", "{why}", {"why": why, "hint": hint, **where})


def plain(message: str, hint: str | None) -> PydanticCustomError:
    """Refuse with a sentence of its own (a rule, or a message that quotes the value itself)."""
    return refuse((), message, hint)


def refuse(at: str | tuple, message: str, hint: str | None) -> PydanticCustomError:
    """A rule across keys is broken: `key: message`, at key `at` of the validated table.
    "{prefix}" in the message stands for the table's own prefix ("cache_wash.", "sweep.")."""
    at = (at,) if isinstance(at, str) else at
    return PydanticCustomError("spec", "{message}", {"message": message, "hint": hint, "at": at})


def show(value) -> str:
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _is_int(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def checked(kind: Any, check) -> Any:
    """A type whose values `check` validates and converts (it raises `invalid(...)`)."""
    return Annotated[kind, PlainValidator(check)]


# pgbench reads its counts as C ints (option_parse_int(..., 1, INT_MAX)): a bigger one is refused
# by pgbench only once the point runs, so it is refused here (quantities.INT_MAX).
# Repetitions of a point: each is a measurement the plan lists; 2**31 of them never finished.
MAX_REPETITIONS = 10_000


def _count(value, minimum: int, maximum: int = INT_MAX) -> int:
    if not _is_int(value) or value < minimum:
        raise invalid(f"not an integer >= {minimum}", f"use {minimum} or more")
    if value > maximum:
        limit = f"pgbench's limit of {INT_MAX}" if maximum == INT_MAX else str(maximum)
        raise invalid(f"more than {limit}", f"use a value from {minimum} to {maximum}")
    return value


@cache
def Count(minimum: int = 1, maximum: int = INT_MAX) -> PlainValidator:
    """An integer from `minimum` to `maximum`, at most pgbench's INT_MAX (not a bool, not "3"):
    `Annotated[int, Count()]`."""
    return PlainValidator(lambda value: _count(value, minimum, maximum))


def _warehouses(value) -> int:
    if _count(value, 1) > MAX_WAREHOUSES:
        raise invalid(f"more than {MAX_WAREHOUSES}", "each warehouse is about 100 MB")
    return value


def _threads(value) -> int | str:
    """ "auto": as many as the clients, up to the cores, decided where pgbench runs."""
    return value if value == "auto" else _count(value, 1)


def _seconds(value, zero_ok: bool) -> float:
    """Whole seconds up to a year (quantities.duration): nan, inf and 400 digits overflowed."""
    if not isinstance(value, str) and not is_number(value):
        raise invalid("not a duration", 'write e.g. "20s" or "2min"')
    try:
        return duration(value, "", 0 if zero_ok else 1, whole=True, example='"20s"')
    except NumberError as error:
        raise invalid(error.why, error.hint) from None


@cache
def Seconds(zero_ok: bool = True) -> PlainValidator:
    """A duration ("20s", "2min", 30) in whole seconds, as a float: `Annotated[float,
    Seconds()]`."""
    return PlainValidator(lambda value: _seconds(value, zero_ok))


def _size(value, minimum_mb: int) -> int:
    """Bytes from `minimum_mb` to quantities' most (1024TB)."""
    if not isinstance(value, str) and not _is_int(value):
        raise invalid("not a size", 'write a size such as "1GiB"')
    try:
        return size(value, "", minimum_mb * 1024 * 1024, example='"1GiB"')
    except NumberError as error:
        raise invalid(error.why, error.hint) from None


@cache
def Size(minimum_mb: int) -> PlainValidator:
    """A memory amount ("1GiB", "512MB") in bytes: `Annotated[int, Size(64)]`."""
    return PlainValidator(lambda value: _size(value, minimum_mb))


def _table_size(value) -> int | float:
    """Bytes ("1GiB") or a fraction of the server's memory (1.0, the seed)."""
    if isinstance(value, str):
        return _size(value, 1)
    if not is_number(value) or not 0 < value <= 4:
        raise invalid(
            "neither a size nor a fraction of memory",
            'write a size such as "1GiB" or a fraction such as 1.0',
        )
    return float(value)


def _positive_rate(value, hint: str) -> int | float:
    """Above 0, finite (TOML's nan and inf were measured: issue 48), at most MAX_RATE."""
    if not is_number(value):
        raise invalid("not a positive rate", hint)
    try:
        number(value, "", 0, MAX_RATE, above=True)
    except NumberError as error:
        raise invalid(error.why, f"{hint}; {error.allowed}") from None
    return value


def _latency_limit_ms(value) -> float:
    """pgbench --latency-limit: milliseconds above 0, finite, at most a year."""
    if not is_number(value):
        raise invalid("not a positive number of milliseconds", "milliseconds, e.g. 50")
    try:
        return number(value, "", 0, MAX_SECONDS * 1000, above=True)
    except NumberError as error:
        raise invalid(error.why, f"milliseconds, e.g. 50; {error.allowed}") from None


def _rate_tpm(value) -> int | float | str:
    """Transactions per minute of all terminals together (seed 002); "off": no limit."""
    if value == NO_LIMIT:
        return value
    hint = f'transactions per minute of all terminals, e.g. 300, or "{NO_LIMIT}"'
    return _positive_rate(value, hint)


def _fraction(value) -> float:
    if not is_number(value) or not 0 < value < 1:
        raise invalid(
            "not a fraction between 0 and 1",
            "write the half-width relative to the median, e.g. 0.02 for ±2%",
        )
    return float(value)


def _repetitions(value) -> int | str:
    if value != "auto" and (not _is_int(value) or not 1 <= value <= MAX_REPETITIONS):
        raise invalid(
            f'neither an integer from 1 to {MAX_REPETITIONS} nor "auto"',
            'use 1 or more, or "auto" with target_ci and max_repetitions',
        )
    return value


def _init_steps(value) -> str:
    if not isinstance(value, str) or not value or set(value) - INIT_STEP_LETTERS:
        raise invalid("not pgbench init steps", 'use letters of "dtgGvpf"')
    return value


def _weights(value) -> str:
    """[45, 43, 4, 4, 4] or "45,43,4,4,4" as "45,43,4,4,4" (New-Order first)."""
    text = ",".join(map(str, value)) if isinstance(value, list) else str(value)
    try:
        return format_weights(parse_weights(text, "weights"))
    except UserError as error:  # its message names the key and quotes the text
        message = error.message.removeprefix("weights: ")
        raise plain(message, error.hint) from None


def _version(value) -> str:
    """A major version as text ("9.6", "13"), or a bin directory kept as written."""
    text = str(value)
    if "/" in text:
        return text
    try:
        return normalise_major(text)
    except UserError as error:
        raise invalid("not a PostgreSQL major version", error.hint) from None


def _control(value) -> bool | str:
    """control = true | false | a version: the A/A control of a version sweep (issue 19)."""
    if isinstance(value, bool):
        return value
    if not isinstance(value, str | int | float):
        raise invalid("not true, false or a version", "use true, or one of the swept versions")
    return _version(value)


def _disk(value) -> str:
    """A disk preset, "host" or a table of latencies, as its canonical text."""
    try:
        return canonical_disk(value)
    except DiskProfileError as error:
        raise invalid(str(error), "see the disk presets in docs/machine.md") from None


def _inspect_method(value) -> str:
    """ "none", a method, or "extension/MODE"; kept as written."""
    if not isinstance(value, str):
        raise invalid("not a method", 'write e.g. "extension/fast"')
    method, slash, mode = value.partition("/")
    known = method in INSPECT_METHODS and (
        not slash or (method == "extension" and mode in INSPECT_MODES)
    )
    if value != "none" and not known:
        raise invalid(
            "unknown inspect method",
            f"use none, {', '.join(INSPECT_METHODS)}, or extension/MODE with MODE one of "
            f"{', '.join(INSPECT_MODES)}",
        )
    return value


def setting_text(value) -> str:
    """A server setting's value as postgresql.conf text; checked against a server later."""
    if isinstance(value, dict | list):
        raise invalid("not a setting value", "use a string, number or bool")
    if isinstance(value, float) and not math.isfinite(value):
        # TOML writes nan and inf; no server setting takes them
        raise invalid("not a finite number", 'write the setting\'s value, e.g. 0.5 or "64MB"')
    text = setting_value_text(value)
    beyond = beyond_limits(text)
    if beyond:  # 400 digits were a float's infinity in the plan's sums (issue 48)
        raise invalid(beyond, 'sizes go up to 1024TB and durations up to 365d, e.g. "64MB"')
    if has_control_characters(text):
        # postgresql.conf holds one setting per line: the server would not start (issue 35)
        raise invalid(
            "a server setting cannot hold a newline or other control character",
            "remove it from the value",
        )
    if "%" in text and "memory" in text.lower():
        share = memory_share(text)
        if share is None or not 0 < share < 1:
            raise invalid(
                "not a share of memory", 'write e.g. "25% of memory" (more than 0, below 100)'
            )
    return text


def _store(value) -> str:
    """The spec's store, checked now; a password is refused: the spec text is stored."""
    from pgcachelab.store.location import STORE_HINT, parse_store

    if not isinstance(value, str):
        raise invalid("not a string", STORE_HINT)
    try:
        location = parse_store(value, "store")
    except UserError as error:
        raise plain(error.message.removeprefix("store: "), error.hint) from None
    if location.password_in_url():
        raise plain(
            f"a password in {location.masked()!r} would be stored with the run's spec",
            "leave it out of the URL and put it in PGPASSWORD or ~/.pgpass",
        )
    return value


def _step_name(value) -> str:
    if not isinstance(value, str) or not value.strip():
        raise plain("a step needs a name", 'e.g. name = "io"')
    return value


def steps_list(value) -> list:
    if not isinstance(value, list) or not value or not all(isinstance(s, dict) for s in value):
        raise plain(
            "not a list of steps", 'write [[ladder]] tables, each with name = "..." and its changes'
        )
    return value


def _host_settings(value) -> dict[str, str]:
    """[machine.host] or [ladder.host]: host settings as the text their files take.
    `vm.swappiness = 10` arrives as TOML's nested {"vm": {"swappiness": 10}}."""
    if not isinstance(value, dict):
        raise plain("must be a table", "write it as [ladder.host] with e.g. vm.swappiness = 10")
    converted = {}
    for name, item in host_tunables.flatten(value).items():
        if name not in host_tunables.TUNABLES:
            raise refuse(
                (name,),
                f'unknown host setting "{name}"',
                f"use one of {', '.join(host_tunables.TUNABLES)}",
            )
        try:
            converted[name] = host_tunables.convert(name, item)
        except host_tunables.HostValueError as error:
            raise invalid(error.why, error.hint, at=(name,), value=item) from None
    both = host_tunables.coupled(converted)
    if both:
        raise refuse(
            (both[1],),
            f"cannot be set with {both[0]}: the kernel zeroes one when the other is written",
            "keep one of them",
        )
    return converted


def _script(value, info: ValidationInfo) -> Script:
    """ "a.sql" or { file = "a.sql", weight = 1 }: a Script, its file relative to the spec."""
    entry = {"file": value} if isinstance(value, str) else value
    if not isinstance(entry, dict) or set(entry) - {"file", "weight"} or "file" not in entry:
        raise invalid("not a script", 'use { file = "a.sql", weight = 1 }')
    assert info.context is not None  # load.py validates with the spec's directory
    file = (info.context["base_dir"] / str(entry["file"])).resolve()
    if info.context.get("stored"):  # a stored run's spec, read again: the run read the file
        return Script(file=file, weight=entry.get("weight", 1))
    refusal = regular_file_refusal(file)  # pgbench reads it whole: no device, no GBs
    if refusal:
        raise invalid(refusal, "give a script file of pgbench's", at=("file",), value=entry["file"])
    if not file.is_file():
        raise invalid(
            "no such file", "paths are relative to the spec", at=("file",), value=entry["file"]
        )
    weight = entry.get("weight", 1)
    if not _is_int(weight) or not 0 <= weight <= INT_MAX:  # pgbench's @weight: 0 .. INT_MAX
        raise invalid(
            f"not an integer from 0 to {INT_MAX}",
            f"use 0 to {INT_MAX}",
            at=("weight",),
            value=weight,
        )
    return Script(file=file, weight=weight)


Warehouses = checked(int, _warehouses)
Threads = checked(int | str, _threads)
TableSize = checked(int | float, _table_size)
PgbenchRate = checked(float, lambda value: _positive_rate(value, "tps, e.g. 500"))
RateTpm = checked(int | float | str, _rate_tpm)
LatencyLimitMs = checked(float, _latency_limit_ms)
Fraction = checked(float, _fraction)
Repetitions = checked(int | str, _repetitions)
InitSteps = checked(str, _init_steps)
Weights = checked(str, _weights)
Version = checked(str, _version)
Control = checked(object, _control)
Disk = checked(str, _disk)
InspectMethod = checked(str, _inspect_method)
SettingText = checked(str, setting_text)
Store = checked(str, _store)
StepName = checked(str, _step_name)
HostTable = checked(dict, _host_settings)
ScriptEntry = checked(Any, _script)


def parse_inspect_method(value: str) -> tuple[str, str] | None:
    """ "extension/fast" -> ("extension", "fast"); "pg_buffercache" -> (.., "consistent");
    "none" -> None (no snapshot at all: the baseline of the overhead experiment)."""
    if value == "none":
        return None
    method, _, mode = value.partition("/")
    return method, mode or "consistent"
