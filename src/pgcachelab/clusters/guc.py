"""What the server knows about its settings, and whether a value is acceptable: pure logic.

The catalogue comes from pg_settings: of the server given by --dsn, or of a throwaway cluster
of the install the lab will run (clusters/catalogue.py). `postgres --describe-config` works
without a cluster but has no units or enum values: only its parser is kept here.
"""

import re
from dataclasses import dataclass

from pgcachelab.units import (
    MAX_NUMBER,
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


# Units pg_settings leaves out: 9.5 shows max_wal_size and min_wal_size with no unit although
# they count 16MB WAL segments (9.6 shows "16MB"); "1GB" asked read back as "64".
UNITS_NOT_SHOWN = {"max_wal_size": "16MB", "min_wal_size": "16MB"}


def shown_unit(name: str, unit: str | None, vartype: str) -> str | None:
    """pg_settings' unit, or the one it should have shown."""
    if unit is None and vartype == "integer":
        return UNITS_NOT_SHOWN.get(name.lower())
    return unit


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
            unit=shown_unit(name, unit, vartype),
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


# -- one value, many spellings ------------------------------------------------------------------

# guc.c's parse_bool: the words a boolean setting accepts, by what they mean.
_TRUE_WORDS = {"on", "true", "yes", "1"}
_FALSE_WORDS = {"off", "false", "no", "0"}


def canonical_value(value, info: SettingInfo | None = None) -> int | float | str:
    """The form every spelling of one setting value shares, to compare and deduplicate them.

    With the setting's catalogue entry: bytes or seconds for memory and time settings (a bare
    number counts the setting's own unit: work_mem = 1024 is 1MB), on/off for booleans, enum
    labels lower-cased, other numbers as numbers, strings as written. Without one (a spec read
    before any server is known, a stored run): only values with a memory or time unit are
    converted ("64MB" and "65536kB" both give 67108864); anything else is its stripped text.
    """
    text = setting_value_text(value).strip()
    if info is None:
        parsed = split_number_and_unit(text)
        if parsed is None or not parsed[1]:
            return text
        return _amount_in_base_units(*parsed, None)
    if info.vartype == "bool":
        word = text.lower()
        return "on" if word in _TRUE_WORDS else "off" if word in _FALSE_WORDS else word
    if info.vartype == "enum":
        return text.lower()
    if info.vartype not in ("integer", "real"):
        return text
    parsed = split_number_and_unit(text)
    if parsed is None:
        try:
            parsed = float(text), ""  # "1e-3": a real in exponent notation
        except ValueError:
            return text
        # not "nan", "inf", "1e999" nor "٣": float() takes them, no setting does (issue 48)
        if not (text.isascii() and abs(parsed[0]) < MAX_NUMBER):
            return text
    return _amount_in_base_units(*parsed, info.unit)


def _amount_in_base_units(number: float, unit: str, setting_unit: str | None) -> int | float | str:
    """number × unit in bytes or seconds; a bare number counts `setting_unit`."""
    if not unit:
        unit_name = setting_unit or ""
        scale = SETTING_UNIT_BYTES.get(unit_name) or SETTING_UNIT_SECONDS.get(unit_name) or 1
    elif unit in MEMORY_UNITS_BYTES:
        scale = MEMORY_UNITS_BYTES[unit]
    elif unit in TIME_UNITS_SECONDS:
        scale = TIME_UNITS_SECONDS[unit]
    else:
        return f"{number:g}{unit}"
    # Rounded so that 0.2 s from "200ms" and from "0.2s" hash alike: microseconds are the finest
    # unit PostgreSQL has.
    amount = round(number * scale, 9)
    return int(amount) if amount == int(amount) else amount


def canonical_shown_value(text: str) -> int | float | str:
    """canonical_value of a value as pg_settings shows it with its unit ("16384 8kB", "300 s",
    "64 16MB") or as a spec writes it ("128MB"): the same amount compares equal."""
    number_text, _, unit = str(text).strip().partition(" ")
    scale = SETTING_UNIT_BYTES.get(unit) or SETTING_UNIT_SECONDS.get(unit)
    if scale:
        try:
            return _amount_in_base_units(float(number_text), "", unit)
        except ValueError:
            pass
    return canonical_value(text)


def setting_unit_size(info: SettingInfo) -> float:
    """One of the setting's own units in bytes or seconds, 0 for unitless numbers: the server
    rounds a value given in another unit to a whole number of them (guc.c:
    convert_to_base_unit); a unitless number it keeps as written."""
    unit_name = info.unit or ""
    return SETTING_UNIT_BYTES.get(unit_name) or SETTING_UNIT_SECONDS.get(unit_name) or 0


# -- what the server got ------------------------------------------------------------------------


@dataclass(frozen=True)
class ServerSetting:
    """A pg_settings row as read back after a start or reload."""

    name: str
    setting: str
    unit: str | None
    vartype: str
    source: str

    @property
    def shown(self) -> str:
        """As pg_settings says it: "300 s", "8192 8kB", "on"."""
        return f"{self.setting} {self.unit}" if self.unit else self.setting


@dataclass(frozen=True)
class FileSetting:
    """A pg_file_settings row of the lab's settings file."""

    name: str
    applied: bool
    error: str | None


_LOG_PARAMETER = re.compile(r'\b(?:LOG|WARNING|ERROR|FATAL):\s+(.*\bparameter "([^"]+)".*)$')


def log_reasons(log_text: str) -> dict[str, str]:
    """Lower-case setting name -> the last server log message about it, e.g. 'invalid value for
    parameter "checkpoint_timeout": "64MB"': the reason pg_file_settings does not give."""
    reasons = {}
    for line in log_text.splitlines():
        match = _LOG_PARAMETER.search(line)
        if match:
            reasons[match.group(2).lower()] = match.group(1).strip()
    return reasons


def setting_mismatches(
    asked: dict,
    server: dict[str, ServerSetting],
    file_settings: dict[str, FileSetting],
    reasons: dict[str, str] | None = None,
) -> list[str]:
    """What the server runs with that differs from what was asked, one sentence per setting:
    'checkpoint_timeout: asked 64MB, server has 300 s: invalid value for parameter ...'.

    `server` and `file_settings` are keyed by lower-case name (GUC names are case-insensitive).
    Values are compared in canonical units, allowing the rounding to the setting's unit that
    the server does itself. A value the server accepted from the file (applied, no error) but
    shows differently is not a mismatch when it is a string (DateStyle "iso, mdy" reads back as
    "ISO, MDY") or when the server overrode it on purpose (source "override": wal_buffers = -1
    becomes a size it chooses).
    """
    reasons = reasons or {}
    found = []
    for name, value in asked.items():
        key = name.lower()
        asked_text = setting_value_text(value)
        row = server.get(key)
        line = file_settings.get(key)
        detail = reasons.get(key) or (line.error if line is not None else None)
        if row is None:
            found.append(f"{name}: asked {asked_text}, the server has no such setting")
            continue
        info = SettingInfo(row.name, "", row.vartype, row.unit)
        accepted = line is not None and line.applied and not line.error
        same = _same_value(
            canonical_value(asked_text, info),
            canonical_value(row.setting, info),
            setting_unit_size(info),
        )
        if same:
            continue
        if accepted and (row.vartype == "string" or row.source == "override"):
            continue
        found.append(
            f"{name}: asked {asked_text}, server has {row.shown or '(empty)'}"
            + (f": {detail}" if detail else "")
        )
    return found


def _same_value(asked, server, unit_size: float) -> bool:
    if isinstance(asked, int | float) and isinstance(server, int | float):
        return abs(asked - server) <= unit_size / 2 + 1e-9 * max(abs(asked), abs(server), 1)
    return asked == server
