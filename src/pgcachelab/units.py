"""PostgreSQL's value syntax for memory and time settings, as pure functions.

The server accepts an integer optionally followed by a unit (guc.c: memory_unit_conversion_table
and time_unit_conversion_table); units are case-sensitive. "B" exists from PostgreSQL 11.
"""

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

_VALUE_WITH_UNIT = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def split_number_and_unit(text: str) -> tuple[float, str] | None:
    """Return (number, unit) for "64MB" / "1.5 GB" / "100", or None when it is not that shape."""
    match = _VALUE_WITH_UNIT.match(str(text))
    if not match:
        return None
    return float(match.group(1)), match.group(2)


def parse_bytes(text: str | int, default_unit: str = "B") -> int:
    """Parse a memory amount such as "64MB", "1GiB" or 65536 into bytes.

    Accepts PostgreSQL's units and the IEC spellings people type (KiB, MiB, GiB, TiB).
    Raises ValueError naming the accepted units.
    """
    if isinstance(text, int):
        return text * MEMORY_UNITS_BYTES.get(default_unit, 1)
    parsed = split_number_and_unit(text)
    if parsed is None:
        raise ValueError(f"not a memory amount: {text!r}")
    number, unit = parsed
    unit = {"KiB": "kB", "MiB": "MB", "GiB": "GB", "TiB": "TB", "": default_unit}.get(unit, unit)
    if unit not in MEMORY_UNITS_BYTES:
        raise ValueError(f"unknown memory unit {unit!r} in {text!r}; use one of B, kB, MB, GB, TB")
    return int(number * MEMORY_UNITS_BYTES[unit])


def parse_seconds(text: str | float, default_unit: str = "s") -> float:
    """Parse a duration such as "20s", "5min" or 30 into seconds."""
    if isinstance(text, int | float):
        return float(text) * TIME_UNITS_SECONDS[default_unit]
    parsed = split_number_and_unit(text)
    if parsed is None:
        raise ValueError(f"not a duration: {text!r}")
    number, unit = parsed
    unit = unit or default_unit
    if unit not in TIME_UNITS_SECONDS:
        raise ValueError(f"unknown time unit {unit!r} in {text!r}; use one of us, ms, s, min, h, d")
    return number * TIME_UNITS_SECONDS[unit]


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


def shared_buffers_bytes(value: str | None) -> int:
    """shared_buffers as written in a spec or conf file: a unitless number counts 8kB buffers;
    unset is the server's default, 128MB."""
    if value is None or str(value).strip() == "":
        return 128 * 1024 * 1024
    text = str(value).strip()
    if text.isdigit():
        return int(text) * 8192
    return parse_bytes(text)
