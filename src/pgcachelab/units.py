"""PostgreSQL's value syntax for memory and time settings, as pure functions.

The server accepts an integer optionally followed by a unit (guc.c: memory_unit_conversion_table
and time_unit_conversion_table); units are case-sensitive. "B" exists from PostgreSQL 11.

A number here is ASCII digits, an optional minus sign and fraction: not what Python's float()
also takes ("nan", "inf", "1e999", "1_000", "٣"), nor one that overflows on its way to a byte
count or a float (issue 48). quantities.py names the option and its range around these.
"""

import math
import re

MEMORY_UNITS_BYTES = {
    "B": 1,
    "kB": 1024,
    "MB": 1024**2,
    "GB": 1024**3,
    "TB": 1024**4,
}
TIME_UNITS_SECONDS = {
    "us": 1e-6,
    "ms": 1e-3,
    "s": 1.0,
    "min": 60.0,
    "h": 3600.0,
    "d": 86400.0,
}
# pg_settings.unit values and what one of them is worth in bytes or seconds.
SETTING_UNIT_BYTES = {"B": 1, "kB": 1024, "8kB": 8192, "MB": 1024**2, "16MB": 16 * 1024**2}
SETTING_UNIT_SECONDS = {"us": 1e-6, "ms": 1e-3, "s": 1.0, "min": 60.0}

# re.ASCII: \d and \s would take other scripts' digits and spaces ("٣GB" was 3GB)
_VALUE_WITH_UNIT = re.compile(r"^\s*(-?[0-9]+(?:\.[0-9]+)?)\s*([A-Za-z]*)\s*$", re.ASCII)
# Beyond any amount a server's int64 or the lab holds: a number this large is no setting value.
MAX_NUMBER = 2.0**63
# The most bytes a size given to the lab may be (1024TB; machines have TBs of memory, not PBs),
# and the longest duration (a year): enough for any option, and far from C's and float's limits.
MAX_BYTES = 1024**5
MAX_SECONDS = 365 * 86400


def split_number_and_unit(text: str) -> tuple[float, str] | None:
    """Return (number, unit) for "64MB" / "1.5 GB" / "100", or None when it is not that shape
    (or the number is beyond MAX_NUMBER: 400 digits are a float's infinity)."""
    parsed = _split(text)
    if parsed is None or not abs(parsed[0]) < MAX_NUMBER:
        return None
    return parsed


def _split(text) -> tuple[float, str] | None:
    """(number, unit) of that shape; the number may be a float's infinity (400 digits)."""
    match = _VALUE_WITH_UNIT.match(str(text))
    if not match:
        return None
    return float(match.group(1)), match.group(2)


def beyond_limits(text: str) -> str | None:
    """Why a value of the shape number-and-unit ("64MB", "30s", "100") is beyond what the lab
    passes on (more than MAX_BYTES, MAX_SECONDS, or MAX_NUMBER without a unit), else None; what
    another text means is the server's to judge."""
    parsed = _split(text)
    if parsed is None:
        return None
    number, unit = abs(parsed[0]), parsed[1]
    unit = {"KiB": "kB", "MiB": "MB", "GiB": "GB", "TiB": "TB"}.get(unit, unit)
    if unit in MEMORY_UNITS_BYTES and number > MAX_BYTES / MEMORY_UNITS_BYTES[unit]:
        return f"above {_limit_text(MAX_BYTES, 'B')}"
    if unit in TIME_UNITS_SECONDS and number > MAX_SECONDS / TIME_UNITS_SECONDS[unit]:
        return f"above {_limit_text(MAX_SECONDS, 's')}"
    if not number < MAX_NUMBER:
        return f"above {MAX_NUMBER:.0f}"
    return None


def _limit_text(amount: float, unit: str) -> str:
    return exact_amount_text(amount, unit) or f"{amount:g}"


def parse_bytes(text: str | int, default_unit: str = "B", maximum: int = MAX_BYTES) -> int:
    """Parse a memory amount such as "64MB", "1GiB" or 65536 into bytes, from 0 to `maximum`.

    Accepts PostgreSQL's units and the IEC spellings people type (KiB, MiB, GiB, TiB).
    Raises ValueError naming the accepted units, or the limit crossed.
    """
    if isinstance(text, bool):
        raise ValueError(f"not a memory amount: {text!r}")
    if isinstance(text, int):
        number: float = text  # an int from TOML stays exact, however long
        unit = default_unit
    else:
        parsed = _split(text)
        if parsed is None:
            raise ValueError(f"not a memory amount: {text!r}")
        number, unit = parsed
        unit = {"KiB": "kB", "MiB": "MB", "GiB": "GB", "TiB": "TB", "": default_unit}.get(
            unit, unit
        )
    if unit not in MEMORY_UNITS_BYTES:
        raise ValueError(f"unknown memory unit {unit!r} in {text!r}; use one of B, kB, MB, GB, TB")
    if number < 0:
        raise ValueError("below 0B")
    if number > maximum / MEMORY_UNITS_BYTES[unit]:  # before the product: no float overflows
        raise ValueError(f"above {_limit_text(maximum, 'B')}")
    return int(number * MEMORY_UNITS_BYTES[unit])


def parse_seconds(
    text: str | float, default_unit: str = "s", maximum: float = MAX_SECONDS
) -> float:
    """Parse a duration such as "20s", "5min" or 30 into seconds, from 0 to `maximum`."""
    if isinstance(text, bool):
        raise ValueError(f"not a duration: {text!r}")
    if isinstance(text, int | float):
        if isinstance(text, float) and not math.isfinite(text):
            raise ValueError(f"not a finite number: {text!r}")
        number: float = text  # compared before any float conversion: a long int stays exact
        unit = default_unit
    else:
        parsed = _split(text)
        if parsed is None:
            raise ValueError(f"not a duration: {text!r}")
        number, unit = parsed
        unit = unit or default_unit
    if unit not in TIME_UNITS_SECONDS:
        raise ValueError(f"unknown time unit {unit!r} in {text!r}; use one of us, ms, s, min, h, d")
    if number < 0:
        raise ValueError("below 0s")
    if number > maximum / TIME_UNITS_SECONDS[unit]:
        raise ValueError(f"above {_limit_text(maximum, 's')}")
    return float(number) * TIME_UNITS_SECONDS[unit]


def format_bytes(value: float) -> str:
    """Short human form: 65536 -> '64kB', 1.5*2**30 -> '1.5GB' (PostgreSQL's unit names)."""
    for unit in ("TB", "GB", "MB", "kB"):
        size = MEMORY_UNITS_BYTES[unit]
        if abs(value) >= size:
            number = value / size
            if number == int(number) or number >= 1000:  # .3g would write 1020 as 1.02e+03
                return f"{number:.0f}{unit}"
            return f"{number:.3g}{unit}"
    return f"{value:.0f}B"


def normalise_setting(setting: str, unit: str | None, vartype: str) -> float | str:
    """Turn a pg_settings row into bytes or seconds where it has a unit, else a number or text."""
    if vartype not in ("integer", "real"):
        return setting
    try:
        number = float(setting)
    except ValueError:
        return setting
    if unit in SETTING_UNIT_BYTES:
        return number * SETTING_UNIT_BYTES[unit]
    if unit in SETTING_UNIT_SECONDS:
        return number * SETTING_UNIT_SECONDS[unit]
    return number


def exact_amount_text(value: float, unit: str | None) -> str | None:
    """A pg_settings amount already in bytes or seconds (normalise_setting), written in the
    largest unit that states it exactly: "1GB", "5min", "1536kB", "200ms". Two equal amounts
    read alike whatever unit a version counts them in (9.6: max_wal_size in 16MB segments).
    None when `unit` is neither a memory nor a time unit."""
    if unit in SETTING_UNIT_BYTES:
        for name in ("TB", "GB", "MB", "kB"):
            if value and value % MEMORY_UNITS_BYTES[name] == 0:
                return f"{value // MEMORY_UNITS_BYTES[name]:.0f}{name}"
        return f"{value:.0f}B"
    if unit in SETTING_UNIT_SECONDS:
        microseconds = round(value * 1e6)
        if microseconds == 0:
            return "0s"
        for name in ("d", "h", "min", "s", "ms"):
            size = round(TIME_UNITS_SECONDS[name] * 1e6)
            if microseconds and microseconds % size == 0:
                return f"{microseconds // size}{name}"
        return f"{microseconds}us"
    return None


BUFFER_BYTES = 8192


def buffers_bytes(text: str) -> int:
    """A size setting counted in 8kB buffers when it has no unit (shared_buffers, wal_buffers):
    "16384" and "128MB" are both 128MB. Raises ValueError as parse_bytes does."""
    text = text.strip()
    if text.isascii() and text.isdigit():  # isdigit() alone also takes "²", which int() refuses
        most = MAX_BYTES // BUFFER_BYTES
        # the length first: int() refuses a text of more than 4300 digits with its own error
        if len(text.lstrip("0")) > len(str(most)) or int(text) > most:
            raise ValueError(f"above {most} buffers of 8kB ({_limit_text(MAX_BYTES, 'B')})")
        return int(text) * BUFFER_BYTES
    return parse_bytes(text)


def shared_buffers_bytes(value: str | None) -> int:
    """shared_buffers as written in a spec or conf file: a unitless number counts 8kB buffers;
    unset is the server's default, 128MB."""
    if value is None or str(value).strip() == "":
        return 128 * 1024 * 1024
    return buffers_bytes(str(value))
