"""What one workload parameter may be: each type here checks a value, converts it, and says why
not. The spec's tables (spec/values.py: the rest of a spec's values) and the
workloads' parameter models (workloads/parameters.py) are typed with them.

A model field typed with one of these converts its value; a swept value goes through the same
field of the same model as a fixed one (issue 16), so this is the only place a value is read.
A refusal is a PydanticCustomError whose context carries our sentence and its hint;
spec/errors.py renders it as one line.

A point read back from a results store is validated with the context {"stored": True}: its
values were converted when its spec was read, by the checks of that day, so only their types
are checked (`stored`): a check made stricter since, a preset renamed or a script file gone
must not make an old run unreadable.
"""

import re
from collections.abc import Callable
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import Annotated, Any, Literal, TypeGuard, get_args

from pydantic import ValidationInfo, ValidatorFunctionWrapHandler, WrapValidator
from pydantic_core import PydanticCustomError

from pgcachelab.clusters.installs import normalise_major
from pgcachelab.errors import UserError
from pgcachelab.machine.disk_profiles import DiskProfileError, canonical_disk
from pgcachelab.quantities import INT_MAX, MAX_RATE, NumberError, duration, number, size
from pgcachelab.units import MAX_SECONDS
from pgcachelab.user_files import regular_file_refusal
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


def is_int(value) -> TypeGuard[int]:
    return isinstance(value, int) and not isinstance(value, bool)


def is_number(value) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def stored(info: ValidationInfo) -> bool:
    """Whether the value is read back from a results store, not from a spec."""
    return isinstance(info.context, dict) and info.context.get("stored") is True


@dataclass(frozen=True)
class SpecOrStored:
    """A WrapValidator's function: `check` on a spec's value; on a stored one, the field's
    type only. (docs/hooks/reference.py names a type by its check.)"""

    check: Callable[[Any], Any]

    def __call__(
        self, value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo
    ) -> Any:
        if not stored(info):
            return self.check(value)
        typed = handler(value)
        # a float field holds the 500 a spec wrote as the checks left it: kept, not made 500.0,
        # so that a stored point is written back (copied, exported) as it was stored
        return value if typed == value else typed


def _spec_or_stored(check: Callable[[Any], Any]) -> WrapValidator:
    return WrapValidator(SpecOrStored(check))


def checked(kind: Any, check: Callable[[Any], Any]) -> Any:
    """A type whose values `check` validates and converts (it raises `invalid(...)`)."""
    return Annotated[kind, _spec_or_stored(check)]


# pgbench reads its counts as C ints (option_parse_int(..., 1, INT_MAX)): a bigger one is refused
# by pgbench only once the point runs, so it is refused here (quantities.INT_MAX).
def _count(value, minimum: int, maximum: int = INT_MAX) -> int:
    if not is_int(value) or value < minimum:
        raise invalid(f"not an integer >= {minimum}", f"use {minimum} or more")
    if value > maximum:
        limit = f"pgbench's limit of {INT_MAX}" if maximum == INT_MAX else str(maximum)
        raise invalid(f"more than {limit}", f"use a value from {minimum} to {maximum}")
    return value


@cache
def Count(minimum: int = 1, maximum: int = INT_MAX) -> WrapValidator:
    """An integer from `minimum` to `maximum`, at most pgbench's INT_MAX (not a bool, not "3"):
    `Annotated[int, Count()]`."""
    return _spec_or_stored(lambda value: _count(value, minimum, maximum))


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
def Seconds(zero_ok: bool = True) -> WrapValidator:
    """A duration ("20s", "2min", 30) in whole seconds, as a float: `Annotated[float,
    Seconds()]`."""
    return _spec_or_stored(lambda value: _seconds(value, zero_ok))


def _size(value, minimum_mb: int) -> int:
    """Bytes from `minimum_mb` to quantities' most (1024TB)."""
    if not isinstance(value, str) and not is_int(value):
        raise invalid("not a size", 'write a size such as "1GiB"')
    try:
        return size(value, "", minimum_mb * 1024 * 1024, example='"1GiB"')
    except NumberError as error:
        raise invalid(error.why, error.hint) from None


@cache
def Size(minimum_mb: int) -> WrapValidator:
    """A memory amount ("1GiB", "512MB") in bytes: `Annotated[int, Size(64)]`."""
    return _spec_or_stored(lambda value: _size(value, minimum_mb))


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


def version(value) -> str:
    """A major version as text ("9.6", "13"), or a bin directory kept as written."""
    text = str(value)
    if "/" in text:
        return text
    try:
        return normalise_major(text)
    except UserError as error:
        raise invalid("not a PostgreSQL major version", error.hint) from None


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


@dataclass(frozen=True)
class Script:
    """A custom pgbench script: its file (resolved against the spec's directory), its weight."""

    file: Path
    weight: int


# How runs have stored a script: the JSON of its str() (store/records.py's to_json), so the
# one way it reads back
STORED_SCRIPT = re.compile(
    r"Script\(file=\w*Path\((?P<quote>['\"])(?P<file>.*)(?P=quote)\), weight=(?P<weight>\d+)\)"
)


def _script(value, info: ValidationInfo) -> Script:
    """ "a.sql" or { file = "a.sql", weight = 1 }: a Script, its file relative to the spec."""
    entry = {"file": value} if isinstance(value, str) else value
    if not isinstance(entry, dict) or set(entry) - {"file", "weight"} or "file" not in entry:
        raise invalid("not a script", 'use { file = "a.sql", weight = 1 }')
    assert info.context is not None  # load.py validates with the spec's directory
    file = (info.context["base_dir"] / str(entry["file"])).resolve()
    if info.context.get("stored_spec"):  # a stored run's spec, read again: the run read the file
        return Script(file=file, weight=entry.get("weight", 1))
    refusal = regular_file_refusal(file)  # pgbench reads it whole: no device, no GBs
    if refusal:
        raise invalid(refusal, "give a script file of pgbench's", at=("file",), value=entry["file"])
    if not file.is_file():
        raise invalid(
            "no such file", "paths are relative to the spec", at=("file",), value=entry["file"]
        )
    weight = entry.get("weight", 1)
    if not is_int(weight) or not 0 <= weight <= INT_MAX:  # pgbench's @weight: 0 .. INT_MAX
        raise invalid(
            f"not an integer from 0 to {INT_MAX}",
            f"use 0 to {INT_MAX}",
            at=("weight",),
            value=weight,
        )
    return Script(file=file, weight=weight)


def _script_entry(value: Any, handler: ValidatorFunctionWrapHandler, info: ValidationInfo) -> Any:
    if not stored(info):
        return _script(value, info)
    if isinstance(value, Script):
        return value
    found = STORED_SCRIPT.fullmatch(value) if isinstance(value, str) else None
    if found is None:
        raise invalid("not a stored script", None)
    return Script(file=Path(found["file"]), weight=int(found["weight"]))


Warehouses = checked(int, _warehouses)
Threads = checked(int | str, _threads)
TableSize = checked(int | float, _table_size)
PgbenchRate = checked(float, lambda value: _positive_rate(value, "tps, e.g. 500"))
RateTpm = checked(int | float | str, _rate_tpm)
LatencyLimitMs = checked(float, _latency_limit_ms)
InitSteps = checked(str, _init_steps)
Weights = checked(str, _weights)
Version = checked(str, version)
Disk = checked(str, _disk)
InspectMethod = checked(str, _inspect_method)
ScriptEntry = Annotated[Any, WrapValidator(_script_entry)]
