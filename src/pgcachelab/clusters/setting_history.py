"""Settings whose name or values changed between major versions: one spec, every version.

Seed 001 runs the same configuration on PostgreSQL 8.3 to 18; a few of its settings were
renamed or re-expressed on the way. A spec names today's setting (or the old one) and each
version runs with its own equivalent, said in the run's record and report; a setting with no
equivalent in a version is skipped for it (experiments/runner.py says so), never failed.

Each conversion keeps the amount, not the number: 9.5 replaced checkpoint_segments with
max_wal_size at `max_wal_size = (3 * checkpoint_segments) * 16MB` (its release notes), and 13
replaced wal_keep_segments with wal_keep_size at `wal_keep_size = wal_keep_segments * 16MB`.
"""

import math
from collections.abc import Callable
from dataclasses import dataclass

from pgcachelab.units import parse_bytes

WAL_SEGMENT_BYTES = 16 * 1024**2  # the default segment size; initdb --wal-segsize came in 11
Version = tuple[int, int]  # (9, 3), (18, 0): a major version as seed 001 counts them


def version_parts(version: str) -> Version:
    """'9.3' or '9.3.25' -> (9, 3); '18' or '18.6' -> (18, 0)."""
    first, _, rest = str(version).partition(".")
    major = int(first)
    return (major, int(rest.split(".")[0] or 0)) if major < 10 else (major, 0)


def _segments_from_wal_size(value: str) -> str:
    """max_wal_size -> checkpoint_segments: the 9.5 release notes' arithmetic, at least 1."""
    return str(max(1, round(parse_bytes(value, "MB") / (3 * WAL_SEGMENT_BYTES))))


def _wal_size_from_segments(value: str) -> str:
    return f"{3 * int(value) * WAL_SEGMENT_BYTES // 1024**2}MB"


def _keep_segments_from_size(value: str) -> str:
    return str(math.ceil(parse_bytes(value, "MB") / WAL_SEGMENT_BYTES))


def _keep_size_from_segments(value: str) -> str:
    return f"{int(value) * WAL_SEGMENT_BYTES // 1024**2}MB"


@dataclass(frozen=True)
class Rename:
    """`new` from version `since`, `old` before it; a value converts both ways."""

    new: str
    old: str
    since: Version
    to_old: Callable[[str], str]
    to_new: Callable[[str], str]
    rule: str  # the conversion in words, for the report


RENAMES = (
    Rename(
        "max_wal_size",
        "checkpoint_segments",
        (9, 5),
        _segments_from_wal_size,
        _wal_size_from_segments,
        "checkpoint_segments = max_wal_size / (3 x 16MB), as 9.5's release notes convert",
    ),
    Rename(
        "wal_keep_size",
        "wal_keep_segments",
        (13, 0),
        _keep_segments_from_size,
        _keep_size_from_segments,
        "wal_keep_segments = wal_keep_size / 16MB, rounded up",
    ),
)

# Values renamed in place: 9.6 merged wal_level's archive and hot_standby into replica.
VALUE_RENAMES = {("wal_level", "replica"): ((9, 6), "hot_standby")}


@dataclass(frozen=True)
class Translated:
    name: str
    value: str
    note: str  # "" when nothing changed


def translate_setting(name: str, value: str, version: str) -> Translated:
    """The setting `name = value` as PostgreSQL `version` spells it."""
    ours = version_parts(version)
    key = name.lower()
    for rename in RENAMES:
        if key in (rename.new, rename.old) and (key == rename.new) != (ours >= rename.since):
            other, convert = (
                (rename.old, rename.to_old) if key == rename.new else (rename.new, rename.to_new)
            )
            try:
                converted = convert(value)
            except ValueError:  # not an amount: the server refuses it under its own name
                return Translated(name, value, "")
            return Translated(other, converted, f"{other} = {converted} ({rename.rule})")
    renamed = VALUE_RENAMES.get((key, str(value).lower()))
    if renamed is not None and ours < renamed[0]:
        return Translated(name, renamed[1], f"{name} = {renamed[1]} (its name before 9.6)")
    return Translated(name, value, "")


def translate_settings(settings: dict, version: str) -> tuple[dict, dict[str, str]]:
    """Every setting as `version` spells it, and {spec's name: what the version runs instead}
    for those that changed."""
    translated, notes = {}, {}
    for name, value in settings.items():
        result = translate_setting(name, str(value), version)
        translated[result.name] = result.value
        if result.note:
            notes[name] = result.note
    return translated, notes


def names_in(version: str, names) -> dict[str, str]:
    """{spec's name: the name `version` knows it by} for settings a rename covers."""
    return {
        name: translate_setting(name, "1", version).name
        for name in names
        if any(name.lower() in (r.new, r.old) for r in RENAMES)
    }
