"""What the server knows about its settings, and whether a value is acceptable: pure logic.

The catalogue comes either from `postgres --describe-config` (works without a cluster, and as
root: main.c skips the root check for it) or from a running server's pg_settings.
"""

from dataclasses import dataclass

from pgcachelab.units import (
    MEMORY_UNITS_BYTES,
    SETTING_UNIT_BYTES,
    SETTING_UNIT_SECONDS,
    TIME_UNITS_SECONDS,
    split_number_and_unit,
)

# guc.c's parse_bool accepts unique prefixes of these too; we accept the whole words only.
_BOOL_WORDS = {"on", "off", "true", "false", "yes", "no", "1", "0"}


@dataclass(frozen=True)
class SettingInfo:
    name: str
    context: str  # postmaster, sighup, superuser, user, backend, internal, ...
    vartype: str  # bool, integer, real, string, enum
    unit: str | None = None  # as in pg_settings.unit; None when unknown (describe-config)
    min_value: float | None = None
    max_value: float | None = None
    enum_values: tuple[str, ...] | None = None


def parse_describe_config(text: str) -> dict[str, SettingInfo]:
    """Parse `postgres --describe-config` (tab-separated: name, context, group, type, ...)."""
    catalogue = {}
    for line in text.splitlines():
        fields = line.split("\t")
        if len(fields) < 7:
            continue
        name, context, _group, vartype, _reset, min_text, max_text = fields[:7]
        vartype = vartype.lower().replace("boolean", "bool")
        catalogue[name] = SettingInfo(
            name=name,
            context=context,
            vartype=vartype,
            min_value=_number_or_none(min_text),
            max_value=_number_or_none(max_text),
        )
    return catalogue


def catalogue_from_pg_settings(rows) -> dict[str, SettingInfo]:
    """Build the catalogue from pg_settings rows.

    Each row: (name, context, vartype, unit, min_val, max_val, enumvals).
    """
    catalogue = {}
    for name, context, vartype, unit, min_val, max_val, enumvals in rows:
        catalogue[name] = SettingInfo(
            name=name,
            context=context,
            vartype=vartype,
            unit=unit,
            min_value=_number_or_none(min_val),
            max_value=_number_or_none(max_val),
            enum_values=tuple(enumvals) if enumvals else None,
        )
    return catalogue


def _number_or_none(text) -> float | None:
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def setting_value_text(value) -> str:
    """The text a Python/TOML value stands for in postgresql.conf (True -> 'on')."""
    if isinstance(value, bool):
        return "on" if value else "off"
    return str(value)


def check_setting_value(info: SettingInfo, value) -> str | None:
    """None when `value` is acceptable for the setting, else a sentence saying what is wrong."""
    text = setting_value_text(value).strip()
    if info.vartype == "bool":
        if text.lower() not in _BOOL_WORDS:
            return f"{info.name} is a boolean; use on or off"
        return None
    if info.vartype == "enum":
        if info.enum_values and text.lower() not in {v.lower() for v in info.enum_values}:
            return f"{info.name} must be one of {', '.join(info.enum_values)}"
        return None
    if info.vartype == "string":
        return None
    return _check_number(info, text)


def _check_number(info: SettingInfo, text: str) -> str | None:
    parsed = split_number_and_unit(text)
    if parsed is None:
        return f"{info.name} takes a number{_unit_hint(info)}"
    number, unit = parsed
    if info.vartype == "integer" and not unit and number != int(number):
        return f"{info.name} takes an integer{_unit_hint(info)}"
    if unit:
        known_memory = unit in MEMORY_UNITS_BYTES
        known_time = unit in TIME_UNITS_SECONDS
        if not (known_memory or known_time):
            return f"unknown unit {unit!r} for {info.name}{_unit_hint(info)}"
        if info.unit in SETTING_UNIT_BYTES and not known_memory:
            return f"{info.name} is a memory size{_unit_hint(info)}"
        if info.unit in SETTING_UNIT_SECONDS and not known_time:
            return f"{info.name} is a duration{_unit_hint(info)}"
        if info.unit is not None and info.unit not in SETTING_UNIT_BYTES | SETTING_UNIT_SECONDS:
            return f"{info.name} takes no unit"
        base = _base_unit_value(info, unit)
        if base is None:
            return None  # the setting's own unit is unknown here; the server checks the range
        number = number * base
    if info.min_value is not None and number < info.min_value:
        return f"{info.name} is below its minimum {_format_limit(info, info.min_value)}"
    if info.max_value is not None and number > info.max_value:
        return f"{info.name} is above its maximum {_format_limit(info, info.max_value)}"
    return None


def _base_unit_value(info: SettingInfo, unit: str) -> float | None:
    """How many of the setting's own units one `unit` is, when both are known."""
    if info.unit in SETTING_UNIT_BYTES and unit in MEMORY_UNITS_BYTES:
        return MEMORY_UNITS_BYTES[unit] / SETTING_UNIT_BYTES[info.unit]
    if info.unit in SETTING_UNIT_SECONDS and unit in TIME_UNITS_SECONDS:
        return TIME_UNITS_SECONDS[unit] / SETTING_UNIT_SECONDS[info.unit]
    return None


def _format_limit(info: SettingInfo, limit: float) -> str:
    shown = int(limit) if limit == int(limit) else limit
    return f"{shown}{' x ' + info.unit if info.unit else ''}"


def _unit_hint(info: SettingInfo) -> str:
    if info.unit in SETTING_UNIT_BYTES:
        return " such as 64MB (units B, kB, MB, GB, TB)"
    if info.unit in SETTING_UNIT_SECONDS:
        return " such as 30s (units us, ms, s, min, h, d)"
    return " (memory units B, kB, MB, GB, TB or time units us, ms, s, min, h, d)"
