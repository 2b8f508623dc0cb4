"""What a sweep may list: values as written or a range, none twice, even once converted."""

import math
from typing import TypeGuard

from pydantic_core import PydanticCustomError

from pgcachelab.clusters.guc import canonical_value
from pgcachelab.spec.values import setting_text
from pgcachelab.units import parse_bytes
from pgcachelab.workloads.values import checked, invalid, is_number, plain, show

# A range of more values than this is a mistake (to = inf never ended; 10,000 points of one
# repetition already take hours)
MAX_RANGE_VALUES = 10_000


def _finite(value) -> TypeGuard[int | float]:
    """A number, finite, below 2**63: TOML's nan and inf, and 400-digit ints, overflowed."""
    return is_number(value) and -(2**63) < value < 2**63


def _too_many(count: float) -> PydanticCustomError | None:
    if count > MAX_RANGE_VALUES:
        return invalid(
            f"a range of {count:.3g} values, more than {MAX_RANGE_VALUES}",
            "narrow it, or take a larger step or factor",
        )
    return None


def first_repeat(written: list, forms: list) -> tuple | None:
    """(value, the earlier value it equals) when two values are one once converted ("1MB" and
    "1024kB", "60s" and "1min"): a sweep would measure one point twice under two labels."""
    first_of: dict = {}
    for value, form in zip(written, forms, strict=True):
        if form in first_of:
            return value, first_of[form]
        first_of[form] = value
    return None


def repeats_error(repeat: tuple) -> PydanticCustomError:
    value, earlier = repeat
    return invalid(
        f"repeats a value: the same as {show(earlier)}", "list each value once", value=value
    )


def _sweep_values(values) -> list:
    """A list as written, or a range table {from, to, step} / {from, to, factor}."""
    if isinstance(values, dict):
        values = _expand_range(values)
    if not isinstance(values, list):
        raise invalid("a sweep needs a list", "write e.g. [1, 2, 4]")
    if not values:
        raise plain("empty sweep", "list at least one value, or remove the key")
    if len(set(map(str, values))) != len(values):
        raise invalid("repeats a value", "list each value once")
    return values


def _swept_settings(values) -> list[str]:
    texts = [setting_text(value) for value in _sweep_values(values)]
    # "1MB" and "1024kB" are one value; with the server's catalogue, validate_settings also
    # catches those only its units tell apart (work_mem = 1024 is 1MB)
    repeat = first_repeat(texts, [canonical_value(text) for text in texts])
    if repeat:
        raise repeats_error(repeat)
    return texts


def _expand_range(table: dict) -> list:
    if set(table) - {"from", "to", "step", "factor"} or "from" not in table or "to" not in table:
        raise invalid("not a range", "write {from = 1, to = 50, step = 1} or {..., factor = 2}")
    start, stop = table["from"], table["to"]
    if isinstance(start, str) and isinstance(stop, str):
        return _expand_size_range(table)
    if not all(map(_finite, (start, stop))) or start <= 0 or stop < start:
        raise invalid("from/to must be finite numbers, 0 < from <= to", "fix them")
    values = []
    if "factor" in table:
        factor = table["factor"]
        if not _finite(factor) or factor <= 1:
            raise invalid("factor must be a finite number > 1", "use e.g. factor = 2")
        too_many = _too_many(math.log(stop / start) / math.log(factor) + 1)
        if too_many:
            raise too_many
        value = start
        while value <= stop * (1 + 1e-9):
            values.append(round(value) if isinstance(start, int) else value)
            value *= factor
        return sorted(set(values), key=values.index)
    step = table.get("step", 1)
    if not _finite(step) or step <= 0:
        raise invalid("step must be a finite positive number", "use e.g. step = 1")
    too_many = _too_many((stop - start) / step + 1)
    if too_many:
        raise too_many
    value = start
    while value <= stop + 1e-9:
        values.append(value)
        if value + step == value or len(values) > MAX_RANGE_VALUES:  # a step below from's ulp
            raise invalid(f"a step of {step} does not move from {value}", "take a larger step")
        value += step
    return values


def _expand_size_range(table: dict) -> list[str]:
    """{from = "128kB", to = "900MB", factor = 2} -> ["128kB", "256kB", ...] (in kB, exact)."""
    try:
        start, stop = parse_bytes(table["from"]), parse_bytes(table["to"])
    except ValueError as error:
        raise invalid(str(error), 'write sizes such as "128kB"') from None
    factor = table.get("factor")
    if "step" in table or not _finite(factor) or factor <= 1 or stop < start:
        raise invalid(
            "a size range needs from <= to and a factor > 1",
            'write {from = "128kB", to = "900MB", factor = 2}',
        )
    too_many = _too_many(math.log(max(stop, 1) / max(start, 1)) / math.log(factor) + 1)
    if too_many:
        raise too_many
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


SweepValues = checked(list, _sweep_values)
SweptSettings = checked(list[str], _swept_settings)
