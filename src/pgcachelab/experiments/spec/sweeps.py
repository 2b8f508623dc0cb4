"""What a sweep may list: values as written or a range, none twice, even once converted."""

from pydantic_core import PydanticCustomError

from pgcachelab.clusters.guc import canonical_value
from pgcachelab.experiments.spec.values import (
    checked,
    invalid,
    is_number,
    plain,
    setting_text,
    show,
)
from pgcachelab.units import parse_bytes


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
    if not all(map(is_number, (start, stop))) or start <= 0 or stop < start:
        raise invalid("from/to must be numbers, 0 < from <= to", "fix them")
    values = []
    if "factor" in table:
        factor = table["factor"]
        if not is_number(factor) or factor <= 1:
            raise invalid("factor must be > 1", "use e.g. factor = 2")
        value = start
        while value <= stop * (1 + 1e-9):
            values.append(round(value) if isinstance(start, int) else value)
            value *= factor
        return sorted(set(values), key=values.index)
    step = table.get("step", 1)
    if not is_number(step) or step <= 0:
        raise invalid("step must be positive", "use e.g. step = 1")
    value = start
    while value <= stop + 1e-9:
        values.append(value)
        value += step
    return values


def _expand_size_range(table: dict) -> list[str]:
    """{from = "128kB", to = "900MB", factor = 2} -> ["128kB", "256kB", ...] (in kB, exact)."""
    try:
        start, stop = parse_bytes(table["from"]), parse_bytes(table["to"])
    except ValueError as error:
        raise invalid(str(error), 'write sizes such as "128kB"') from None
    factor = table.get("factor")
    if "step" in table or not is_number(factor) or factor <= 1 or stop < start:
        raise invalid(
            "a size range needs from <= to and a factor > 1",
            'write {from = "128kB", to = "900MB", factor = 2}',
        )
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
